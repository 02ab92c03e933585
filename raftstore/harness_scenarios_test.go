package raftstore

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"

	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/pdpb"
	"github.com/stratadb/strata/proto/raft_serverpb"
)

// Scenarios of issue 7 on the deterministic harness (harness_test.go).
// Each logs its seed; -harness.seed (or HARNESS_SEED) replays the run.

// writeKeys writes n keys with the given prefix and seeded values.
func (h *harness) writeKeys(prefix string, n int) {
	h.t.Helper()
	for i := range n {
		h.mustPut(fmt.Sprintf("%s%03d", prefix, i), fmt.Sprintf("v%d", h.rng.IntN(1_000_000)))
	}
}

// requireSurvived checks, after faults, that the replicas of every region
// agree, that every acknowledged write (key: value) is on every replica of
// its region, and that every region's replicas hash equal through raft;
// it returns the number of regions.
func (h *harness) requireSurvived(acked map[string]string) int {
	h.t.Helper()
	h.requireAllConsistent()
	for _, k := range slices.Sorted(maps.Keys(acked)) { // waitFor may tick: one order
		v := acked[k]
		var r *metapb.Region
		h.waitFor("a leader for "+k, 100, func() bool { r = h.ledRegionAt(k); return r != nil })
		for _, s := range h.replicas(r.GetId()) {
			require.Equal(h.t, v, value(h.t, s, k), "store %d key %s", s.id, k)
		}
	}
	regions := map[uint64]bool{}
	for _, s := range h.running() {
		for _, r := range s.meta.sorted() {
			if !regions[r.GetId()] {
				regions[r.GetId()] = true
				h.checkHash(r.GetId()) // through raft, on every replica
			}
		}
	}
	return len(regions)
}

// requireAllConsistent checks every region the leaders know.
func (h *harness) requireAllConsistent() {
	h.t.Helper()
	seen := map[uint64]bool{}
	for _, s := range h.running() {
		for _, r := range s.meta.sorted() {
			if !seen[r.GetId()] {
				seen[r.GetId()] = true
				h.requireConsistent(r.GetId())
			}
		}
	}
}

func peerOf(s *Store, regionID uint64) *metapb.Peer {
	if p := s.peers[regionID]; p != nil {
		return p.meta
	}
	return nil
}

// TestHarnessBasic: three stores elect a leader, replicate writes, and
// every replica hashes equal (directly and through ComputeHash/VerifyHash).
func TestHarnessBasic(t *testing.T) {
	h := newHarness(t, seedOr(t, 1), 3, nil)
	appends, commits, fsyncs := histCount(t, proposalAppendSeconds), histCount(t, proposalCommitSeconds), histCount(t, fsyncRegions)
	applied := histSum(t, appliedEntries)
	h.writeKeys("k", 20)
	// Every write went through each stage on its leader (other tests in
	// this process may add more).
	require.GreaterOrEqual(t, histCount(t, proposalAppendSeconds)-appends, uint64(20))
	require.GreaterOrEqual(t, histCount(t, proposalCommitSeconds)-commits, uint64(20))
	require.Greater(t, histCount(t, fsyncRegions), fsyncs)
	// Each of the three replicas applied every write.
	require.GreaterOrEqual(t, histSum(t, appliedEntries)-applied, float64(3*20))
	r := h.regionAt("k000")
	h.requireConsistent(r.GetId())
	h.checkHash(r.GetId())
}

// TestHarnessSplitDuringConfChange: a split and a conf change (add a
// learner on a fourth store) are both in flight in the region's log, in
// either order. Conf change first: the split, proposed under the old
// conf_ver, is refused at apply with EpochNotMatch on every replica (and
// succeeds when asked again). Split first: the conf change still applies
// (it checks conf_ver only) to the shrunk region. Either way every replica
// of every region ends identical, and the learner gets its data.
func TestHarnessSplitDuringConfChange(t *testing.T) {
	for _, confFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("conf_change_first=%v", confFirst), func(t *testing.T) {
			splitDuringConfChange(t, seedOr(t, 2), confFirst)
		})
	}
}

func splitDuringConfChange(t *testing.T, seed uint64, confFirst bool) *harness {
	h := newHarness(t, seed, 4, nil)
	h.writeKeys("a", 10)
	h.writeKeys("n", 10)
	r := h.regionAt("a000")
	l := h.leader(r.GetId())
	learnerStore := h.ids[3]
	learner := &metapb.Peer{Id: h.pd.alloc(), StoreId: learnerStore, Role: metapb.PeerRole_Learner}
	add := changePeer(pdpb.ConfChangeType_AddLearnerNode, learner)
	var split *asyncResult
	if confFirst {
		h.pdStep(r.GetId(), add)
		l.iterate(false) // proposes the conf change
		split = h.split("n")
	} else {
		split = h.split("n")
		l.iterate(false) // proposes the split
		h.pdStep(r.GetId(), add)
	}
	h.settle()
	h.waitFor("split answered", 100, func() bool { return split.done })
	require.NoError(t, split.err)
	if confFirst {
		require.NotNil(t, split.resp.GetRegionError().GetEpochNotMatch(), "split proposed under the old conf_ver")
		split = h.split("n")
		h.waitFor("split answered", 100, func() bool { return split.done })
		require.Nil(t, split.resp.GetRegionError())
	} else {
		require.Nil(t, split.resp.GetRegionError())
	}
	left, right := h.regionAt("a000"), h.regionAt("n000")
	require.NotEqual(t, left.GetId(), right.GetId())
	h.waitFor("learner initialized", 200, func() bool {
		p := h.stores[learnerStore].peers[r.GetId()]
		return p != nil && !p.uninitialized
	})
	h.requireAllConsistent()
	for _, s := range h.replicas(left.GetId()) {
		require.Equal(t, value(t, l, "a003"), value(t, s, "a003"))
	}
	return h
}

