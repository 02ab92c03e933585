package schedule

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/sql/tablecodec"
)

// Data affinity (TiDB 8.5's table-level affinity, PD's
// pkg/schedule/affinity in small): the regions of a table named in
// `affinity-tables` form one affinity group. The group has a target: the
// MaxReplicas stores its voters should be on and the one store that
// should lead every region. Once every region is there, an index region
// and the row regions its entries point to are led from one store, so an
// index lookup can finish in one RPC on one store.
//
//   - Grouping: a region belongs to the table its start key is in
//     (`t{tableID}...`, sql/tablecodec's layout: rows `t{id}_r{handle}`,
//     index entries `t{id}_i{indexID}...`). A region starting before the
//     table (in another table or the catalog) is not in the group.
//   - Target: chosen from where the group's replicas and leaders are
//     (fewest moves) among Up stores, spreading the groups' voter and
//     leader stores over the stores (choose); kept while its stores stay
//     usable, chosen again when the leader's store is no longer Up or a
//     voter's store is Down, Offline or gone. When the groups use the Up
//     stores unevenly (a store was added), one group at a time gets a new
//     target (rebalance).
//   - The affinity scheduler moves voters onto the target stores (add
//     learner, promote, remove; store limits apply) and then the
//     leadership onto the target leader, at most affinity-schedule-limit
//     operators at once.
//   - Filters: balance-leader, balance-region, hot-region and the replica
//     checker's location moves skip a region of a group with a target, so
//     they never undo affinity; the replica checker still repairs such a
//     region (a missing replica goes to a target store first, an extra one
//     is removed off the target first).
//
// Targets live in memory on the PD leader: a new leader adopts the
// placement of every group whose regions already share one store set and
// leader, and chooses targets for the others.

// AffinityName is the affinity scheduler's name (schedulers API).
const AffinityName = "affinity-scheduler"

// Region key kinds within a table.
const (
	KeyKindRow   = "row"
	KeyKindIndex = "index"
	KeyKindTable = "table" // the table prefix itself, or another suffix
)

// DecodeTableKey splits a region key into its table id, the kind of key
// it starts (row, index, or table for the bare table prefix) and, for an
// index key, the index id. ok is false for a key outside every table.
func DecodeTableKey(key []byte) (tableID int64, kind string, indexID int64, ok bool) {
	tableID, ok = tablecodec.TableIDOf(key)
	switch {
	case !ok:
		return 0, "", 0, false
	case bytes.HasPrefix(key, tablecodec.AppendRecordPrefix(make([]byte, 0, 11), tableID)):
		return tableID, KeyKindRow, 0, true
	case tablecodec.IsIndexKey(key):
		return tableID, KeyKindIndex, tablecodec.IndexIDOf(key), true
	}
	return tableID, KeyKindTable, 0, true
}

// regionTable is the table r's start key is in.
func regionTable(r *RegionInfo) (int64, bool) {
	id, _, _, ok := DecodeTableKey(r.Meta.GetStartKey())
	return id, ok
}

// affinityTarget is where a group's regions should be.
type affinityTarget struct {
	Leader uint64
	Voters []uint64 // sorted
}

func (t affinityTarget) hasVoter(sid uint64) bool { return slices.Contains(t.Voters, sid) }

// satisfied reports whether r's voters are exactly the target's and its
// leader is the target leader.
func (t affinityTarget) satisfied(r *RegionInfo) bool {
	if r.LeaderStore() != t.Leader {
		return false
	}
	vs := replicaStores(r, 0)
	slices.Sort(vs)
	return slices.Equal(vs, t.Voters)
}

// Affinity holds the groups' targets. The coordinator refreshes them at
// the start of every run; schedulers and the API read them without a lock
// (an immutable map behind an atomic pointer).
type Affinity struct {
	c       *Cluster
	targets atomic.Pointer[map[int64]affinityTarget]
	// running counts the running operators of a kind (the controller's);
	// groups are rebalanced only while no affinity operator runs.
	running func(OpKind) int
}

func newAffinity(c *Cluster) *Affinity {
	a := &Affinity{c: c}
	a.targets.Store(&map[int64]affinityTarget{})
	return a
}

func (a *Affinity) load() map[int64]affinityTarget { return *a.targets.Load() }

// target returns the target of r's group, if r is in a group that has one
// (never for a nil Affinity).
func (a *Affinity) target(r *RegionInfo) (affinityTarget, bool) {
	if a == nil {
		return affinityTarget{}, false
	}
	ts := a.load()
	if len(ts) == 0 {
		return affinityTarget{}, false
	}
	tid, ok := regionTable(r)
	if !ok {
		return affinityTarget{}, false
	}
	t, ok := ts[tid]
	return t, ok
}

