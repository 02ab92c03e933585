package raftstore

import (
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
)

// TestRestartIgnoresNextRegionHardState: the entry scan of region r on
// restart must not read region r+1's hard state (which sorts right after
// r's entries) as r's last entry.
func TestRestartIgnoresNextRegionHardState(t *testing.T) {
	db := memDB(t)
	r7 := testRegion() // id 7
	r8 := proto.Clone(r7).(*metapb.Region)
	r8.Id = 8
	b := db.NewBatch()
	require.NoError(t, writeInitialState(b, r7))
	require.NoError(t, writeInitialState(b, r8))
	require.NoError(t, b.Commit(pebble.Sync))

	ps7, err := loadPeerStorage(db, r7)
	require.NoError(t, err)
	persist(t, ps7, ents(6, 6, 10), &raftpb.HardState{Term: new(uint64(6)), Commit: new(uint64(9))})
	ps8, err := loadPeerStorage(db, r8)
	require.NoError(t, err)
	persist(t, ps8, ents(9, 6, 7), &raftpb.HardState{Term: new(uint64(9)), Vote: new(uint64(3)), Commit: new(uint64(7))})

	for _, c := range []struct {
		region          *metapb.Region
		lastIdx, lastTm uint64
	}{{r7, 10, 6}, {r8, 7, 9}} {
		ps, err := loadPeerStorage(db, c.region)
		require.NoError(t, err, "region %d", c.region.GetId())
		require.Equal(t, c.lastIdx, ps.lastIndex, "region %d", c.region.GetId())
		require.Equal(t, c.lastTm, ps.lastTerm, "region %d", c.region.GetId())
	}
}

// TestLeaseKeepsDriftMargin: the lease stays below the time a follower
// refuses votes, (ElectionTicks-2) ticks, by a margin for clock-rate drift,
// whatever is configured.
func TestLeaseKeepsDriftMargin(t *testing.T) {
	tick := 100 * time.Millisecond
	for ticks := 3; ticks <= 60; ticks++ {
		bound := time.Duration(ticks-2) * tick
		for _, want := range []time.Duration{0, bound, 10 * bound} {
			l := leaseFor(ticks, tick, want)
			require.LessOrEqual(t, l, bound-bound/10, "ticks %d want %v", ticks, want)
		}
	}
}

// TestOverwrittenProposalUndecidedUntilCommitted: with 5 voters an entry
// overwritten in this peer's log can still commit elsewhere (issue 7), so
// the overwrite alone answers nothing; the answer comes from the entry that
// is committed at the index, or is ErrUndetermined after a timeout.
func TestOverwrittenProposalUndecidedUntilCommitted(t *testing.T) {
	newProp := func(index, term uint64) *proposal {
		return &proposal{cmd: &raft_cmdpb.RaftCmdRequest{Header: &raft_cmdpb.RaftRequestHeader{RegionId: 7}},
			index: index, term: term, start: time.Now(), done: make(chan proposalResult, 1)}
	}
	answered := func(pr *proposal) (proposalResult, bool) {
		select {
		case res := <-pr.done:
			return res, true
		default:
			return proposalResult{}, false
		}
	}
	for _, c := range []struct {
		name      string
		applyTerm uint64 // term of the entry that commits at index 10
		wantStale bool
	}{
		{name: "the overwriting entry commits", applyTerm: 3, wantStale: true},
		{name: "the original entry commits after all", applyTerm: 2},
	} {
		p := &peer{region: testRegion()}
		pr := newProp(10, 2)
		p.pending = []*proposal{pr}
		// A new leader's entry of term 3 overwrites index 10 here.
		p.trackProposals(ents(3, 10, 10), time.Now())
		_, done := answered(pr)
		require.False(t, done, "%s: answered on overwrite alone", c.name)

		var out []appliedProposal
		p.ackApplied(10, c.applyTerm, &raft_cmdpb.RaftCmdResponse{AppliedIndex: 10}, &out)
		require.Len(t, out, 1, c.name)
		require.Equal(t, c.wantStale, out[0].resp.GetRegionError().GetStaleCommand() != nil, c.name)
	}

	// Never decided (the log does not reach the index again): undetermined
	// after the timeout, never StaleCommand.
	p := &peer{region: testRegion()}
	pr := newProp(10, 2)
	p.pending = []*proposal{pr}
	now := time.Now()
	p.trackProposals(ents(3, 8, 9), now) // log truncated below the proposal
	p.expireOverwritten(now.Add(time.Second), 2*time.Second)
	_, done := answered(pr)
	require.False(t, done)
	p.expireOverwritten(now.Add(3*time.Second), 2*time.Second)
	res, done := answered(pr)
	require.True(t, done)
	require.ErrorIs(t, res.err, ErrUndetermined)
	require.Empty(t, p.pending)
}
