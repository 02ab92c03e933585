package pdclient_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/pd/pdtest"
	"github.com/stratadb/strata/proto/metapb"
)

// TestSplitRoutingAtPD: AskBatchSplit hands out distinct region and peer
// ids for a region at PD's epoch and refuses a stale one; ReportBatchSplit
// replaces the region by all the split regions at once (routing and
// ScanRegions follow), and a late report with an older version changes
// nothing.
func TestSplitRoutingAtPD(t *testing.T) {
	c := newClient(t, []string{pdtest.Start(t, 3)})
	ctx := testCtx(t)
	for i := uint64(1); i <= 3; i++ {
		require.NoError(t, c.PutStore(ctx, &metapb.Store{Id: 100 + i, Address: fmt.Sprintf("127.0.0.1:%d", 100+i)}))
	}
	var region *metapb.Region
	require.Eventually(t, func() bool {
		r, _, err := c.GetRegion(ctx, []byte("k"))
		region = r
		return err == nil && r != nil
	}, 10*time.Second, 10*time.Millisecond, "bootstrap region")

	ids, err := c.AskBatchSplit(ctx, region, 2)
	require.NoError(t, err)
	require.Len(t, ids, 2)
	seen := map[uint64]bool{region.GetId(): true}
	for _, p := range region.GetPeers() {
		seen[p.GetId()] = true
	}
	for _, id := range ids {
		require.Len(t, id.GetNewPeerIds(), 3)
		for _, x := range append([]uint64{id.GetNewRegionId()}, id.GetNewPeerIds()...) {
			require.False(t, seen[x], "id %d handed out twice", x)
			seen[x] = true
		}
	}

	epoch := &metapb.RegionEpoch{ConfVer: region.GetRegionEpoch().GetConfVer(), Version: region.GetRegionEpoch().GetVersion() + 2}
	left := proto.CloneOf(region)
	left.EndKey, left.RegionEpoch = []byte("g"), epoch
	mid := &metapb.Region{Id: ids[0].GetNewRegionId(), StartKey: []byte("g"), EndKey: []byte("p"), RegionEpoch: epoch}
	right := &metapb.Region{Id: ids[1].GetNewRegionId(), StartKey: []byte("p"), RegionEpoch: epoch}
	for i, p := range region.GetPeers() {
		mid.Peers = append(mid.Peers, &metapb.Peer{Id: ids[0].GetNewPeerIds()[i], StoreId: p.GetStoreId()})
		right.Peers = append(right.Peers, &metapb.Peer{Id: ids[1].GetNewPeerIds()[i], StoreId: p.GetStoreId()})
	}
	require.NoError(t, c.ReportBatchSplit(ctx, []*metapb.Region{left, mid, right}))
	for key, want := range map[string]uint64{"a": left.GetId(), "g": mid.GetId(), "k": mid.GetId(), "p": right.GetId(), "zz": right.GetId()} {
		r, _, err := c.GetRegion(ctx, []byte(key))
		require.NoError(t, err)
		require.Equal(t, want, r.GetId(), "key %q", key)
	}
	stats, err := c.ScanRegions(ctx, []byte("b"), []byte("q"), 0)
	require.NoError(t, err)
	require.Len(t, stats, 3)
	stats, err = c.ScanRegions(ctx, nil, nil, 2)
	require.NoError(t, err)
	require.Len(t, stats, 2, "limit")

	// Late or stale: the pre-split region changes nothing, and ids for a
	// split of it are refused.
	require.NoError(t, c.ReportBatchSplit(ctx, []*metapb.Region{region}))
	r, _, err := c.GetRegion(ctx, []byte("k"))
	require.NoError(t, err)
	require.Equal(t, mid.GetId(), r.GetId())
	_, err = c.AskBatchSplit(ctx, region, 1)
	require.Error(t, err)
}

// TestSplitReportOfSplitTableSize: SPLIT TABLE makes up to 1000 regions at
// once; their report is one etcd transaction of over 1000 operations,
// beyond etcd's default limit of 128, and PD routes to every one of them.
func TestSplitReportOfSplitTableSize(t *testing.T) {
	c := newClient(t, []string{pdtest.Start(t, 3)})
	ctx := testCtx(t)
	for i := uint64(1); i <= 3; i++ {
		require.NoError(t, c.PutStore(ctx, &metapb.Store{Id: 100 + i, Address: fmt.Sprintf("127.0.0.1:%d", 100+i)}))
	}
	var region *metapb.Region
	require.Eventually(t, func() bool {
		r, _, err := c.GetRegion(ctx, []byte("k"))
		region = r
		return err == nil && r != nil
	}, 10*time.Second, 10*time.Millisecond, "bootstrap region")
	const n = 1000
	ids, err := c.AskBatchSplit(ctx, region, n)
	require.NoError(t, err)
	require.Len(t, ids, n)
	epoch := &metapb.RegionEpoch{ConfVer: region.GetRegionEpoch().GetConfVer(), Version: region.GetRegionEpoch().GetVersion() + n}
	key := func(i int) []byte { return fmt.Appendf(nil, "k%04d", i) }
	first := proto.CloneOf(region)
	first.EndKey, first.RegionEpoch = key(0), epoch
	regions := []*metapb.Region{first}
	for i, id := range ids {
		r := &metapb.Region{Id: id.GetNewRegionId(), StartKey: key(i), EndKey: key(i + 1), RegionEpoch: epoch}
		if i == n-1 {
			r.EndKey = nil
		}
		for j, p := range region.GetPeers() {
			r.Peers = append(r.Peers, &metapb.Peer{Id: id.GetNewPeerIds()[j], StoreId: p.GetStoreId()})
		}
		regions = append(regions, r)
	}
	require.NoError(t, c.ReportBatchSplit(ctx, regions))
	for _, i := range []int{0, 1, 500, n - 1} {
		r, _, err := c.GetRegion(ctx, key(i))
		require.NoError(t, err)
		require.Equal(t, ids[i].GetNewRegionId(), r.GetId(), "key %q", key(i))
	}
}