// TestHarnessSnapshotAfterPartitionPastLogGC: a follower is partitioned
// while the leader writes and compacts its log past the follower's index;
// after the partition heals the follower catches up by a snapshot (the
// only way: the entries are gone) and its data equals the leader's.
func TestHarnessSnapshotAfterPartitionPastLogGC(t *testing.T) {
	snapshotAfterPartitionPastLogGC(t, seedOr(t, 3))
}

func snapshotAfterPartitionPastLogGC(t *testing.T, seed uint64) *harness {
	h := newHarness(t, seed, 3, aggressiveLogGC)
	h.writeKeys("a", 5)
	r := h.regionAt("a000")
	victim, behind := h.partitionPastLogGC(r, 60)
	l := h.leader(r.GetId())
	applied, installs := counterValue(t, snapshotsTotal.WithLabelValues("applied")), histCount(t, snapshotInstallSeconds)
	h.net.clearFilters()
	h.requireConsistent(r.GetId())
	require.Greater(t, counterValue(t, snapshotsTotal.WithLabelValues("applied")), applied, "caught up without a snapshot?")
	require.Greater(t, histCount(t, snapshotInstallSeconds), installs)
	require.GreaterOrEqual(t, victim.peers[r.GetId()].ps.apply.truncatedIndex, behind, "the victim's log starts after the snapshot")
	require.Equal(t, value(t, l, "b059"), value(t, victim, "b059"))
	h.checkHash(r.GetId())
	return h
}

// TestHarnessRemoveAndReAddPeer: a follower's peer is removed (it destroys
// itself: data gone, tombstone kept), the region takes writes, then a new
// peer on the same store is added as a learner (filled by a snapshot) and
// promoted; it ends identical to the leader.
func TestHarnessRemoveAndReAddPeer(t *testing.T) { removeAndReAddPeer(t, seedOr(t, 4)) }

func removeAndReAddPeer(t *testing.T, seed uint64) *harness {
	h := newHarness(t, seed, 3, nil)
	h.writeKeys("a", 10)
	r := h.regionAt("a000")
	victim := h.follower(r.GetId())
	old := peerOf(victim, r.GetId())
	h.pdStep(r.GetId(), changePeer(pdpb.ConfChangeType_RemoveNode, old))
	h.waitFor("removed peer destroyed", 50, func() bool { return victim.peers[r.GetId()] == nil })
	require.NotNil(t, victim.tombstone(r.GetId()))
	require.Equal(t, "", value(t, victim, "a000"), "a destroyed peer's data is deleted")
	h.writeKeys("b", 10)

	learner := &metapb.Peer{Id: h.pd.alloc(), StoreId: victim.id, Role: metapb.PeerRole_Learner}
	h.pdStep(r.GetId(), changePeer(pdpb.ConfChangeType_AddLearnerNode, learner))
	h.waitFor("learner initialized by a snapshot", 100, func() bool {
		p := victim.peers[r.GetId()]
		return p != nil && !p.uninitialized && p.meta.GetId() == learner.GetId()
	})
	h.waitFor("learner caught up", 50, func() bool {
		return victim.peers[r.GetId()].ps.apply.applied == h.leader(r.GetId()).peers[r.GetId()].ps.apply.applied
	})
	h.pdStep(r.GetId(), changePeer(pdpb.ConfChangeType_AddNode, &metapb.Peer{Id: learner.GetId(), StoreId: victim.id}))
	h.waitFor("learner promoted", 50, func() bool {
		p := victim.peers[r.GetId()]
		return p.meta.GetRole() == metapb.PeerRole_Voter && len(h.leader(r.GetId()).peers[r.GetId()].region.GetPeers()) == 3
	})
	h.writeKeys("c", 5)
	h.requireConsistent(r.GetId())
	require.Equal(t, value(t, h.leader(r.GetId()), "a005"), value(t, victim, "a005"))
	h.checkHash(r.GetId())
	return h
}

// TestHarnessTransferDuringSplit: a leader transfer asked while a split is
// in the log is refused (no transfer while a split is pending) and works
// once the split applied; a split proposed while a transfer is in
// progress is refused with NotLeader once the transfer completes. Nothing
// is half-split and every replica ends identical.
func TestHarnessTransferDuringSplit(t *testing.T) {
	t.Run("split_first", func(t *testing.T) { transferDuringSplit(t, seedOr(t, 5)) })
	t.Run("transfer_first", func(t *testing.T) { splitDuringTransfer(t, seedOr(t, 6)) })
}

