package raftstore

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"

	"github.com/stratadb/strata/proto/raft_serverpb"
)

// Hibernation scenarios on the deterministic harness (hibernate.go).

// hibernated reports whether every running replica of region hibernates.
func (h *harness) hibernated(regionID uint64) bool {
	rs := h.replicas(regionID)
	for _, s := range rs {
		if !s.peers[regionID].hibernated {
			return false
		}
	}
	return len(rs) > 0
}

// ticking counts the peers store s ticks (awake peers that did not
// hibernate since the last tick).
func ticking(s *Store) int {
	n := 0
	for _, p := range s.awake {
		if !p.hibernated && !p.destroyed {
			n++
		}
	}
	return n
}

// raftTraffic counts the raft messages (not raftstore extras) of region
// the network carries from now on.
func (h *harness) raftTraffic(regionID uint64) *atomic.Int64 {
	var n atomic.Int64
	h.net.addFilter(func(_, _ uint64, m *raft_serverpb.RaftMessage, _ *rand.Rand) (bool, uint64) {
		if m.GetRegionId() == regionID && m.GetExtra() == nil {
			n.Add(1)
		}
		return false, 0
	})
	return &n
}

// TestHarnessHibernateIdleRegion: an idle region's peers all stop ticking
// and exchange no raft message for many election timeouts; a write wakes
// the group and is replicated everywhere; reads are served under the
// support lease without waking it, until that lapses.
func TestHarnessHibernateIdleRegion(t *testing.T) {
	h := newHarness(t, 71, 3, nil)
	h.writeKeys("k", 5)
	r := h.regionAt("k000")
	rid := r.GetId()
	h.waitFor("the region hibernates", 100, func() bool { return h.hibernated(rid) })
	for _, s := range h.running() {
		require.Zero(t, ticking(s), "store %d ticks no peer", s.id)
	}
	l := h.leader(rid)
	d := l.peers[rid].delegate.Load()
	require.NotNil(t, d, "the followers' acks give the hibernated leader a support lease")
	require.NotNil(t, d.support, "a hibernated leader publishes a support lease")
	term := h.term(rid)

	// Reads are served under the support lease all along, without waking
	// the region: no raft message, no tick.
	traffic := h.raftTraffic(rid)
	for i := range 100 { // ten election timeouts
		h.tick()
		ok, done := readAt(l, h.regionAt("k000"))()
		require.True(t, ok && done, "read %d served at once under the support lease", i)
	}
	require.Zero(t, traffic.Load(), "a hibernated region sends no raft message")
	require.True(t, h.hibernated(rid))
	require.Equal(t, l, h.leader(rid))
	require.Equal(t, term, h.term(rid))
	for _, s := range h.running() {
		require.Zero(t, ticking(s), "store %d ticks no peer", s.id)
	}

	// With the support of the followers' stores gone (they no longer
	// answer), the lease lapses: a read wakes the leader and goes through
	// ReadIndex (heartbeats), which wakes the rest.
	h.net.addFilter(func(from, to uint64, m *raft_serverpb.RaftMessage, _ *rand.Rand) (bool, uint64) {
		return m.GetExtra().GetType() == raft_serverpb.ExtraMessageType_StoreLivenessResp, 0
	})
	h.waitFor("the support lease lapses", 20, func() bool {
		d := l.peers[rid].delegate.Load()
		return d == nil || d.remaining(l) <= 0
	})
	served := readAt(l, h.regionAt("k000"))
	h.waitFor("the read after the lease lapsed", 20, func() bool { ok, done := served(); return done && ok })
	require.Positive(t, traffic.Load(), "the read needed a ReadIndex round")
	h.net.clearFilters()
	for _, s := range h.replicas(rid) {
		require.False(t, s.peers[rid].hibernated, "store %d woke on the leader's heartbeat", s.id)
	}
	h.waitFor("the region hibernates again", 100, func() bool { return h.hibernated(rid) })

	h.mustPut("k001", "after-sleep")
	for _, s := range h.replicas(rid) {
		h.waitFor("the write reaches every replica", 20, func() bool { return value(t, s, "k001") == "after-sleep" })
	}
	require.Equal(t, term, h.term(rid), "waking needs no election")
	h.requireConsistent(rid)
}

