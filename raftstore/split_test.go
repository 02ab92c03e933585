package raftstore

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/pdpb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
)

func splitReq(ks []string, firstID uint64) *raft_cmdpb.SplitRequest {
	var keysB [][]byte
	var ids []*pdpb.SplitID
	for i, k := range ks {
		keysB = append(keysB, []byte(k))
		base := firstID + uint64(i)*4
		ids = append(ids, &pdpb.SplitID{NewRegionId: base, NewPeerIds: []uint64{base + 1, base + 2, base + 3}})
	}
	return splitRequest(keysB, ids)
}

func TestSplitRegions(t *testing.T) {
	region := testRegion() // [ "", "" ), version 1, peers on stores 1..3
	region.StartKey, region.EndKey = []byte("b"), []byte("y")
	for _, c := range []struct {
		name    string
		req     *raft_cmdpb.SplitRequest
		ranges  []string // start-end per resulting region
		wantErr string
	}{
		{name: "one key", req: splitReq([]string{"m"}, 20), ranges: []string{"b-m", "m-y"}},
		{name: "three keys", req: splitReq([]string{"d", "m", "x"}, 20), ranges: []string{"b-d", "d-m", "m-x", "x-y"}},
		{name: "key on the start", req: splitReq([]string{"b"}, 20), wantErr: "not ascending inside"},
		{name: "key past the end", req: splitReq([]string{"z"}, 20), wantErr: "not ascending inside"},
		{name: "key on the end", req: splitReq([]string{"y"}, 20), wantErr: "not ascending inside"},
		{name: "descending", req: splitReq([]string{"m", "d"}, 20), wantErr: "not ascending inside"},
		{name: "repeated", req: splitReq([]string{"m", "m"}, 20), wantErr: "not ascending inside"},
		{name: "no keys", req: &raft_cmdpb.SplitRequest{}, wantErr: "0 keys"},
		{name: "missing ids", req: &raft_cmdpb.SplitRequest{SplitKeys: [][]byte{[]byte("m")}}, wantErr: "0 region ids"},
		{name: "peer ids short", req: &raft_cmdpb.SplitRequest{SplitKeys: [][]byte{[]byte("m")}, NewRegionIds: []uint64{20},
			NewPeerIds: []*raft_cmdpb.NewPeerIDs{{Ids: []uint64{21}}}}, wantErr: "1 peer ids for 3 peers"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := splitRegions(region, c.req)
			if c.wantErr != "" {
				require.ErrorContains(t, err, c.wantErr)
				return
			}
			require.NoError(t, err)
			require.Len(t, out, len(c.ranges))
			n := uint64(len(c.ranges) - 1)
			for i, r := range out {
				require.Equal(t, c.ranges[i], string(r.GetStartKey())+"-"+string(r.GetEndKey()))
				require.Equal(t, 1+n, r.GetRegionEpoch().GetVersion(), "every region gets version + new regions")
				require.Equal(t, uint64(1), r.GetRegionEpoch().GetConfVer())
				require.Len(t, r.GetPeers(), 3)
				for j, p := range r.GetPeers() {
					require.Equal(t, region.GetPeers()[j].GetStoreId(), p.GetStoreId(), "peer %d stays on its store", j)
				}
			}
			require.Equal(t, region.GetId(), out[0].GetId(), "the original keeps the left range")
			require.Equal(t, uint64(20), out[1].GetId())
			require.Equal(t, []uint64{21, 22, 23}, []uint64{out[1].Peers[0].Id, out[1].Peers[1].Id, out[1].Peers[2].Id})
			require.Equal(t, uint64(1), region.GetRegionEpoch().GetVersion(), "input not modified")
		})
	}
}

func TestNormalizeSplitKeys(t *testing.T) {
	region := &metapb.Region{StartKey: []byte("b"), EndKey: []byte("y")}
	open := &metapb.Region{StartKey: []byte("b")}
	for _, c := range []struct {
		region *metapb.Region
		in     []string
		want   []string
	}{
		{region, []string{"m"}, []string{"m"}},
		{region, []string{"x", "d", "m", "d"}, []string{"d", "m", "x"}},
		{region, []string{"a", "b", "y", "z"}, nil},
		{open, []string{"zzz", "b", "c"}, []string{"c", "zzz"}},
	} {
		var in [][]byte
		for _, k := range c.in {
			in = append(in, []byte(k))
		}
		var got []string
		for _, k := range normalizeSplitKeys(c.region, in) {
			got = append(got, string(k))
		}
		require.Equal(t, c.want, got, "%v", c.in)
	}
}