// pinned reports whether r is in an affinity group with a target: the
// balance schedulers leave it alone.
func (a *Affinity) pinned(r *RegionInfo) bool {
	_, ok := a.target(r)
	return ok
}

// groupRegions returns the regions whose start key is in table tid, in key
// order.
func (c *Cluster) groupRegions(tid int64) []*RegionInfo {
	start, end := tablecodec.TableRange(tid)
	rs := c.ScanRegions(start, end, 0)
	out := rs[:0]
	for _, r := range rs {
		if id, ok := regionTable(r); ok && id == tid {
			out = append(out, r)
		}
	}
	return out
}

// refresh recomputes the targets for the configured tables: a target whose
// stores are still usable is kept, others are chosen again.
func (a *Affinity) refresh() {
	cfg := a.c.Config()
	next := map[int64]affinityTarget{}
	if !cfg.schedulerEnabled(AffinityName) || len(cfg.AffinityTables) == 0 {
		a.targets.Store(&next)
		a.updateGauges(cfg)
		return
	}
	old := a.load()
	for _, tid := range cfg.AffinityTables {
		if t, ok := old[tid]; ok && a.usable(t, &cfg) {
			next[tid] = t
		}
	}
	for _, tid := range cfg.AffinityTables {
		if _, ok := next[tid]; ok {
			continue
		}
		regions := a.c.groupRegions(tid)
		if t, ok := a.inPlace(regions, next, &cfg); ok {
			next[tid] = t
			continue
		}
		if t, ok := a.choose(regions, next, &cfg); ok {
			next[tid] = t
		}
	}
	if a.running == nil || a.running(OpAffinity) == 0 {
		a.rebalance(next, &cfg)
	}
	a.targets.Store(&next)
	a.updateGauges(cfg)
}

// inPlace returns the target a group's regions already satisfy (one voter
// store set of Up stores, one leader store), so that a new PD leader adopts
// a placement instead of choosing, in another order, one that moves
// regions. A placement less isolated by location labels than the stores
// allow is not adopted.
func (a *Affinity) inPlace(regions []*RegionInfo, others map[int64]affinityTarget, cfg *Config) (affinityTarget, bool) {
	if len(regions) == 0 || regions[0].LeaderStore() == 0 {
		return affinityTarget{}, false
	}
	t := affinityTarget{Leader: regions[0].LeaderStore(), Voters: replicaStores(regions[0], 0)}
	slices.Sort(t.Voters)
	if len(t.Voters) != cfg.MaxReplicas {
		return affinityTarget{}, false
	}
	for _, r := range regions {
		if !t.satisfied(r) {
			return affinityTarget{}, false
		}
	}
	for _, sid := range t.Voters {
		if !a.c.StoreState(sid).placeable() {
			return affinityTarget{}, false
		}
	}
	if labels := cfg.LocationLabels; len(labels) > 0 {
		if c, ok := a.choose(regions, others, cfg); ok && a.isolation(c, labels) < a.isolation(t, labels) {
			return affinityTarget{}, false
		}
	}
	return t, true
}

// isolation is the most label levels one of t's voter stores shares with
// another (lower is better isolated).
func (a *Affinity) isolation(t affinityTarget, labels []string) int {
	worst := 0
	for _, sid := range t.Voters {
		worst = max(worst, a.c.closeness(sid, t.Voters, labels))
	}
	return worst
}

// usable reports whether target t may stay: its leader store is Up and
// every voter store may still hold a replica (Up or Disconnected).
func (a *Affinity) usable(t affinityTarget, cfg *Config) bool {
	if len(t.Voters) != cfg.MaxReplicas || !a.c.StoreState(t.Leader).placeable() {
		return false
	}
	for _, sid := range t.Voters {
		if !a.c.StoreState(sid).healthy() {
			return false
		}
	}
	return true
}

