package pd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/pdpb"
)

type storeInfo struct {
	meta          *metapb.Store // never mutated once stored
	stats         *pdpb.StoreStats
	lastHeartbeat time.Time
}

// cluster is the leader's in-memory view of the cluster metadata, loaded from
// etcd when the term starts and written through to etcd (fenced) on change.
// mu guards stores, regions, bootstrapped; persisting writes happen outside
// mu, serialised by writeMu, so readers never wait on etcd.
type cluster struct {
	kv       *fencedKV
	ids      *idAllocator
	replicas int
	log      *slog.Logger

	writeMu sync.Mutex // serialises persisting updates (stores, regions, bootstrap)

	mu           sync.RWMutex
	clusterID    uint64
	bootstrapped bool
	stores       map[uint64]*storeInfo
	regions      *regionIndex
}

func newCluster(kv *fencedKV, ids *idAllocator, replicas int, log *slog.Logger) *cluster {
	return &cluster{
		kv: kv, ids: ids, replicas: replicas, log: log,
		stores:  map[uint64]*storeInfo{},
		regions: newRegionIndex(),
	}
}

// load reads cluster id, bootstrap flag, stores and regions from etcd,
// creating the cluster id on first start.
func (c *cluster) load(ctx context.Context) error {
	id, err := c.kv.getUint(ctx, keyClusterID)
	if err != nil {
		return err
	}
	if id == 0 {
		id = uint64(time.Now().UnixNano())
		err := c.kv.txn(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(keyClusterID), "=", 0)},
			clientv3.OpPut(keyClusterID, strconv.FormatUint(id, 10)))
		if err != nil && !errors.Is(err, errTxnCond) {
			return fmt.Errorf("create cluster id: %w", err)
		}
		if id, err = c.kv.getUint(ctx, keyClusterID); err != nil {
			return err
		}
	}
	_, boot, err := c.kv.get(ctx, keyBootstrapped)
	if err != nil {
		return err
	}
	stores, err := loadPrefix(ctx, c.kv.cli, prefixStores, func() *metapb.Store { return &metapb.Store{} })
	if err != nil {
		return err
	}
	regions, err := loadPrefix(ctx, c.kv.cli, prefixRegions, func() *metapb.Region { return &metapb.Region{} })
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clusterID, c.bootstrapped = id, boot
	for _, s := range stores {
		c.stores[s.Id] = &storeInfo{meta: s}
	}
	for _, r := range regions {
		c.regions.put(&regionInfo{meta: r})
	}
	storesGauge.Set(float64(len(c.stores)))
	regionsGauge.Set(float64(c.regions.len()))
	c.log.Info("cluster loaded", "cluster_id", id, "bootstrapped", boot, "stores", len(stores), "regions", len(regions))
	return nil
}

func (c *cluster) id() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.clusterID
}

func (c *cluster) isBootstrapped() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.bootstrapped
}

func (c *cluster) putStore(ctx context.Context, s *metapb.Store) error {
	if s == nil || s.Id == 0 || s.Address == "" {
		return fmt.Errorf("%w: store needs id and address", ErrInvalidArgument)
	}
	s = proto.CloneOf(s)
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.mu.RLock()
	old := c.stores[s.Id]
	c.mu.RUnlock()
	if old != nil && old.meta.State == metapb.StoreState_Tombstone {
		return fmt.Errorf("store %d: %w", s.Id, ErrStoreTombstone)
	}
	if old == nil || !proto.Equal(old.meta, s) {
		if err := c.kv.put(ctx, storeKey(s.Id), mustMarshal(s)); err != nil {
			return fmt.Errorf("persist store %d: %w", s.Id, err)
		}
	}
	c.mu.Lock()
	info := &storeInfo{meta: s}
	if old != nil {
		info.stats, info.lastHeartbeat = old.stats, old.lastHeartbeat
	}
	c.stores[s.Id] = info
	storesGauge.Set(float64(len(c.stores)))
	c.mu.Unlock()
	if old == nil {
		c.log.Info("store registered", "store_id", s.Id, "address", s.Address, "status_address", s.StatusAddress)
	}
	return c.maybeBootstrapLocked(ctx)
}

func (c *cluster) getStore(id uint64) *metapb.Store {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if s := c.stores[id]; s != nil {
		return s.meta
	}
	return nil
}

func (c *cluster) allStores() []*metapb.Store {
	c.mu.RLock()
	out := make([]*metapb.Store, 0, len(c.stores))
	for _, s := range c.stores {
		out = append(out, s.meta)
	}
	c.mu.RUnlock()
	slices.SortFunc(out, func(a, b *metapb.Store) int { return cmpUint(a.Id, b.Id) })
	return out
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// maybeBootstrap creates the first region once enough stores are up.
func (c *cluster) maybeBootstrap(ctx context.Context) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	return c.maybeBootstrapLocked(ctx)
}