// transferDuringSplit: a transfer asked while a split is in the log.
func transferDuringSplit(t *testing.T, seed uint64) *harness {
	h := newHarness(t, seed, 3, nil)
	h.writeKeys("a", 5)
	h.writeKeys("n", 5)
	r := h.regionAt("a000")
	l := h.leader(r.GetId())
	target := h.follower(r.GetId())
	split := h.split("n")
	l.iterate(false) // the split is in the log, not applied
	require.True(t, l.peers[r.GetId()].splitInFlight())
	h.pdStep(r.GetId(), &pdpb.RegionHeartbeatResponse{TransferLeader: &pdpb.TransferLeader{Peer: peerOf(target, r.GetId())}})
	l.iterate(false)
	require.Zero(t, l.peers[r.GetId()].rn.BasicStatus().LeadTransferee, "transfer started while a split was pending")
	h.waitFor("split applied", 100, func() bool { return split.done })
	require.Nil(t, split.resp.GetRegionError())
	require.Same(t, l, h.leader(r.GetId()))
	cur := h.regionAt("a000")
	h.pdStep(cur.GetId(), &pdpb.RegionHeartbeatResponse{RegionEpoch: cur.GetRegionEpoch(),
		TransferLeader: &pdpb.TransferLeader{Peer: peerOf(target, r.GetId())}})
	h.waitFor("leader transferred after the split", 100, func() bool { return h.leader(r.GetId()) == target })
	h.mustPut("a100", "x")
	h.mustPut("n100", "y")
	h.requireAllConsistent()
	return h
}

// splitDuringTransfer: a split proposed while a transfer is in progress.
func splitDuringTransfer(t *testing.T, seed uint64) *harness {
	h := newHarness(t, seed, 3, nil)
	h.writeKeys("a", 5)
	r := h.regionAt("a000")
	l := h.leader(r.GetId())
	target := h.follower(r.GetId())
	// Hold the follower's acks so the transfer stays in progress while
	// the split arrives.
	h.net.addFilter(oneWay(target.id, l.id))
	h.pdStep(r.GetId(), &pdpb.RegionHeartbeatResponse{TransferLeader: &pdpb.TransferLeader{Peer: peerOf(target, r.GetId())}})
	l.iterate(false)
	split := h.split("n")
	h.settle()
	require.NotZero(t, l.peers[r.GetId()].rn.BasicStatus().LeadTransferee, "transfer in progress")
	h.net.clearFilters()
	h.waitFor("split answered", 100, func() bool { return split.done })
	if e := split.resp.GetRegionError(); e == nil {
		// The transfer was aborted (election timeout) and the split
		// proposed after all: that is allowed too.
		require.NotEqual(t, h.regionAt("a000").GetId(), h.regionAt("n000").GetId())
	} else {
		require.NotNil(t, e.GetNotLeader(), "split during a transfer: %v", e)
		require.Equal(t, h.regionAt("a000").GetId(), h.regionAt("n000").GetId(), "nothing split")
	}
	h.requireAllConsistent()
	return h
}

// TestHarnessStalePeerStaysSilent: a follower's store is down while its
// peer is removed; when the store comes back, its stale peer (old
// configuration) campaigns with PreVote, which cannot disturb the region
// (the leader's term never changes), is answered with a tombstone message
// and destroys itself.
func TestHarnessStalePeerStaysSilent(t *testing.T) { stalePeerStaysSilent(t, seedOr(t, 7)) }

func stalePeerStaysSilent(t *testing.T, seed uint64) *harness {
	h := newHarness(t, seed, 3, nil)
	h.writeKeys("a", 10)
	r := h.regionAt("a000")
	victim := h.follower(r.GetId())
	vid := victim.id
	old := peerOf(victim, r.GetId())
	h.stop(vid)
	h.pdStep(r.GetId(), changePeer(pdpb.ConfChangeType_RemoveNode, old))
	h.waitFor("removal applied", 50, func() bool { return len(h.leader(r.GetId()).peers[r.GetId()].region.GetPeers()) == 2 })
	h.writeKeys("b", 10)
	l := h.leader(r.GetId())
	term := h.term(r.GetId())

	back := h.restart(vid)
	require.NotNil(t, back.peers[r.GetId()], "the stale peer is back")
	for range 60 { // six election timeouts
		h.tick()
		require.Same(t, l, h.leader(r.GetId()), "leadership moved")
		require.Equal(t, term, h.term(r.GetId()), "the stale peer disturbed the term")
		if p := back.peers[r.GetId()]; p != nil {
			require.NotEqual(t, raft.StateLeader, p.rn.BasicStatus().RaftState)
		}
	}
	require.Nil(t, back.peers[r.GetId()], "the stale peer was not destroyed")
	require.NotNil(t, back.tombstone(r.GetId()))
	require.Equal(t, "", value(t, back, "a000"))
	h.requireConsistent(r.GetId())
	return h
}

