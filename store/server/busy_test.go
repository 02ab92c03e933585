package server

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/proto/raft_cmdpb"
	"github.com/stratadb/strata/raftstore"
)

// TestRaftRefusalIsServerIsBusy: a leader whose raft refuses a proposal for
// a reason other than a leader transfer (here: too many uncommitted bytes,
// the quorum being unreachable) answers ServerIsBusy, not NotLeader without
// a hint (which would send the client around every other peer). The
// proposals raft accepted are all answered once the partition heals.
func TestRaftRefusalIsServerIsBusy(t *testing.T) {
	c := newTestCluster(t, func(cfg *Config) { cfg.RaftMaxUncommittedBytes = 64 << 10 })
	l := c.leader()
	store := c.nodes[l].srv.Store()
	region := c.region()
	resp, err := store.Propose(context.Background(), putCmd(region, "warm", c.nextTS()), 0)
	require.NoError(t, err)
	require.Nil(t, resp.GetRegionError())

	// Cut the leader off from its quorum and stop its clock so it keeps
	// believing it leads: nothing it proposes commits.
	store.PauseTicksForTest(true)
	store.SetRaftFilterForTest(func(uint64) bool { return true })
	healed := false
	heal := func() {
		if !healed {
			healed = true
			store.SetRaftFilterForTest(nil)
			store.PauseTicksForTest(false)
		}
	}
	t.Cleanup(heal)

	const n = 64 // 64 x 4 KiB: 16 fit under the limit
	type result struct {
		resp *raft_cmdpb.RaftCmdResponse
		err  error
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	results := make(chan result, n)
	value := make([]byte, 4<<10)
	for i := 0; i < n; i++ {
		cmd := putCmd(region, "k", c.nextTS())
		cmd.Requests[0].Value = value
		go func() {
			r, err := store.Propose(ctx, cmd, 0)
			results <- result{r, err}
		}()
	}
	busy := 0
	for busy < n-20 {
		select {
		case r := <-results:
			require.NoError(t, r.err)
			require.NotNil(t, r.resp.GetRegionError().GetServerIsBusy(), "refused by raft while leader: %v", r.resp)
			busy++
		case <-ctx.Done():
			require.FailNow(t, "refused proposals not answered", "%d busy", busy)
		}
	}

	// The accepted ones commit once the leader reaches its quorum again, or,
	// if the others elected a new leader meanwhile, are overwritten by its
	// log: each gets an answer (applied, StaleCommand, or undetermined if
	// its index is not decided in time), none hangs.
	heal()
	for got := busy; got < n; got++ {
		select {
		case r := <-results:
			if r.err != nil {
				require.True(t, errors.Is(r.err, raftstore.ErrUndetermined), "%v", r.err)
				continue
			}
			e := r.resp.GetRegionError()
			require.True(t, e == nil || e.GetServerIsBusy() != nil || e.GetStaleCommand() != nil || e.GetNotLeader() != nil, "%v", r.resp)
		case <-ctx.Done():
			require.FailNow(t, "accepted proposals not answered after the partition healed", "%d of %d", got, n)
		}
	}
}
