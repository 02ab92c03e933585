package raftstore

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"

	"github.com/stratadb/strata/proto/raft_serverpb"
)

// Hibernated leases (support.go) on the deterministic harness: a leader
// that serves reads while hibernated, under its followers' stores'
// support, never serves one after another peer could have become leader.

// leaseWatch issues a read through every peer that believes it leads a
// watched region, every tick, and checks each served read against the
// elections seen: a read served by a peer in term T at tick k is stale if
// a leader of a later term was seen at or before tick k (strict: a read
// and an election seen in the same tick count as stale).
type leaseWatch struct {
	h       *harness
	regions []uint64
	// elected[region][term] is the first tick a leader of term was seen.
	elected map[uint64]map[uint64]uint64
	pending []watchedRead
	served  map[uint64]int // reads served, by region
	// last[region][term] is the tick of the last read served in term.
	last map[uint64]map[uint64]uint64
}

type watchedRead struct {
	region, store, term uint64
	res                 func() (bool, bool)
}

func newLeaseWatch(h *harness, regions ...uint64) *leaseWatch {
	w := &leaseWatch{h: h, regions: regions, elected: map[uint64]map[uint64]uint64{}, served: map[uint64]int{}, last: map[uint64]map[uint64]uint64{}}
	w.observe()
	return w
}

// observe notes the leaders of every watched region at the current tick.
func (w *leaseWatch) observe() {
	for _, rid := range w.regions {
		for _, s := range w.h.running() {
			p := s.peers[rid]
			if p == nil {
				continue
			}
			st := p.rn.BasicStatus()
			if st.RaftState != raft.StateLeader {
				continue
			}
			if w.elected[rid] == nil {
				w.elected[rid] = map[uint64]uint64{}
			}
			if _, ok := w.elected[rid][st.GetTerm()]; !ok {
				w.elected[rid][st.GetTerm()] = w.h.ticks
			}
		}
	}
}

// check fails if a read in term term served at tick k was stale.
func (w *leaseWatch) check(r watchedRead, k uint64) {
	w.served[r.region]++
	if w.last[r.region] == nil {
		w.last[r.region] = map[uint64]uint64{}
	}
	w.last[r.region][r.term] = k
	for term, at := range w.elected[r.region] {
		require.False(w.h.t, term > r.term && at <= k,
			"store %d served a read of region %d in term %d at tick %d, after a leader of term %d was seen at tick %d",
			r.store, r.region, r.term, k, term, at)
	}
}

// step reads through every believed leader, ticks once, and checks.
func (w *leaseWatch) step() {
	for _, rid := range w.regions {
		for _, s := range w.h.running() {
			p := s.peers[rid]
			if p == nil || p.rn.BasicStatus().RaftState != raft.StateLeader {
				continue
			}
			r := watchedRead{region: rid, store: s.id, term: p.rn.BasicStatus().GetTerm(), res: readAt(s, p.region)}
			if ok, done := r.res(); done {
				if ok {
					w.check(r, w.h.ticks) // served at once (local lease)
				}
				continue
			}
			w.pending = append(w.pending, r)
		}
	}
	w.h.tick()
	w.observe()
	kept := w.pending[:0]
	for _, r := range w.pending {
		ok, done := r.res()
		switch {
		case !done:
			kept = append(kept, r)
		case ok:
			w.check(r, w.h.ticks)
		}
	}
	w.pending = kept
}

func (w *leaseWatch) steps(n int) {
	for range n {
		w.step()
	}
}

type hibernatedLeaseCut struct {
	name string
	// cut applies the fault to leader l with followers f1, f2.
	cut func(h *harness, l, f1, f2 uint64)
	// newLeader: the fault must elect a new leader; else the old one
	// must keep leading and serving.
	newLeader bool
}

