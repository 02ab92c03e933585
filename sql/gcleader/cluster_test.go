package gcleader_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/kvclient"
	"github.com/stratadb/strata/kvclient/txn"
	"github.com/stratadb/strata/pd/pdclient"
	"github.com/stratadb/strata/pd/pdtest"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
	"github.com/stratadb/strata/proto/storepb"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/gcleader"
	"github.com/stratadb/strata/store/gc"
	"github.com/stratadb/strata/store/server"
)

const waitFor = 30 * time.Second

// cluster is a real PD and three store nodes in this process on loopback,
// with the stores' GC workers polling fast.
type cluster struct {
	pd     *pdclient.Client
	kv     *kvclient.Client
	txn    *txn.Client
	stores []*server.Server
}

func startCluster(t testing.TB, gcCfg gc.Config) *cluster {
	pdAddr := pdtest.Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	pd, err := pdclient.New(ctx, []string{pdAddr})
	require.NoError(t, err)
	t.Cleanup(func() { pd.Close() })
	c := &cluster{pd: pd}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for range 3 {
		srv, err := server.New(server.Config{
			PDEndpoints: []string{pdAddr}, Addr: "127.0.0.1:0", DataDir: t.TempDir(),
			RaftTick: 10 * time.Millisecond, ElectionTicks: 10, HeartbeatTicks: 2,
			HeartbeatInterval: 100 * time.Millisecond, Logger: quiet,
			GC: gcCfg,
		})
		require.NoError(t, err)
		sctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Run(sctx) }()
		t.Cleanup(func() {
			stop()
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(waitFor):
				t.Error("store did not stop")
			}
		})
		select {
		case <-srv.Ready():
		case err := <-done:
			require.FailNow(t, "store exited", "%v", err)
		case <-time.After(waitFor):
			require.FailNow(t, "store not ready")
		}
		c.stores = append(c.stores, srv)
	}
	c.kv = kvclient.New(pd, kvclient.Config{})
	t.Cleanup(func() { c.kv.Close() })
	c.txn = txn.NewClient(c.kv, pd, txn.Config{})
	return c
}

func (c *cluster) put(t *testing.T, key, value string) uint64 {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	tx, err := c.txn.Begin(ctx, kv.TxnOptions{})
	require.NoError(t, err)
	require.NoError(t, tx.Set([]byte(key), []byte(value)))
	require.NoError(t, tx.Commit(ctx))
	return tx.StartTS()
}

// readAt reads key in a read-only snapshot at ts.
func (c *cluster) readAt(ctx context.Context, key string, ts uint64) (string, bool, error) {
	tx, err := c.txn.Begin(ctx, kv.TxnOptions{ReadOnly: true, StartTS: ts})
	if err != nil {
		return "", false, err
	}
	defer tx.Rollback(ctx)
	v, ok, err := tx.Get(ctx, []byte(key))
	return string(v), ok, err
}