// choose picks a target for a group's regions among the Up stores. Each
// store scores the group's voters it holds minus, per group it is already a
// voter store of beyond the least used Up store, the group's region count
// plus one (so a store used by more groups loses to a less used one even
// when that moves every region), then (a tie) holds more of the group's
// voters (a new PD leader keeps what is in place), leads the fewest
// groups, holds the fewest regions. Voters are taken in that order, each the best
// isolated from those taken (location labels). The leader is the voter
// store needing the fewest leadership moves, with the same one-group
// penalty per group it already leads beyond the least loaded voter store.
// others are the targets of the other groups.
func (a *Affinity) choose(regions []*RegionInfo, others map[int64]affinityTarget, cfg *Config) (affinityTarget, bool) {
	if len(regions) == 0 {
		return affinityTarget{}, false
	}
	n := len(regions)
	voters, leaders := map[uint64]int{}, map[uint64]int{}
	for _, r := range regions {
		for _, sid := range replicaStores(r, 0) {
			voters[sid]++
		}
		if l := r.LeaderStore(); l != 0 {
			leaders[l]++
		}
	}
	on, led := groupsPerStore(others)
	up := a.upStores()
	if len(up) < cfg.MaxReplicas {
		return affinityTarget{}, false
	}
	minOn := on[up[0]]
	for _, sid := range up {
		minOn = min(minOn, on[sid])
	}
	key := func(sid uint64) int { return voters[sid] - (n+1)*(on[sid]-minOn) }
	slices.SortStableFunc(up, func(x, y uint64) int {
		if kx, ky := key(x), key(y); kx != ky {
			return ky - kx
		}
		if voters[x] != voters[y] {
			return voters[y] - voters[x] // on a tie, keep what is in place
		}
		if led[x] != led[y] {
			return led[x] - led[y]
		}
		return a.c.storeScore(x, nil) - a.c.storeScore(y, nil)
	})
	labels := cfg.LocationLabels
	var t affinityTarget
	for len(t.Voters) < cfg.MaxReplicas {
		best, bestClose := -1, 0
		for i, sid := range up {
			if slices.Contains(t.Voters, sid) {
				continue
			}
			if cl := a.c.closeness(sid, t.Voters, labels); best < 0 || cl < bestClose {
				best, bestClose = i, cl
			}
		}
		t.Voters = append(t.Voters, up[best])
	}
	minLed := led[t.Voters[0]]
	for _, sid := range t.Voters {
		minLed = min(minLed, led[sid])
	}
	bestCost := -1
	for _, sid := range t.Voters {
		cost := n - leaders[sid] + n*(led[sid]-minLed)
		if bestCost < 0 || cost < bestCost || (cost == bestCost && sid < t.Leader) {
			bestCost, t.Leader = cost, sid
		}
	}
	slices.Sort(t.Voters)
	return t, true
}

// groupsPerStore counts, per store, the targets it is a voter store of and
// the targets it leads.
func groupsPerStore(ts map[int64]affinityTarget) (on, led map[uint64]int) {
	on, led = map[uint64]int{}, map[uint64]int{}
	for _, t := range ts {
		for _, sid := range t.Voters {
			on[sid]++
		}
		led[t.Leader]++
	}
	return on, led
}

// upStores returns the Up stores by id.
func (a *Affinity) upStores() []uint64 {
	var up []uint64
	for _, s := range a.c.Stores() {
		if sid := s.Meta.GetId(); a.c.StoreState(sid).placeable() {
			up = append(up, sid)
		}
	}
	return up
}

// spread is how unevenly the targets use the Up stores: the most groups
// one store is a voter store of minus the fewest (the same for leaders).
func spread(ts map[int64]affinityTarget, up []uint64) (voters, leaders int) {
	on, led := groupsPerStore(ts)
	if len(up) == 0 {
		return 0, 0
	}
	minOn, maxOn, minLed, maxLed := on[up[0]], on[up[0]], led[up[0]], led[up[0]]
	for _, sid := range up {
		minOn, maxOn = min(minOn, on[sid]), max(maxOn, on[sid])
		minLed, maxLed = min(minLed, led[sid]), max(maxLed, led[sid])
	}
	return maxOn - minOn, maxLed - minLed
}

// unevenness is the sum over the Up stores of the squared number of groups
// each is a voter store of (and, second, leads): a move that lowers it
// makes the use more even, so repeated moves end.
func unevenness(ts map[int64]affinityTarget, up []uint64) (voters, leaders int) {
	on, led := groupsPerStore(ts)
	for _, sid := range up {
		voters += on[sid] * on[sid]
		leaders += led[sid] * led[sid]
	}
	return voters, leaders
}

