package schedule

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/proto/metapb"
)

func reg(id uint64, start, end string, ver uint64) *RegionInfo {
	return &RegionInfo{Meta: &metapb.Region{
		Id: id, StartKey: []byte(start), EndKey: []byte(end),
		RegionEpoch: &metapb.RegionEpoch{ConfVer: 1, Version: ver},
	}}
}

func TestRegionTreeFind(t *testing.T) {
	tr := NewRegionTree()
	tr.Put(reg(1, "", "", 1))
	// Split into ["", "g"), ["g", "p"), ["p", "").
	tr.Put(reg(2, "", "g", 2))
	tr.Put(reg(3, "g", "p", 2))
	tr.Put(reg(1, "p", "", 3))
	require.Equal(t, 3, tr.Len())
	for _, tc := range []struct {
		key  string
		want uint64
	}{
		{"", 2}, {"a", 2}, {"f\xff", 2}, {"g", 3}, {"o", 3}, {"p", 1}, {"zzzz", 1},
	} {
		r := tr.Find([]byte(tc.key))
		require.NotNil(t, r, "key %q", tc.key)
		require.Equal(t, tc.want, r.ID(), "key %q", tc.key)
	}
	// A merge of 2 and 3 replaces both.
	tr.Put(reg(3, "", "p", 4))
	require.Equal(t, 2, tr.Len())
	require.Equal(t, uint64(3), tr.Find([]byte("a")).ID())
	require.Nil(t, tr.Get(2))

	// A hole: only [m, n) known.
	tr2 := NewRegionTree()
	tr2.Put(reg(9, "m", "n", 1))
	for _, tc := range []struct {
		key   string
		found bool
	}{{"", false}, {"l", false}, {"m", true}, {"mzz", true}, {"n", false}} {
		require.Equal(t, tc.found, tr2.Find([]byte(tc.key)) != nil, "key %q", tc.key)
	}
}

func TestRegionTreeOverlaps(t *testing.T) {
	tr := NewRegionTree()
	tr.Put(reg(1, "", "c", 1))
	tr.Put(reg(2, "c", "f", 1))
	tr.Put(reg(3, "f", "", 1))
	ids := func(rs []*RegionInfo) (out []uint64) {
		for _, r := range rs {
			out = append(out, r.ID())
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
		require.Equal(t, tc.want, ids(tr.Overlaps(tc.id, []byte(tc.start), []byte(tc.end))), "%+v", tc)
	}
}

// A report of an older term keeps the known leader; a newer one replaces it.
func TestPutRegionLeaderTerm(t *testing.T) {
	c := NewCluster(Config{}, nil)
	for _, tc := range []struct {
		leader, term uint64
		want         uint64
	}{
		{11, 2, 11},
		{12, 1, 11}, // older term ignored
		{13, 2, 13}, // same term (transfer reported late) accepted
		{14, 5, 14},
	} {
		r := reg(1, "", "", 1)
		r.Leader, r.Term = &metapb.Peer{Id: tc.leader}, tc.term
		c.PutRegion(r)
		require.Equal(t, tc.want, c.GetRegion(1).Leader.GetId())
	}
}

// A report with an older epoch than the stored region never replaces it
// (two heartbeats racing past HeartbeatCheck).
func TestPutRegionKeepsNewerEpoch(t *testing.T) {
	c := NewCluster(Config{}, nil)
	newer := reg(1, "", "", 2)
	newer.Meta.RegionEpoch.ConfVer = 5
	c.PutRegion(newer)
	for _, e := range []struct{ ver, conf uint64 }{{1, 5}, {2, 4}} {
		old := reg(1, "", "", e.ver)
		old.Meta.RegionEpoch.ConfVer = e.conf
		c.PutRegion(old)
		require.Equal(t, uint64(2), c.GetRegion(1).Epoch().GetVersion())
		require.Equal(t, uint64(5), c.GetRegion(1).Epoch().GetConfVer())
	}
}
