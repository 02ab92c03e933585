package raftstore

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHarnessCrashDuringSnapshotInstall: a follower partitioned past log GC
// gets a snapshot; it persists the "applying" state (raft state at the
// snapshot's index, the region's ranges cleared) and is killed before its
// files are ingested, losing every unsynced write. Until then it serves no
// read, handles no Ready and applies nothing. On restart Open ingests the
// kept files: the region holds exactly the snapshot's data (the hash
// equals the leader's), no snapshot file is left, and it takes new writes.
func TestHarnessCrashDuringSnapshotInstall(t *testing.T) {
	crashDuringSnapshotInstall(t, seedOr(t, 15))
}

func crashDuringSnapshotInstall(t *testing.T, seed uint64) *harness {
	h := newCrashHarness(t, seed, 3, aggressiveLogGC)
	h.writeKeys("a", 5)
	r := h.regionAt("a000")
	victim, behind, p := h.snapshotIngestHeld(r, 40)
	require.Equal(t, peerStateApplying, regionStateOf(t, victim.db, r.GetId()))
	at := p.ps.apply.applied
	require.Greater(t, at, behind)
	n := 0
	require.NoError(t, scanRegion(victim.db, p.region, func(k, v []byte) { n++ }))
	require.Zero(t, n, "the region's ranges are cleared before the ingest")
	// Mid-install: reads are refused with a region error, nothing is
	// applied although the leader keeps writing.
	read := readAt(victim, p.region)
	h.writeKeys("c", 5)
	for range 5 {
		h.tick()
	}
	ok, answered := read()
	require.True(t, answered)
	require.False(t, ok, "a peer installing a snapshot served a read")
	require.Nil(t, victim.LeasedRegion([]byte("c000")))
	require.True(t, p.ps.installing())
	require.Equal(t, at, p.ps.apply.applied, "applied entries before the snapshot's files were ingested")

	h.crashKeeping(victim.id, 0)
	back := h.restart(victim.id)
	require.Equal(t, peerStateNormal, regionStateOf(t, back.db, r.GetId()))
	require.GreaterOrEqual(t, back.peers[r.GetId()].ps.apply.applied, at, "the snapshot's raft state was lost in the crash")
	names, err := back.snaps.fs.List(back.snaps.dir)
	require.NoError(t, err)
	require.Empty(t, names, "snapshot files left after the install")
	h.requireConsistent(r.GetId())
	h.checkHash(r.GetId())
	require.Equal(t, value(t, h.leader(r.GetId()), "b039"), value(t, back, "b039"))
	h.writeKeys("d", 5)
	h.requireConsistent(r.GetId())
	return h
}