// TestHarnessPartitionedLeaderNoStaleRead: the leader's store is cut off
// for 10 s of manual time. Reads sent to it keep arriving every tick: any
// it serves must be served before the others elect a new leader (its lease
// is shorter than the election timeout); it steps down (CheckQuorum) and
// fails them afterwards. A write through the new leader is never missed by
// a read the old leader served. After the partition heals the old leader
// rejoins as a follower and catches up.
func TestHarnessPartitionedLeaderNoStaleRead(t *testing.T) {
	h := newHarness(t, seedOr(t, 8), 3, nil)
	h.writeKeys("a", 5)
	r := h.regionAt("a000")
	old := h.leader(r.GetId())
	oldTerm := h.term(r.GetId())
	h.net.addFilter(isolate(old.id))
	start := h.ticks
	var newLeaderAt, lastServedAt, wroteAt uint64
	var pending []func() (bool, bool)
	var reads, servedReads, failed int
	var write *asyncResult
	for h.ticks-start < uint64(10*time.Second/harnessTick) {
		pending = append(pending, readAt(old, r))
		reads++
		h.tick()
		kept := pending[:0]
		for _, res := range pending {
			ok, answered := res()
			switch {
			case !answered:
				kept = append(kept, res)
			case ok:
				servedReads++
				lastServedAt = h.ticks
			default:
				failed++
			}
		}
		pending = kept
		if newLeaderAt == 0 {
			if l := h.leader(r.GetId()); l != nil && l != old {
				newLeaderAt = h.ticks
				write = h.propose(l, putCmd(l.peers[r.GetId()].region, "a000", "after-partition"))
			}
		}
		if write != nil && write.done && wroteAt == 0 {
			require.Nil(t, write.resp.GetRegionError())
			wroteAt = h.ticks
		}
	}
	require.NotZero(t, newLeaderAt, "no new leader in 10 s")
	require.NotZero(t, wroteAt, "the new leader's write did not apply")
	require.Less(t, lastServedAt, newLeaderAt, "the old leader served a read after a new leader was elected")
	require.NotEqual(t, raft.StateLeader, old.peers[r.GetId()].rn.BasicStatus().RaftState, "the cut-off leader never stepped down")
	require.NotEqual(t, "after-partition", value(t, old, "a000"))
	t.Logf("old leader: %d reads, %d served (last at tick %d), %d failed; new leader elected at tick %d (term %d -> %d), write applied at tick %d",
		reads, servedReads, lastServedAt-start, failed, newLeaderAt-start, oldTerm, h.term(r.GetId()), wroteAt-start)

	h.net.clearFilters()
	h.requireConsistent(r.GetId())
	require.Equal(t, "after-partition", value(t, old, "a000"), "the old leader caught up")
	require.NotSame(t, old, h.leader(r.GetId()))
}

// TestHarnessLossyNetwork: with 20 % of raft messages lost and the rest
// delayed by up to 3 ticks (all drawn from the seed), a writer that
// retries region errors gets every write applied, splits happen, and after
// the network heals every replica of every region is identical.
func TestHarnessLossyNetwork(t *testing.T) { lossyNetwork(t, seedOr(t, 9)) }

func lossyNetwork(t *testing.T, seed uint64) *harness {
	h := newHarness(t, seed, 3, nil)
	h.net.addFilter(lossy(0.2, 3))
	want := map[string]string{}
	for i := range 40 {
		k, v := fmt.Sprintf("k%03d", h.rng.IntN(200)), fmt.Sprintf("v%d", i)
		h.putRetrying(k, v)
		want[k] = v
		if i == 20 {
			split := h.split("k100")
			h.waitFor("split answered", 200, func() bool { return split.done })
		}
	}
	h.net.clearFilters()
	h.requireAllConsistent()
	for k, v := range want {
		for _, s := range h.running() {
			require.Equal(t, v, value(t, s, k), "store %d key %s", s.id, k)
		}
	}
	return h
}

// putRetrying writes key=value through whichever store leads its region,
// again after a region error or an undetermined outcome (the same put
// twice is harmless), until it is applied.
func (h *harness) putRetrying(key, value string) {
	h.t.Helper()
	var res *asyncResult
	var last string
	defer func() {
		if h.t.Failed() {
			h.t.Logf("write of %s: last outcome %s", key, last)
		}
	}()
	h.waitFor("write "+key, 1000, func() bool {
		if res != nil && !res.done {
			return false
		}
		if res != nil && res.err == nil && res.resp.GetRegionError() == nil {
			return true
		}
		if res != nil {
			last = fmt.Sprintf("err %v resp %v", res.err, res.resp)
		}
		if r := h.ledRegionAt(key); r != nil {
			res = h.propose(h.leader(r.GetId()), putCmd(r, key, value))
		}
		return false
	})
}

func histCount(t *testing.T, h prometheus.Histogram) uint64 {
	var m dto.Metric
	require.NoError(t, h.Write(&m))
	return m.GetHistogram().GetSampleCount()
}

func histSum(t *testing.T, h prometheus.Histogram) float64 {
	var m dto.Metric
	require.NoError(t, h.Write(&m))
	return m.GetHistogram().GetSampleSum()
}

// TestHarnessCrashRestart: a seeded store (the leader too, sometimes) is
// killed six times while writes go on over a network losing 10 % of the
// messages and delaying others up to 2 ticks; each crash keeps what it synced
// (the raft log and hard state with its entries) and a seeded share of
// what it did not (apply batches, commit-only hard states). After each
// restart the store replays its log (or takes a snapshot: log GC is
// aggressive) and in the end every acknowledged write is on every replica
// and all replicas hash equal.
func TestHarnessCrashRestart(t *testing.T) { crashRestart(t, seedOr(t, 10)) }

