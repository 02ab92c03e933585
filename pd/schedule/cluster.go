package schedule

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/pdpb"
)

// Cluster is the leader's in-memory model of stores and regions. Safe for
// concurrent use; every method takes the lock briefly and does no I/O.
type Cluster struct {
	now func() time.Time

	mu      sync.RWMutex
	cfg     Config
	stores  map[uint64]*StoreInfo
	regions *RegionTree
}

// NewCluster returns an empty model with cfg (defaults filled in). now is
// the clock (time.Now when nil; tests pass a manual one).
func NewCluster(cfg Config, now func() time.Time) *Cluster {
	if now == nil {
		now = time.Now
	}
	return &Cluster{now: now, cfg: cfg.Defaults(), stores: map[uint64]*StoreInfo{}, regions: NewRegionTree()}
}

// Now is the model's clock.
func (c *Cluster) Now() time.Time { return c.now() }

// Config returns the current configuration.
func (c *Cluster) Config() Config {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.cfg
}

// SetConfig replaces the configuration after validating it.
func (c *Cluster) SetConfig(cfg Config) error {
	cfg = cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	c.mu.Lock()
	c.cfg = cfg
	c.mu.Unlock()
	return nil
}

// PutStore adds or replaces a store's metadata, keeping its heartbeat. A
// store new to the model counts as heard from now (a new PD leader gives
// every store a full grace period).
func (c *Cluster) PutStore(meta *metapb.Store) {
	c.mu.Lock()
	defer c.mu.Unlock()
	info := &StoreInfo{Meta: meta, LastHeartbeat: c.now()}
	if old := c.stores[meta.GetId()]; old != nil {
		info.Stats, info.LastHeartbeat = old.Stats, old.LastHeartbeat
	}
	c.stores[meta.GetId()] = info
}

// StoreHeartbeat records a store's stats; false if the store is unknown.
func (c *Cluster) StoreHeartbeat(stats *pdpb.StoreStats) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.stores[stats.GetStoreId()]
	if old == nil {
		return false
	}
	c.stores[stats.GetStoreId()] = &StoreInfo{Meta: old.Meta, Stats: stats, LastHeartbeat: c.now()}
	return true
}

// GetStore returns store id or nil.
func (c *Cluster) GetStore(id uint64) *StoreInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.stores[id]
}

// Stores returns every store by id.
func (c *Cluster) Stores() []*StoreInfo {
	c.mu.RLock()
	out := make([]*StoreInfo, 0, len(c.stores))
	for _, s := range c.stores {
		out = append(out, s)
	}
	c.mu.RUnlock()
	slices.SortFunc(out, func(a, b *StoreInfo) int { return cmp.Compare(a.Meta.GetId(), b.Meta.GetId()) })
	return out
}

// StoreState returns store id's state (Tombstone for an unknown store).
func (c *Cluster) StoreState(id uint64) StoreState {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s := c.stores[id]
	if s == nil {
		return StoreTombstone
	}
	return s.State(c.now(), &c.cfg)
}

// HeartbeatCheck says whether a region heartbeat is stale: PD knows a newer
// epoch of the region, an overlapping region with a newer version, or (same
// epoch) a leader of a higher term.
func (c *Cluster) HeartbeatCheck(r *RegionInfo) (stale bool, reason string) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e := r.Epoch()
	if old := c.regions.Get(r.ID()); old != nil {
		oe := old.Epoch()
		if e.GetVersion() < oe.GetVersion() || e.GetConfVer() < oe.GetConfVer() {
			return true, "epoch"
		}
		if e.GetVersion() == oe.GetVersion() && e.GetConfVer() == oe.GetConfVer() && r.Term < old.Term {
			return true, "term"
		}
	}
	for _, o := range c.regions.Overlaps(r.ID(), r.Meta.GetStartKey(), r.Meta.GetEndKey()) {
		if o.Epoch().GetVersion() > e.GetVersion() {
			return true, "overlap"
		}
	}
	return false, ""
}

// MetaChanged reports whether r's metadata (range, epoch, peers) differs
// from what the model holds, i.e. whether it must be persisted. It also
// returns the regions r would replace.
func (c *Cluster) MetaChanged(r *RegionInfo) (bool, []*RegionInfo) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if old := c.regions.Get(r.ID()); old != nil && proto.Equal(old.Meta, r.Meta) {
		return false, nil
	}
	return true, c.regions.Overlaps(r.ID(), r.Meta.GetStartKey(), r.Meta.GetEndKey())
}

// PutRegion stores r, replacing its old version and every region it
// overlaps (returned). A report older than the stored region (checked
// under the lock: two heartbeats may race past HeartbeatCheck) is dropped.
func (c *Cluster) PutRegion(r *RegionInfo) []*RegionInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.regions.Get(r.ID())
	if old != nil {
		e, oe := r.Epoch(), old.Epoch()
		if e.GetVersion() < oe.GetVersion() || e.GetConfVer() < oe.GetConfVer() {
			return nil
		}
	}
	if old != nil && (r.Leader == nil || r.Term < old.Term) {
		// No leader reported, or one of an older term (a conf change
		// reported late by a deposed leader): keep the known leader.
		cp := *r
		cp.Leader, cp.Term = old.Leader, old.Term
		r = &cp
	}
	return c.regions.Put(r)
}

// GetRegion returns region id or nil.
func (c *Cluster) GetRegion(id uint64) *RegionInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.regions.Get(id)
}

// GetRegionByKey returns the region containing key or nil.
func (c *Cluster) GetRegionByKey(key []byte) *RegionInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.regions.Find(key)
}

// BatchGetRegions returns the regions with the given ids (nil for unknown).
func (c *Cluster) BatchGetRegions(ids []uint64) []*RegionInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*RegionInfo, len(ids))
	for i, id := range ids {
		out[i] = c.regions.Get(id)
	}
	return out
}

// ScanRegions returns up to limit regions intersecting [start, end).
func (c *Cluster) ScanRegions(start, end []byte, limit int) []*RegionInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.regions.Scan(start, end, limit)
}

// RegionCount is the number of regions.
func (c *Cluster) RegionCount() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.regions.Len()
}

// StoreRegions returns the regions with a peer on store sid.
func (c *Cluster) StoreRegions(sid uint64) []*RegionInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.regions.StoreRegions(sid)
}

// StoreLeaders returns the regions whose leader is on store sid.
func (c *Cluster) StoreLeaders(sid uint64) []*RegionInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.regions.StoreLeaders(sid)
}

// StoreCounts returns the number of peers and leaders on store sid and the
// total size of its regions.
func (c *Cluster) StoreCounts(sid uint64) (regions, leaders int, size uint64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, r := range c.regions.peers[sid] {
		size += r.size()
	}
	return len(c.regions.peers[sid]), len(c.regions.leaders[sid]), size
}

// allRegions returns every region in key order.
func (c *Cluster) allRegions() []*RegionInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Clone(c.regions.sorted)
}
