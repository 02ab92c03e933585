package raftstore

import (
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
)

// TestSnapshotRoundTrip: a snapshot holds exactly the region's keys in
// every key space; installing it replaces the region's data (and nothing
// outside it), drops the log and sets applied = truncated = its index.
func TestSnapshotRoundTrip(t *testing.T) {
	region := testRegion()
	region.StartKey, region.EndKey = []byte("b"), []byte("d")
	ek := func(cf raft_cmdpb.CF, k string) []byte {
		return keys.EngineKey(nil, cf, keys.EncodeVersioned(nil, []byte(k), 7))
	}

	src := memDB(t)
	for _, k := range []string{"a", "b", "c", "c\xff", "d"} {
		for _, cf := range keys.CFs {
			require.NoError(t, src.Set(ek(cf, k), []byte("src-"+k), nil))
		}
	}
	data, err := readSnapshotData(src, region)
	require.NoError(t, err)

	dst := memDB(t)
	b := dst.NewBatch()
	require.NoError(t, writeInitialState(b, region))
	require.NoError(t, b.Commit(pebble.Sync))
	for _, k := range []string{"a", "b", "bb", "d"} { // bb: stale, must go
		require.NoError(t, dst.Set(ek(raft_cmdpb.CF_WRITE, k), []byte("old-"+k), nil))
	}
	ps, err := loadPeerStorage(dst, region)
	require.NoError(t, err)
	persist(t, ps, ents(6, 6, 9), nil)

	snap := &raftpb.Snapshot{Data: data, Metadata: &raftpb.SnapshotMetadata{Index: new(uint64(40)), Term: new(uint64(8)), ConfState: ps.confState()}}
	b = dst.NewBatch()
	require.NoError(t, ps.writeSnapshot(b, snap))
	require.NoError(t, b.Commit(pebble.Sync))
	ps.snapshotPersisted(snap)

	got := map[string]string{}
	it, err := dst.NewIter(&pebble.IterOptions{LowerBound: []byte{'a'}, UpperBound: []byte{'{'}})
	require.NoError(t, err)
	for valid := it.First(); valid; valid = it.Next() {
		got[string(it.Key())] = string(it.Value())
	}
	require.NoError(t, it.Close())
	want := map[string]string{
		string(ek(raft_cmdpb.CF_WRITE, "a")): "old-a", // outside the region: untouched
		string(ek(raft_cmdpb.CF_WRITE, "d")): "old-d",
	}
	for _, k := range []string{"b", "c", "c\xff"} {
		for _, cf := range keys.CFs {
			want[string(ek(cf, k))] = "src-" + k
		}
	}
	require.Equal(t, want, got)

	for _, ps := range []*peerStorage{ps, must2(loadPeerStorage(dst, region))} {
		first, _ := ps.FirstIndex()
		last, _ := ps.LastIndex()
		require.Equal(t, uint64(41), first)
		require.Equal(t, uint64(40), last)
		require.Equal(t, uint64(40), ps.apply.applied)
		term, err := ps.Term(40)
		require.NoError(t, err)
		require.Equal(t, uint64(8), term)
		_, err = ps.Entries(6, 10, ^uint64(0))
		require.ErrorIs(t, err, raft.ErrCompacted)
	}

	// A key outside the snapshot's region in the data is refused, not
	// written: the data of the whole key space under region's header.
	all := must(readSnapshotData(src, &metapb.Region{Id: region.GetId()}))
	_, allKVs, err := snapField(all)
	require.NoError(t, err)
	hdr := must(readSnapshotData(memDB(t), region))
	bad := &raftpb.Snapshot{Data: append(hdr, allKVs...), Metadata: snap.Metadata}
	require.ErrorIs(t, ps.writeSnapshot(dst.NewBatch(), bad), ErrCorrupt)
	// So is a snapshot of another region.
	other := &raftpb.Snapshot{Data: must(readSnapshotData(src, &metapb.Region{Id: region.GetId() + 1})), Metadata: snap.Metadata}
	require.ErrorIs(t, ps.writeSnapshot(dst.NewBatch(), other), ErrCorrupt)
}

func must2[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
