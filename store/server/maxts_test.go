package server

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
	"github.com/stratadb/strata/store/mvcc"
)

// putCmd is a raft command committing key=v at ts (a write record; what a
// 1PC prewrite proposes).
func putCmd(region *metapb.Region, key string, ts uint64) *raft_cmdpb.RaftCmdRequest {
	var w mvcc.Txn
	w.PutWrite([]byte(key), ts, &mvcc.Write{Kind: mvcc.WritePut, StartTS: ts - 1, ShortValue: []byte("v"), HasShortValue: true})
	return &raft_cmdpb.RaftCmdRequest{
		Header:   &raft_cmdpb.RaftRequestHeader{RegionId: region.GetId(), RegionEpoch: region.GetRegionEpoch()},
		Requests: w.Writes(),
	}
}

// TestWriteRefusedAfterNewLeadership: a write whose commit_ts was chosen
// before this store gained a leadership (so before its max read timestamp
// covered the previous leader's reads) is refused with a retryable region
// error instead of being proposed.
func TestWriteRefusedAfterNewLeadership(t *testing.T) {
	c := newTestCluster(t)
	store := c.nodes[c.leader()].srv.Store()
	region := c.region()
	gen := store.LeaderGeneration()
	require.NotZero(t, gen, "the leader has gained a leadership")

	// Any generation but the current one (gen-1 may be 0, which means "no
	// check").
	resp, err := store.Propose(context.Background(), putCmd(region, "stale", c.nextTS()), gen+1)
	require.NoError(t, err)
	require.NotNil(t, resp.GetRegionError().GetServerIsBusy(), "%v", resp)
	require.True(t, c.get("stale", c.nextTS()).GetNotFound(), "the refused write was not applied")

	ts := c.nextTS()
	resp, err = store.Propose(context.Background(), putCmd(region, "current", ts), gen)
	require.NoError(t, err)
	require.Nil(t, resp.GetRegionError())
	// Answered only after apply on this store: the engine has it already.
	v, found, err := engineGet(store.Engine(), "current", ts)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, []byte("v"), v)
}

// TestProposeChecks: Propose refuses, without writing, commands with a
// stale epoch, keys outside the region, a wrong term, and from a follower.
func TestProposeChecks(t *testing.T) {
	c := newTestCluster(t)
	l := c.leader()
	store := c.nodes[l].srv.Store()
	region := c.region()

	stale := putCmd(region, "a", c.nextTS())
	stale.Header.RegionEpoch = &metapb.RegionEpoch{ConfVer: region.GetRegionEpoch().GetConfVer(), Version: region.GetRegionEpoch().GetVersion() + 1}
	resp, err := store.Propose(context.Background(), stale, 0)
	require.NoError(t, err)
	require.NotNil(t, resp.GetRegionError().GetEpochNotMatch(), "%v", resp)
	require.Equal(t, region.GetId(), resp.GetRegionError().GetEpochNotMatch().GetCurrentRegions()[0].GetId())

	term := putCmd(region, "a", c.nextTS())
	term.Header.Term = 1 // regions start at term 5
	resp, err = store.Propose(context.Background(), term, 0)
	require.NoError(t, err)
	require.NotNil(t, resp.GetRegionError().GetStaleCommand(), "%v", resp)

	// A follower refuses with NotLeader (RegionNotFound until it has
	// created its peer of the region: the leader needs only one follower).
	follower := c.nodes[(l+1)%3].srv.Store()
	require.Eventually(t, func() bool {
		resp, err = follower.Propose(context.Background(), putCmd(region, "a", c.nextTS()), 0)
		require.NoError(t, err)
		if resp.GetRegionError().GetRegionNotFound() != nil {
			return false
		}
		require.NotNil(t, resp.GetRegionError().GetNotLeader(), "%v", resp)
		return true
	}, 10*time.Second, 10*time.Millisecond)

	_, err = store.Propose(context.Background(), &raft_cmdpb.RaftCmdRequest{Header: putCmd(region, "a", 1).Header,
		AdminRequest: &raft_cmdpb.AdminRequest{CmdType: raft_cmdpb.AdminCmdType_CompactLog}}, 0)
	require.Error(t, err)

	require.True(t, c.get("a", c.nextTS()).GetNotFound(), "nothing refused was applied")
}