// maybeBootstrapLocked requires writeMu.
func (c *cluster) maybeBootstrapLocked(ctx context.Context) error {
	c.mu.RLock()
	if c.bootstrapped {
		c.mu.RUnlock()
		return nil
	}
	var up []uint64
	for id, s := range c.stores {
		if s.meta.State == metapb.StoreState_Up {
			up = append(up, id)
		}
	}
	c.mu.RUnlock()
	if len(up) < c.replicas {
		return nil
	}
	slices.Sort(up)
	up = up[:c.replicas]
	first, err := c.ids.alloc(ctx, uint64(1+len(up)))
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	region := &metapb.Region{
		Id:          first,
		RegionEpoch: &metapb.RegionEpoch{ConfVer: 1, Version: 1},
	}
	for i, sid := range up {
		region.Peers = append(region.Peers, &metapb.Peer{Id: first + 1 + uint64(i), StoreId: sid})
	}
	err = c.kv.txn(ctx,
		[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(keyBootstrapped), "=", 0)},
		clientv3.OpPut(keyBootstrapped, "1"),
		clientv3.OpPut(regionKey(region.Id), mustMarshal(region)))
	if errors.Is(err, errTxnCond) {
		// Someone else bootstrapped (cannot happen with fencing, but be safe).
		return c.load(ctx)
	}
	if err != nil {
		return fmt.Errorf("bootstrap: persist: %w", err)
	}
	c.mu.Lock()
	c.bootstrapped = true
	c.regions.put(&regionInfo{meta: region})
	regionsGauge.Set(float64(c.regions.len()))
	c.mu.Unlock()
	c.log.Info("cluster bootstrapped", "region_id", region.Id, "stores", up)
	return nil
}

// storeHeartbeat records stats and returns the regions with a peer on the
// store that it did not list.
func (c *cluster) storeHeartbeat(req *pdpb.StoreHeartbeatRequest) []*metapb.Region {
	sid := req.GetStats().GetStoreId()
	have := make(map[uint64]struct{}, len(req.RegionIds))
	for _, id := range req.RegionIds {
		have[id] = struct{}{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.stores[sid]; s != nil {
		s.stats, s.lastHeartbeat = req.Stats, time.Now()
	}
	var out []*metapb.Region
	for _, r := range c.regions.sorted {
		if _, ok := have[r.meta.Id]; ok {
			continue
		}
		for _, p := range r.meta.Peers {
			if p.StoreId == sid {
				out = append(out, r.meta)
				break
			}
		}
	}
	return out
}

type hbOutcome string

const (
	hbUnchanged hbOutcome = "unchanged"
	hbUpdated   hbOutcome = "updated"
	hbStale     hbOutcome = "stale"
)

// isStale reports whether region is older than what PD knows: its own
// record has a newer epoch, or an overlapping region has a newer version.
// Requires mu (read).
func (c *cluster) isStaleLocked(region *metapb.Region) bool {
	e := region.GetRegionEpoch()
	if old := c.regions.byID[region.Id]; old != nil {
		oe := old.meta.GetRegionEpoch()
		if e.GetVersion() < oe.GetVersion() || e.GetConfVer() < oe.GetConfVer() {
			return true
		}
	}
	for _, o := range c.regions.overlaps(region.Id, region.StartKey, region.EndKey) {
		if o.meta.GetRegionEpoch().GetVersion() > e.GetVersion() {
			return true
		}
	}
	return false
}

// regionHeartbeat applies a region leader's report.
func (c *cluster) regionHeartbeat(ctx context.Context, req *pdpb.RegionHeartbeatRequest) (hbOutcome, error) {
	region := req.GetRegion()
	if region == nil || region.Id == 0 || region.RegionEpoch == nil {
		return "", fmt.Errorf("%w: region heartbeat needs region id and epoch", ErrInvalidArgument)
	}
	// Fast path: metadata unchanged, only the leader is recorded.
	c.mu.Lock()
	if old := c.regions.byID[region.Id]; old != nil && proto.Equal(old.meta, region) {
		c.setLeaderLocked(old, req)
		c.mu.Unlock()
		return hbUnchanged, nil
	}
	c.mu.Unlock()

	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.mu.RLock()
	if c.isStaleLocked(region) {
		c.mu.RUnlock()
		return hbStale, nil
	}
	old := c.regions.byID[region.Id]
	if old != nil && proto.Equal(old.meta, region) {
		c.mu.RUnlock()
		c.mu.Lock()
		c.setLeaderLocked(old, req)
		c.mu.Unlock()
		return hbUnchanged, nil
	}
	overlaps := c.regions.overlaps(region.Id, region.StartKey, region.EndKey)
	c.mu.RUnlock()

	region = proto.CloneOf(region)
	ops := []clientv3.Op{clientv3.OpPut(regionKey(region.Id), mustMarshal(region))}
	for _, o := range overlaps {
		ops = append(ops, clientv3.OpDelete(regionKey(o.meta.Id)))
	}
	if err := c.kv.txn(ctx, nil, ops...); err != nil {
		return "", fmt.Errorf("persist region %d: %w", region.Id, err)
	}
	info := &regionInfo{meta: region}
	c.mu.Lock()
	if old != nil {
		info.leader, info.term = old.leader, old.term
	}
	c.setLeaderLocked(info, req)
	c.regions.put(info)
	regionsGauge.Set(float64(c.regions.len()))
	c.mu.Unlock()
	c.log.Debug("region updated", "region_id", region.Id, "epoch", region.RegionEpoch.String(), "overlaps_removed", len(overlaps))
	return hbUpdated, nil
}

// setLeaderLocked records the reported leader unless an older term reports.
// Requires mu (write).
func (c *cluster) setLeaderLocked(r *regionInfo, req *pdpb.RegionHeartbeatRequest) {
	if req.Leader == nil || req.Term < r.term {
		return
	}
	if r.leader == nil || !proto.Equal(r.leader, req.Leader) {
		r.leader = proto.CloneOf(req.Leader)
	}
	r.term = req.Term
}

// getRegion returns the region containing key and its leader (may be nil).
func (c *cluster) getRegion(key []byte) (*metapb.Region, *metapb.Peer) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if r := c.regions.find(key); r != nil {
		return r.meta, r.leader
	}
	return nil, nil
}

func (c *cluster) getRegionByID(id uint64) (*metapb.Region, *metapb.Peer) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if r := c.regions.byID[id]; r != nil {
		return r.meta, r.leader
	}
	return nil, nil
}
