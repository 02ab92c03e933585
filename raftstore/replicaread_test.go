package raftstore

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
	"github.com/stratadb/strata/proto/raft_serverpb"
)

// raftOnlyCut drops the raft messages (not the store-level ones: liveness
// and the safe ts it carries) between store a and every other store.
func raftOnlyCut(a uint64) netFilter {
	return func(from, to uint64, m *raft_serverpb.RaftMessage, _ *rand.Rand) (bool, uint64) {
		return (from == a) != (to == a) && m.GetExtra() == nil, 0
	}
}

// followerReadAt queues a follower read of region on s behind read index
// idx (what the leader's ReadIndex RPC answered) and returns where the
// outcome arrives.
func followerReadAt(s *Store, region *metapb.Region, idx uint64) func() (res readResult, answered bool) {
	rr := &readRequest{rctx: &kvrpcpb.Context{RegionId: region.GetId(), RegionEpoch: region.GetRegionEpoch()},
		waitIndex: idx, start: time.Now(), done: make(chan readResult, 1)}
	s.inbox.push(func(m *inboxMsgs) { m.reads = append(m.reads, rr) })
	var got *readResult
	return func() (readResult, bool) {
		if got == nil {
			select {
			case r := <-rr.done:
				got = &r
			default:
				return readResult{}, false
			}
		}
		return *got, true
	}
}

// TestHarnessFollowerReadWaitsForReadIndex: a follower cut off from raft
// traffic gets a read index from the leader after a write it has not
// received; for 5 s of manual time its reads are never served (they would
// miss the write; failing them is fine, the client retries elsewhere).
// Once it caught up, a read is served with the write visible.
func TestHarnessFollowerReadWaitsForReadIndex(t *testing.T) {
	h := newHarness(t, seedOr(t, 21), 3, nil)
	h.writeKeys("a", 3)
	r := h.regionAt("a000")
	leader := h.leader(r.GetId())
	f := h.follower(r.GetId())
	h.net.addFilter(raftOnlyCut(f.id))
	h.mustPut("a000", "after-cut")
	idx := leader.AppliedIndex(r.GetId())
	require.NotZero(t, idx)
	read, failed := followerReadAt(f, r, idx), 0
	for range int(5 * time.Second / harnessTick) {
		h.tick()
		if res, answered := read(); answered {
			require.Nil(t, res.region, "follower read served while cut off (applied %d < read index %d)", f.peers[r.GetId()].ps.apply.applied, idx)
			failed++
			read = followerReadAt(f, r, idx)
		}
	}
	require.NotEqual(t, "after-cut", value(t, f, "a000"))
	h.net.clearFilters()
	h.waitFor("follower read", 200, func() bool {
		res, answered := read()
		if answered && res.region == nil {
			read = followerReadAt(f, r, idx)
			return false
		}
		return answered
	})
	require.Equal(t, "after-cut", value(t, f, "a000"), "served before the write at the read index applied")
	require.GreaterOrEqual(t, f.AppliedIndex(r.GetId()), idx)
	t.Logf("%d follower reads failed while cut off", failed)
}

// lockValue is the fake lock format of the tests' MinLockTS: the start ts.
func lockValue(startTS uint64) []byte { return binary.BigEndian.AppendUint64(nil, startTS) }

// fakeMinLockTS reads lockValue locks.
func fakeMinLockTS(r pebble.Reader, start, end []byte) (uint64, error) {
	lo, hi := keys.CFBounds(raft_cmdpb.CF_LOCK, start, end)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	lowest := uint64(math.MaxUint64)
	for it.First(); it.Valid(); it.Next() {
		lowest = min(lowest, binary.BigEndian.Uint64(it.Value()))
	}
	return lowest, it.Error()
}

// cfCmd writes (value != nil) or deletes key in cf of region.
func cfCmd(r *metapb.Region, reqs ...*raft_cmdpb.Request) *raft_cmdpb.RaftCmdRequest {
	return &raft_cmdpb.RaftCmdRequest{
		Header:   &raft_cmdpb.RaftRequestHeader{RegionId: r.GetId(), RegionEpoch: r.GetRegionEpoch()},
		Requests: reqs,
	}
}