// TestHarnessHibernatedLeaderStoreDies: the leader's store of a hibernated
// region stops (or is cut off by a partition). The followers never time
// out by ticks; store liveness finds the store down, wakes them, and they
// elect a leader that takes writes. After the partition heals, the old
// leader follows the new one.
func TestHarnessHibernatedLeaderStoreDies(t *testing.T) {
	for _, partition := range []bool{false, true} {
		t.Run(fmt.Sprintf("partition=%v", partition), func(t *testing.T) {
			h := newHarness(t, 72, 3, nil)
			h.writeKeys("k", 5)
			rid := h.regionAt("k000").GetId()
			h.waitFor("the region hibernates", 100, func() bool { return h.hibernated(rid) })
			old := h.leader(rid)
			oldTerm := h.term(rid)
			if partition {
				h.net.addFilter(isolate(old.id))
			} else {
				h.stop(old.id)
			}
			h.waitFor("a new leader", 100, func() bool {
				for _, s := range h.running() {
					if p := s.peers[rid]; s != old && p != nil && p.rn.BasicStatus().RaftState == raft.StateLeader {
						return true
					}
				}
				return false
			})
			var nl *Store
			for _, s := range h.running() {
				if p := s.peers[rid]; s != old && p != nil && p.rn.BasicStatus().RaftState == raft.StateLeader {
					nl = s
				}
			}
			require.Greater(t, nl.peers[rid].rn.BasicStatus().GetTerm(), oldTerm)
			res := h.propose(nl, putCmd(nl.peers[rid].region, "k002", "new-leader"))
			h.waitFor("a write through the new leader", 50, func() bool { return res.done })
			require.NoError(t, res.err)
			require.Nil(t, res.resp.GetRegionError())
			if !partition {
				return
			}
			// The old leader, cut off, may not serve a read: it holds no lease.
			served := readAt(old, old.peers[rid].region)
			for range 20 {
				h.tick()
			}
			ok, _ := served()
			require.False(t, ok, "no read through the partitioned old leader")
			h.net.clearFilters()
			h.waitFor("the old leader follows", 100, func() bool {
				st := old.peers[rid].rn.BasicStatus()
				return st.RaftState == raft.StateFollower && st.Lead == nl.peers[rid].meta.GetId()
			})
			h.requireConsistent(rid)
			require.Equal(t, "new-leader", value(t, old, "k002"))
		})
	}
}

// TestHarnessFollowerMissesHibernate: a follower that never gets the
// Hibernate message keeps ticking and campaigns (PreVote), which wakes the
// group; the leader stays leader in the same term (the others reject the
// pre-vote), and writes keep working.
func TestHarnessFollowerMissesHibernate(t *testing.T) {
	h := newHarness(t, 73, 3, nil)
	h.writeKeys("k", 3)
	rid := h.regionAt("k000").GetId()
	l := h.leader(rid)
	term := h.term(rid)
	deaf := h.follower(rid)
	h.net.addFilter(func(_, to uint64, m *raft_serverpb.RaftMessage, _ *rand.Rand) (bool, uint64) {
		return to == deaf.id && m.GetExtra().GetType() == raft_serverpb.ExtraMessageType_Hibernate, 0
	})
	slept, woke := 0, 0
	was := false
	for range 200 {
		h.tick()
		is := l.peers[rid].hibernated
		switch {
		case is && !was:
			slept++
		case was && !is:
			woke++
		}
		was = is
		require.False(t, deaf.peers[rid].hibernated, "the deaf follower never hibernates")
	}
	require.Positive(t, slept, "the leader hibernated")
	require.Equal(t, l, h.leader(rid))
	require.Equal(t, term, h.term(rid), "pre-votes of the deaf follower disturb no term")
	require.Positive(t, woke, "the deaf follower's campaign woke the leader")
	h.mustPut("k000", "still-works")
	h.requireConsistent(rid)
}

// TestHarnessManyRegionsIdleLoop: with many regions, once they are idle
// no peer ticks and an idle tick polls nothing; writing one region wakes
// only that region.
func TestHarnessManyRegionsIdleLoop(t *testing.T) {
	h := newHarness(t, 74, 3, nil)
	for i := range 20 {
		res := h.split(fmt.Sprintf("r%02d", i))
		h.waitFor("split", 100, func() bool { return res.done })
		require.NoError(t, res.err)
		require.Nil(t, res.resp.GetRegionError())
	}
	h.waitFor("every region hibernates", 200, func() bool {
		for _, s := range h.running() {
			if ticking(s) > 0 {
				return false
			}
		}
		return true
	})
	for _, s := range h.running() {
		require.Len(t, s.peers, 21)
		s.iterate(true)
		require.Empty(t, s.active, "store %d: an idle tick touches no peer", s.id)
	}
	h.settle()
	h.mustPut("r05x", "v")
	rid := h.regionAt("r05x").GetId()
	for _, s := range h.running() {
		for id, p := range s.peers {
			if id != rid {
				require.True(t, p.hibernated, "store %d region %d stays asleep", s.id, id)
			}
		}
	}
	// And the woken region falls asleep again.
	h.waitFor("the written region hibernates again", 100, func() bool { return h.hibernated(rid) })
}