func crashRestart(t *testing.T, seed uint64) *harness {
	h := newCrashHarness(t, seed, 3, aggressiveLogGC)
	h.net.addFilter(lossy(0.1, 2))
	acked := map[string]string{}
	write := func(round, n int) {
		for i := range n {
			k, v := fmt.Sprintf("k%03d", h.rng.IntN(300)), fmt.Sprintf("r%d-%d", round, i)
			h.putRetrying(k, v)
			acked[k] = v
		}
	}
	for round := range 6 {
		write(round, 10)
		victim := h.ids[h.rng.IntN(len(h.ids))]
		r := h.regionAt("k000")
		t.Logf("round %d: crash store %d (leader: %v)", round, victim, h.leader(r.GetId()).id == victim)
		h.crash(victim)
		write(round, 10)
		h.restart(victim)
	}
	h.net.clearFilters()
	h.requireAllConsistent()
	for k, v := range acked {
		for _, s := range h.running() {
			require.Equal(t, v, value(t, s, k), "store %d key %s", s.id, k)
		}
	}
	h.checkHash(h.regionAt("k000").GetId())
	return h
}

var chaosOps = flag.Int("harness.chaos-ops", 40, "operations of TestHarnessChaos (a longer run hunts further)")

// TestHarnessChaos: a seeded sequence of 40 operations (-harness.chaos-ops)
// on 3 and on 5 stores: writes, splits, leader transfers, a store isolated
// for 5-35 ticks, kill -9 (crashable MemFS) and restart, a follower removed
// and re-added on its store, and (5 stores) a replica moved to another
// store; operator steps are re-sent while refused, as PD does. Afterwards
// every acknowledged write is on every replica of its region, all replicas
// of every region hash equal, and the consistency check through raft
// agrees. Log GC is aggressive (a replica 10 entries behind gets a
// snapshot), so lagging replicas catch up by snapshots, also across splits.
func TestHarnessChaos(t *testing.T) {
	t.Run("3_stores", func(t *testing.T) { runChaos(t, newCrashHarness(t, seedOr(t, 11), 3, aggressiveLogGC)) })
	t.Run("5_stores", func(t *testing.T) { runChaos(t, newCrashHarness(t, seedOr(t, 14), 5, aggressiveLogGC)) })
}

func runChaos(t *testing.T, h *harness) *harness {
	acked := map[string]string{}
	var ops []string
	defer func() {
		if r := recover(); r != nil {
			// A panic skips the test's log: print what led to it.
			fmt.Fprintf(os.Stderr, "operations: %v\nlast store log lines:\n%s", ops, h.logs)
			panic(r)
		}
		if t.Failed() {
			t.Logf("operations: %v", ops)
		}
	}()
	key := func() string { return fmt.Sprintf("k%03d", h.rng.IntN(500)) }
	kinds := 10
	if len(h.ids) > 3 {
		kinds = 11 // moves need a store without a replica
	}
	for i := range *chaosOps {
		switch op := h.rng.IntN(kinds); {
		case op < 4:
			k, v := key(), fmt.Sprintf("v%d", i)
			h.putRetrying(k, v)
			acked[k] = v
			ops = append(ops, "put "+k)
		case op < 5:
			k := key()
			if r := h.ledRegionAt(k); r != nil && string(r.GetStartKey()) != k {
				res := h.split(k)
				h.waitFor("split answered", 100, func() bool { return res.done })
				ops = append(ops, fmt.Sprintf("split %s: %v", k, res.resp.GetRegionError() == nil))
			}
		case op < 6:
			r := h.ledRegionAt(key())
			if r == nil {
				continue
			}
			reps := h.replicas(r.GetId())
			target := reps[h.rng.IntN(len(reps))]
			if p := peerOf(target, r.GetId()); p != nil && p.GetRole() == metapb.PeerRole_Voter {
				h.pdStep(r.GetId(), &pdpb.RegionHeartbeatResponse{RegionEpoch: r.GetRegionEpoch(), TransferLeader: &pdpb.TransferLeader{Peer: p}})
				ops = append(ops, fmt.Sprintf("transfer region %d to store %d", r.GetId(), target.id))
			}
		case op < 7:
			victim := h.ids[h.rng.IntN(len(h.ids))]
			n := 5 + h.rng.IntN(30)
			h.net.addFilter(isolate(victim))
			for range n {
				h.tick()
			}
			h.net.clearFilters()
			ops = append(ops, fmt.Sprintf("isolate store %d for %d ticks", victim, n))
		case op < 8:
			victim := h.ids[h.rng.IntN(len(h.ids))]
			h.crash(victim)
			for range h.rng.IntN(20) {
				h.tick()
			}
			h.restart(victim)
			ops = append(ops, fmt.Sprintf("crash store %d", victim))
		case op < 9:
			r := h.ledRegionAt(key())
			if r == nil {
				continue
			}
			victim := h.follower(r.GetId())
			h.removePeer(r.GetId(), victim)
			h.addVoter(r.GetId(), victim.id)
			ops = append(ops, fmt.Sprintf("re-add region %d on store %d", r.GetId(), victim.id))
		case op < 10:
			for range h.rng.IntN(15) {
				h.tick()
			}
			ops = append(ops, "wait")
		default:
			r := h.ledRegionAt(key())
			if r == nil {
				continue
			}
			var free []uint64
			for _, id := range h.ids {
				if h.leader(r.GetId()).peers[r.GetId()].peerOnStore(id) == nil {
					free = append(free, id)
				}
			}
			to := free[h.rng.IntN(len(free))]
			h.addVoter(r.GetId(), to)
			var from *Store
			for _, s := range h.replicas(r.GetId()) {
				if s.id != to && s != h.leader(r.GetId()) {
					from = s
				}
			}
			h.removePeer(r.GetId(), from)
			ops = append(ops, fmt.Sprintf("move region %d from store %d to %d", r.GetId(), from.id, to))
		}
	}
	regions := h.requireSurvived(acked)
	t.Logf("%d operations, %d keys acknowledged, %d regions hash equal", len(ops), len(acked), regions)
	return h
}