// versions counts key's WRITE records at or below ts in a store's engine.
func versions(t *testing.T, db *pebble.DB, key string, ts uint64) int {
	lo := keys.EncodeVersioned([]byte{keys.PrefixWrite}, []byte(key), ts)
	hi := keys.Encode([]byte{keys.PrefixWrite}, []byte(key))
	hi = append(hi, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	require.NoError(t, err)
	defer it.Close()
	n := 0
	for valid := it.First(); valid; valid = it.Next() {
		n++
	}
	return n
}

func lockOf(t *testing.T, db *pebble.DB, key string) bool {
	_, closer, err := db.Get(keys.EngineKey(nil, raft_cmdpb.CF_LOCK, keys.Encode(nil, []byte(key))))
	if errors.Is(err, pebble.ErrNotFound) {
		return false
	}
	require.NoError(t, err)
	closer.Close()
	return true
}

// TestClusterGC: a GC leader on a "SQL node" resolves an abandoned lock
// below the safe point and raises PD's safe point; the stores delete the
// old versions on every replica; a read below the safe point gets the
// GC-too-early error and a read above it sees the newest value.
func TestClusterGC(t *testing.T) {
	c := startCluster(t, gc.Config{PollInterval: 50 * time.Millisecond, DeleteDelay: 100 * time.Millisecond, BatchKeys: 4, BatchPause: time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitFor)
	defer cancel()

	c.put(t, "k", "v1")
	oldTS, err := c.pd.GetTS(ctx)
	require.NoError(t, err)
	for i := 2; i <= 5; i++ {
		c.put(t, "k", fmt.Sprintf("v%d", i))
	}
	for i := range 10 {
		c.put(t, fmt.Sprintf("other%d", i), "x") // more keys than one GC batch
		c.put(t, fmt.Sprintf("other%d", i), "y")
	}
	v, ok, err := c.readAt(ctx, "k", oldTS)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "v1", v, "before GC the old version is readable")

	// An abandoned prewrite (its client died): a lock with a short TTL.
	lockTS, err := c.pd.GetTS(ctx)
	require.NoError(t, err)
	bo := c.kv.NewBackoffer()
	for {
		r, err := c.kv.Locate(ctx, bo, []byte("abandoned"))
		require.NoError(t, err)
		resp, retry, err := c.kv.SendRequest(ctx, bo, r, &kvclient.Request{Cmd: &storepb.BatchCommandsRequest_Request_Prewrite{Prewrite: &kvrpcpb.PrewriteRequest{
			Mutations:   []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte("abandoned"), Value: []byte("never")}},
			PrimaryLock: []byte("abandoned"), StartVersion: lockTS, LockTtl: 50, TxnSize: 1,
		}}})
		require.NoError(t, err)
		if retry {
			continue
		}
		require.Empty(t, resp.GetPrewrite().GetErrors())
		break
	}
	lastTS, err := c.pd.GetTS(ctx)
	require.NoError(t, err)
	anyLock := func() bool {
		for _, s := range c.stores {
			if lockOf(t, s.Store().Engine(), "abandoned") {
				return true
			}
		}
		return false
	}
	require.True(t, anyLock())

	// A GC leader with a 1ms life time (the production minimum is 10m).
	require.NoError(t, func() error { _, err := c.pd.SetGCConfig(ctx, time.Millisecond, 100*time.Millisecond); return err }())
	l := gcleader.New(c.pd, c.kv, c.txn.Resolver(), gcleader.Config{
		NodeID: "sql-1", HeartbeatInterval: 50 * time.Millisecond, MinLifeTime: time.Millisecond,
	})
	lctx, stopLeader := context.WithCancel(ctx)
	leaderDone := make(chan struct{})
	go func() { defer close(leaderDone); l.Run(lctx) }()
	defer func() { stopLeader(); <-leaderDone }()

	var sp uint64
	require.Eventually(t, func() bool {
		sp, err = c.pd.GetGCSafePoint(ctx)
		require.NoError(t, err)
		return sp > lastTS
	}, waitFor, 20*time.Millisecond, "the GC leader raises the safe point")
	// The resolve was applied by the region's leader before its answer, so
	// at least one store has no lock any more; followers apply it soon.
	locked := 0
	for _, s := range c.stores {
		if lockOf(t, s.Store().Engine(), "abandoned") {
			locked++
		}
	}
	require.Less(t, locked, len(c.stores), "the abandoned lock below the safe point was resolved before the safe point moved")
	require.Eventually(t, func() bool { return !anyLock() }, waitFor, 10*time.Millisecond, "every replica applies the resolve")

	// Every store collects (the leader deletes; followers apply the deletes).
	require.Eventually(t, func() bool {
		for _, s := range c.stores {
			if s.GC().SafePoint() < sp {
				return false
			}
			if versions(t, s.Store().Engine(), "k", sp) != 1 {
				return false
			}
			for i := range 10 {
				if versions(t, s.Store().Engine(), fmt.Sprintf("other%d", i), sp) != 1 {
					return false
				}
			}
		}
		return true
	}, waitFor, 20*time.Millisecond, "old versions deleted on every replica")

	_, _, err = c.readAt(ctx, "k", oldTS)
	require.Error(t, err, "a read below the safe point is refused")
	var gte *kv.GCTooEarlyError
	require.ErrorAs(t, err, &gte)
	require.Equal(t, oldTS, gte.StartTS)
	require.GreaterOrEqual(t, gte.SafePoint, sp)
	require.Contains(t, err.Error(), "GC life time is shorter than transaction duration")
	me := errno.FromError(err)
	require.Equal(t, errno.ErrGCTooEarly, me.Code, "the SQL node answers MySQL ERROR 9006")
	t.Logf("a read below the safe point: %v", me)

	now, err := c.pd.GetTS(ctx)
	require.NoError(t, err)
	v, ok, err = c.readAt(ctx, "k", now)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "v5", v)
	_, ok, err = c.readAt(ctx, "abandoned", now)
	require.NoError(t, err)
	require.False(t, ok, "the abandoned prewrite was rolled back")
}
