package memengine

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
)

func open(t *testing.T) *Engine {
	e, err := Open(Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	return e
}

func putWrite(t *testing.T, e *Engine, region *metapb.Region, k string, ts uint64) {
	t.Helper()
	rerr, err := e.Write(context.Background(), nil, region, 0, []*raft_cmdpb.Request{{
		CmdType: raft_cmdpb.CmdType_Put, Cf: raft_cmdpb.CF_WRITE, Key: keys.EncodeVersioned(nil, []byte(k), ts), Value: []byte{'P'},
	}}, nil)
	require.NoError(t, err)
	require.Nil(t, rerr)
}

// A split moves the epoch on: requests and writes in the old epoch get
// EpochNotMatch with the current regions.
func TestSplitEpochs(t *testing.T) {
	e := open(t)
	ctx := context.Background()
	old := e.RegionByID(1)
	out := e.Split([]byte("m"), []byte("m"), []byte("t"))
	require.Len(t, out, 3)
	require.Equal(t, []string{"", "m", "t"}, []string{string(out[0].GetStartKey()), string(out[1].GetStartKey()), string(out[2].GetStartKey())})
	for _, r := range out {
		require.Equal(t, uint64(2), r.GetRegionEpoch().GetVersion())
	}
	_, rerr, err := e.ReadIndex(ctx, &kvrpcpb.Context{RegionId: 1, RegionEpoch: old.GetRegionEpoch()})
	require.NoError(t, err)
	require.Len(t, rerr.GetEpochNotMatch().GetCurrentRegions(), 3)
	rerr, err = e.Write(ctx, nil, old, 0, nil, nil)
	require.NoError(t, err)
	require.NotNil(t, rerr.GetEpochNotMatch(), "a write evaluated before the split is refused")
	_, rerr, err = e.ReadIndex(ctx, &kvrpcpb.Context{RegionId: 99})
	require.NoError(t, err)
	require.NotNil(t, rerr.GetRegionNotFound())
	require.Nil(t, e.Split([]byte("m")), "already a boundary")
}

// SplitBySize cuts regions into maxKeys committed user keys each, counting
// a key's versions once.
func TestSplitBySize(t *testing.T) {
	e := open(t)
	r := e.RegionByID(1)
	for i := range 10 {
		putWrite(t, e, r, fmt.Sprintf("k%d", i), 5)
		putWrite(t, e, r, fmt.Sprintf("k%d", i), 7)
	}
	n, err := e.SplitBySize(3)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	var starts []string
	for _, r := range e.Regions() {
		starts = append(starts, string(r.GetStartKey()))
	}
	require.Equal(t, []string{"", "k3", "k6", "k9"}, starts)
	n, err = e.SplitBySize(3)
	require.NoError(t, err)
	require.Zero(t, n)
}

// A request addressed to a peer that does not lead the region gets
// NotLeader with the leader.
func TestNotLeader(t *testing.T) {
	e, err := Open(Options{
		Peers: func(id uint64) []*metapb.Peer {
			return []*metapb.Peer{{Id: 10 * id, StoreId: 1}, {Id: 10*id + 1, StoreId: 2}}
		},
		Leader: func(r *metapb.Region) *metapb.Peer { return r.GetPeers()[1] },
	})
	require.NoError(t, err)
	defer e.Close()
	_, rerr, err := e.ReadIndex(context.Background(), &kvrpcpb.Context{RegionId: 1, Peer: &metapb.Peer{Id: 10, StoreId: 1}})
	require.NoError(t, err)
	require.Equal(t, uint64(2), rerr.GetNotLeader().GetLeader().GetStoreId())
}