// removePeer removes store victim's peer of region, re-sending the step
// while it is refused (a removal needs the others recently active; the
// leader never removes itself, so a leader there is moved first).
func (h *harness) removePeer(regionID uint64, victim *Store) {
	h.t.Helper()
	old := peerOf(victim, regionID)
	h.waitFor("removed", 200, func() bool {
		if s := h.stores[victim.id]; s != nil {
			victim = s // restarted meanwhile (crashAt)
		}
		if p := victim.peers[regionID]; p == nil || p.meta.GetId() != old.GetId() {
			return true
		}
		l := h.leader(regionID)
		switch {
		case l == victim:
			other := h.follower(regionID)
			h.pdStep(regionID, &pdpb.RegionHeartbeatResponse{TransferLeader: &pdpb.TransferLeader{Peer: peerOf(other, regionID)}})
		case l != nil && l.peers[regionID].peerOnStore(victim.id).GetId() == old.GetId():
			h.pdStep(regionID, changePeer(pdpb.ConfChangeType_RemoveNode, old))
		}
		return false
	})
}

// addVoter adds a new peer of region on store id as a learner, waits until
// a snapshot initialized it, and promotes it, re-sending refused steps.
func (h *harness) addVoter(regionID, id uint64) {
	h.t.Helper()
	learner := &metapb.Peer{Id: h.pd.alloc(), StoreId: id, Role: metapb.PeerRole_Learner}
	h.waitFor("learner added", 200, func() bool {
		if s := h.stores[id]; s != nil {
			if p := s.peers[regionID]; p != nil && !p.uninitialized && p.meta.GetId() == learner.GetId() {
				return true
			}
		}
		if l := h.leader(regionID); l != nil && l.peers[regionID].peerOnStore(id) == nil {
			h.pdStep(regionID, changePeer(pdpb.ConfChangeType_AddLearnerNode, learner))
		}
		return false
	})
	h.waitFor("learner promoted", 200, func() bool {
		l := h.leader(regionID)
		if l == nil {
			return false
		}
		if pm := l.peers[regionID].peerOnStore(id); pm != nil && pm.GetRole() == metapb.PeerRole_Voter {
			return true
		}
		h.pdStep(regionID, changePeer(pdpb.ConfChangeType_AddNode, &metapb.Peer{Id: learner.GetId(), StoreId: id}))
		return false
	})
}

// TestHarnessSplitWhilePartitionedPastLogGC: a follower is partitioned
// while its region splits and both halves compact their logs past it.
// After the partition heals it catches up from snapshots: the shrunk
// region, and the split-off region too (a raft message for a region split
// off one it hosted creates an uninitialized peer, filled by a snapshot),
// so both regions keep three replicas.
func TestHarnessSplitWhilePartitionedPastLogGC(t *testing.T) {
	h := newHarness(t, seedOr(t, 12), 3, aggressiveLogGC)
	h.writeKeys("a", 5)
	h.writeKeys("n", 5)
	r := h.regionAt("a000")
	victim := h.follower(r.GetId())
	h.net.addFilter(isolate(victim.id))
	split := h.split("n")
	h.waitFor("split applied", 100, func() bool { return split.done })
	require.Nil(t, split.resp.GetRegionError())
	h.writeKeys("a", 40)
	h.writeKeys("n", 40)
	left, right := h.regionAt("a000"), h.regionAt("n000")
	h.waitFor("both logs compacted past the partitioned follower", 100, func() bool {
		return h.leader(left.GetId()).peers[left.GetId()].ps.apply.truncatedIndex > victim.peers[left.GetId()].ps.apply.applied &&
			h.leader(right.GetId()).peers[right.GetId()].ps.apply.truncatedIndex > initIndex+10
	})
	h.net.clearFilters()
	h.requireConsistent(left.GetId())
	h.requireConsistent(right.GetId())
	require.NotNil(t, victim.peers[right.GetId()], "the split-off region has no replica on the store that lagged")
	require.Equal(t, value(t, h.leader(right.GetId()), "n039"), value(t, victim, "n039"))
}

