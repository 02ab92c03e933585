package raftstore

import (
	"log/slog"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"

	"github.com/stratadb/strata/proto/raft_cmdpb"
)

// TestApplyCompactLog: a CompactLog applied in the apply batch deletes the
// entries up to its index and persists the truncated state with them; the
// storage then answers ErrCompacted below it, before and after a reload.
// An older CompactLog applied later is a no-op.
func TestApplyCompactLog(t *testing.T) {
	db := memDB(t)
	region := testRegion()
	b := db.NewBatch()
	require.NoError(t, writeInitialState(b, region))
	require.NoError(t, b.Commit(pebble.Sync))
	ps, err := loadPeerStorage(db, region)
	require.NoError(t, err)
	persist(t, ps, ents(6, 6, 20), nil)
	a := &applier{db: db, host: &Store{db: db, log: slog.Default()}, log: slog.Default()}
	p := &peer{region: region, ps: ps}

	apply := func(ci, index uint64) {
		as := ps.apply
		as.applied = index
		b := db.NewBatch()
		cmd := &raft_cmdpb.RaftCmdRequest{
			Header: &raft_cmdpb.RaftRequestHeader{RegionId: region.GetId()},
			AdminRequest: &raft_cmdpb.AdminRequest{CmdType: raft_cmdpb.AdminCmdType_CompactLog,
				CompactLog: &raft_cmdpb.CompactLogRequest{CompactIndex: ci, CompactTerm: 6}},
		}
		resp, _ := a.applyCmd(b, p, &as, cmd, index)
		require.Nil(t, resp.GetRegionError(), "CompactLog is not epoch-checked")
		require.NoError(t, b.Set(applyStateKey(region.GetId()), as.encode(), nil))
		require.NoError(t, b.Commit(pebble.Sync))
		ps.apply.applied = as.applied
		if as.truncatedIndex > ps.apply.truncatedIndex {
			ps.logCompacted(as.truncatedIndex, as.truncatedTerm)
		}
	}
	apply(15, 18)
	check := func(ps *peerStorage) {
		first, err := ps.FirstIndex()
		require.NoError(t, err)
		require.Equal(t, uint64(16), first)
		term, err := ps.Term(15)
		require.NoError(t, err)
		require.Equal(t, uint64(6), term)
		_, err = ps.Term(14)
		require.ErrorIs(t, err, raft.ErrCompacted)
		_, err = ps.Entries(10, 17, ^uint64(0))
		require.ErrorIs(t, err, raft.ErrCompacted)
		es, err := ps.Entries(16, 21, ^uint64(0))
		require.NoError(t, err)
		require.Len(t, es, 5)
		last, _ := ps.LastIndex()
		require.Equal(t, uint64(20), last)
	}
	check(ps)
	apply(10, 19) // an older compaction: nothing changes
	check(ps)

	lo, hi := entryRange(region.GetId())
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	require.NoError(t, err)
	n := 0
	for valid := it.First(); valid; valid = it.Next() {
		n++
	}
	require.NoError(t, it.Close())
	require.Equal(t, 5, n, "entries 6..15 deleted")

	reloaded, err := loadPeerStorage(db, region)
	require.NoError(t, err)
	check(reloaded)
}