// TestHarnessStoreStallRehibernates: the leader's store of a hibernated
// region goes silent just long enough to be found down (a stalled loop),
// then talks again before the woken followers campaign: no election
// happens and the region hibernates again.
func TestHarnessStoreStallRehibernates(t *testing.T) {
	h := newHarness(t, 75, 3, nil)
	h.writeKeys("k", 3)
	rid := h.regionAt("k000").GetId()
	h.waitFor("the region hibernates", 100, func() bool { return h.hibernated(rid) })
	l := h.leader(rid)
	term := h.term(rid)
	// Only the leader's store is silent (its loop stalled): it still
	// hears the others, so it finds none of them down.
	for _, s := range h.replicas(rid) {
		if s != l {
			h.net.addFilter(oneWay(l.id, s.id))
		}
	}
	h.waitFor("the followers wake", 2*liveTimeoutElections*10, func() bool {
		for _, s := range h.replicas(rid) {
			if s != l && s.peers[rid].hibernated {
				return false
			}
		}
		return true
	})
	require.True(t, l.peers[rid].hibernated, "the leader found no store down")
	h.net.clearFilters()
	h.waitFor("the followers sleep again", 3, func() bool { return h.hibernated(rid) })
	for range 100 {
		h.tick()
	}
	require.Equal(t, l, h.leader(rid))
	require.Equal(t, term, h.term(rid), "no election")
	require.True(t, h.hibernated(rid))
	h.mustPut("k000", "after-stall")
	h.requireConsistent(rid)
}

// TestHarnessReadRegionHibernates: a region only read (as a SQL node reads
// its schema version every few ticks) hibernates like an idle one, and
// every read is served at once, including the ones that arrive between the
// leader falling asleep and its followers' acks: no read wakes the group.
func TestHarnessReadRegionHibernates(t *testing.T) {
	for _, every := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("every=%d", every), func(t *testing.T) {
			h := newHarness(t, 73, 3, nil)
			h.writeKeys("k", 5)
			rid := h.regionAt("k000").GetId()
			l := h.leader(rid)
			var pending []func() (bool, bool)
			read := func() {
				pending = append(pending, readAt(l, h.regionAt("k000")))
			}
			slept := 0
			for i := range 300 {
				if i%every == 0 {
					read()
				}
				h.tick()
				for _, served := range pending {
					ok, done := served()
					require.True(t, done, "read answered within a tick")
					require.True(t, ok, "read served")
				}
				pending = pending[:0]
				if h.hibernated(rid) {
					slept++
				} else if slept > 0 {
					t.Fatalf("tick %d: the region woke after %d hibernated ticks\n%s", i, slept, h.dump())
				}
			}
			require.Positive(t, slept, "the region hibernated")
			require.Equal(t, l, h.leader(rid))
		})
	}
}

// TestHarnessHibernatedHeartbeatPeriod: a hibernated leader reports its
// region to PD once per HibernatedHeartbeatInterval, also when its store
// leads fewer regions than an interval has ticks (it used to report them
// every few ticks: a small cluster's one region ten times a second).
func TestHarnessHibernatedHeartbeatPeriod(t *testing.T) {
	h := newHarness(t, 74, 3, func(c *Config) { c.HibernatedHeartbeatInterval = 2 * time.Second }) // 20 ticks
	h.writeKeys("k", 5)
	rid := h.regionAt("k000").GetId()
	h.waitFor("the region hibernates", 100, func() bool { return h.hibernated(rid) })
	h.tick()
	before := h.regionHeartbeats[rid]
	for range 200 {
		h.tick()
	}
	require.True(t, h.hibernated(rid))
	got := h.regionHeartbeats[rid] - before
	require.GreaterOrEqual(t, got, 9, "about one heartbeat per 20 ticks")
	require.LessOrEqual(t, got, 11, "about one heartbeat per 20 ticks")
}