// TestHarnessSnapshotSurvivesCrash: a follower that installed a snapshot
// and acknowledged it is killed right after, losing every unsynced write:
// the snapshot survives (it is written with a sync, whatever raft's
// MustSync says), so the leader's view of the follower's log stays true
// and the follower rejoins. Before the fix it restarted without the
// snapshot and raft panicked "tocommit(N) is out of range".
func TestHarnessSnapshotSurvivesCrash(t *testing.T) {
	h := newCrashHarness(t, seedOr(t, 13), 3, aggressiveLogGC)
	h.writeKeys("a", 5)
	r := h.regionAt("a000")
	victim, _ := h.partitionPastLogGC(r, 40)
	h.net.clearFilters()
	installed := counterValue(t, snapshotsTotal.WithLabelValues("applied"))
	h.waitFor("snapshot installed", 100, func() bool {
		return counterValue(t, snapshotsTotal.WithLabelValues("applied")) > installed
	})
	at := victim.peers[r.GetId()].ps.apply.applied
	h.crashKeeping(victim.id, 0)
	back := h.restart(victim.id)
	require.GreaterOrEqual(t, back.peers[r.GetId()].ps.apply.applied, at, "the installed snapshot was lost in the crash")
	h.writeKeys("c", 5)
	h.requireConsistent(r.GetId())
}

// aggressiveLogGC: leaders compact every 2 ticks once 5 entries are
// applied everywhere; a replica 10 entries behind gets a snapshot.
func aggressiveLogGC(c *Config) {
	c.LogGCInterval, c.LogGCThreshold, c.LogGCLagLimit = 2*harnessTick, 5, 10
}

// partitionPastLogGC isolates a follower of region r, writes n keys and
// waits until the leader's log is compacted past the follower's applied
// index, which it returns with the follower (still isolated).
func (h *harness) partitionPastLogGC(r *metapb.Region, n int) (*Store, uint64) {
	h.t.Helper()
	victim := h.follower(r.GetId())
	h.net.addFilter(isolate(victim.id))
	h.writeKeys("b", n)
	l := h.leader(r.GetId())
	behind := victim.peers[r.GetId()].ps.apply.applied
	h.waitFor("log compacted past the partitioned follower", 100, func() bool {
		return l.peers[r.GetId()].ps.apply.truncatedIndex > behind
	})
	return victim, behind
}

// snapshotIngestHeld partitions a follower of region r past log GC (n
// keys), holds the ingest of the snapshot it then gets and heals the
// network; it returns once that snapshot's "applying" state is persisted
// and its ingest held, with the follower, its applied index before the
// partition and its peer.
func (h *harness) snapshotIngestHeld(r *metapb.Region, n int) (*Store, uint64, *peer) {
	h.t.Helper()
	victim, behind := h.partitionPastLogGC(r, n)
	held := false
	victim.snaps.holdIngest = func(id uint64) bool {
		held = held || id == r.GetId()
		return id == r.GetId()
	}
	h.net.clearFilters()
	h.waitFor("snapshot persisted, ingest held", 100, func() bool { return held })
	p := victim.peers[r.GetId()]
	require.True(h.t, p.ps.installing())
	return victim, behind, p
}

// replayScenarios are the scenarios TestHarnessReplay runs twice per seed:
// issue 7's acceptance scenarios, the lossy network and kill -9 ones, and
// chaos on a few seeds.
var replayScenarios = []struct {
	name string
	seed uint64 // default; -harness.seed or HARNESS_SEED replaces it
	run  func(t *testing.T, seed uint64) *harness
}{
	{"split_during_conf_change/conf_first", 2, func(t *testing.T, seed uint64) *harness { return splitDuringConfChange(t, seed, true) }},
	{"split_during_conf_change/split_first", 2, func(t *testing.T, seed uint64) *harness { return splitDuringConfChange(t, seed, false) }},
	{"snapshot_after_partition_past_log_gc", 3, snapshotAfterPartitionPastLogGC},
	{"remove_and_re_add_peer", 4, removeAndReAddPeer},
	{"transfer_during_split", 5, transferDuringSplit},
	{"split_during_transfer", 6, splitDuringTransfer},
	{"stale_peer_stays_silent", 7, stalePeerStaysSilent},
	{"lossy_network", 9, lossyNetwork},
	{"crash_restart", 10, crashRestart},
	{"crash_during_snapshot_install", 15, crashDuringSnapshotInstall},
	{"chaos_3_stores/a", 11, chaos(3)},
	{"chaos_3_stores/b", 101, chaos(3)},
	{"chaos_5_stores", 14, chaos(5)},
	{"hibernated_lease/one_follower_cut_region_only", 31, func(t *testing.T, seed uint64) *harness {
		c := hibernatedLeaseCuts[slices.IndexFunc(hibernatedLeaseCuts, func(c hibernatedLeaseCut) bool { return c.name == "one_follower_cut_region_only" })]
		return hibernatedLeaseFault(t, seed, c.cut, c.newLeader)
	}},
	{"hibernated_lease_faults_3_stores", 41, hibernatedLeaseFaults(3)},
	{"hibernate_stale_ack", 7, func(t *testing.T, seed uint64) *harness { return staleHibernateAck(t, seed, false) }},
	{"hibernate_rounds_chaos", 62, hibernateRoundsChaos},
	{"pd_step_after_wake_dead_voter", 17, pdStepAfterWakeDeadVoter},
}

func chaos(stores int) func(*testing.T, uint64) *harness {
	return func(t *testing.T, seed uint64) *harness {
		return runChaos(t, newCrashHarness(t, seed, stores, aggressiveLogGC))
	}
}