// resolveRound hands every store the PD timestamp ts (as resolveLoop
// would) and ticks until the StoreLiveness messages carried the results.
func (h *harness) resolveRound(ts uint64) {
	for _, s := range h.running() {
		s.inbox.push(func(m *inboxMsgs) { m.resolveTS = ts })
	}
	for range 2 * max(h.running()[0].cfg.HeartbeatTicks, 1) {
		h.tick()
	}
}

// TestHarnessSafeTS: a follower's safe ts never covers a write it has not
// applied. A transaction locks k (start ts 100), so the resolved ts stays
// at 100 while the lock is there; its commit (lock removed, data written,
// commit ts 150) reaches the leader but not a follower cut off from raft
// traffic (store liveness still flows): the leader resolves 300 at an
// index the follower lacks, so the follower's safe ts stays at 100 and a
// stale read at 150 there is DataIsNotReady. Once it applies the commit,
// its safe ts is 300 and the read at 150 sees the write.
func TestHarnessSafeTS(t *testing.T) {
	h := newHarness(t, seedOr(t, 22), 3, nil)
	hooks := &ResolvedTSHooks{
		TS:           func(context.Context) (uint64, error) { return 0, nil },
		AdvanceMaxTS: func(uint64) uint64 { return math.MaxUint64 },
		MinLockTS:    fakeMinLockTS,
	}
	for _, s := range h.running() {
		s.SetResolvedTSHooks(hooks)
	}
	h.writeKeys("a", 2)
	split := h.split("zz") // a second region, with no lock: it resolves to the round's ts
	h.waitFor("split answered", 100, func() bool { return split.done })
	require.Nil(t, split.resp.GetRegionError())
	r, other := h.regionAt("a000"), h.regionAt("zz")
	h.putRetrying("zz1", "v") // its leader holds a lease
	require.NotEqual(t, r.GetId(), other.GetId())
	k := keys.Encode(nil, []byte("k"))
	_, res := h.proposeRetrying("lock", r.GetId(), func(r *metapb.Region) *raft_cmdpb.RaftCmdRequest {
		return cfCmd(r, &raft_cmdpb.Request{CmdType: raft_cmdpb.CmdType_Put, Cf: raft_cmdpb.CF_LOCK, Key: k, Value: lockValue(100)})
	})
	require.NoError(t, res.err)
	h.resolveRound(200)
	leader := h.leader(r.GetId())
	f := h.follower(r.GetId())
	rctx := &kvrpcpb.Context{RegionId: r.GetId(), RegionEpoch: r.GetRegionEpoch()}
	require.EqualValues(t, 100, leader.SafeTS(r.GetId()), "the lock holds the leader's resolved ts")
	h.waitFor("follower safe ts", 50, func() bool { return f.SafeTS(r.GetId()) == 100 })
	for _, s := range h.replicas(other.GetId()) {
		h.waitFor("unlocked region's safe ts", 50, func() bool { return s.SafeTS(other.GetId()) == 200 })
	}
	_, rerr := f.StaleRead(rctx, 100)
	require.Nil(t, rerr)
	_, rerr = f.StaleRead(rctx, 101)
	require.NotNil(t, rerr.GetDataIsNotReady())

	h.net.addFilter(raftOnlyCut(f.id))
	_, res = h.proposeRetrying("commit", r.GetId(), func(r *metapb.Region) *raft_cmdpb.RaftCmdRequest {
		return cfCmd(r,
			&raft_cmdpb.Request{CmdType: raft_cmdpb.CmdType_Delete, Cf: raft_cmdpb.CF_LOCK, Key: k},
			&raft_cmdpb.Request{CmdType: raft_cmdpb.CmdType_Put, Cf: raft_cmdpb.CF_DEFAULT, Key: k, Value: []byte("committed@150")})
	})
	require.NoError(t, res.err)
	for range 3 {
		h.resolveRound(300)
	}
	require.EqualValues(t, 300, h.leader(r.GetId()).SafeTS(r.GetId()))
	require.EqualValues(t, 100, f.SafeTS(r.GetId()), "safe ts advanced past a write the follower has not applied")
	_, rerr = f.StaleRead(rctx, 150)
	require.NotNil(t, rerr.GetDataIsNotReady())
	require.Equal(t, "", value(t, f, "k"))

	h.net.clearFilters()
	h.waitFor("follower catches up", 200, func() bool { return value(t, f, "k") == "committed@150" })
	h.resolveRound(400)
	h.waitFor("follower safe ts", 50, func() bool { return f.SafeTS(r.GetId()) >= 300 })
	region, rerr := f.StaleRead(rctx, 150)
	require.Nil(t, rerr)
	require.Equal(t, r.GetId(), region.GetId())
	require.Equal(t, "committed@150", value(t, f, "k"))
}

