package schedule

import (
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv/codec"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/pdpb"
	"github.com/stratadb/strata/sql/tablecodec"
)

func TestDecodeTableKey(t *testing.T) {
	idx := tablecodec.AppendIndexPrefix(nil, 42, 3)
	for _, tc := range []struct {
		name  string
		key   []byte
		table int64
		kind  string
		index int64
		ok    bool
	}{
		{"empty", nil, 0, "", 0, false},
		{"catalog", []byte("mDB:1"), 0, "", 0, false},
		{"short", []byte("t\x80"), 0, "", 0, false},
		{"table prefix", tablecodec.AppendTablePrefix(nil, 42), 42, KeyKindTable, 0, true},
		{"record prefix", tablecodec.AppendRecordPrefix(nil, 42), 42, KeyKindRow, 0, true},
		{"row", tablecodec.RowKey(42, -7), 42, KeyKindRow, 0, true},
		{"index prefix", idx, 42, KeyKindIndex, 3, true},
		{"index entry", codec.EncodeInt(slices.Clone(idx), 99), 42, KeyKindIndex, 3, true},
		{"truncated index id", idx[:len(idx)-2], 42, KeyKindTable, 0, true},
		{"big table id", tablecodec.RowKey(1<<40, 1), 1 << 40, KeyKindRow, 0, true},
	} {
		table, kind, index, ok := DecodeTableKey(tc.key)
		require.Equal(t, tc.ok, ok, tc.name)
		require.Equal(t, tc.table, table, tc.name)
		require.Equal(t, tc.kind, kind, tc.name)
		require.Equal(t, tc.index, index, tc.name)
	}
}

// putRegion adds region id over [start, end) with voters on stores and the
// leader on stores[leader].
func (s *sim) putRegion(id uint64, start, end []byte, stores []uint64, leader int) {
	r := &metapb.Region{Id: id, StartKey: start, EndKey: end, RegionEpoch: &metapb.RegionEpoch{ConfVer: 1, Version: 1}}
	for i, sid := range stores {
		r.Peers = append(r.Peers, &metapb.Peer{Id: id*10 + uint64(i), StoreId: sid})
	}
	s.c.PutRegion(&RegionInfo{Meta: r, Leader: r.Peers[leader], Term: 1})
}

// addTable adds table tid as 3 index regions (index 1) on idxStores led
// from idxStores[0] and 3 row regions on rowStores led from rowStores[0]
// (ids from firstID). The table's first region starts at its index prefix,
// its last ends at the next table's prefix.
func (s *sim) addTable(tid int64, firstID uint64, idxStores, rowStores []uint64) {
	idx := tablecodec.AppendIndexPrefix(nil, tid, 1)
	keys := [][]byte{
		idx, codec.EncodeInt(slices.Clone(idx), 100), codec.EncodeInt(slices.Clone(idx), 200),
		tablecodec.AppendRecordPrefix(nil, tid), tablecodec.RowKey(tid, 100), tablecodec.RowKey(tid, 200),
		tablecodec.AppendTablePrefix(nil, tid+1),
	}
	for i := range 6 {
		stores := idxStores
		if i >= 3 {
			stores = rowStores
		}
		s.putRegion(firstID+uint64(i), keys[i], keys[i+1], stores, 0)
	}
}

// groupRegionsOK checks every region of table tid's group is on its
// target and led from one store, and returns that store.
func (s *sim) groupStable(tid int64) (leader uint64, ok bool) {
	g := s.co.Affinity().Group(tid, true)
	if g.Phase != AffinityStable || !g.CoLed || g.RegionCount != 6 {
		return 0, false
	}
	return g.LeaderStoreID, true
}

