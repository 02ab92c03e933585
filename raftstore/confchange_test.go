package raftstore

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/stratadb/strata/proto/metapb"
)

func TestChangedRegion(t *testing.T) {
	base := func() *metapb.Region {
		return &metapb.Region{Id: 1, RegionEpoch: &metapb.RegionEpoch{ConfVer: 3, Version: 2}, Peers: []*metapb.Peer{
			{Id: 11, StoreId: 1}, {Id: 12, StoreId: 2}, {Id: 14, StoreId: 4, Role: metapb.PeerRole_Learner},
		}}
	}
	type peers = []*metapb.Peer
	for _, tc := range []struct {
		name   string
		typ    raftpb.ConfChangeType
		target *metapb.Peer
		want   peers // nil: does not fit
	}{
		{"add learner", raftpb.ConfChangeType_ConfChangeAddLearnerNode, &metapb.Peer{Id: 13, StoreId: 3},
			peers{{Id: 11, StoreId: 1}, {Id: 12, StoreId: 2}, {Id: 14, StoreId: 4, Role: metapb.PeerRole_Learner}, {Id: 13, StoreId: 3, Role: metapb.PeerRole_Learner}}},
		{"add learner on a store with a peer", raftpb.ConfChangeType_ConfChangeAddLearnerNode, &metapb.Peer{Id: 15, StoreId: 2}, nil},
		{"add learner twice", raftpb.ConfChangeType_ConfChangeAddLearnerNode, &metapb.Peer{Id: 14, StoreId: 4}, nil},
		{"promote learner", raftpb.ConfChangeType_ConfChangeAddNode, &metapb.Peer{Id: 14, StoreId: 4},
			peers{{Id: 11, StoreId: 1}, {Id: 12, StoreId: 2}, {Id: 14, StoreId: 4}}},
		{"promote a voter", raftpb.ConfChangeType_ConfChangeAddNode, &metapb.Peer{Id: 12, StoreId: 2}, nil},
		{"remove voter", raftpb.ConfChangeType_ConfChangeRemoveNode, &metapb.Peer{Id: 12, StoreId: 2},
			peers{{Id: 11, StoreId: 1}, {Id: 14, StoreId: 4, Role: metapb.PeerRole_Learner}}},
		{"remove learner", raftpb.ConfChangeType_ConfChangeRemoveNode, &metapb.Peer{Id: 14, StoreId: 4},
			peers{{Id: 11, StoreId: 1}, {Id: 12, StoreId: 2}}},
		{"remove unknown", raftpb.ConfChangeType_ConfChangeRemoveNode, &metapb.Peer{Id: 99, StoreId: 9}, nil},
	} {
		r := base()
		got, ok := changedRegion(r, tc.typ, tc.target)
		if tc.want == nil {
			require.False(t, ok, tc.name)
			continue
		}
		require.True(t, ok, tc.name)
		require.Len(t, got.Peers, len(tc.want), tc.name)
		for i, p := range tc.want {
			require.Equal(t, p.GetId(), got.Peers[i].GetId(), tc.name)
			require.Equal(t, p.GetStoreId(), got.Peers[i].GetStoreId(), tc.name)
			require.Equal(t, p.GetRole(), got.Peers[i].GetRole(), tc.name)
		}
		require.Equal(t, uint64(4), got.RegionEpoch.ConfVer, tc.name)
		require.Equal(t, uint64(2), got.RegionEpoch.Version, tc.name)
		require.Equal(t, uint64(3), r.RegionEpoch.ConfVer, "%s: the input is not modified", tc.name)
	}
	// The last voter is never removed.
	one := &metapb.Region{Id: 1, RegionEpoch: &metapb.RegionEpoch{}, Peers: []*metapb.Peer{{Id: 11, StoreId: 1}}}
	_, ok := changedRegion(one, raftpb.ConfChangeType_ConfChangeRemoveNode, &metapb.Peer{Id: 11, StoreId: 1})
	require.False(t, ok)
}

func TestConfStateRoles(t *testing.T) {
	ps := &peerStorage{region: &metapb.Region{Peers: []*metapb.Peer{{Id: 1}, {Id: 2, Role: metapb.PeerRole_Learner}, {Id: 3}}}}
	cs := ps.confState()
	require.Equal(t, []uint64{1, 3}, cs.Voters)
	require.Equal(t, []uint64{2}, cs.Learners)
}
