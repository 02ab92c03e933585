package kvclient

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv/execdetails"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/storepb"
	"github.com/stratadb/strata/store/storetest"
)

// TestStoreStages: the store's side of each RPC (kvrpcpb.ExecDetails) is
// added to the statement's store stages, summed over the RPCs, and, when
// tracing, recorded as spans inside the RPC's span; a store delay in a
// write's apply is the raft_apply stage.
func TestStoreStages(t *testing.T) {
	cl := newCluster(t, storetest.Options{})
	c := cl.client(Config{})
	cl.put("a", "1", 10)
	cl.put("b", "2", 12)

	var x execdetails.Details
	start := time.Now()
	x.Begin(start, true)
	ctx := execdetails.With(context.Background(), &x)
	for _, k := range []string{"a", "b"} {
		_, found, err := c.Get(ctx, []byte(k), 20)
		require.NoError(t, err)
		require.True(t, found)
	}
	require.Positive(t, x.Get(execdetails.StoreProcess))
	require.Positive(t, x.Get(execdetails.StoreKVRead))
	require.GreaterOrEqual(t, x.Get(execdetails.StoreProcess), x.Get(execdetails.StoreKVRead))
	require.LessOrEqual(t, x.Get(execdetails.StoreProcess), x.Get(execdetails.KVRead), "the store's side lies within the RPCs")
	require.Zero(t, x.Get(execdetails.RaftApply))
	spans, _ := x.Spans(nil)
	var rpc *execdetails.Span
	inside := 0
	for i, s := range spans {
		switch {
		case s.RPC:
			rpc = &spans[i]
		case s.Name == "store_process":
			require.NotNil(t, rpc, "the store's spans follow their RPC's")
			require.GreaterOrEqual(t, s.Start, rpc.Start)
			require.LessOrEqual(t, s.Start+s.Dur, rpc.Start+rpc.Dur)
			inside++
		}
	}
	require.Equal(t, 2, inside, "one store_process span per get: %+v", spans)

	// A write whose apply takes 50 ms on the store.
	const delay = 50 * time.Millisecond
	cl.Engine().SetBeforeWrite(func() { time.Sleep(delay) }) // the store-side delay under test
	defer cl.Engine().SetBeforeWrite(nil)
	x.Begin(time.Now(), false)
	k := []byte("c")
	bo := c.NewBackoffer()
	r, err := c.Locate(ctx, bo, k)
	require.NoError(t, err)
	resp, retry, err := c.SendRequest(ctx, bo, r, &Request{Cmd: &storepb.BatchCommandsRequest_Request_Prewrite{Prewrite: &kvrpcpb.PrewriteRequest{
		Mutations: []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: k, Value: []byte("3")}}, PrimaryLock: k, StartVersion: 30, LockTtl: 3000,
	}}})
	require.NoError(t, err)
	require.False(t, retry)
	require.Empty(t, resp.GetPrewrite().GetErrors())
	require.GreaterOrEqual(t, x.Get(execdetails.RaftApply), delay)
	var stages [execdetails.NumStages]time.Duration
	for s := range execdetails.NumStages {
		stages[s] = x.Get(s)
	}
	require.Equal(t, execdetails.RaftApply, execdetails.Slowest(&stages), "stages %v", stages)
}
