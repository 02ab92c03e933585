package server

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/storepb"
	"github.com/stratadb/strata/store/mvcc"
)

// lockIn sends a PessimisticLock of key for txn startTS to region's leader
// (NOWAIT) and returns the response.
func (c *testCluster) lockIn(region *metapb.Region, key string, startTS uint64) *kvrpcpb.PessimisticLockResponse {
	var resp *kvrpcpb.PessimisticLockResponse
	require.Eventually(c.t, func() bool {
		l := c.leaderOf(region.GetId())
		if l < 0 {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		resp, err = c.nodes[l].client.KvPessimisticLock(ctx, &kvrpcpb.PessimisticLockRequest{
			Context:     &kvrpcpb.Context{RegionId: region.GetId(), RegionEpoch: region.GetRegionEpoch()},
			Mutations:   []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_PessimisticLock, Key: []byte(key)}},
			PrimaryLock: []byte(key), StartVersion: startTS, ForUpdateTs: startTS, LockTtl: 60000, WaitTimeout: -1,
		})
		return err == nil && !retryable(resp.GetRegionError())
	}, waitFor, 5*time.Millisecond)
	require.Nil(c.t, resp.GetRegionError())
	return resp
}

// engineLock reads key's lock record from a store's engine (not its
// in-memory table).
func engineLock(t *testing.T, n *testNode, key string) *mvcc.Lock {
	t.Helper()
	r := mvcc.NewTxnReader(n.srv.Store().Engine())
	defer r.Close()
	l, err := r.LoadLock([]byte(key))
	require.NoError(t, err)
	return l
}

// TestMemLocksSurviveTransferAndSplit: pessimistic locks live in the
// leader's memory (no lock record), and a planned leader transfer and a
// split put them into the log first, so the new leader and the split-off
// region still refuse them to another transaction.
func TestMemLocksSurviveTransferAndSplit(t *testing.T) {
	c := newTestCluster(t, func(cfg *Config) { cfg.SplitCheckInterval = -1 })
	c.put("warmup", "x")
	parent := c.region()
	holder := c.nextTS()
	for _, k := range []string{"a", "m"} {
		require.Empty(t, c.lockIn(parent, k, holder).GetErrors())
	}
	l := c.leader()
	require.Nil(t, engineLock(t, c.nodes[l], "a"), "the lock is only in the leader's memory")

	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.NoError(t, c.nodes[l].srv.Store().TransferLeaders(ctx))
	nl := c.leader()
	require.NotEqual(t, l, nl)
	other := c.nextTS()
	r := c.lockIn(parent, "a", other)
	require.Len(t, r.GetErrors(), 1)
	require.Equal(t, holder, r.GetErrors()[0].GetLocked().GetLockVersion(), "the lock survived the transfer: %v", r.GetErrors()[0])

	regions, rerr, err := c.nodes[nl].srv.Store().SplitRegion(ctx, parent.GetId(), parent.GetRegionEpoch(), [][]byte{[]byte("k")})
	require.NoError(t, err)
	require.Nil(t, rerr)
	require.Len(t, regions, 2)
	right := regions[1]
	r = c.lockIn(right, "m", other)
	require.Len(t, r.GetErrors(), 1)
	require.Equal(t, holder, r.GetErrors()[0].GetLocked().GetLockVersion(), "the lock survived the split: %v", r.GetErrors()[0])

	// The holder's pessimistic prewrite finds its lock.
	pre := leaderCall(c, func(ctx context.Context, cl storepb.StoreClient) (*kvrpcpb.PrewriteResponse, error) {
		return cl.KvPrewrite(ctx, &kvrpcpb.PrewriteRequest{
			Context:            &kvrpcpb.Context{RegionId: regions[0].GetId(), RegionEpoch: regions[0].GetRegionEpoch()},
			Mutations:          muts("a", "v"),
			PessimisticActions: []kvrpcpb.PessimisticAction{kvrpcpb.PessimisticAction_DoPessimisticCheck},
			PrimaryLock:        []byte("a"), StartVersion: holder, ForUpdateTs: holder, LockTtl: 60000,
		})
	})
	require.Empty(t, pre.GetErrors())
}
