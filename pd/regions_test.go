package pd

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/pdpb"
)

func reg(id uint64, start, end string, ver uint64) *regionInfo {
	return &regionInfo{meta: &metapb.Region{
		Id: id, StartKey: []byte(start), EndKey: []byte(end),
		RegionEpoch: &metapb.RegionEpoch{ConfVer: 1, Version: ver},
	}}
}

func TestRegionIndexFind(t *testing.T) {
	ri := newRegionIndex()
	ri.put(reg(1, "", "", 1))
	// Split into ["", "g"), ["g", "p"), ["p", "").
	ri.put(reg(2, "", "g", 2))
	ri.put(reg(3, "g", "p", 2))
	ri.put(reg(1, "p", "", 3))
	require.Equal(t, 3, ri.len())
	for _, tc := range []struct {
		key  string
		want uint64
	}{
		{"", 2}, {"a", 2}, {"f\xff", 2}, {"g", 3}, {"o", 3}, {"p", 1}, {"zzzz", 1},
	} {
		r := ri.find([]byte(tc.key))
		require.NotNil(t, r, "key %q", tc.key)
		require.Equal(t, tc.want, r.meta.Id, "key %q", tc.key)
	}

	// A merge of 2 and 3 replaces both.
	ri.put(reg(3, "", "p", 4))
	require.Equal(t, 2, ri.len())
	require.Equal(t, uint64(3), ri.find([]byte("a")).meta.Id)
	require.Nil(t, ri.byID[2])

	// A hole: only [m, n) known.
	ri2 := newRegionIndex()
	ri2.put(reg(9, "m", "n", 1))
	for _, tc := range []struct {
		key   string
		found bool
	}{{"", false}, {"l", false}, {"m", true}, {"mzz", true}, {"n", false}} {
		require.Equal(t, tc.found, ri2.find([]byte(tc.key)) != nil, "key %q", tc.key)
	}
}

func TestRegionIndexOverlaps(t *testing.T) {
	ri := newRegionIndex()
	ri.put(reg(1, "", "c", 1))
	ri.put(reg(2, "c", "f", 1))
	ri.put(reg(3, "f", "", 1))
	ids := func(rs []*regionInfo) (out []uint64) {
		for _, r := range rs {
			out = append(out, r.meta.Id)
		}
		return out
	}
	for _, tc := range []struct {
		id         uint64
		start, end string
		want       []uint64
	}{
		{0, "", "", []uint64{1, 2, 3}},
		{0, "a", "b", []uint64{1}},
		{0, "b", "d", []uint64{1, 2}},
		{0, "c", "f", []uint64{2}},
		{2, "c", "f", nil},
		{0, "f", "", []uint64{3}},
		{0, "e", "g", []uint64{2, 3}},
	} {
		require.Equal(t, tc.want, ids(ri.overlaps(tc.id, []byte(tc.start), []byte(tc.end))), "%+v", tc)
	}
}

func regCV(id uint64, start, end string, confVer, ver uint64) *metapb.Region {
	r := reg(id, start, end, ver).meta
	r.RegionEpoch.ConfVer = confVer
	return r
}

// TestIsStale covers the heartbeat acceptance rule (persistence is covered
// by the pdclient tests against a real server).
func TestIsStale(t *testing.T) {
	c := newCluster(nil, nil, 3, nil)
	c.regions.put(&regionInfo{meta: regCV(1, "", "m", 4, 5)})
	c.regions.put(&regionInfo{meta: regCV(2, "m", "", 1, 3)})
	for _, tc := range []struct {
		name  string
		r     *metapb.Region
		stale bool
	}{
		{"same epoch", regCV(1, "", "m", 4, 5), false},
		{"older version", regCV(1, "", "m", 4, 4), true},
		{"newer version", regCV(1, "", "g", 4, 6), false},
		{"older conf_ver", regCV(1, "", "m", 3, 5), true},
		{"newer conf_ver", regCV(1, "", "m", 5, 5), false},
		{"new region overlapping a newer one", regCV(7, "k", "n", 1, 4), true},
		{"new region newer than its overlaps", regCV(7, "k", "n", 1, 6), false},
		{"new region, equal version", regCV(7, "x", "", 1, 3), false},
	} {
		require.Equal(t, tc.stale, c.isStaleLocked(tc.r), tc.name)
	}
}

func TestSetLeaderTerm(t *testing.T) {
	c := newCluster(nil, nil, 3, nil)
	r := reg(1, "", "", 1)
	for _, tc := range []struct {
		leader, term uint64
		want         uint64
	}{
		{11, 2, 11},
		{12, 1, 11}, // older term ignored
		{13, 2, 13}, // same term (transfer reported late) accepted
		{14, 5, 14},
	} {
		c.setLeaderLocked(r, &pdpb.RegionHeartbeatRequest{Leader: &metapb.Peer{Id: tc.leader}, Term: tc.term})
		require.Equal(t, tc.want, r.leader.Id)
	}
}

func TestNotLeaderAnswers(t *testing.T) {
	sv := &service{s: &Server{}}
	ctx := context.Background()
	a, err := sv.AllocID(ctx, &pdpb.AllocIDRequest{})
	require.NoError(t, err)
	require.Equal(t, pdpb.ErrorType_NOT_LEADER, a.Header.Error.Type)
	g, err := sv.GetRegion(ctx, &pdpb.GetRegionRequest{})
	require.NoError(t, err)
	require.Equal(t, pdpb.ErrorType_NOT_LEADER, g.Header.Error.Type)
	p, err := sv.PutStore(ctx, &pdpb.PutStoreRequest{})
	require.NoError(t, err)
	require.Equal(t, pdpb.ErrorType_NOT_LEADER, p.Header.Error.Type)
}