// Two tables whose index and row regions start on different stores (and,
// with 5 stores, on different store sets) end with every region of a table
// on its group's 3 stores and led from one store, the two tables led from
// different stores; then 60 more rounds of balancing change nothing.
func TestAffinityConverges(t *testing.T) {
	s := newSim(t, 5, Config{StoreLimit: 60, AffinityTables: []int64{42, 43}})
	// Catalog and the space before the tables, and after them.
	s.putRegion(1, nil, tablecodec.AppendIndexPrefix(nil, 42, 1), []uint64{1, 2, 3}, 0)
	s.putRegion(2, tablecodec.AppendTablePrefix(nil, 44), nil, []uint64{3, 4, 5}, 0)
	s.addTable(42, 10, []uint64{5, 4, 3}, []uint64{1, 2, 3})
	s.addTable(43, 20, []uint64{2, 3, 4}, []uint64{4, 5, 1})
	g := s.co.Affinity().Group(42, true)
	require.Equal(t, AffinityPending, g.Phase)
	require.False(t, g.CoLed)
	var l42, l43 uint64
	rounds := 0
	for ; rounds < 200; rounds++ {
		s.round()
		var ok42, ok43 bool
		l42, ok42 = s.groupStable(42)
		l43, ok43 = s.groupStable(43)
		if ok42 && ok43 && len(s.oc.Operators()) == 0 {
			break
		}
	}
	require.Less(t, rounds, 200, "groups: %+v", s.co.Affinity().Groups(true))
	t.Logf("both groups stable after %d rounds: table 42 led from store %d, table 43 from store %d", rounds, l42, l43)
	require.NotEqual(t, l42, l43, "the two groups' leaders spread over the stores")
	for _, g := range s.co.Affinity().Groups(true) {
		kinds := map[string]int{}
		for _, r := range g.Regions {
			kinds[r.Kind]++
			require.True(t, r.Satisfied, "region %+v", r)
			require.Equal(t, g.VoterStoreIDs, r.VoterStoreIDs)
		}
		require.Equal(t, map[string]int{KeyKindIndex: 3, KeyKindRow: 3}, kinds)
	}
	s.requireHealthy()
	// The balance schedulers see store l42 and l43 leading 6 regions each
	// and the others none, and leave the groups alone.
	created := len(s.oc.History())
	for range 60 {
		s.round()
		_, ok42 := s.groupStable(42)
		_, ok43 := s.groupStable(43)
		require.True(t, ok42 && ok43, "balancing undid affinity: %+v", s.co.Affinity().Groups(true))
	}
	for _, op := range s.oc.History()[created:] {
		require.NotContains(t, []uint64{10, 11, 12, 13, 14, 15, 20, 21, 22, 23, 24, 25}, op.RegionID, "operator on a group region: %+v", op)
	}
}

// Without affinity the same start is balanced and the tables' index and
// row regions stay led from different stores: the filters, not luck, keep
// a group together.
func TestAffinityOffLeavesBalanceAlone(t *testing.T) {
	s := newSim(t, 3, Config{StoreLimit: 60})
	s.addTable(42, 10, []uint64{2, 3, 1}, []uint64{1, 2, 3})
	for range 30 {
		s.round()
	}
	g := s.co.Affinity().Group(42, false)
	require.Equal(t, AffinityPending, g.Phase)
	require.False(t, g.CoLed)
	require.Empty(t, s.co.Affinity().Groups(false))
}

// The target leader's store dies: the group gets a new target on live
// stores and converges again; a disabled affinity scheduler pins nothing.
func TestAffinityRetargetsWhenStoreDown(t *testing.T) {
	s := newSim(t, 4, Config{StoreLimit: 60, MaxStoreDownTime: Duration(30 * time.Second), AffinityTables: []int64{42}})
	s.addTable(42, 10, []uint64{1, 2, 3}, []uint64{2, 3, 4})
	var leader uint64
	for range 100 {
		s.round()
		if l, ok := s.groupStable(42); ok && len(s.oc.Operators()) == 0 {
			leader = l
			break
		}
	}
	require.NotZero(t, leader, "groups: %+v", s.co.Affinity().Groups(true))
	s.dead[leader] = true
	var next uint64
	for range 200 {
		s.round()
		if l, ok := s.groupStable(42); ok && l != leader && len(s.oc.Operators()) == 0 {
			next = l
			break
		}
	}
	require.NotZero(t, next, "groups: %+v", s.co.Affinity().Groups(true))
	g := s.co.Affinity().Group(42, false)
	require.NotContains(t, g.VoterStoreIDs, leader)
	t.Logf("store %d died; table 42 now led from store %d on stores %v", leader, next, g.VoterStoreIDs)
	s.requireHealthy()

	cfg := s.c.Config()
	cfg.DisabledSchedulers = []string{AffinityName}
	require.NoError(t, s.c.SetConfig(cfg))
	s.round()
	require.Equal(t, AffinityPending, s.co.Affinity().Group(42, false).Phase)
	require.False(t, s.co.Affinity().pinned(s.c.GetRegion(10)))
}

func TestAffinityConfigValidate(t *testing.T) {
	for _, tables := range [][]int64{{0}, {-3}, {5, 5}} {
		require.Error(t, Config{AffinityTables: tables}.Defaults().Validate(), "%v", tables)
	}
	require.NoError(t, Config{AffinityTables: []int64{5, 6}}.Defaults().Validate())
}

// storesUse counts per store the groups it is a voter store of and leads.
func (s *sim) storesUse() (on, led map[uint64]int) {
	on, led = map[uint64]int{}, map[uint64]int{}
	for _, g := range s.co.Affinity().Groups(false) {
		for _, sid := range g.VoterStoreIDs {
			on[sid]++
		}
		led[g.LeaderStoreID]++
	}
	return on, led
}

// allStable reports whether every configured group is stable and co-led
// and no operator runs.
func (s *sim) allStable() bool {
	for _, g := range s.co.Affinity().Groups(false) {
		if g.Phase != AffinityStable || !g.CoLed {
			return false
		}
	}
	return len(s.oc.Operators()) == 0
}

