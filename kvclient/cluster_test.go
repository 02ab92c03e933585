package kvclient

import (
	"bytes"
	"context"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
	"github.com/stratadb/strata/store/storetest"
)

// cluster is the store the client tests run against: store/storetest (the
// real transaction layer and coprocessor over an in-memory engine, several
// simulated store nodes on loopback, with PD), set up as the client's
// tests expect it: region 1 over the whole key space, led by store 1.
type cluster struct {
	*storetest.Store
	t testing.TB
}

func newCluster(t testing.TB, opts storetest.Options) *cluster {
	st, err := storetest.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	st.SetLeader(1, 1, true)
	return &cluster{Store: st, t: t}
}

// newStores returns a cluster of n store nodes.
func newStores(t testing.TB, n int) *cluster { return newCluster(t, storetest.Options{Stores: n}) }

// client returns a client of the cluster, closed at test end (before the
// cluster stops).
func (cl *cluster) client(cfg Config) *Client {
	if cfg.BackoffBudget == 0 {
		cfg.BackoffBudget = 3e9
	}
	if cfg.RPCTimeout == 0 {
		cfg.RPCTimeout = 2e9
	}
	c := New(cl, cfg)
	cl.t.Cleanup(func() { _ = c.Close() })
	return c
}

// rctx addresses key's region at its leader.
func (cl *cluster) rctx(key []byte) *kvrpcpb.Context {
	r := cl.Engine().RegionByKey(key)
	return &kvrpcpb.Context{RegionId: r.GetId(), RegionEpoch: r.GetRegionEpoch(), Peer: cl.Engine().Leader(r)}
}

// put commits key = value at commitTS (a transaction started at
// commitTS-1, committed with two-phase commit), straight through the
// store's transaction layer: no client, no RPC counted.
func (cl *cluster) put(key, value string, commitTS uint64) {
	ctx, k := context.Background(), []byte(key)
	pw, err := cl.Storage().Prewrite(ctx, &kvrpcpb.PrewriteRequest{Context: cl.rctx(k), PrimaryLock: k,
		Mutations:    []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: k, Value: []byte(value)}},
		StartVersion: commitTS - 1, LockTtl: 3000, TxnSize: 1})
	require.NoError(cl.t, err)
	require.Nil(cl.t, pw.GetRegionError())
	require.Empty(cl.t, pw.GetErrors())
	cm, err := cl.Storage().Commit(ctx, &kvrpcpb.CommitRequest{Context: cl.rctx(k), Keys: [][]byte{k},
		StartVersion: commitTS - 1, CommitVersion: commitTS})
	require.NoError(cl.t, err)
	require.Nil(cl.t, cm.GetRegionError())
	require.Nil(cl.t, cm.GetError())
}

// split splits the region holding key at key and returns the new region's
// id; the new region is led by the split region's leader, as after a raft
// split.
func (cl *cluster) split(key string) uint64 {
	leader := cl.Leader(cl.Engine().RegionByKey([]byte(key)).GetId())
	for _, r := range cl.Split([]byte(key)) {
		if string(r.GetStartKey()) == key {
			cl.SetLeader(r.GetId(), leader, true)
			return r.GetId()
		}
	}
	cl.t.Fatalf("split at %q made no region", key)
	return 0
}

// versions is how many committed versions (write records) key has.
func (cl *cluster) versions(key string) int {
	lo, hi := keys.CFBounds(raft_cmdpb.CF_WRITE, []byte(key), append([]byte(key), 0))
	it, err := cl.Engine().DB().NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	require.NoError(cl.t, err)
	defer it.Close()
	n := 0
	for valid := it.First(); valid; valid = it.Next() {
		k, _, err := keys.DecodeVersioned(it.Key()[1:], nil)
		require.NoError(cl.t, err)
		if bytes.Equal(k, []byte(key)) {
			n++
		}
	}
	require.NoError(cl.t, it.Error())
	return n
}

// ts is a fresh timestamp from the cluster's PD.
func (cl *cluster) ts() uint64 {
	ts, err := cl.GetTS(context.Background())
	require.NoError(cl.t, err)
	return ts
}

// wait blocks until release is closed or ctx ends: a node that hangs, or
// an answer held back (storetest.Fault.Do).
func wait(release <-chan struct{}) func(context.Context, proto.Message) {
	return func(ctx context.Context, _ proto.Message) {
		select {
		case <-release:
		case <-ctx.Done():
		}
	}
}

// scanDAG reads the rows of its ranges as stored (a TableScan without
// table_info: opaque rows).
func scanDAG() *coprocessorpb.DAGRequest {
	return &coprocessorpb.DAGRequest{Executors: []*coprocessorpb.Executor{{Tp: coprocessorpb.ExecType_TypeTableScan}}}
}

// countDAG counts the rows of its ranges (COUNT(*) in agg_values).
func countDAG() *coprocessorpb.DAGRequest {
	return &coprocessorpb.DAGRequest{Executors: []*coprocessorpb.Executor{
		{Tp: coprocessorpb.ExecType_TypeTableScan},
		{Tp: coprocessorpb.ExecType_TypeAggregation, Aggregation: &coprocessorpb.Aggregation{
			AggFunc: []coprocessorpb.AggFuncType{coprocessorpb.AggFuncType_Count}}},
	}}
}