// TestHarnessReplicaReadsWaitForSnapshotInstall: while a follower installs
// a snapshot (its ranges cleared, the files not ingested yet) it serves no
// replica read: a follower read at the snapshot's index waits, a stale
// read is DataIsNotReady even under a safe ts that covers it, and a read
// that already passed its checks fails ReplicaPresent. Once the ingest
// finished, all of them are served, with the data there.
func TestHarnessReplicaReadsWaitForSnapshotInstall(t *testing.T) {
	h := newHarness(t, seedOr(t, 23), 3, aggressiveLogGC)
	h.writeKeys("a", 5)
	r := h.regionAt("a000")
	victim, _, p := h.snapshotIngestHeld(r, 40)
	at := p.ps.apply.applied
	p.advanceSafeTS(1000)
	rctx := &kvrpcpb.Context{RegionId: r.GetId(), RegionEpoch: p.region.GetRegionEpoch()}
	read := followerReadAt(victim, p.region, at)
	for range 5 {
		h.tick()
		_, answered := read()
		require.False(t, answered, "a follower read was answered during the install")
	}
	require.False(t, victim.ReplicaPresent(r.GetId()))
	_, rerr := victim.StaleRead(rctx, 10)
	require.NotNil(t, rerr.GetDataIsNotReady(), "stale read during the install")

	victim.snaps.holdIngest = nil
	victim.installDone(p, p.ps.install, victim.snaps.ingest(p.ps.install))
	res, answered := read()
	require.True(t, answered, "the follower read waits no longer once the ingest finished")
	require.NotNil(t, res.region)
	require.True(t, victim.ReplicaPresent(r.GetId()))
	_, rerr = victim.StaleRead(rctx, 10)
	require.Nil(t, rerr)
	require.Equal(t, value(t, h.leader(r.GetId()), "a000"), value(t, victim, "a000"))
}

// TestReceiveSafeTSBatch: a follower takes a region's ts from region_ts
// when it is set there and not 0, else the batch's common ts, and ignores
// a batch whose arrays do not line up (it never indexes past them).
func TestReceiveSafeTSBatch(t *testing.T) {
	h := newHarness(t, seedOr(t, 24), 3, nil)
	h.writeKeys("a", 1)
	r := h.regionAt("a000")
	f := h.follower(r.GetId())
	id, applied := r.GetId(), f.peers[r.GetId()].ps.apply.applied
	for _, c := range []struct {
		name string
		b    *raft_serverpb.SafeTSBatch
		want uint64
	}{
		{"indexes missing", &raft_serverpb.SafeTSBatch{RegionIds: []uint64{id, 99}, AppliedIndexes: []uint64{applied}, Ts: 50}, 0},
		{"region_ts short", &raft_serverpb.SafeTSBatch{RegionIds: []uint64{99, id}, AppliedIndexes: []uint64{1, applied}, Ts: 50, RegionTs: []uint64{7}}, 0},
		{"common ts", &raft_serverpb.SafeTSBatch{RegionIds: []uint64{id}, AppliedIndexes: []uint64{applied}, Ts: 60}, 60},
		{"0 in region_ts is the common ts", &raft_serverpb.SafeTSBatch{RegionIds: []uint64{99, id}, AppliedIndexes: []uint64{1, applied}, Ts: 70, RegionTs: []uint64{40, 0}}, 70},
		{"own ts", &raft_serverpb.SafeTSBatch{RegionIds: []uint64{id, 99}, AppliedIndexes: []uint64{applied, 1}, Ts: 500, RegionTs: []uint64{80, 0}}, 80},
		{"never lowered", &raft_serverpb.SafeTSBatch{RegionIds: []uint64{id}, AppliedIndexes: []uint64{applied}, Ts: 75}, 80},
		{"not applied yet", &raft_serverpb.SafeTSBatch{RegionIds: []uint64{id}, AppliedIndexes: []uint64{applied + 100}, Ts: 90}, 80},
	} {
		f.receiveSafeTS(1, c.b)
		require.EqualValues(t, c.want, f.SafeTS(id), c.name)
	}
}
