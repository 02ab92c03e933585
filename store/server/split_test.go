package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/metapb"
)

// leaderOf returns the node index leading regionID, or -1.
func (c *testCluster) leaderOf(regionID uint64) int {
	for i, n := range c.nodes {
		if n.srv != nil && n.srv.Store().IsLeader(regionID) {
			return i
		}
	}
	return -1
}

// getIn reads key through region's leader with region's epoch.
func (c *testCluster) getIn(region *metapb.Region, key string) *kvrpcpb.GetResponse {
	var resp *kvrpcpb.GetResponse
	require.Eventually(c.t, func() bool {
		l := c.leaderOf(region.GetId())
		if l < 0 {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var err error
		resp, err = c.nodes[l].client.KvGet(ctx, &kvrpcpb.GetRequest{
			Context: &kvrpcpb.Context{RegionId: region.GetId(), RegionEpoch: region.GetRegionEpoch()}, Key: []byte(key), Version: ^uint64(0)})
		return err == nil && !retryable(resp.GetRegionError())
	}, waitFor, 5*time.Millisecond)
	require.Nil(c.t, resp.GetRegionError(), "read %q in region %d", key, region.GetId())
	return resp
}

// TestSplitRegion: a split through raft on 3 stores. Every store hosts both
// regions, the new region's leader is elected on the splitting store at
// once (its peer campaigns), PD routes by the new ranges, a write carrying
// the pre-split epoch gets EpochNotMatch with both regions and writes
// nothing, data on both sides stays readable, and a restart of every store
// recovers both regions.
func TestSplitRegion(t *testing.T) {
	c := newTestCluster(t, func(cfg *Config) { cfg.SplitCheckInterval = -1 })
	for i := 0; i < 20; i++ {
		c.put(fmt.Sprintf("k%03d", i), fmt.Sprintf("v%d", i))
	}
	l := c.leader()
	parent := c.region()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	start := time.Now()
	regions, rerr, err := c.nodes[l].srv.Store().SplitRegion(ctx, parent.GetId(), parent.GetRegionEpoch(), [][]byte{[]byte("k010")})
	require.NoError(t, err)
	require.Nil(t, rerr)
	require.Len(t, regions, 2)
	left, right := regions[0], regions[1]
	require.Equal(t, parent.GetId(), left.GetId())
	require.Equal(t, "k010", string(left.GetEndKey()))
	require.Equal(t, "k010", string(right.GetStartKey()))
	require.Equal(t, parent.GetRegionEpoch().GetVersion()+1, right.GetRegionEpoch().GetVersion())

	require.Eventually(t, func() bool { return c.nodes[l].srv.Store().IsLeader(right.GetId()) }, waitFor, time.Millisecond,
		"the splitting store's new peer campaigns and wins")
	t.Logf("split applied and new region led after %v", time.Since(start))
	for i := range c.nodes {
		require.Eventually(t, func() bool { return len(c.nodes[i].srv.Store().Regions()) == 2 }, waitFor, 5*time.Millisecond,
			"store %d hosts both regions", i)
	}
	r, _, err := c.pd.GetRegion(ctx, []byte("k015"))
	require.NoError(t, err)
	require.Equal(t, right.GetId(), r.GetId(), "PD routes by the new ranges")
	r, _, err = c.pd.GetRegion(ctx, []byte("k005"))
	require.NoError(t, err)
	require.Equal(t, left.GetId(), r.GetId())

	// A write prepared with the old epoch: EpochNotMatch with both regions.
	ts := c.nextTS()
	resp, err := c.nodes[l].client.KvPrewrite(ctx, onePCRequest(
		&kvrpcpb.Context{RegionId: parent.GetId(), RegionEpoch: parent.GetRegionEpoch()},
		[]*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte("k015"), Value: []byte("stale")}}, ts-5, ts))
	require.NoError(t, err)
	enm := resp.GetRegionError().GetEpochNotMatch()
	require.NotNil(t, enm)
	require.Len(t, enm.GetCurrentRegions(), 2)

	require.Equal(t, "v15", string(c.getIn(right, "k015").GetValue()))
	require.Equal(t, "v5", string(c.getIn(left, "k005").GetValue()))
	resp2, err := c.nodes[c.leaderOf(left.GetId())].client.KvGet(ctx, &kvrpcpb.GetRequest{
		Context: &kvrpcpb.Context{RegionId: left.GetId(), RegionEpoch: left.GetRegionEpoch()}, Key: []byte("k015"), Version: ^uint64(0)})
	require.NoError(t, err)
	require.NotNil(t, resp2.GetRegionError().GetKeyNotInRegion(), "a key of the sibling is refused, not read")

	for i := range c.nodes {
		c.stop(i)
	}
	for i := range c.nodes {
		c.start(i)
	}
	for i := range c.nodes {
		require.Len(t, c.nodes[i].srv.Store().Regions(), 2, "store %d after restart", i)
	}
	require.Equal(t, "v15", string(c.getIn(right, "k015").GetValue()))
	require.Equal(t, "v5", string(c.getIn(left, "k005").GetValue()))
}

// TestSplitBySize: with small thresholds the split checker splits a region
// that grows past them, repeatedly, without any request; every key stays
// readable through the region PD routes it to.
func TestSplitBySize(t *testing.T) {
	c := newTestCluster(t, func(cfg *Config) {
		cfg.SplitCheckInterval = 50 * time.Millisecond
		cfg.RegionSplitSize = 1 << 30
		cfg.RegionSplitKeys = 120 // engine keys: each put is a write and a data record
	})
	const n = 300
	for i := range n {
		c.putRouted(fmt.Sprintf("s%04d", i), fmt.Sprintf("v%d", i))
	}
	require.Eventually(t, func() bool { return c.regionCount() >= 3 }, waitFor, 10*time.Millisecond, "split by key count, more than once")
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	var regions []*metapb.Region
	require.Eventually(t, func() bool {
		regions = regions[:0]
		for key := []byte(""); ; {
			r, _, err := c.pd.GetRegion(ctx, key)
			if err != nil {
				return false
			}
			regions = append(regions, r)
			if len(r.GetEndKey()) == 0 {
				return true
			}
			key = r.GetEndKey()
		}
	}, waitFor, 10*time.Millisecond)
	t.Logf("regions after the split checker ran: %d", len(regions))
	for i := 0; i < n; i += 7 {
		k := fmt.Sprintf("s%04d", i)
		r, _, err := c.pd.GetRegion(ctx, []byte(k))
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("v%d", i), string(c.getIn(r, k).GetValue()), k)
	}
}

// putRouted writes key through the region PD routes it to, retrying until
// that region's leader applies it (regions split under the writes).
func (c *testCluster) putRouted(key, value string) {
	require.Eventually(c.t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		r, _, err := c.pd.GetRegion(ctx, []byte(key))
		if err != nil {
			return false
		}
		l := c.leaderOf(r.GetId())
		if l < 0 {
			return false
		}
		ts := c.nextTS()
		resp, err := c.nodes[l].client.KvPrewrite(ctx, onePCRequest(
			&kvrpcpb.Context{RegionId: r.GetId(), RegionEpoch: r.GetRegionEpoch()},
			[]*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte(key), Value: []byte(value)}}, ts-5, ts))
		return err == nil && resp.GetRegionError() == nil && len(resp.GetErrors()) == 0
	}, waitFor, time.Millisecond, "put %q", key)
}

// regionCount is the number of regions store 0 hosts.
func (c *testCluster) regionCount() int {
	for _, n := range c.nodes {
		if n.srv != nil {
			return len(n.srv.Store().Regions())
		}
	}
	return 0
}