// rebalance moves one group off the busiest store when the targets use
// the Up stores unevenly (a store added after the groups were placed):
// the smallest group on the store used by the most groups as a voter store
// gets a new target, or, when only the leaders are uneven, the smallest
// group led from the busiest store a new leader among its voters, if that
// makes the use more even (unevenness). It runs
// only while no affinity operator does, so groups move one at a time.
func (a *Affinity) rebalance(ts map[int64]affinityTarget, cfg *Config) {
	up := a.upStores()
	sv, sl := spread(ts, up)
	if sv <= 1 && sl <= 1 {
		return
	}
	uv, ul := unevenness(ts, up)
	on, led := groupsPerStore(ts)
	busiest := up[0]
	for _, sid := range up {
		if (sv > 1 && on[sid] > on[busiest]) || (sv <= 1 && led[sid] > led[busiest]) {
			busiest = sid
		}
	}
	var cands []int64
	for tid, t := range ts {
		if (sv > 1 && t.hasVoter(busiest)) || (sv <= 1 && t.Leader == busiest) {
			cands = append(cands, tid)
		}
	}
	sizes := map[int64]int{}
	for _, tid := range cands {
		sizes[tid] = len(a.c.groupRegions(tid))
	}
	slices.SortFunc(cands, func(x, y int64) int {
		if sizes[x] != sizes[y] {
			return sizes[x] - sizes[y]
		}
		return cmp.Compare(x, y)
	})
	for _, tid := range cands {
		old := ts[tid]
		t, ok := old, false
		if sv > 1 {
			delete(ts, tid)
			t, ok = a.choose(a.c.groupRegions(tid), ts, cfg)
		} else {
			// Only the leadership moves: to the group's voter store
			// leading the fewest groups.
			for _, sid := range old.Voters {
				if led[sid] < led[t.Leader] {
					t.Leader, ok = sid, true
				}
			}
		}
		if ok {
			ts[tid] = t
			if nv, nl := unevenness(ts, up); nv < uv || (nv == uv && nl < ul) {
				return
			}
		}
		ts[tid] = old
	}
}

// AffinityRegionView is one region of a group as the API shows it.
type AffinityRegionView struct {
	ID            uint64   `json:"id"`
	StartKey      string   `json:"start_key"`
	Kind          string   `json:"kind"` // row, index or table
	IndexID       int64    `json:"index_id,omitempty"`
	LeaderStoreID uint64   `json:"leader_store_id"`
	VoterStoreIDs []uint64 `json:"voter_store_ids"`
	Satisfied     bool     `json:"satisfied"`
}

// AffinityGroupView is one table's group as the API shows it (the columns
// of TiDB's SHOW AFFINITY).
type AffinityGroupView struct {
	ID      string `json:"id"`
	TableID int64  `json:"table_id"`
	// LeaderStoreID and VoterStoreIDs are the target (0 / empty while
	// pending).
	LeaderStoreID uint64   `json:"leader_store_id,omitempty"`
	VoterStoreIDs []uint64 `json:"voter_store_ids,omitempty"`
	// Phase: pending (no target: no regions, too few Up stores, or the
	// scheduler is disabled), preparing (regions being moved), stable
	// (every region satisfied).
	Phase               string `json:"phase"`
	RegionCount         int    `json:"region_count"`
	AffinityRegionCount int    `json:"affinity_region_count"`
	// CoLed is true when every region of the group has its leader on one
	// store (what an index lookup in one RPC needs), target or not.
	CoLed   bool                 `json:"co_led"`
	Regions []AffinityRegionView `json:"regions,omitempty"`
}

// Affinity phases.
const (
	AffinityPending   = "pending"
	AffinityPreparing = "preparing"
	AffinityStable    = "stable"
)

// Groups returns the configured tables' groups in table order, with their
// regions when withRegions.
func (a *Affinity) Groups(withRegions bool) []AffinityGroupView {
	cfg := a.c.Config()
	ts := a.load()
	tables := slices.Clone(cfg.AffinityTables)
	slices.Sort(tables)
	out := make([]AffinityGroupView, 0, len(tables))
	for _, tid := range tables {
		out = append(out, a.group(tid, ts, withRegions))
	}
	return out
}

// Group returns table tid's group view (pending when tid is not
// configured).
func (a *Affinity) Group(tid int64, withRegions bool) AffinityGroupView {
	return a.group(tid, a.load(), withRegions)
}

