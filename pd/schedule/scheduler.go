package schedule

import (
	"slices"

	"github.com/stratadb/strata/proto/metapb"
)

// Scheduler names (PD's).
const (
	BalanceLeaderName = "balance-leader-scheduler"
	BalanceRegionName = "balance-region-scheduler"
	HotRegionName     = "balance-hot-region-scheduler"
)

var schedulerNames = []string{BalanceLeaderName, BalanceRegionName, HotRegionName, AffinityName}

func knownScheduler(name string) bool { return slices.Contains(schedulerNames, name) }

// SchedulerNames lists the schedulers.
func SchedulerNames() []string { return slices.Clone(schedulerNames) }

// scheduler proposes operators from the model; at most a few per run.
type scheduler interface {
	name() string
	schedule(inf map[uint64]*storeInfluence, busy func(regionID uint64) bool) []*Operator
}

// storeLoad is one placeable store's load seen by a scheduler.
type storeLoad struct {
	id      uint64
	leaders int
	regions int
	size    int64
}

// upStores returns the load of every Up store, with running operators'
// influence applied.
func (c *Cluster) upStores(inf map[uint64]*storeInfluence) []storeLoad {
	var out []storeLoad
	for _, s := range c.Stores() {
		sid := s.Meta.GetId()
		if !c.StoreState(sid).placeable() {
			continue
		}
		n, l, size := c.StoreCounts(sid)
		ld := storeLoad{id: sid, leaders: l, regions: n, size: int64(size)}
		if i := inf[sid]; i != nil {
			ld.leaders += i.leaders
			ld.regions += i.regions
			ld.size += i.size
		}
		out = append(out, ld)
	}
	return out
}

// healthyRegion reports whether r may be moved by a balance scheduler: a
// leader, every voter there, nothing pending or down, no learner.
func (c *Cluster) healthyRegion(r *RegionInfo) bool {
	cfg := c.Config()
	if r.Leader == nil || len(r.PendingPeers) > 0 || len(r.DownPeers) > 0 || len(r.Learners()) > 0 || len(r.Voters()) != cfg.MaxReplicas {
		return false
	}
	for _, p := range r.Voters() {
		if !c.StoreState(p.GetStoreId()).healthy() {
			return false
		}
	}
	return true
}

// balanceLeader moves leaderships from the store leading the most regions
// to the one leading the fewest, while they differ by more than one.
type balanceLeader struct {
	c   *Cluster
	aff *Affinity
}

func (b *balanceLeader) name() string { return BalanceLeaderName }

func (b *balanceLeader) schedule(inf map[uint64]*storeInfluence, busy func(regionID uint64) bool) []*Operator {
	stores := b.c.upStores(inf)
	if len(stores) < 2 {
		return nil
	}
	slices.SortFunc(stores, func(a, b storeLoad) int { return a.leaders - b.leaders })
	// From the most loaded source, try targets from the least loaded.
	for si := len(stores) - 1; si > 0; si-- {
		src := stores[si]
		for _, dst := range stores[:si] {
			if src.leaders-dst.leaders <= 1 {
				break
			}
			for _, r := range b.c.StoreLeaders(src.id) {
				p := r.PeerOnStore(dst.id)
				if p == nil || p.GetRole() != metapb.PeerRole_Voter || busy(r.ID()) || !b.c.healthyRegion(r) || b.aff.pinned(r) {
					continue
				}
				return []*Operator{NewOperator("balance-leader", OpLeader, r, b.c.Config().LeaderOpTimeout.D(),
					TransferLeader{FromStore: src.id, ToStore: dst.id})}
			}
		}
	}
	return nil
}

// balanceRegion moves a replica from the store with the largest region
// size to the one with the smallest, when they differ by more than twice
// the moved region's size (so one move never inverts the order and the
// schedule converges instead of oscillating).
type balanceRegion struct {
	c     *Cluster
	alloc IDAllocator
	aff   *Affinity
}

func (b *balanceRegion) name() string { return BalanceRegionName }

