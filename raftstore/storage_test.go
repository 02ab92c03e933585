package raftstore

import (
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/proto/metapb"
)

func testRegion() *metapb.Region {
	return &metapb.Region{
		Id: 7, RegionEpoch: &metapb.RegionEpoch{ConfVer: 1, Version: 1},
		Peers: []*metapb.Peer{{Id: 8, StoreId: 1}, {Id: 9, StoreId: 2}, {Id: 10, StoreId: 3}},
	}
}

func memDB(t *testing.T) *pebble.DB {
	opts := engineOptions()
	opts.FS = vfs.NewMem()
	db, err := pebble.Open("", opts)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

func ents(term uint64, from, to uint64) []*raftpb.Entry {
	var out []*raftpb.Entry
	for i := from; i <= to; i++ {
		out = append(out, &raftpb.Entry{Index: new(i), Term: new(term), Type: raftpb.EntryType_EntryNormal.Enum(), Data: []byte{byte(i)}})
	}
	return out
}

// persist mimics one Ready iteration for a single peer.
func persist(t *testing.T, ps *peerStorage, es []*raftpb.Entry, hs *raftpb.HardState) {
	b := ps.db.NewBatch()
	require.NoError(t, ps.appendEntries(b, es))
	if hs != nil {
		data, err := proto.Marshal(hs)
		require.NoError(t, err)
		require.NoError(t, b.Set(hardStateKey(ps.regionID), data, nil))
	}
	require.NoError(t, b.Commit(pebble.Sync))
	ps.entriesPersisted(es, hs)
}

func TestPeerStorageInitialState(t *testing.T) {
	db := memDB(t)
	b := db.NewBatch()
	require.NoError(t, writeInitialState(b, testRegion()))
	require.NoError(t, b.Commit(pebble.Sync))
	ps, err := loadPeerStorage(db, testRegion())
	require.NoError(t, err)
	hs, cs, err := ps.InitialState()
	require.NoError(t, err)
	require.Equal(t, initTerm, hs.GetTerm())
	require.Equal(t, initIndex, hs.GetCommit())
	require.Equal(t, []uint64{8, 9, 10}, cs.Voters)
	first, _ := ps.FirstIndex()
	last, _ := ps.LastIndex()
	require.Equal(t, initIndex+1, first)
	require.Equal(t, initIndex, last)
	term, err := ps.Term(initIndex)
	require.NoError(t, err)
	require.Equal(t, initTerm, term)
	_, err = ps.Term(initIndex - 1)
	require.ErrorIs(t, err, raft.ErrCompacted)
	_, err = ps.Term(initIndex + 1)
	require.ErrorIs(t, err, raft.ErrUnavailable)
	// A snapshot is generated in the background: unavailable at first,
	// then at the applied index.
	ps.snaps = &engineStore(t, false).snaps
	_, err = ps.Snapshot()
	require.ErrorIs(t, err, raft.ErrSnapshotTemporarilyUnavailable)
	ps.snaps.wg.Wait()
	snap, err := ps.Snapshot()
	require.NoError(t, err)
	require.Equal(t, initIndex, snap.GetMetadata().GetIndex())
	require.Equal(t, initTerm, snap.GetMetadata().GetTerm())
	require.Equal(t, []uint64{8, 9, 10}, snap.GetMetadata().GetConfState().GetVoters())
}

func TestPeerStorageAppendOverwriteReload(t *testing.T) {
	db := memDB(t)
	b := db.NewBatch()
	require.NoError(t, writeInitialState(b, testRegion()))
	require.NoError(t, b.Commit(pebble.Sync))
	ps, err := loadPeerStorage(db, testRegion())
	require.NoError(t, err)

	persist(t, ps, ents(6, 6, 20), &raftpb.HardState{Term: new(uint64(6)), Commit: new(uint64(10))})
	// A new leader overwrites the tail from 15 with a shorter one.
	persist(t, ps, ents(7, 15, 16), &raftpb.HardState{Term: new(uint64(7)), Commit: new(uint64(12))})

	check := func(ps *peerStorage) {
		last, _ := ps.LastIndex()
		require.Equal(t, uint64(16), last)
		for _, tc := range []struct{ i, term uint64 }{{6, 6}, {14, 6}, {15, 7}, {16, 7}} {
			term, err := ps.Term(tc.i)
			require.NoError(t, err)
			require.Equal(t, tc.term, term, "term of %d", tc.i)
		}
		_, err := ps.Term(17)
		require.ErrorIs(t, err, raft.ErrUnavailable)
		es, err := ps.Entries(6, 17, ^uint64(0))
		require.NoError(t, err)
		require.Len(t, es, 11)
		for i, e := range es {
			require.Equal(t, uint64(6+i), e.GetIndex())
		}
		es, err = ps.Entries(6, 17, 1) // maxSize: at least one entry
		require.NoError(t, err)
		require.Len(t, es, 1)
		_, err = ps.Entries(5, 7, ^uint64(0))
		require.ErrorIs(t, err, raft.ErrCompacted)
		_, err = ps.Entries(6, 18, ^uint64(0))
		require.ErrorIs(t, err, raft.ErrUnavailable)
	}
	check(ps)

	// Reload from the engine only (no cache): the deleted tail stays gone.
	ps2, err := loadPeerStorage(db, testRegion())
	require.NoError(t, err)
	require.Empty(t, ps2.cache)
	hs, _, err := ps2.InitialState()
	require.NoError(t, err)
	require.Equal(t, uint64(12), hs.GetCommit())
	require.Equal(t, uint64(7), hs.GetTerm())
	check(ps2)
}

func TestPeerStorageCacheBounded(t *testing.T) {
	db := memDB(t)
	b := db.NewBatch()
	require.NoError(t, writeInitialState(b, testRegion()))
	require.NoError(t, b.Commit(pebble.Sync))
	ps, err := loadPeerStorage(db, testRegion())
	require.NoError(t, err)
	for i := uint64(6); i < 6+3*entryCacheSize; i += 100 {
		persist(t, ps, ents(6, i, i+99), nil)
	}
	require.LessOrEqual(t, len(ps.cache), entryCacheSize)
	// Old entries come from Pebble, recent ones from the cache.
	es, err := ps.Entries(6, 6+2*entryCacheSize, ^uint64(0))
	require.NoError(t, err)
	require.Len(t, es, 2*entryCacheSize)
	require.Equal(t, uint64(6+2*entryCacheSize-1), es[len(es)-1].GetIndex())
}

// TestPeerStorageAppliedBeyondCommit: entries already in the log may be
// applied before the hard state committing them is written (a crash in
// between leaves applied > commit); the reload takes the applied index as
// committed, so raft does not refuse to restart.
func TestPeerStorageAppliedBeyondCommit(t *testing.T) {
	db := memDB(t)
	b := db.NewBatch()
	require.NoError(t, writeInitialState(b, testRegion()))
	require.NoError(t, b.Commit(pebble.Sync))
	ps, err := loadPeerStorage(db, testRegion())
	require.NoError(t, err)
	persist(t, ps, ents(6, 6, 12), &raftpb.HardState{Term: new(uint64(6)), Commit: new(uint64(8))})
	as := ps.apply
	as.applied = 11
	require.NoError(t, db.Set(applyStateKey(ps.regionID), as.encode(), pebble.Sync))

	ps2, err := loadPeerStorage(db, testRegion())
	require.NoError(t, err)
	hs, _, err := ps2.InitialState()
	require.NoError(t, err)
	require.Equal(t, uint64(11), hs.GetCommit())
	rn, err := raft.NewRawNode(&raft.Config{ID: 8, ElectionTick: 10, HeartbeatTick: 2, Storage: ps2,
		Applied: ps2.apply.applied, MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 16})
	require.NoError(t, err)
	require.Equal(t, uint64(11), rn.BasicStatus().GetCommit())
}
