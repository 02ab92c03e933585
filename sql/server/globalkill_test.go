package server_test

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/proto/pdpb"
	"github.com/stratadb/strata/sql/server"
	"github.com/stratadb/strata/status"
)

// memRegistry is PD's SQL node registry in memory (the real one is tested
// in pd/pdclient): ids in registration order.
type memRegistry struct {
	mu    sync.Mutex
	nodes []*pdpb.SQLNode
}

func (r *memRegistry) SQLNodeHeartbeat(_ context.Context, n *pdpb.SQLNode, lease int64, ttl time.Duration) (uint64, int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n.ServerId != 0 {
		return n.ServerId, lease, nil
	}
	c := &pdpb.SQLNode{ServerId: uint64(len(r.nodes) + 1), SqlAddr: n.SqlAddr, StatusAddr: n.StatusAddr}
	r.nodes = append(r.nodes, c)
	return c.ServerId, 1, nil
}

func (r *memRegistry) SQLNodes(context.Context) ([]*pdpb.SQLNode, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*pdpb.SQLNode(nil), r.nodes...), nil
}

// startNode starts a server registered with reg whose InternalHandler is
// served on its own status listener.
func startNode(t *testing.T, reg server.NodeRegistry) (*testServer, string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	h := new(status.Deferred)
	hs := &http.Server{Handler: h}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	ts := startServer(t, func(c *server.Config) { c.Registry, c.StatusAddr = reg, ln.Addr().String() })
	h.Set(ts.srv.InternalHandler())
	return ts, ln.Addr().String()
}

// TestGlobalKill: two registered nodes and one that is gone. Connection
// ids carry the node's server id; CLUSTER_PROCESSLIST on B lists A's
// connections under A's status address and warns about the dead node;
// KILL QUERY and KILL from B reach A's connections, with MySQL's
// privilege rules judged on A; ids no live node has are 1094.
func TestGlobalKill(t *testing.T) {
	reg := &memRegistry{}
	a, aStatus := startNode(t, reg)
	b, _ := startNode(t, reg)
	// A registered node whose status port refuses connections.
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadAddr := dead.Addr().String()
	require.NoError(t, dead.Close())
	reg.mu.Lock()
	reg.nodes = append(reg.nodes, &pdpb.SQLNode{ServerId: 3, SqlAddr: "127.0.0.1:1", StatusAddr: deadAddr})
	reg.mu.Unlock()

	onA, err := a.open(t, "test", "").Conn(context.Background()) // one connection, never replaced
	require.NoError(t, err)
	t.Cleanup(func() { _ = onA.Close() })
	onB := b.open(t, "test", "")
	onB.SetMaxOpenConns(1)
	var aID uint64
	require.NoError(t, onA.QueryRowContext(context.Background(), "SELECT CONNECTION_ID()").Scan(&aID))
	require.Equal(t, uint64(1), aID>>21, "A's connection ids carry server id 1")

	// CLUSTER_PROCESSLIST on B: A's connection, and a warning for the dead node.
	done := make(chan string, 1)
	go func() {
		var v string
		if err := onA.QueryRowContext(context.Background(), "SELECT SLEEP(60)").Scan(&v); err != nil {
			v = err.Error()
		}
		done <- v
	}()
	id := strconv.FormatUint(aID, 10)
	waitFor(t, func() bool {
		for _, r := range queryStrings(t, onB, "SELECT INSTANCE, ID, COMMAND, INFO FROM information_schema.CLUSTER_PROCESSLIST") {
			if r[1] == id {
				return r[0] == aStatus && r[2] == "Query" && r[3] == "SELECT SLEEP(60)"
			}
		}
		return false
	})
	warns := queryStrings(t, onB, "SHOW WARNINGS")
	require.Len(t, warns, 1)
	require.Contains(t, warns[0][2], deadAddr)
	require.Contains(t, warns[0][2], "did not answer")

	_, err = onB.Exec("KILL QUERY " + id)
	require.NoError(t, err)
	select {
	case v := <-done:
		require.Equal(t, "1", v, "the interrupted SLEEP returns 1")
	case <-time.After(10 * time.Second):
		t.Fatal("KILL QUERY from B did not interrupt A's SLEEP")
	}

	// A user without SUPER may not kill root's connection: 1095, judged on A.
	_, err = onB.Exec("CREATE USER 'plain'@'%'")
	require.NoError(t, err)
	_, err = a.open(t, "", "").Exec("CREATE USER 'plain'@'%'") // each test node has its own store
	require.NoError(t, err)
	plainB := b.openAs(t, "plain", "")
	_, err = plainB.Exec("KILL " + id)
	require.Equal(t, uint16(1095), mysqlCode(err), "%v", err)

	_, err = onB.Exec("KILL " + id)
	require.NoError(t, err)
	_, err = onA.ExecContext(context.Background(), "SELECT 1")
	require.Error(t, err, "A's connection is closed")

	for _, unknown := range []uint64{5<<21 | 2, 1<<21 | 999<<1, 1<<21 | 3, 1 << 40} {
		_, err = onB.Exec("KILL " + strconv.FormatUint(unknown, 10))
		require.Equal(t, uint16(1094), mysqlCode(err), "%d: %v", unknown, err)
	}
}

// losingRegistry answers renewals with a new server id once lose is set,
// as PD does when the node's lease expired and another node took its id.
type losingRegistry struct {
	memRegistry
	lose atomic.Bool
}

func (r *losingRegistry) SQLNodeHeartbeat(ctx context.Context, n *pdpb.SQLNode, lease int64, ttl time.Duration) (uint64, int64, error) {
	if n.ServerId != 0 && ttl > 0 && r.lose.Load() {
		return n.ServerId + 10, lease + 1, nil
	}
	return r.memRegistry.SQLNodeHeartbeat(ctx, n, lease, ttl)
}

// TestServerIDLost: when a renewal answers a new server id, the
// connections carrying the old one are closed (a KILL of their id would
// reach another node) and new connections carry the new id.
func TestServerIDLost(t *testing.T) {
	reg := &losingRegistry{}
	ts, _ := startNode(t, reg)
	db := ts.open(t, "", "")
	old, err := db.Conn(context.Background())
	require.NoError(t, err)
	defer old.Close()
	var id uint64
	require.NoError(t, old.QueryRowContext(context.Background(), "SELECT CONNECTION_ID()").Scan(&id))
	require.Equal(t, uint64(1), id>>21)
	reg.lose.Store(true)
	waitFor(t, func() bool {
		var got uint64
		return db.QueryRow("SELECT CONNECTION_ID()").Scan(&got) == nil && got>>21 == 11
	})
	_, err = old.ExecContext(context.Background(), "SELECT 1")
	require.Error(t, err, "the connection with the lost server id is closed")
}