// TestHarnessReplay: each scenario run twice with one seed delivers the
// same messages in the same order (from, to, region, type, term, index,
// commit, and a CRC of the entries' bytes and the snapshot's data) and
// ends with the same applied index and data hash on every replica; run with another seed it differs (election timeouts, values,
// losses and operations are drawn from the seed). A failure prints the
// first difference and the seed to replay.
func TestHarnessReplay(t *testing.T) {
	for _, sc := range replayScenarios {
		t.Run(sc.name, func(t *testing.T) {
			seed := seedOr(t, sc.seed)
			first := replayRun(t, "first", sc.run, seed)
			again := replayRun(t, "again", sc.run, seed)
			requireSameTrace(t, seed, first, again)
			other := replayRun(t, "other_seed", sc.run, seed+1)
			sameMsgs := slices.Equal(first.messages, other.messages)
			require.False(t, sameMsgs && slices.Equal(first.final, other.final), "seeds %d and %d ran identically", seed, seed+1)
			t.Logf("seed %d: %d messages, %d replicas identical in both runs; seed %d: %d messages (same messages: %v, end state differs)",
				seed, len(first.messages), len(first.final), seed+1, len(other.messages), sameMsgs)
		})
	}
}

// replayTrace is what TestHarnessReplay compares between two runs.
type replayTrace struct {
	messages []traceEvent
	final    []string // fingerprint
}

func replayRun(t *testing.T, name string, run func(*testing.T, uint64) *harness, seed uint64) replayTrace {
	var out replayTrace
	ok := t.Run(fmt.Sprintf("%s_seed_%d", name, seed), func(t *testing.T) {
		h := run(t, seed)
		out = replayTrace{messages: h.net.trace, final: h.fingerprint()}
	})
	if !ok {
		t.FailNow()
	}
	return out
}

// requireSameTrace fails at the first difference between a and b, showing
// the messages around it.
func requireSameTrace(t *testing.T, seed uint64, a, b replayTrace) {
	t.Helper()
	n := min(len(a.messages), len(b.messages))
	for i := range n {
		if a.messages[i] != b.messages[i] {
			lo, hi := max(0, i-5), min(n, i+3)
			var ctx strings.Builder
			for j := lo; j < hi; j++ {
				mark := "  "
				if j == i {
					mark = "> "
				}
				fmt.Fprintf(&ctx, "%s#%d\n    first: %v\n    again: %v\n", mark, j, a.messages[j], b.messages[j])
			}
			t.Fatalf("seed %d: the runs diverge at message %d of %d/%d:\n%s", seed, i, len(a.messages), len(b.messages), ctx.String())
		}
	}
	require.Equal(t, len(a.messages), len(b.messages), "seed %d: one run delivered more messages", seed)
	require.Equal(t, a.final, b.final, "seed %d: same messages, different end state", seed)
}

// TestHarnessCatchUpBounded: a store that was partitioned while four
// regions took writes catches up without any leader store sending more
// than its per-iteration budget (plus one entry per in-flight message per
// region) in one loop iteration, or a batch larger than the batch limit
// (unless it is a single message); afterwards every replica is equal.
// Without the store-wide budget each region's leader would send up to
// MaxInflightBytes at once: in a TPC-C kill run, 436 MB in one batch.
func TestHarnessCatchUpBounded(t *testing.T) {
	const (
		budget   = 256 << 10
		maxBatch = 128 << 10
		valueLen = 8 << 10
		regions  = 4
		perKey   = 60
	)
	h := newHarness(t, seedOr(t, 13), 3, func(c *Config) {
		c.sendBytesPerIteration, c.maxBatchBytes = budget, maxBatch
	})
	for _, k := range []string{"b", "c", "d"} {
		split := h.split(k)
		h.waitFor("split "+k, 100, func() bool { return split.done })
		require.Nil(t, split.resp.GetRegionError())
	}
	victim := h.follower(h.regionAt("a").GetId())
	h.net.addFilter(isolate(victim.id))
	value := strings.Repeat("v", valueLen)
	for _, prefix := range []string{"a", "b", "c", "d"} {
		for i := range perKey {
			h.mustPut(fmt.Sprintf("%s%03d", prefix, i), value)
		}
	}
	type sendKey struct{ from, iter uint64 }
	perIteration := map[sendKey]int{}
	batches := 0
	h.net.mu.Lock()
	h.net.sent = func(from, to uint64, b *raft_serverpb.BatchRaftMessage) {
		if to != victim.id {
			return
		}
		batches++
		size := batchBytes(b)
		if len(b.GetMsgs()) > 1 {
			require.LessOrEqual(t, size, maxBatch, "a batch of %d messages", len(b.GetMsgs()))
		}
		perIteration[sendKey{from, h.stores[from].iter}] += size
	}
	h.net.mu.Unlock()
	spent := counterValue(t, sendBudgetSpent)
	h.net.clearFilters()
	h.requireAllConsistent()
	require.Greater(t, counterValue(t, sendBudgetSpent), spent, "the catch-up never used a whole budget")
	require.Greater(t, batches, regions*perKey*valueLen/maxBatch, "the catch-up took fewer batches than its size needs")
	// Past the budget each message carries one entry, at most
	// MaxInflightMsgs in flight per region.
	bound := budget + regions*32*(valueLen+1024)
	most := 0
	for k, n := range perIteration {
		require.LessOrEqual(t, n, bound, "store %d iteration %d sent %d bytes", k.from, k.iter, n)
		most = max(most, n)
	}
	t.Logf("catch-up: %d batches, at most %d bytes from a store in one iteration", batches, most)
}