// Four tables, all on stores 1-3 (as if split from one region), on 3
// stores: stable, each led from a different store where possible. Then 3
// stores join: groups move one at a time until every store is a voter
// store of 2 groups and leads at most one, and it stays so.
func TestAffinityGroupsSpreadOnScaleOut(t *testing.T) {
	tables := []int64{42, 43, 44, 45}
	s := newSim(t, 3, Config{StoreLimit: 120, AffinityTables: tables})
	for i, tid := range tables {
		s.addTable(tid, uint64(10+10*i), []uint64{1, 2, 3}, []uint64{1, 2, 3})
	}
	for range 100 {
		s.round()
		if s.allStable() {
			break
		}
	}
	require.True(t, s.allStable(), "groups: %+v", s.co.Affinity().Groups(true))
	_, led := s.storesUse()
	require.Equal(t, map[uint64]int{1: 2, 2: 1, 3: 1}, led, "leaders spread over the 3 stores")
	for sid := uint64(4); sid <= 6; sid++ {
		s.addStore(sid)
	}
	rounds := 0
	for ; rounds < 400; rounds++ {
		s.round()
		if sv, _ := spread(s.co.Affinity().load(), []uint64{1, 2, 3, 4, 5, 6}); s.allStable() && sv == 0 {
			break
		}
	}
	on, led := s.storesUse()
	t.Logf("after %d rounds: voter groups per store %v, led groups per store %v", rounds, on, led)
	require.Equal(t, map[uint64]int{1: 2, 2: 2, 3: 2, 4: 2, 5: 2, 6: 2}, on, "groups: %+v", s.co.Affinity().Groups(false))
	require.Len(t, led, 4, "4 groups led from 4 stores")
	s.requireHealthy()
	created := len(s.oc.History())
	for range 30 {
		s.round()
	}
	require.Equal(t, created, len(s.oc.History()), "operators after convergence: %v", s.oc.History()[created:])
	// A new PD leader keeps the spread placement.
	before := s.co.Affinity().Groups(false)
	s.newLeader()
	for range 20 {
		s.round()
	}
	require.Empty(t, s.oc.History(), "the new leader moved regions")
	require.Equal(t, before, s.co.Affinity().Groups(false))
}

// newLeader replaces the controller and coordinator as a new PD leader
// does: same model, no operators, no targets.
func (s *sim) newLeader() {
	quiet := slog.New(slog.DiscardHandler)
	s.oc = NewOperatorController(s.c, quiet)
	s.co = NewCoordinator(s.c, s.oc, func() (uint64, error) { s.nextID++; return s.nextID, nil }, quiet)
}

// With location labels zone,host the target's voters are in three zones,
// even when the group's replicas start in two.
func TestAffinityTargetIsolated(t *testing.T) {
	s := newSim(t, 0, Config{LocationLabels: []string{"zone", "host"}, StoreLimit: 60, AffinityTables: []int64{42}})
	for i := 1; i <= 6; i++ {
		s.c.PutStore(&metapb.Store{Id: uint64(i), Labels: []*metapb.StoreLabel{
			{Key: "zone", Value: fmt.Sprintf("z%d", (i+1)/2)}, {Key: "host", Value: fmt.Sprintf("h%d", i)}}})
		s.c.StoreHeartbeat(&pdpb.StoreStats{StoreId: uint64(i)})
	}
	// Stores 1 and 2 share zone z1.
	s.addTable(42, 10, []uint64{1, 2, 3}, []uint64{1, 2, 3})
	for range 100 {
		s.round()
		if s.allStable() {
			break
		}
	}
	require.True(t, s.allStable(), "groups: %+v", s.co.Affinity().Groups(true))
	zones := map[string]bool{}
	for _, sid := range s.co.Affinity().Group(42, false).VoterStoreIDs {
		zones[labelValue(s.c.GetStore(sid).Meta, "zone")] = true
	}
	require.Len(t, zones, 3)
	s.requireHealthy()
}

// A new PD leader (a fresh coordinator over the same model) chooses the
// same targets from the placement and moves nothing.
func TestAffinityTargetsSurviveLeaderChange(t *testing.T) {
	tables := []int64{42, 43, 44}
	s := newSim(t, 5, Config{StoreLimit: 120, AffinityTables: tables})
	s.addTable(42, 10, []uint64{1, 2, 3}, []uint64{3, 4, 5})
	s.addTable(43, 20, []uint64{2, 3, 4}, []uint64{1, 2, 3})
	s.addTable(44, 30, []uint64{5, 4, 3}, []uint64{1, 2, 5})
	for range 200 {
		s.round()
		if s.allStable() {
			break
		}
	}
	require.True(t, s.allStable(), "groups: %+v", s.co.Affinity().Groups(true))
	before := s.co.Affinity().Groups(false)
	s.newLeader()
	for range 20 {
		s.round()
	}
	require.Empty(t, s.oc.History(), "the new leader moved regions")
	require.Equal(t, before, s.co.Affinity().Groups(false))
}
