package raftstore

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/proto/pdpb"
)

// TestHarnessCrashAtEveryPersistenceStep crashes stores as a power loss
// would (the file system keeps only what was synced) right after each
// persistence step a region meets (persistSteps: the raft log written,
// an apply round, a received snapshot's files, their ingest, the install
// marked done, a region created from PD, a removed peer's tombstone):
// four crashes per step (one for region-create, which only the bootstrap
// reaches), each of a random store at a random occurrence of the step,
// under writes, splits, removals and re-additions of the victim's peers,
// and partitions that make it catch up by snapshot (log GC is
// aggressive). From the crash point on the store sends and receives
// nothing, as a dead process; 1-10 ticks later it restarts from the crash
// image. Then every acknowledged write is on every replica of its region,
// replicas agree, and every region's replicas hash equal through raft.
func TestHarnessCrashAtEveryPersistenceStep(t *testing.T) {
	for i, step := range persistSteps {
		t.Run(step, func(t *testing.T) {
			seed := seedOr(t, 40+uint64(i))
			crashes, maxSkip := 4, 3
			switch step {
			case "raft-log", "apply":
				maxSkip = 40
			case "region-create":
				crashes, maxSkip = 1, 1
			}
			var victim uint64
			arm := func(h *harness) {
				victim = h.ids[h.rng.IntN(len(h.ids))]
				h.crashAt(victim, step, h.rng.IntN(maxSkip), 1+h.rng.IntN(10))
			}
			var h *harness
			if step == "region-create" {
				h = startHarness(t, seed, 3, aggressiveLogGC, true, arm)
			} else {
				h = newCrashHarness(t, seed, 3, aggressiveLogGC)
			}
			acked := map[string]string{}
			key := func() string { return fmt.Sprintf("k%03d", h.rng.IntN(200)) }
			put := func(n int) {
				for range n {
					k, v := key(), fmt.Sprintf("v%d", h.rng.Uint32())
					h.putRetrying(k, v)
					acked[k] = v
				}
			}
			for c := range crashes {
				if c > 0 || step != "region-create" {
					arm(h)
				}
				for round := 0; ; round++ {
					if _, armed := h.armed[victim]; !armed {
						break
					}
					require.Less(t, round, 80, "store %d never reached step %s", victim, step)
					h.crashLoad(round, victim, key, put)
				}
				h.waitFor("the restart", 20, func() bool { _, down := h.down[victim]; return !down })
				put(3)
			}
			regions := h.requireSurvived(acked)
			t.Logf("%d crashes after %s; %d keys acknowledged, %d regions hash equal", crashes, step, len(acked), regions)
		})
	}
}

// crashLoad is round's share of the load that drives a region through
// every persistence step: writes, a split, the victim's peer of a region
// removed (a tombstone) and added back (a snapshot), the victim cut off
// while the log moves past it (it catches up by snapshot).
func (h *harness) crashLoad(round int, victim uint64, key func() string, put func(int)) {
	switch round % 4 {
	case 0:
		put(5)
	case 1:
		if k := key(); h.ledRegionAt(k) != nil && string(h.regionAt(k).GetStartKey()) != k {
			res := h.split(k)
			h.waitFor("split answered", 100, func() bool { return res.done })
		}
	case 2:
		r := h.ledRegionAt(key())
		if s := h.running(); r != nil && h.stores[victim] != nil && slices.Contains(s, h.stores[victim]) && peerOf(h.stores[victim], r.GetId()) != nil {
			h.removePeer(r.GetId(), h.stores[victim])
			h.addVoter(r.GetId(), victim)
		}
	default:
		// Leaders move off the victim before it is cut off: a proposal
		// to a leader cut off is answered only once it hears of its
		// successor (a client would time out; putRetrying waits).
		if s := h.stores[victim]; s != nil && slices.Contains(h.running(), s) {
			h.waitFor("leaders off the victim", 200, func() bool {
				led := false
				for _, r := range s.meta.sorted() {
					if h.leader(r.GetId()) == s {
						led = true
						h.pdStep(r.GetId(), &pdpb.RegionHeartbeatResponse{TransferLeader: &pdpb.TransferLeader{Peer: peerOf(h.follower(r.GetId()), r.GetId())}})
					}
				}
				return !led
			})
		}
		h.net.addFilter(isolate(victim))
		put(15)
		h.net.clearFilters()
		for range 5 {
			h.tick()
		}
	}
}