// hibernatedLeaseCuts are the faults TestHarnessHibernatedLeaseNoStaleRead
// applies to a hibernated leader serving reads.
var hibernatedLeaseCuts = []hibernatedLeaseCut{
	{"isolated", func(h *harness, l, _, _ uint64) { h.net.addFilter(isolate(l)) }, true},
	{"isolated_refused", func(h *harness, l, _, _ uint64) {
		// Connections refused: every store learns at once that the
		// other side is unreachable (the fastest way to be found down).
		h.net.addFilter(isolate(l))
		h.net.refuse = func(from, to uint64) bool { return (from == l) != (to == l) }
	}, true},
	{"leader_cannot_send", func(h *harness, l, f1, f2 uint64) {
		h.net.addFilter(oneWay(l, f1))
		h.net.addFilter(oneWay(l, f2))
	}, true},
	{"leader_cannot_hear", func(h *harness, l, f1, f2 uint64) {
		h.net.addFilter(oneWay(f1, l))
		h.net.addFilter(oneWay(f2, l))
	}, true},
	{"one_follower_cut", func(h *harness, l, _, f2 uint64) {
		h.net.addFilter(oneWay(l, f2))
		h.net.addFilter(oneWay(f2, l))
	}, false},
	{"one_follower_cut_region_only", func(h *harness, l, _, f2 uint64) {
		// f2's store stops hearing the leader's, but the leader's
		// store keeps hearing f2's store (only the region's messages
		// are lost that way): nothing wakes the leader, f2 finds its
		// store down and campaigns, and only the other follower's
		// hold keeps it from electing f2 while the leader serves.
		h.net.addFilter(oneWay(l, f2))
		h.net.addFilter(func(from, to uint64, m *raft_serverpb.RaftMessage, _ *rand.Rand) (bool, uint64) {
			return from == f2 && to == l && m.GetRegionId() != 0, 0
		})
	}, false},
	{"one_follower_cut_other_restarts", func(h *harness, l, f1, f2 uint64) {
		h.net.addFilter(oneWay(l, f2))
		h.net.addFilter(oneWay(f2, l))
		h.crash(f1)
		h.restart(f1)
	}, false},
}

// TestHarnessHibernatedLeaseNoStaleRead: a hibernated leader serving reads
// under store support, cut off in every way a network can cut it (both
// ways, each direction alone, from one follower only) or with a
// follower's store restarted, never serves a read after a new leader was
// elected; where a quorum still supports it, no election happens and it
// keeps serving.
func TestHarnessHibernatedLeaseNoStaleRead(t *testing.T) {
	for _, tc := range hibernatedLeaseCuts {
		t.Run(tc.name, func(t *testing.T) {
			// Several seeds: whether a campaign meets a follower's
			// vote at the wrong moment depends on the election jitter.
			seed := seedOr(t, 31)
			for i := range uint64(8) {
				hibernatedLeaseFault(t, seed+i, tc.cut, tc.newLeader)
			}
		})
	}
}

func hibernatedLeaseFault(t *testing.T, seed uint64, cut func(h *harness, l, f1, f2 uint64), wantNewLeader bool) *harness {
	h := newCrashHarness(t, seed, 3, nil)
	h.writeKeys("k", 5)
	rid := h.regionAt("k000").GetId()
	h.waitFor("the region hibernates", 100, func() bool { return h.hibernated(rid) })
	old := h.leader(rid)
	oldTerm := h.term(rid)
	w := newLeaseWatch(h, rid)
	w.steps(5)
	require.Equal(t, 5, w.served[rid], "the hibernated leader serves every read")
	require.True(t, h.hibernated(rid), "reads under the support lease do not wake the region")

	var fs []uint64
	for _, s := range h.replicas(rid) {
		if s != old {
			fs = append(fs, s.id)
		}
	}
	cut(h, old.id, fs[0], fs[1])
	start := h.ticks
	w.steps(int(10 * time.Second / harnessTick))
	var newAt uint64
	for term, at := range w.elected[rid] {
		if term > oldTerm && (newAt == 0 || at < newAt) {
			newAt = at
		}
	}
	if wantNewLeader {
		require.NotZero(t, newAt, "no new leader within 10 s")
		require.Less(t, w.last[rid][oldTerm], newAt, "the old leader served a read after the new leader was elected")
		t.Logf("seed %d: %d reads served, the old leader's last at tick %d; new leader at tick %d", seed, w.served[rid], w.last[rid][oldTerm]-start, newAt-start)
	} else {
		require.Zero(t, newAt, "no election while a quorum supports the leader")
		require.Equal(t, old, h.leader(rid))
		require.Greater(t, w.last[rid][oldTerm], start+90, "the leader kept serving")
		t.Logf("seed %d: %d reads served, no election", seed, w.served[rid])
	}
	h.net.clearFilters()
	w.steps(50)
	h.waitFor("a leader after healing", 100, func() bool { return h.leader(rid) != nil })
	h.mustPut("k001", "healed")
	h.requireConsistent(rid)
	return h
}

