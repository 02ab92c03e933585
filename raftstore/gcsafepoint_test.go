package raftstore

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/proto/raft_cmdpb"
)

// TestHarnessGCSafePointReachesEveryReplica: a GC command (a delete
// carrying the safe point it collects under) raises the known safe point
// of every replica that applies it, and a replica partitioned away from it
// until the log was compacted learns it from the snapshot it installs
// instead. Both survive a power loss: a replica whose engine shows the
// deletion knows the safe point.
func TestHarnessGCSafePointReachesEveryReplica(t *testing.T) {
	h := newCrashHarness(t, seedOr(t, 25), 3, aggressiveLogGC)
	h.writeKeys("a", 5)
	r := h.regionAt("a000")
	l := h.leader(r.GetId())
	victim := h.follower(r.GetId())
	h.net.addFilter(isolate(victim.id))
	behind := victim.peers[r.GetId()].ps.apply.applied

	const sp = 1234
	fromApply := counterValue(t, gcSafePointLearned.WithLabelValues("apply"))
	gcCmd := putCmd(r, "a000", "")
	gcCmd.Requests[0].CmdType = raft_cmdpb.CmdType_Delete
	gcCmd.GcSafePoint = sp
	res := h.propose(l, gcCmd)
	h.waitFor("gc delete applied", 100, func() bool { return res.done })
	require.NoError(t, res.err)
	require.Nil(t, res.resp.GetRegionError())
	for _, s := range h.running() {
		if s == victim {
			require.Zero(t, s.GCSafePoint(), "the partitioned replica applied nothing")
			continue
		}
		h.waitFor("gc delete applied on every connected replica", 100, func() bool { return value(t, s, "a000") == "" })
		require.Equal(t, uint64(sp), s.GCSafePoint(), "store %d applied the deletes without their safe point", s.id)
	}
	require.Greater(t, counterValue(t, gcSafePointLearned.WithLabelValues("apply")), fromApply)

	fromSnap := counterValue(t, gcSafePointLearned.WithLabelValues("snapshot"))
	h.writeKeys("b", 40)
	h.waitFor("log compacted past the partitioned replica", 100, func() bool {
		return l.peers[r.GetId()].ps.apply.truncatedIndex > behind
	})
	h.net.clearFilters()
	h.waitFor("snapshot installed", 200, func() bool {
		p := victim.peers[r.GetId()]
		return p != nil && !p.ps.installing() && value(t, victim, "b039") == value(t, l, "b039")
	})
	require.Empty(t, value(t, victim, "a000"))
	require.Equal(t, uint64(sp), victim.GCSafePoint(), "the snapshot of a collected region did not carry its safe point")
	require.Greater(t, counterValue(t, gcSafePointLearned.WithLabelValues("snapshot")), fromSnap)

	// Power loss: unsynced applies are lost (and re-applied from the raft
	// log); whatever the engine shows, the safe point covers it.
	for _, s := range h.running() {
		id := s.id
		h.crash(id)
		back := h.restart(id)
		_, closer, err := back.db.Get(keys.EngineKey(nil, raft_cmdpb.CF_DEFAULT, keys.Encode(nil, []byte("a000"))))
		if err == nil {
			closer.Close() // the delete was lost with its batch: so may the safe point be
		} else {
			require.Equal(t, uint64(sp), back.GCSafePoint(), "store %d restarted showing the deletion without its safe point", id)
		}
	}
	for _, s := range h.running() {
		h.waitFor("deletes re-applied", 100, func() bool { return value(t, s, "a000") == "" })
		require.Equal(t, uint64(sp), s.GCSafePoint(), "store %d", s.id)
	}
	h.requireConsistent(r.GetId())
}

// TestSnapMetaGCSafePoint: a description carries the GC safe point as its
// last item, only when set (without one it is byte for byte the format
// before the field); anything after it is refused.
func TestSnapMetaGCSafePoint(t *testing.T) {
	m := &snapMeta{region: testRegion(), files: []snapFile{{cf: raft_cmdpb.CF_WRITE, size: 10, keys: 2, crc: 7,
		smallest: keys.EngineKey(nil, raft_cmdpb.CF_WRITE, []byte("a")), largest: keys.EngineKey(nil, raft_cmdpb.CF_WRITE, []byte("b"))}}}
	plain, err := m.encode()
	require.NoError(t, err)
	m.gcSafePoint = 1 << 40
	withSP, err := m.encode()
	require.NoError(t, err)
	require.Equal(t, plain, withSP[:len(plain)], "the safe point is appended to the old format")

	got, err := decodeSnapMeta(withSP)
	require.NoError(t, err)
	require.Equal(t, m.gcSafePoint, got.gcSafePoint)
	require.Equal(t, m.files, got.files)
	got, err = decodeSnapMeta(plain)
	require.NoError(t, err)
	require.Zero(t, got.gcSafePoint)
	require.Equal(t, m.files, got.files)

	_, err = decodeSnapMeta(append(withSP, 0))
	require.ErrorIs(t, err, ErrCorrupt)
	_, err = decodeSnapMeta(withSP[:len(withSP)-1])
	require.ErrorIs(t, err, ErrCorrupt)
}
