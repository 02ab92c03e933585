package raftstore

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"
)

// Fast failover (failover.go) on the deterministic harness: a killed
// leader's store refuses connections and its followers elect a new leader
// within a couple of ticks; a partitioned or paused leader is never
// pre-empted before the election timeout, while its lease may serve.

// failoverStart writes a few keys and returns them with the region and
// its leader.
func failoverStart(t *testing.T, h *harness) (map[string]string, uint64, *Store) {
	acked := map[string]string{}
	for i := range 5 {
		k, v := fmt.Sprintf("k%03d", i), fmt.Sprintf("v%d", h.rng.IntN(1_000_000))
		h.mustPut(k, v)
		acked[k] = v
	}
	rid := h.regionAt("k000").GetId()
	l := h.leader(rid)
	require.NotNil(t, l)
	return acked, rid, l
}

// firstFollower is the store id of region rid's first follower by store
// id (the one that campaigns first when leader's store is gone).
func firstFollower(h *harness, rid, leader uint64) uint64 {
	var first uint64
	for _, s := range h.replicas(rid) {
		if s.id != leader && (first == 0 || s.id < first) {
			first = s.id
		}
	}
	return first
}

// newLeaderTicks ticks until a running store other than old leads region
// rid in a term above term, and returns how many ticks that took (fails
// after maxTicks).
func newLeaderTicks(h *harness, rid, old, term uint64, maxTicks int) int {
	h.t.Helper()
	for n := 0; n <= maxTicks; n++ {
		if l := h.leader(rid); l != nil && l.id != old && h.term(rid) > term {
			return n
		}
		h.tick()
	}
	h.t.Fatalf("no new leader of region %d within %d ticks\n%s", rid, maxTicks, h.dump())
	return 0
}

// TestHarnessFailoverKilledLeader: the leader's store is killed; its
// followers find it gone at their next message to it (StoreLiveness goes
// every HeartbeatTicks = 2 ticks) and the first of them by store id
// campaigns at once. A new leader is elected within 3 ticks, far below
// the election timeout (10 to 20 ticks), every acknowledged write is
// there, and the region takes writes.
func TestHarnessFailoverKilledLeader(t *testing.T) {
	for _, hibernate := range []bool{false, true} {
		t.Run(fmt.Sprintf("hibernated=%v", hibernate), func(t *testing.T) {
			h := newHarness(t, seedOr(t, 11), 3, nil)
			acked, rid, l := failoverStart(t, h)
			if hibernate {
				// The followers are held by the hibernated leader's lease
				// (support.go): the refusal releases them too.
				h.waitFor("the region hibernates", 100, func() bool { return h.hibernated(rid) })
			}
			term := h.term(rid)
			before := counterValue(t, fastCampaigns)
			h.kill(l.id)
			n := newLeaderTicks(h, rid, l.id, term, 3)
			t.Logf("new leader after %d ticks (election timeout %d ticks)", n, 10)
			require.Equal(t, term+1, h.term(rid), "one forced election, no split vote")
			require.Equal(t, 1.0, counterValue(t, fastCampaigns)-before, "one follower campaigned")
			h.putRetrying("k-after", "v-after")
			acked["k-after"] = "v-after"
			for k, v := range acked {
				require.Equal(t, v, value(t, h.leader(rid), k), "key %s", k)
			}
			// The killed store comes back as a follower and catches up.
			h.restart(l.id)
			h.waitFor("the restarted store catches up", 200, func() bool {
				p := h.stores[l.id].peers[rid]
				return p != nil && p.rn.BasicStatus().Applied >= h.leader(rid).peers[rid].rn.BasicStatus().Applied
			})
			h.requireSurvived(acked)
		})
	}
}

// TestHarnessFailoverKilledLeaderFollowerBehind: the first follower by
// store id misses the last write (its link from the leader is cut), so
// the other follower refuses its forced vote (its log is not up to date).
// That vote request moved the other follower to the new term with no
// leader, so it makes no forced campaign of its own; instead it campaigns
// at once with pre-vote (afterForcedVote) and wins, within 3 ticks rather
// than after an election timeout (17 to 21 ticks without it). Nothing
// acknowledged is lost.
func TestHarnessFailoverKilledLeaderFollowerBehind(t *testing.T) {
	h := newHarness(t, seedOr(t, 12), 3, nil)
	acked, rid, l := failoverStart(t, h)
	first := firstFollower(h, rid, l.id)
	h.net.addFilter(oneWay(l.id, first))
	h.putRetrying("k-late", "v-late") // committed by the leader and the other follower
	acked["k-late"] = "v-late"
	term := h.term(rid)
	h.kill(l.id)
	h.net.clearFilters()
	newLeaderTicks(h, rid, l.id, term, 3)
	require.NotEqual(t, first, h.leader(rid).id, "the follower that is behind cannot win")
	h.requireSurvived(acked)
}

