package storetest_test

// The cluster mechanisms (leader moves, a lagging or failing PD, a node
// gone, a peer removed, per-node counts, faults per node) seen by raw
// store RPCs, as a client sees them.

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/storepb"
	"github.com/stratadb/strata/store/storetest"
)

func newStore(t *testing.T, opts storetest.Options) *storetest.Store {
	t.Helper()
	st, err := storetest.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	return st
}

// get sends a KvGet for key to node storeID, addressed to region r's peer
// there.
func get(t *testing.T, st *storetest.Store, storeID uint64, r *metapb.Region, key []byte) (*kvrpcpb.GetResponse, error) {
	t.Helper()
	conn, err := grpc.NewClient(st.Addr(storeID), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	var peer *metapb.Peer
	for _, p := range r.GetPeers() {
		if p.GetStoreId() == storeID {
			peer = p
		}
	}
	return storepb.NewStoreClient(conn).KvGet(context.Background(), &kvrpcpb.GetRequest{Key: key, Version: 1,
		Context: &kvrpcpb.Context{RegionId: r.GetId(), RegionEpoch: r.GetRegionEpoch(), Peer: peer}})
}

func TestLeaderMoves(t *testing.T) {
	st := newStore(t, storetest.Options{Stores: 3})
	ctx := context.Background()
	r, _, err := st.GetRegion(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, uint64(2), st.Leader(1), "region N is led by store N mod Stores + 1")

	st.SetLeader(1, 3, true)
	resp, err := get(t, st, 1, r, key(1))
	require.NoError(t, err)
	require.Equal(t, uint64(3), resp.GetRegionError().GetNotLeader().GetLeader().GetStoreId(), "the old peers name the new leader")
	resp, err = get(t, st, 3, r, key(1))
	require.NoError(t, err)
	require.Nil(t, resp.GetRegionError())
	_, leader, err := st.GetRegion(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, uint64(3), leader.GetStoreId())

	st.SetLeader(1, 2, false)
	resp, err = get(t, st, 3, r, key(1))
	require.NoError(t, err)
	require.NotNil(t, resp.GetRegionError().GetNotLeader())
	require.Nil(t, resp.GetRegionError().GetNotLeader().GetLeader(), "no hint")

	st.SetLeader(1, 0, false) // an election
	for id := uint64(1); id <= 3; id++ {
		resp, err = get(t, st, id, r, key(1))
		require.NoError(t, err)
		require.NotNil(t, resp.GetRegionError().GetNotLeader(), "store %d", id)
	}
	_, leader, err = st.GetRegion(ctx, nil)
	require.NoError(t, err)
	require.Nil(t, leader)
	require.Equal(t, 3, st.NodeCalls(3, "KvGet"))
	require.Equal(t, 6, st.Calls("KvGet"))

	// PD lags behind the leader change, then catches up.
	st.SetLeader(1, 1, true)
	st.SetPDLeader(1, 2)
	_, leader, err = st.GetRegionByID(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, uint64(2), leader.GetStoreId())
	st.ClearPDLeader(1)
	_, leader, err = st.GetRegion(ctx, key(1))
	require.NoError(t, err)
	require.Equal(t, uint64(1), leader.GetStoreId())
	require.Equal(t, 4, st.PDCalls("GetRegion"))
	require.Equal(t, 1, st.PDCalls("GetRegionByID"))

	st.SetPDError(errors.New("not bootstrapped"))
	_, _, err = st.GetRegion(ctx, key(1))
	require.ErrorContains(t, err, "not bootstrapped")
	_, err = st.ScanRegions(ctx, nil, nil, 0)
	require.ErrorContains(t, err, "not bootstrapped")
	st.SetPDError(nil)
	_, _, err = st.GetRegion(ctx, key(1))
	require.NoError(t, err)
}

func TestRemovePeerAndStopNode(t *testing.T) {
	st := newStore(t, storetest.Options{Stores: 2})
	ctx := context.Background()
	st.SetLeader(1, 2, true)
	r, _, err := st.GetRegion(ctx, nil)
	require.NoError(t, err)
	st.RemovePeer(1, 1)
	resp, err := get(t, st, 1, r, key(1))
	require.NoError(t, err)
	require.NotNil(t, resp.GetRegionError().GetRegionNotFound())
	r2, _, err := st.GetRegion(ctx, nil)
	require.NoError(t, err)
	require.Len(t, r2.GetPeers(), 1)
	require.Equal(t, r.GetRegionEpoch().GetConfVer()+1, r2.GetRegionEpoch().GetConfVer())

	st.StopNode(2)
	_, err = get(t, st, 2, r2, key(1))
	require.Error(t, err, "connection refused")
}

// A fault limited to one node, with Do and the store's own answer.
func TestFaultPerNode(t *testing.T) {
	st := newStore(t, storetest.Options{Stores: 2})
	ctx := context.Background()
	st.SetLeader(1, 1, true)
	r, _, err := st.GetRegion(ctx, nil)
	require.NoError(t, err)
	var seen []uint64
	f := &storetest.Fault{Method: "KvGet", Store: 2, Do: func(_ context.Context, req proto.Message) {
		seen = append(seen, req.(*kvrpcpb.GetRequest).GetContext().GetPeer().GetStoreId())
	}}
	st.Inject(f)
	resp, err := get(t, st, 1, r, key(1))
	require.NoError(t, err)
	require.Nil(t, resp.GetRegionError())
	resp, err = get(t, st, 2, r, key(1))
	require.NoError(t, err)
	require.NotNil(t, resp.GetRegionError().GetNotLeader(), "the store's own answer after Do")
	require.Equal(t, []uint64{2}, seen)
	require.Equal(t, 1, st.Hits(f))
	require.Equal(t, 1, st.NodeCalls(1, "KvGet"))
	require.Equal(t, 1, st.NodeCalls(2, "KvGet"))
}