// testStore is a Store with an engine and no loop, transport or PD: apply
// is driven by hand.
func testStore(t *testing.T, db *pebble.DB) *Store {
	s := &Store{db: db, id: 1, log: slog.Default(), peers: map[uint64]*peer{}, led: map[uint64]*peer{}, meta: newStoreMeta(), approx: map[uint64]approxStat{}}
	s.cfg.setDefaults()
	s.applier = applier{db: db, host: s, log: s.log}
	regions, err := s.loadRegions()
	require.NoError(t, err)
	for _, r := range regions {
		require.NoError(t, s.createPeer(r, false))
	}
	return s
}

func lockPut(region *metapb.Region, key string) *raft_cmdpb.RaftCmdRequest {
	return &raft_cmdpb.RaftCmdRequest{
		Header: &raft_cmdpb.RaftRequestHeader{RegionId: region.GetId(), RegionEpoch: region.GetRegionEpoch()},
		Requests: []*raft_cmdpb.Request{{CmdType: raft_cmdpb.CmdType_Put, Cf: raft_cmdpb.CF_LOCK,
			Key: keys.Encode(nil, []byte(key)), Value: []byte("v-" + key)}},
	}
}

func lockExists(t *testing.T, db *pebble.DB, key string) bool {
	_, closer, err := db.Get(keys.EngineKey(nil, raft_cmdpb.CF_LOCK, keys.Encode(nil, []byte(key))))
	if err == pebble.ErrNotFound {
		return false
	}
	require.NoError(t, err)
	closer.Close()
	return true
}

// TestApplySplit: a split applied in the apply batch shrinks the region,
// creates the new one with its peer, and a write proposed before the split
// (old version) writes nothing and gets EpochNotMatch with both regions,
// whichever side its key is on. After a restart both regions come back
// from the engine.
func TestApplySplit(t *testing.T) {
	db := memDB(t)
	region := testRegion()
	b := db.NewBatch()
	require.NoError(t, writeInitialState(b, region))
	require.NoError(t, b.Commit(pebble.Sync))
	s := testStore(t, db)
	p := s.peers[region.GetId()]
	oldEpoch := region

	b = db.NewBatch()
	as := p.ps.apply
	resp, _ := s.applier.applyCmd(b, p, &as, lockPut(oldEpoch, "a"), 6)
	require.Nil(t, resp.GetRegionError())
	split := &raft_cmdpb.RaftCmdRequest{
		Header:       &raft_cmdpb.RaftRequestHeader{RegionId: region.GetId(), RegionEpoch: region.GetRegionEpoch()},
		AdminRequest: &raft_cmdpb.AdminRequest{CmdType: raft_cmdpb.AdminCmdType_Split, Split: splitReq([]string{"m"}, 20)},
	}
	resp, _ = s.applier.applyCmd(b, p, &as, split, 7)
	require.Nil(t, resp.GetRegionError())
	require.Len(t, resp.GetAdminResponse().GetRegions(), 2)
	for _, k := range []string{"x", "b"} { // right and left of the split key
		resp, _ = s.applier.applyCmd(b, p, &as, lockPut(oldEpoch, k), 8)
		enm := resp.GetRegionError().GetEpochNotMatch()
		require.NotNil(t, enm, "write of %q proposed before the split", k)
		require.Len(t, enm.GetCurrentRegions(), 2)
		require.Equal(t, "m", string(enm.GetCurrentRegions()[0].GetEndKey()))
		require.Equal(t, uint64(20), enm.GetCurrentRegions()[1].GetId())
	}
	// A write with the new epoch in the same batch goes through.
	resp, _ = s.applier.applyCmd(b, p, &as, lockPut(p.region, "c"), 9)
	require.Nil(t, resp.GetRegionError())
	// The same split applied again (e.g. a duplicate proposal) is refused.
	resp, _ = s.applier.applyCmd(b, p, &as, split, 10)
	require.NotNil(t, resp.GetRegionError().GetEpochNotMatch())
	as.applied = 10
	require.NoError(t, b.Set(applyStateKey(region.GetId()), as.encode(), nil))
	require.NoError(t, b.Commit(pebble.NoSync))
	s.finishSplits(s.applier.res.splits)

	require.True(t, lockExists(t, db, "a"))
	require.True(t, lockExists(t, db, "c"))
	require.False(t, lockExists(t, db, "x"), "refused write must not reach the engine")
	require.False(t, lockExists(t, db, "b"))
	right := s.peers[20]
	require.NotNil(t, right, "new peer created")
	require.Equal(t, uint64(21), right.meta.GetId(), "this store's peer of the new region")
	require.Equal(t, "m", string(right.region.GetStartKey()))
	require.Equal(t, uint64(initIndex), right.ps.apply.applied)
	require.Len(t, s.meta.overlapping(nil, nil), 2)
	require.Equal(t, uint64(20), s.meta.overlapping([]byte("x"), []byte("y"))[0].GetId())

	// Restart: both regions from the engine, the left one shrunk. (The
	// log holding entries 6..10 is persisted as a Ready would have.)
	persist(t, p.ps, ents(initTerm, 6, 10), &raftpb.HardState{Term: new(initTerm), Commit: new(uint64(10))})
	s2 := testStore(t, db)
	require.Len(t, s2.peers, 2)
	left := s2.peers[region.GetId()]
	require.Equal(t, "m", string(left.region.GetEndKey()))
	require.Equal(t, uint64(2), left.region.GetRegionEpoch().GetVersion())
	require.Equal(t, uint64(10), left.ps.apply.applied)
	require.True(t, bytes.Equal([]byte("m"), s2.peers[20].region.GetStartKey()))
}