// TestHarnessNoFastFailoverWhileLeaderLives: a partitioned leader (its
// messages are lost, nothing refuses) and a paused (SIGSTOPped) one (its
// connections stay open) are not gone: no follower campaigns before its
// election timeout, so the leader's lease is never pre-empted; after the
// fault the region works and nothing acknowledged is lost.
func TestHarnessNoFastFailoverWhileLeaderLives(t *testing.T) {
	for _, c := range []struct {
		name        string
		seed        uint64
		fault, heal func(h *harness, id uint64)
	}{
		{"partition", 13, func(h *harness, id uint64) { h.net.addFilter(isolate(id)) }, func(h *harness, _ uint64) { h.net.clearFilters() }},
		{"pause", 14, (*harness).pause, (*harness).resume},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, seedOr(t, c.seed), 3, nil)
			acked, rid, l := failoverStart(t, h)
			term := h.term(rid)
			before := counterValue(t, fastCampaigns)
			c.fault(h, l.id)
			noEarlyElection(h, rid, l.id, term)
			require.Zero(t, counterValue(t, fastCampaigns)-before, "no forced campaign")
			c.heal(h, l.id)
			h.putRetrying("k-after", "v-after")
			acked["k-after"] = "v-after"
			h.requireSurvived(acked)
		})
	}
}

// noEarlyElection ticks ElectionTicks-2 times (the real-time bound a
// lease relies on, lease.go) and requires that no other store's peer of
// region rid left term or became a candidate or leader meanwhile.
func noEarlyElection(h *harness, rid, old, term uint64) {
	h.t.Helper()
	for i := range 10 - 2 {
		h.tick()
		for _, s := range h.running() {
			p := s.peers[rid]
			if s.id == old || p == nil {
				continue
			}
			st := p.rn.BasicStatus()
			require.Equal(h.t, term, st.GetTerm(), "tick %d: store %d left term %d", i+1, s.id, term)
			require.Equal(h.t, raft.StateFollower, st.RaftState, "tick %d: store %d", i+1, s.id)
		}
	}
}

// TestHarnessFailoverRestartedFollower: the first follower by store id
// restarted a moment before the leader's store is killed and missed the
// last write, so its forced campaign fails, and it still refuses votes (a restarted peer does, for an election timeout, to
// protect a lease it may have acknowledged). That lease can only be the
// gone leader's, so it votes again at once and a new leader is elected
// within 3 ticks (before, the other follower's campaign was refused
// until the restarted one's election timeout passed).
func TestHarnessFailoverRestartedFollower(t *testing.T) {
	h := newHarness(t, seedOr(t, 15), 3, nil)
	acked, rid, l := failoverStart(t, h)
	first := firstFollower(h, rid, l.id)
	h.stop(first)
	h.restart(first)
	h.waitFor("the restarted follower knows its leader", 5, func() bool {
		return h.stores[first].peers[rid].rn.BasicStatus().Lead != 0
	})
	require.True(t, h.stores[first].peers[rid].mayHaveAcked, "still within its vote-refusing window")
	// It also misses the last write, so its own forced campaign fails and
	// the other follower's must get its vote.
	h.net.addFilter(oneWay(l.id, first))
	h.putRetrying("k-late", "v-late")
	acked["k-late"] = "v-late"
	term := h.term(rid)
	h.kill(l.id)
	h.net.clearFilters()
	newLeaderTicks(h, rid, l.id, term, 3)
	h.putRetrying("k-after", "v-after")
	acked["k-after"] = "v-after"
	h.requireSurvived(acked)
}

// TestHarnessFastFailoverDisabled: with DisableFastFailover (a network
// whose firewalls forge resets), a refusal is no proof: the followers of
// a killed leader wait out the election timeout as for a partition, and
// then elect a new leader.
func TestHarnessFastFailoverDisabled(t *testing.T) {
	h := newHarness(t, seedOr(t, 16), 3, func(c *Config) { c.DisableFastFailover = true })
	acked, rid, l := failoverStart(t, h)
	term := h.term(rid)
	h.kill(l.id)
	noEarlyElection(h, rid, l.id, term)
	newLeaderTicks(h, rid, l.id, term, 60)
	h.putRetrying("k-after", "v-after")
	acked["k-after"] = "v-after"
	h.requireSurvived(acked)
}