// TestHarnessHibernatedLeaseFaults: seeded rounds of faults (partitions
// both ways and one-way, a follower cut, crashes and restarts of any
// store, writes, waits) over several hibernating regions, with reads
// through every believed leader every tick: no read is served after a
// later term's leader was seen, and every replica ends identical.
func TestHarnessHibernatedLeaseFaults(t *testing.T) {
	for _, n := range []int{3, 5} {
		t.Run(fmt.Sprintf("%d_stores", n), func(t *testing.T) { hibernatedLeaseFaults(n)(t, seedOr(t, 41)) })
	}
}

func hibernatedLeaseFaults(n int) func(t *testing.T, seed uint64) *harness {
	return func(t *testing.T, seed uint64) *harness {
		h := newCrashHarness(t, seed, n, nil)
		h.writeKeys("k", 9)
		for _, k := range []string{"k003", "k006"} {
			res := h.split(k)
			h.waitFor("split", 100, func() bool { return res.done })
		}
		var regions []uint64
		for _, k := range []string{"k000", "k003", "k006"} {
			regions = append(regions, h.regionAt(k).GetId())
		}
		w := newLeaseWatch(h, regions...)
		var ops []string
		defer func() {
			if t.Failed() {
				t.Logf("operations: %v", ops)
			}
		}()
		for range 12 {
			// Let the regions hibernate (or not) for a while first.
			w.steps(10 + h.rng.IntN(40))
			i := h.rng.IntN(len(h.ids))
			a, b := h.ids[i], h.ids[(i+1+h.rng.IntN(len(h.ids)-1))%len(h.ids)]
			ticks := 5 + h.rng.IntN(60)
			switch op := h.rng.IntN(6); op {
			case 0:
				h.net.addFilter(isolate(a))
				ops = append(ops, fmt.Sprintf("isolate %d for %d", a, ticks))
			case 1:
				h.net.addFilter(oneWay(a, b))
				ops = append(ops, fmt.Sprintf("drop %d->%d for %d", a, b, ticks))
			case 2:
				h.net.addFilter(oneWay(a, b))
				h.net.addFilter(oneWay(b, a))
				ops = append(ops, fmt.Sprintf("cut %d<->%d for %d", a, b, ticks))
			case 3:
				h.crash(a)
				ops = append(ops, fmt.Sprintf("crash %d for %d", a, ticks))
			case 4:
				k := fmt.Sprintf("k%03d", h.rng.IntN(9))
				h.putRetrying(k, fmt.Sprintf("v%d", h.rng.IntN(1000)))
				ops = append(ops, "put "+k)
			default:
				ops = append(ops, fmt.Sprintf("wait %d", ticks))
			}
			w.steps(ticks)
			h.net.clearFilters()
			for _, id := range h.ids {
				if h.stores[id] == nil {
					h.restart(id)
				}
			}
		}
		w.steps(60)
		for _, rid := range regions {
			h.waitFor("a leader", 100, func() bool { return h.leader(rid) != nil })
		}
		h.requireAllConsistent()
		served := 0
		for _, rid := range regions {
			served += w.served[rid]
		}
		t.Logf("seed %d: %d operations %v, %d reads served", seed, len(ops), ops, served)
		return h
	}
}

// TestSupportExpiry: the hibernated lease lasts until the need-th latest
// grant among the acked stores whose grant is in the acked epoch.
func TestSupportExpiry(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	grants := map[uint64]supportGrant{2: {epoch: 7, expiry: at(300)}, 3: {epoch: 9, expiry: at(500)}, 4: {epoch: 4, expiry: at(100)}}
	for _, tc := range []struct {
		name string
		acks []supportAck
		need int
		want time.Time
	}{
		{"one of one", []supportAck{{peer: 12, store: 2, epoch: 7}}, 1, at(300)},
		{"the latest of two", []supportAck{{peer: 12, store: 2, epoch: 7}, {peer: 13, store: 3, epoch: 9}}, 1, at(500)},
		{"the second latest when two are needed", []supportAck{{peer: 12, store: 2, epoch: 7}, {peer: 13, store: 3, epoch: 9}, {peer: 14, store: 4, epoch: 4}}, 2, at(300)},
		{"an ack of an older epoch does not count", []supportAck{{peer: 12, store: 2, epoch: 6}, {peer: 13, store: 3, epoch: 9}}, 2, time.Time{}},
		{"a store without a grant does not count", []supportAck{{peer: 15, store: 5, epoch: 1}}, 1, time.Time{}},
		{"no quorum needed: no lease", nil, 0, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, supportExpiry(tc.acks, tc.need, grants))
		})
	}
}