// TestStoreMetaOverlapping: the range index finds the regions overlapping a
// range, including one that starts before it.
func TestStoreMetaOverlapping(t *testing.T) {
	m := newStoreMeta()
	for i, r := range [][2]string{{"", "d"}, {"d", "m"}, {"m", ""}} {
		m.setRegion(&metapb.Region{Id: uint64(i + 1), StartKey: []byte(r[0]), EndKey: []byte(r[1])})
	}
	ids := func(start, end string) []uint64 {
		var out []uint64
		for _, r := range m.overlapping([]byte(start), []byte(end)) {
			out = append(out, r.GetId())
		}
		return out
	}
	require.Equal(t, []uint64{1, 2, 3}, ids("", ""))
	require.Equal(t, []uint64{1}, ids("a", "b"))
	require.Equal(t, []uint64{1, 2}, ids("c", "e"))
	require.Equal(t, []uint64{2}, ids("d", "m"))
	require.Equal(t, []uint64{3}, ids("z", ""))
	// Shrinking a region (split) keeps the index consistent.
	m.setRegion(&metapb.Region{Id: 2, StartKey: []byte("d"), EndKey: []byte("f")})
	m.setRegion(&metapb.Region{Id: 4, StartKey: []byte("f"), EndKey: []byte("m")})
	require.Equal(t, []uint64{2, 4}, ids("e", "g"))
}

func TestSplitInFlight(t *testing.T) {
	split := &proposal{cmd: &raft_cmdpb.RaftCmdRequest{AdminRequest: &raft_cmdpb.AdminRequest{CmdType: raft_cmdpb.AdminCmdType_Split}}}
	write := &proposal{cmd: lockPut(testRegion(), "a")}
	compact := &proposal{cmd: &raft_cmdpb.RaftCmdRequest{AdminRequest: &raft_cmdpb.AdminRequest{CmdType: raft_cmdpb.AdminCmdType_CompactLog}}}
	for _, c := range []struct {
		name       string
		unassigned []*proposal
		pending    []*proposal
		want       bool
	}{
		{"none", nil, nil, false},
		{"writes only", []*proposal{write}, []*proposal{write, compact}, false},
		{"split proposed", []*proposal{write, split}, nil, true},
		{"split in the log", nil, []*proposal{write, split}, true},
	} {
		p := &peer{unassigned: map[uint64]*proposal{}, pending: c.pending}
		for i, pr := range c.unassigned {
			p.unassigned[uint64(i)] = pr
		}
		require.Equal(t, c.want, p.splitInFlight(), c.name)
	}
}
