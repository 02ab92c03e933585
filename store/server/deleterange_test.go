package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
)

// engineKeys counts the engine keys of every replica's user key range
// [start, end) in each key space (lock, write, default).
func engineKeys(t *testing.T, db *pebble.DB, start, end string) map[raft_cmdpb.CF]int {
	out := map[raft_cmdpb.CF]int{}
	for _, cf := range keys.CFs {
		lo, hi := keys.CFBounds(cf, []byte(start), []byte(end))
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
		require.NoError(t, err)
		for valid := it.First(); valid; valid = it.Next() {
			out[cf]++
		}
		require.NoError(t, it.Close())
	}
	return out
}

// rangeDiskUsage is Pebble's estimate of the disk space of the user key
// range [start, end) in all key spaces of db.
func rangeDiskUsage(t *testing.T, db *pebble.DB, start, end string) uint64 {
	var total uint64
	for _, cf := range keys.CFs {
		lo, hi := keys.CFBounds(cf, []byte(start), []byte(end))
		size, err := db.EstimateDiskUsage(lo, hi)
		require.NoError(t, err)
		total += size
	}
	return total
}

// deleteRange sends KvDeleteRange of [start, end) to the leader, retrying
// on leader changes.
func (c *testCluster) deleteRange(start, end string, safePoint uint64) *kvrpcpb.DeleteRangeResponse {
	var resp *kvrpcpb.DeleteRangeResponse
	c.retry(func(n *testNode) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		resp, err = n.client.KvDeleteRange(ctx, &kvrpcpb.DeleteRangeRequest{Context: c.reqCtx(),
			StartKey: []byte(start), EndKey: []byte(end), GcSafePoint: safePoint})
		return err == nil && !retryable(resp.GetRegionError())
	})
	return resp
}

// TestDeleteRangeRemovesEveryKeySpaceOnEveryReplica: KvDeleteRange removes
// committed versions, long values and locks of its range on all three
// replicas (one raft command), leaves the keys around it, raises every
// replica's GC safe point to the request's, and the replicas compact the
// range so its disk usage estimate falls.
func TestDeleteRangeRemovesEveryKeySpaceOnEveryReplica(t *testing.T) {
	c := newTestCluster(t)
	rng := rand.New(rand.NewPCG(1, 2))
	long := make([]byte, 2048) // stored in DEFAULT, not inlined in WRITE; incompressible
	for i := range 64 {
		for j := range long {
			long[j] = byte(rng.Uint32())
		}
		c.put(fmt.Sprintf("b%03d", i), string(long))
	}
	c.put("a", "before")
	c.put("c", "after")
	// A lock left by a prewrite that never commits.
	ts := c.nextTS()
	c.retry(func(n *testNode) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		resp, err := n.client.KvPrewrite(ctx, &kvrpcpb.PrewriteRequest{Context: c.reqCtx(), PrimaryLock: []byte("b500"),
			Mutations:    []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte("b500"), Value: long}},
			StartVersion: ts, LockTtl: 60000, TxnSize: 1})
		return err == nil && !retryable(resp.GetRegionError())
	})
	require.Eventually(t, func() bool {
		for _, n := range c.nodes {
			k := engineKeys(t, n.srv.Store().Engine(), "b", "c")
			if k[raft_cmdpb.CF_LOCK] != 1 || k[raft_cmdpb.CF_WRITE] != 64 || k[raft_cmdpb.CF_DEFAULT] != 65 {
				return false
			}
		}
		return true
	}, waitFor, time.Millisecond, "every replica holds the range")

	var before uint64
	for _, n := range c.nodes {
		require.NoError(t, n.srv.Store().Engine().Flush())
		before = max(before, rangeDiskUsage(t, n.srv.Store().Engine(), "b", "c"))
	}
	require.Greater(t, before, uint64(64<<10))

	const safePoint = 1 << 40
	resp := c.deleteRange("b", "c", safePoint)
	require.Nil(t, resp.GetRegionError())
	require.Empty(t, resp.GetError())

	require.Eventually(t, func() bool {
		for _, n := range c.nodes {
			db := n.srv.Store().Engine()
			if k := engineKeys(t, db, "b", "c"); len(k) != 0 {
				return false
			}
			// A file that only spans the range (keys on both sides)
			// still counts in the estimate: a tenth of before is gone.
			if rangeDiskUsage(t, db, "b", "c") > before/10 {
				return false
			}
			if n.srv.Store().GCSafePoint() < safePoint {
				return false
			}
		}
		return true
	}, waitFor, 5*time.Millisecond, "every replica deleted and compacted the range")
	for _, n := range c.nodes {
		k := engineKeys(t, n.srv.Store().Engine(), "", "b")
		require.Equal(t, 1, k[raft_cmdpb.CF_WRITE], "a stays")
		k = engineKeys(t, n.srv.Store().Engine(), "c", "d")
		require.Equal(t, 1, k[raft_cmdpb.CF_WRITE], "c stays")
	}

	// Deleting again is harmless; a range without an end is refused.
	resp = c.deleteRange("b", "c", safePoint)
	require.Nil(t, resp.GetRegionError())
	require.Empty(t, resp.GetError())
	l := c.leader()
	resp, err := c.nodes[l].client.KvDeleteRange(context.Background(), &kvrpcpb.DeleteRangeRequest{Context: c.reqCtx(), StartKey: []byte("b")})
	require.NoError(t, err)
	require.NotEmpty(t, resp.GetError())
}
