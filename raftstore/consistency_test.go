package raftstore

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/stratadb/strata/proto/raft_cmdpb"
)

func cmdEntry(t *testing.T, index uint64, cmd *raft_cmdpb.RaftCmdRequest) *raftpb.Entry {
	data, err := encodeCmd(cmd)
	require.NoError(t, err)
	return &raftpb.Entry{Index: new(index), Term: new(uint64(initTerm)), Type: raftpb.EntryType_EntryNormal.Enum(), Data: data}
}

func adminEntry(t *testing.T, index uint64, s *Store, req *raft_cmdpb.AdminRequest) *raftpb.Entry {
	r := s.peers[testRegion().GetId()].region
	return cmdEntry(t, index, &raft_cmdpb.RaftCmdRequest{
		Header:       &raft_cmdpb.RaftRequestHeader{RegionId: r.GetId(), RegionEpoch: r.GetRegionEpoch()},
		AdminRequest: req,
	})
}

// hashStore is a store with testRegion and no loop, for driving apply.
func hashStore(t *testing.T) *Store {
	db := memDB(t)
	b := db.NewBatch()
	require.NoError(t, writeInitialState(b, testRegion()))
	require.NoError(t, b.Commit(pebble.Sync))
	s := testStore(t, db)
	t.Cleanup(s.cons.wg.Wait)
	return s
}

// applyEntries applies ents to s's region as one Ready's committed entries.
func applyEntries(s *Store, ents ...*raftpb.Entry) {
	p := s.peers[testRegion().GetId()]
	s.apply([]peerReady{{p: p, rd: raft.Ready{CommittedEntries: ents}}}, false)
}

// TestConsistencyHashAtIndex: a replica hashes the region exactly as of the
// ComputeHash entry's index, whatever else its apply batch holds: one
// replica applies put a, ComputeHash, put b in one batch, another in two;
// both hash the region with only a, and VerifyHash matches on both. A
// replica whose data differs reports a mismatch.
func TestConsistencyHashAtIndex(t *testing.T) {
	region := testRegion()
	compute := &raft_cmdpb.AdminRequest{CmdType: raft_cmdpb.AdminCmdType_ComputeHash}
	one, two, bad := hashStore(t), hashStore(t), hashStore(t)
	applyEntries(one, cmdEntry(t, 6, lockPut(region, "a")), adminEntry(t, 7, one, compute), cmdEntry(t, 8, lockPut(region, "b")))
	applyEntries(two, cmdEntry(t, 6, lockPut(region, "a")), adminEntry(t, 7, two, compute))
	applyEntries(two, cmdEntry(t, 8, lockPut(region, "b")))
	applyEntries(bad, cmdEntry(t, 6, lockPut(region, "x")), adminEntry(t, 7, bad, compute), cmdEntry(t, 8, lockPut(region, "b")))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h1, err := one.localHash(ctx, region.GetId(), 7)
	require.NoError(t, err)
	h2, err := two.localHash(ctx, region.GetId(), 7)
	require.NoError(t, err)
	hb, err := bad.localHash(ctx, region.GetId(), 7)
	require.NoError(t, err)
	require.Equal(t, h1, h2)
	require.NotEqual(t, h1, hb)
	// The hash is the region as of index 7: only "a" in it.
	require.True(t, lockExists(t, one.db, "b"))
	ref := hashStore(t)
	applyEntries(ref, cmdEntry(t, 6, lockPut(region, "a")))
	want, err := hashRegion(ref.db, region)
	require.NoError(t, err)
	require.Equal(t, want, h1)

	matches := counterValue(t, consistencyChecks.WithLabelValues("match"))
	mismatches := counterValue(t, consistencyChecks.WithLabelValues("mismatch"))
	verify := &raft_cmdpb.AdminRequest{CmdType: raft_cmdpb.AdminCmdType_VerifyHash,
		VerifyHash: &raft_cmdpb.VerifyHashRequest{Index: 7, Hash: h1}}
	for _, s := range []*Store{one, two, bad} {
		applyEntries(s, adminEntry(t, 9, s, verify))
	}
	require.Equal(t, matches+2, counterValue(t, consistencyChecks.WithLabelValues("match")))
	require.Equal(t, mismatches+1, counterValue(t, consistencyChecks.WithLabelValues("mismatch")))
	require.Equal(t, "mismatch", bad.ConsistencyHashes()[0].Verify)
	require.Equal(t, "match", one.ConsistencyHashes()[0].Verify)
	// The apply state survived the mid-batch commit: applied is the last entry.
	require.Equal(t, uint64(9), one.peers[region.GetId()].ps.apply.applied)
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	var m dto.Metric
	require.NoError(t, c.Write(&m))
	return m.GetCounter().GetValue()
}
