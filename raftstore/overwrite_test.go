package raftstore

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/proto/raft_serverpb"
)

// TestHarnessOverwrittenEntriesAppliedOnlyOncePersisted (5 voters): leader
// A appends three writes that reach C only, so they never commit; B, D and
// E elect X, which commits its own entries at those indexes. When X then
// reaches C, one append overwrites C's three entries and commits them: C's
// Ready carries them both as new entries and as committed ones, at indexes
// C's log already held. The loop applies committed entries already in the
// local log before it fsyncs the Ready's new ones; these are not, although
// their indexes are. C is killed (kill -9: its unsynced writes survive)
// right after its first apply round and restarted. Applying X's entries
// before persisting them left C with an applied index over A's entries in
// its log: restarted, it took them for committed and panicked on X's
// append ("conflict with committed entry"). Every write X acknowledged
// must be on every replica, and they must hash equal.
func TestHarnessOverwrittenEntriesAppliedOnlyOncePersisted(t *testing.T) {
	h := newCrashHarness(t, seedOr(t, 5), 5, nil)
	rid := h.regionAt("k").GetId()
	h.addVoter(rid, h.ids[3])
	h.addVoter(rid, h.ids[4])
	a := h.leader(rid)
	var c *Store
	for _, id := range h.ids {
		if id != a.id {
			c = h.stores[id]
			break
		}
	}

	var phase atomic.Int32
	phase.Store(1)
	h.net.addFilter(func(from, to uint64, _ *raft_serverpb.RaftMessage, _ *rand.Rand) (bool, uint64) {
		touches := func(id uint64) bool { return from == id || to == id }
		switch phase.Load() {
		case 1: // A and C talk to each other only
			return touches(a.id) != touches(c.id), 0
		default: // A cut off; C rejoins the other three
			return touches(a.id), 0
		}
	})
	r := h.regionAt("k")
	var stale []*asyncResult
	for i := range 3 {
		stale = append(stale, h.propose(a, putCmd(r, fmt.Sprintf("a%d", i), "lost")))
	}
	before := a.peers[rid].ps.lastIndex
	h.settle()
	last := a.peers[rid].ps.lastIndex
	require.Equal(t, before+3, last, "A appended its three writes")
	h.waitFor("A's entries on C", 20, func() bool { return c.peers[rid].ps.lastIndex >= last })

	h.waitFor("B, D and E elect a leader", 200, func() bool {
		l := h.leader(rid)
		return l != nil && l != a && l != c
	})
	x := h.leader(rid)
	acked := map[string]string{}
	for i := range 5 {
		k, v := fmt.Sprintf("x%d", i), fmt.Sprintf("v%d", i)
		res := h.propose(x, putCmd(h.regionAt("k"), k, v))
		h.waitFor("X's write of "+k, 50, func() bool { return res.done })
		require.NoError(t, res.err)
		require.Nil(t, res.resp.GetRegionError())
		acked[k] = v
	}
	require.Less(t, c.peers[rid].ps.apply.applied, last-2, "C applied nothing of A's entries")
	require.GreaterOrEqual(t, x.peers[rid].ps.apply.applied, last, "X committed entries at A's indexes")

	h.killAt(c.id, "apply", 0, 3)
	phase.Store(2)
	h.waitFor("C killed after its first apply round and restarted", 50, func() bool {
		_, armed := h.armed[c.id]
		_, down := h.down[c.id]
		return !armed && !down
	})
	h.waitFor("C caught up with X", 100, func() bool {
		p := h.stores[c.id].peers[rid]
		return p != nil && p.ps.apply.applied >= x.peers[rid].ps.apply.applied
	})
	h.net.clearFilters()
	h.requireSurvived(acked)
	for _, res := range stale {
		require.True(t, !res.done || res.err != nil || res.resp.GetRegionError() != nil,
			"a write that reached only A and C was acknowledged")
	}
	for i := range 3 {
		for _, s := range h.replicas(rid) {
			require.Empty(t, value(t, s, fmt.Sprintf("a%d", i)), "store %d", s.id)
		}
	}
}
