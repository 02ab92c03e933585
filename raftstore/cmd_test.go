package raftstore

import (
	"log/slog"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
)

func put(cf raft_cmdpb.CF, k, v string) *raft_cmdpb.Request {
	return &raft_cmdpb.Request{CmdType: raft_cmdpb.CmdType_Put, Cf: cf, Key: []byte(k), Value: []byte(v)}
}

func TestCmdEncoding(t *testing.T) {
	cmd := &raft_cmdpb.RaftCmdRequest{
		Header: &raft_cmdpb.RaftRequestHeader{
			RegionId: 3, Peer: &metapb.Peer{Id: 4, StoreId: 1},
			RegionEpoch: &metapb.RegionEpoch{ConfVer: 2, Version: 5}, Term: 7, ProposalId: 1<<63 + 42,
		},
		Requests: []*raft_cmdpb.Request{
			put(raft_cmdpb.CF_WRITE, "k\x00", "v"),
			{CmdType: raft_cmdpb.CmdType_Delete, Cf: raft_cmdpb.CF_LOCK, Key: []byte("k")},
			{CmdType: raft_cmdpb.CmdType_DeleteRange, Cf: raft_cmdpb.CF_DEFAULT, Key: []byte("a"), EndKey: []byte("b")},
		},
	}
	data, err := encodeCmd(cmd)
	require.NoError(t, err)
	id, ok := entryProposalID(data)
	require.True(t, ok)
	require.Equal(t, uint64(1<<63+42), id)
	got, err := decodeCmd(data)
	require.NoError(t, err)
	require.True(t, proto.Equal(cmd, got), "round trip: %v", got)

	// Field order does not matter to the id scan: header last.
	reordered := must(proto.Marshal(&raft_cmdpb.RaftCmdRequest{Requests: cmd.Requests}))
	hdr, err := proto.Marshal(&raft_cmdpb.RaftCmdRequest{Header: cmd.Header})
	require.NoError(t, err)
	reordered = append(reordered, hdr...)
	id, ok = entryProposalID(reordered)
	require.True(t, ok)
	require.Equal(t, uint64(1<<63+42), id)

	for name, d := range map[string][]byte{
		"empty (leader no-op)": nil,
		"no header":            must(proto.Marshal(&raft_cmdpb.RaftCmdRequest{Requests: cmd.Requests})),
		"header without id":    must(proto.Marshal(&raft_cmdpb.RaftCmdRequest{Header: &raft_cmdpb.RaftRequestHeader{RegionId: 3}})),
		"truncated":            data[:len(data)/2],
		// The format before RaftCmdRequest: kind 0x01 | id | OnePCRequest.
		"legacy 1pc entry": append([]byte{1, 0, 0, 0, 0, 0, 0, 0, 42}, 0x10, 0x05),
	} {
		_, ok := entryProposalID(d)
		require.False(t, ok, name)
	}
	_, err = decodeCmd([]byte{1, 0, 0, 0, 0, 0, 0, 0, 42, 0x10, 0x05})
	require.ErrorIs(t, err, ErrCorrupt, "a legacy entry is refused, not misread")
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestApplyEpochRecheck applies commands in log order against a region
// whose epoch changes in between (as a split or conf change would): a data
// command proposed under another version writes nothing and answers
// EpochNotMatch with the current region; a conf_ver change alone does not
// stop data commands, but stops admin commands.
func TestApplyEpochRecheck(t *testing.T) {
	db := memDB(t)
	s := &Store{db: db, log: slog.Default()}
	a := &applier{db: db, host: s, log: s.log}
	region := &metapb.Region{Id: 7, StartKey: []byte("a"), EndKey: []byte("m"),
		RegionEpoch: &metapb.RegionEpoch{ConfVer: 1, Version: 1},
		Peers:       []*metapb.Peer{{Id: 8, StoreId: 1}}}
	p := &peer{region: region}
	epoch := func(confVer, version uint64) *metapb.RegionEpoch {
		return &metapb.RegionEpoch{ConfVer: confVer, Version: version}
	}
	steps := []struct {
		name      string
		setEpoch  *metapb.RegionEpoch // region epoch from this step on (nil: unchanged)
		cmdEpoch  *metapb.RegionEpoch
		admin     bool
		req       *raft_cmdpb.Request
		wantEpoch bool // EpochNotMatch expected
	}{
		{name: "current", cmdEpoch: epoch(1, 1), req: put(raft_cmdpb.CF_DEFAULT, "b1", "v1")},
		{name: "version bumped (split)", setEpoch: epoch(1, 2), cmdEpoch: epoch(1, 1), req: put(raft_cmdpb.CF_DEFAULT, "b2", "v2"), wantEpoch: true},
		{name: "new version", cmdEpoch: epoch(1, 2), req: put(raft_cmdpb.CF_WRITE, "b3", "v3")},
		{name: "conf change only", setEpoch: epoch(2, 2), cmdEpoch: epoch(1, 2), req: put(raft_cmdpb.CF_LOCK, "b4", "v4")},
		{name: "no epoch", cmdEpoch: nil, req: put(raft_cmdpb.CF_DEFAULT, "b5", "v5"), wantEpoch: true},
		{name: "admin old conf_ver", cmdEpoch: epoch(1, 2), admin: true, wantEpoch: true},
		{name: "delete", cmdEpoch: epoch(2, 2), req: &raft_cmdpb.Request{CmdType: raft_cmdpb.CmdType_Delete, Cf: raft_cmdpb.CF_DEFAULT, Key: []byte("b1")}},
	}
	b := db.NewBatch()
	for i, st := range steps {
		if st.setEpoch != nil {
			region.RegionEpoch = st.setEpoch
		}
		cmd := &raft_cmdpb.RaftCmdRequest{Header: &raft_cmdpb.RaftRequestHeader{RegionId: 7, RegionEpoch: st.cmdEpoch}}
		if st.req != nil {
			cmd.Requests = []*raft_cmdpb.Request{st.req}
		}
		if st.admin {
			cmd.AdminRequest = &raft_cmdpb.AdminRequest{CmdType: raft_cmdpb.AdminCmdType_Split}
		}
		as := applyState{applied: uint64(10 + i)}
		resp, _ := a.applyCmd(b, p, &as, cmd, uint64(10+i))
		require.Equal(t, uint64(10+i), resp.GetAppliedIndex(), st.name)
		if !st.wantEpoch {
			require.Nil(t, resp.GetRegionError(), st.name)
			continue
		}
		enm := resp.GetRegionError().GetEpochNotMatch()
		require.NotNil(t, enm, st.name)
		require.Len(t, enm.GetCurrentRegions(), 1, st.name)
		require.True(t, proto.Equal(region, enm.GetCurrentRegions()[0]), st.name)
	}
	require.NoError(t, b.Commit(pebble.Sync))

	// Exactly the accepted writes, at keys.EngineKey(cf, key).
	it, err := db.NewIter(nil)
	require.NoError(t, err)
	defer it.Close()
	var got []string
	for valid := it.First(); valid; valid = it.Next() {
		got = append(got, string(it.Key())+"="+string(it.Value()))
	}
	want := []string{
		string(keys.EngineKey(nil, raft_cmdpb.CF_LOCK, []byte("b4"))) + "=v4",
		string(keys.EngineKey(nil, raft_cmdpb.CF_WRITE, []byte("b3"))) + "=v3",
	}
	require.Equal(t, want, got)
}

// TestCheckCmdKeys: Propose refuses writes whose cf key lies outside the
// region (versioned keys of a boundary user key included correctly).
func TestCheckCmdKeys(t *testing.T) {
	region := &metapb.Region{Id: 7, StartKey: []byte("b"), EndKey: []byte("d")}
	vk := func(k string, ts uint64) string { return string(keys.EncodeVersioned(nil, []byte(k), ts)) }
	ek := func(k string) string { return string(keys.Encode(nil, []byte(k))) }
	cases := []struct {
		name string
		req  *raft_cmdpb.Request
		ok   bool
	}{
		{"start key version", put(raft_cmdpb.CF_DEFAULT, vk("b", 5), "x"), true},
		{"inside lock", put(raft_cmdpb.CF_LOCK, ek("c\xff"), "x"), true},
		{"end key version", put(raft_cmdpb.CF_WRITE, vk("d", 1), "x"), false},
		{"before start", put(raft_cmdpb.CF_WRITE, vk("a\xff", 1), "x"), false},
		{"range inside", &raft_cmdpb.Request{CmdType: raft_cmdpb.CmdType_DeleteRange, Key: []byte(ek("b")), EndKey: []byte(ek("d"))}, true},
		{"range past end", &raft_cmdpb.Request{CmdType: raft_cmdpb.CmdType_DeleteRange, Key: []byte(ek("b")), EndKey: []byte(ek("e"))}, false},
		{"range reversed", &raft_cmdpb.Request{CmdType: raft_cmdpb.CmdType_DeleteRange, Key: []byte(ek("c")), EndKey: []byte(ek("b"))}, false},
		{"invalid type", &raft_cmdpb.Request{Key: []byte(ek("c"))}, false},
	}
	for _, c := range cases {
		e := checkCmdKeys(&raft_cmdpb.RaftCmdRequest{Requests: []*raft_cmdpb.Request{c.req}}, region)
		require.Equal(t, c.ok, e == nil, "%s: %v", c.name, e)
	}
}
