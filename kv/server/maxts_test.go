package server

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/proto/kvrpcpb"
)

// TestWriteRefusedAfterNewLeadership: a write whose commit_ts was chosen
// before this store gained a leadership (so before its max read timestamp
// covered the previous leader's reads) is refused with a retryable region
// error instead of being proposed.
func TestWriteRefusedAfterNewLeadership(t *testing.T) {
	c := newTestCluster(t)
	store := c.nodes[c.leader()].srv.Store()
	gen := store.LeaderGeneration()
	require.NotZero(t, gen, "the leader has gained a leadership")
	req := func(key string) *kvrpcpb.OnePCRequest {
		ts := c.nextTS()
		return &kvrpcpb.OnePCRequest{Context: c.reqCtx(), StartTs: ts - 5, CommitTs: ts,
			Mutations: []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte(key), Value: []byte("v")}}}
	}

	// Any generation but the current one (gen-1 may be 0, which means "no
	// check").
	resp, err := store.OnePCAtLeaderGen(context.Background(), req("stale"), gen+1)
	require.NoError(t, err)
	require.NotNil(t, resp.GetRegionError().GetServerIsBusy(), "%v", resp)
	require.True(t, c.get("stale", c.nextTS()).GetNotFound(), "the refused write was not applied")

	resp, err = store.OnePCAtLeaderGen(context.Background(), req("current"), gen)
	require.NoError(t, err)
	require.Nil(t, resp.GetRegionError())
	require.Empty(t, resp.GetErrors())
}
