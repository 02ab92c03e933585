//go:build integration

package kvclient_test

// Integration test against a real PD and three real store nodes, in process
// on loopback. Behind a build tag so the package's unit tests do not depend
// on the state of pd/ and store/server:
//
//	go test -tags integration -run Integration ./kv/client/

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/kvclient"
	kvtxn "github.com/stratadb/strata/kvclient/txn"
	"github.com/stratadb/strata/pd/pdclient"
	"github.com/stratadb/strata/pd/pdtest"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/store/server"
)

type node struct {
	srv    *server.Server
	cancel context.CancelFunc
	done   chan error
}

func startNode(t *testing.T, pdAddr, dir string) *node {
	srv, err := server.New(server.Config{
		PDEndpoints:       []string{pdAddr},
		Addr:              "127.0.0.1:0",
		DataDir:           dir,
		RaftTick:          10 * time.Millisecond,
		ElectionTicks:     10,
		HeartbeatTicks:    2,
		HeartbeatInterval: 100 * time.Millisecond,
		Logger:            slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	n := &node{srv: srv, cancel: cancel, done: make(chan error, 1)}
	go func() { n.done <- srv.Run(ctx) }()
	select {
	case <-srv.Ready():
	case err := <-n.done:
		require.FailNow(t, "store exited", "%v", err)
	case <-time.After(20 * time.Second):
		require.FailNow(t, "store not ready")
	}
	return n
}

func (n *node) stop(t *testing.T) {
	if n.srv == nil {
		return
	}
	n.cancel()
	select {
	case <-n.done:
	case <-time.After(20 * time.Second):
		require.FailNow(t, "store did not stop")
	}
	n.srv = nil
}

func TestIntegrationRidesThroughStartAndLeaderKill(t *testing.T) {
	pdAddr := pdtest.Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pd, err := pdclient.New(ctx, []string{pdAddr})
	require.NoError(t, err)
	t.Cleanup(func() { pd.Close() })

	var nodes []*node
	for range 3 {
		nodes = append(nodes, startNode(t, pdAddr, t.TempDir()))
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			n.stop(t)
		}
	})

	c := kvclient.New(pd, kvclient.Config{})
	defer c.Close()
	ts := func() uint64 {
		v, err := pd.GetTS(ctx)
		require.NoError(t, err)
		return v
	}
	txns := kvtxn.NewClient(c, pd, kvtxn.Config{})
	commit := func(muts []*kvrpcpb.Mutation) error {
		return kv.Update(ctx, kvtxn.NewStorage(pd, c, txns), func(t kv.Txn) error { return kv.Mutate(t, muts) })
	}

	// Right after start: maybe no leader yet; the client must ride through.
	var muts []*kvrpcpb.Mutation
	for i := range 20 {
		k := fmt.Sprintf("k%02d", i)
		muts = append(muts, &kvrpcpb.Mutation{Op: kvrpcpb.Op_Insert, Key: []byte(k), Value: []byte("v" + k)})
	}
	require.NoError(t, commit(muts))

	v, found, err := c.Get(ctx, []byte("k05"), ts())
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, "vk05", string(v))

	pairs, err := c.Scan(ctx, []byte("k03"), []byte("k13"), ts(), 0)
	require.NoError(t, err)
	require.Len(t, pairs, 10)

	err = commit(muts[:1])
	var ke *kv.KeyExistsError
	require.ErrorAs(t, err, &ke)

	// Kill the leader's store: reads and writes go on.
	r, _, err := pd.GetRegion(ctx, []byte("k05"))
	require.NoError(t, err)
	for _, n := range nodes {
		if n.srv != nil && n.srv.Store().IsLeader(r.GetId()) {
			n.stop(t)
			break
		}
	}
	require.NoError(t, commit([]*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte("k05"), Value: []byte("after")}}))
	v, found, err = c.Get(ctx, []byte("k05"), ts())
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, "after", string(v))
}