func (a *Affinity) group(tid int64, ts map[int64]affinityTarget, withRegions bool) AffinityGroupView {
	g := AffinityGroupView{ID: "table-" + strconv.FormatInt(tid, 10), TableID: tid, Phase: AffinityPending, CoLed: true}
	t, has := ts[tid]
	if has {
		g.LeaderStoreID, g.VoterStoreIDs = t.Leader, slices.Clone(t.Voters)
	}
	var leader uint64
	for _, r := range a.c.groupRegions(tid) {
		g.RegionCount++
		ok := has && t.satisfied(r)
		if ok {
			g.AffinityRegionCount++
		}
		if l := r.LeaderStore(); l == 0 || (leader != 0 && l != leader) {
			g.CoLed = false
		} else {
			leader = l
		}
		if withRegions {
			_, kind, idx, _ := DecodeTableKey(r.Meta.GetStartKey())
			vs := replicaStores(r, 0)
			slices.Sort(vs)
			g.Regions = append(g.Regions, AffinityRegionView{ID: r.ID(), StartKey: strings.ToUpper(hex.EncodeToString(r.Meta.GetStartKey())),
				Kind: kind, IndexID: idx, LeaderStoreID: r.LeaderStore(), VoterStoreIDs: vs, Satisfied: ok})
		}
	}
	switch {
	case !has || g.RegionCount == 0:
		g.Phase = AffinityPending
	case g.AffinityRegionCount == g.RegionCount:
		g.Phase = AffinityStable
	default:
		g.Phase = AffinityPreparing
	}
	if g.RegionCount == 0 {
		g.CoLed = false
	}
	return g
}

func (a *Affinity) updateGauges(cfg Config) {
	phases := map[string]int{}
	total, ok := 0, 0
	for _, g := range a.Groups(false) {
		phases[g.Phase]++
		total += g.RegionCount
		ok += g.AffinityRegionCount
	}
	for _, p := range []string{AffinityPending, AffinityPreparing, AffinityStable} {
		affinityGroupsGauge.WithLabelValues(p).Set(float64(phases[p]))
	}
	affinityRegionsGauge.WithLabelValues("total").Set(float64(total))
	affinityRegionsGauge.WithLabelValues("satisfied").Set(float64(ok))
}

// affinityScheduler moves each group's regions onto its target: voters
// first (one move per region at a time), then the leadership.
type affinityScheduler struct {
	a       *Affinity
	alloc   IDAllocator
	running func(OpKind) int
}

func (s *affinityScheduler) name() string { return AffinityName }

func (s *affinityScheduler) schedule(inf map[uint64]*storeInfluence, busy func(regionID uint64) bool) []*Operator {
	ts := s.a.load()
	if len(ts) == 0 {
		return nil
	}
	c := s.a.c
	cfg := c.Config()
	tables := make([]int64, 0, len(ts))
	for tid := range ts {
		tables = append(tables, tid)
	}
	slices.Sort(tables)
	free := cfg.AffinityScheduleLimit - s.running(OpAffinity)
	var ops []*Operator
	for _, tid := range tables {
		t := ts[tid]
		for _, r := range c.groupRegions(tid) {
			if len(ops) >= free {
				return ops
			}
			if t.satisfied(r) || busy(r.ID()) || !c.healthyRegion(r) {
				continue
			}
			op, err := s.operatorFor(r, t, &cfg)
			if err != nil {
				return ops
			}
			if op != nil {
				ops = append(ops, op)
			}
		}
	}
	return ops
}

// operatorFor returns the next operator that brings r closer to t, or nil
// when none can run now.
func (s *affinityScheduler) operatorFor(r *RegionInfo, t affinityTarget, cfg *Config) (*Operator, error) {
	c := s.a.c
	var from, to uint64
	// A voter off the target moves to a target store without a replica;
	// followers first (no leader transfer needed).
	for _, p := range r.Voters() {
		if sid := p.GetStoreId(); !t.hasVoter(sid) && (from == 0 || from == r.LeaderStore()) {
			from = sid
		}
	}
	if from != 0 {
		for _, sid := range t.Voters {
			if r.PeerOnStore(sid) == nil && c.StoreState(sid).placeable() {
				to = sid
				break
			}
		}
		if to == 0 {
			return nil, nil
		}
		id, err := s.alloc()
		if err != nil {
			return nil, err
		}
		return NewOperator("affinity-move-peer", OpAffinity, r, cfg.RegionOpTimeout.D(), MovePeerSteps(r, from, to, id)...), nil
	}
	p := r.PeerOnStore(t.Leader)
	if p == nil || p.GetRole() != metapb.PeerRole_Voter || r.IsPending(p.GetId()) || !c.StoreState(t.Leader).placeable() {
		return nil, nil
	}
	return NewOperator("affinity-transfer-leader", OpAffinity, r, cfg.LeaderOpTimeout.D(),
		TransferLeader{FromStore: r.LeaderStore(), ToStore: t.Leader}), nil
}