func (b *balanceRegion) schedule(inf map[uint64]*storeInfluence, busy func(regionID uint64) bool) []*Operator {
	stores := b.c.upStores(inf)
	if len(stores) < 2 {
		return nil
	}
	slices.SortFunc(stores, func(a, b storeLoad) int {
		switch {
		case a.size < b.size:
			return -1
		case a.size > b.size:
			return 1
		}
		return a.regions - b.regions
	})
	for si := len(stores) - 1; si > 0; si-- {
		src := stores[si]
		// Every region counts at least 1 MiB: no move can help a pair
		// closer than two of them (checked before listing the regions).
		if src.size-stores[0].size <= 2*minRegionSize {
			continue
		}
		regions := b.c.StoreRegions(src.id)
		// Prefer moving followers: no leader transfer needed.
		slices.SortStableFunc(regions, func(x, y *RegionInfo) int {
			xl, yl := x.LeaderStore() == src.id, y.LeaderStore() == src.id
			switch {
			case xl == yl:
				return 0
			case xl:
				return 1
			}
			return -1
		})
		for _, dst := range stores[:si] {
			if src.size-dst.size <= 2*minRegionSize {
				break // stores are sorted by size
			}
			for _, r := range regions {
				if r.PeerOnStore(dst.id) != nil || busy(r.ID()) || !b.c.healthyRegion(r) || b.aff.pinned(r) {
					continue
				}
				if src.size-dst.size <= 2*int64(r.size()) {
					continue
				}
				if labels := b.c.Config().LocationLabels; len(labels) > 0 {
					// Never trade isolation for balance.
					others := replicaStores(r, src.id)
					if b.c.closeness(dst.id, others, labels) > b.c.closeness(src.id, others, labels) {
						continue
					}
				}
				id, err := b.alloc()
				if err != nil {
					return nil
				}
				return []*Operator{NewOperator("balance-region", OpRegion, r, b.c.Config().RegionOpTimeout.D(),
					MovePeerSteps(r, src.id, dst.id, id)...)}
			}
		}
	}
	return nil
}

// hotRegion spreads write flow: when the store leading the most write
// bytes/s leads more than twice the write flow of the coolest store, the
// hottest region it leads that has a voter there moves its leadership.
type hotRegion struct {
	c   *Cluster
	aff *Affinity
}

func (h *hotRegion) name() string { return HotRegionName }

// hotWriteThreshold is the write rate above which a region is hot.
const hotWriteThreshold = 64 << 10 // bytes/s

func (h *hotRegion) schedule(inf map[uint64]*storeInfluence, busy func(regionID uint64) bool) []*Operator {
	stores := h.c.upStores(inf)
	if len(stores) < 2 {
		return nil
	}
	flow := map[uint64]float64{}
	hot := 0
	for _, s := range stores {
		for _, r := range h.c.StoreLeaders(s.id) {
			w := r.writeRate()
			flow[s.id] += w
			if w >= hotWriteThreshold {
				hot++
			}
		}
	}
	hotRegionsGauge.Set(float64(hot))
	slices.SortFunc(stores, func(a, b storeLoad) int {
		switch {
		case flow[a.id] < flow[b.id]:
			return -1
		case flow[a.id] > flow[b.id]:
			return 1
		}
		return 0
	})
	src, dst := stores[len(stores)-1], stores[0]
	if flow[src.id] < hotWriteThreshold || flow[src.id] <= 2*flow[dst.id] {
		return nil
	}
	leaders := h.c.StoreLeaders(src.id)
	slices.SortFunc(leaders, func(a, b *RegionInfo) int {
		switch {
		case a.writeRate() > b.writeRate():
			return -1
		case a.writeRate() < b.writeRate():
			return 1
		}
		return 0
	})
	for _, r := range leaders {
		if r.writeRate() < hotWriteThreshold {
			break
		}
		// Moving r must not make the target hotter than the source was.
		if flow[dst.id]+r.writeRate() >= flow[src.id] {
			continue
		}
		if p := r.PeerOnStore(dst.id); p != nil && p.GetRole() == metapb.PeerRole_Voter && !busy(r.ID()) && h.c.healthyRegion(r) && !h.aff.pinned(r) {
			return []*Operator{NewOperator("transfer-hot-write-leader", OpLeader, r, h.c.Config().LeaderOpTimeout.D(),
				TransferLeader{FromStore: src.id, ToStore: dst.id})}
		}
	}
	return nil
}
