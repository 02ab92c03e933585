package pd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/pd/schedule"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/pdpb"
)

// cluster is the leader's view of the cluster metadata: the scheduling
// model (pd/schedule) loaded from etcd when the term starts and written
// through to etcd (fenced) on change, the operators and the coordinator
// that schedules them. Persisting writes happen outside the model's lock,
// serialised by writeMu, so readers never wait on etcd.
type cluster struct {
	kv       *fencedKV
	ids      *idAllocator
	replicas int
	log      *slog.Logger

	model *schedule.Cluster
	ops   *schedule.OperatorController
	coord *schedule.Coordinator

	writeMu sync.Mutex // serialises persisting updates (stores, regions, bootstrap, config)
	// affinityMu serialises read-modify-write changes of the affinity
	// tables (affinity.go).
	affinityMu sync.Mutex

	mu           sync.RWMutex
	clusterID    uint64
	bootstrapped bool
}

func newCluster(kv *fencedKV, ids *idAllocator, replicas int, sched schedule.Config, log *slog.Logger) *cluster {
	if log == nil {
		log = slog.Default()
	}
	if sched.MaxReplicas == 0 {
		sched.MaxReplicas = replicas
	}
	c := &cluster{kv: kv, ids: ids, replicas: replicas, log: log}
	c.model = schedule.NewCluster(sched, nil)
	c.ops = schedule.NewOperatorController(c.model, log.With("component", "operator"))
	alloc := func() (uint64, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return c.ids.alloc(ctx, 1)
	}
	c.coord = schedule.NewCoordinator(c.model, c.ops, alloc, log.With("component", "schedule"))
	c.coord.Tombstone = func(ctx context.Context, id uint64) error {
		return c.setStoreState(ctx, id, metapb.StoreState_Tombstone)
	}
	return c
}

// load reads cluster id, bootstrap flag, schedule config, stores and
// regions from etcd, creating the cluster id on first start.
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
	if v, ok, err := c.kv.get(ctx, keyScheduleConfig); err != nil {
		return err
	} else if ok {
		cfg := c.model.Config()
		if err := json.Unmarshal([]byte(v), &cfg); err != nil {
			return fmt.Errorf("pd: decode schedule config: %w", err)
		}
		if err := c.model.SetConfig(cfg); err != nil {
			return fmt.Errorf("pd: persisted schedule config: %w", err)
		}
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
	c.clusterID, c.bootstrapped = id, boot
	c.mu.Unlock()
	for _, s := range stores {
		c.model.PutStore(s)
	}
	for _, r := range regions {
		c.model.PutRegion(&schedule.RegionInfo{Meta: r})
	}
	storesGauge.Set(float64(len(stores)))
	regionsGauge.Set(float64(c.model.RegionCount()))
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
	if err := c.checkStorageFormat(s); err != nil {
		return err
	}
	old := c.model.GetStore(s.Id)
	if old != nil {
		switch old.Meta.GetState() {
		case metapb.StoreState_Tombstone:
			return fmt.Errorf("store %d: %w", s.Id, ErrStoreTombstone)
		case metapb.StoreState_Offline:
			s.State = metapb.StoreState_Offline // a restart does not cancel the removal
		}
	}
	if old == nil || !proto.Equal(old.Meta, s) {
		if err := c.kv.put(ctx, storeKey(s.Id), mustMarshal(s)); err != nil {
			return fmt.Errorf("persist store %d: %w", s.Id, err)
		}
	}
	c.model.PutStore(s)
	storesGauge.Set(float64(len(c.model.Stores())))
	if old == nil {
		c.log.Info("store registered", "store_id", s.Id, "address", s.Address, "status_address", s.StatusAddress)
	}
	return c.maybeBootstrapLocked(ctx)
}

// checkStorageFormat refuses store s if its binary cannot read the
// storage format another live store holds: data moves between stores as
// raft entries and snapshots (raftstore/format.go). A store from before
// the fields reports 0: format 1.
func (c *cluster) checkStorageFormat(s *metapb.Store) error {
	reads := max(s.GetMaxStorageFormat(), 1)
	for _, o := range c.model.Stores() {
		m := o.Meta
		if m.GetId() == s.GetId() || m.GetState() == metapb.StoreState_Tombstone {
			continue
		}
		if f := max(m.GetStorageFormat(), 1); f > reads {
			return fmt.Errorf("%w: store %d (%s) reads storage formats up to %d, but store %d holds format %d: run the Strata version the other stores run, or newer",
				ErrStorageFormat, s.GetId(), s.GetAddress(), reads, m.GetId(), f)
		}
	}
	return nil
}

// setStoreState persists a store's new state (Offline by the API,
// Tombstone once drained). Up -> Offline -> Tombstone only.
func (c *cluster) setStoreState(ctx context.Context, id uint64, state metapb.StoreState) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	old := c.model.GetStore(id)
	if old == nil {
		return errStoreNotFound(id)
	}
	cur := old.Meta.GetState()
	if cur == state {
		return nil
	}
	if cur == metapb.StoreState_Tombstone || (state == metapb.StoreState_Tombstone && cur != metapb.StoreState_Offline) || state == metapb.StoreState_Up {
		return fmt.Errorf("%w: store %d is %v, cannot become %v", ErrInvalidArgument, id, cur, state)
	}
	m := proto.CloneOf(old.Meta)
	m.State = state
	if err := c.kv.put(ctx, storeKey(id), mustMarshal(m)); err != nil {
		return fmt.Errorf("persist store %d: %w", id, err)
	}
	c.model.PutStore(m)
	c.log.Info("store state changed", "store_id", id, "state", state.String())
	return nil
}

// setScheduleConfig validates, persists and applies a new configuration.
func (c *cluster) setScheduleConfig(ctx context.Context, cfg schedule.Config) error {
	cfg = cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidArgument, err)
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if err := c.kv.put(ctx, keyScheduleConfig, string(b)); err != nil {
		return fmt.Errorf("persist schedule config: %w", err)
	}
	return c.model.SetConfig(cfg)
}

func (c *cluster) getStore(id uint64) *metapb.Store {
	if s := c.model.GetStore(id); s != nil {
		return s.Meta
	}
	return nil
}

func (c *cluster) allStores() []*metapb.Store {
	infos := c.model.Stores()
	out := make([]*metapb.Store, len(infos))
	for i, s := range infos {
		out[i] = s.Meta
	}
	return out
}

// maybeBootstrap creates the first region once enough stores are up.
func (c *cluster) maybeBootstrap(ctx context.Context) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	return c.maybeBootstrapLocked(ctx)
}

// maybeBootstrapLocked requires writeMu.
func (c *cluster) maybeBootstrapLocked(ctx context.Context) error {
	if c.isBootstrapped() {
		return nil
	}
	var up []uint64
	for _, s := range c.model.Stores() {
		if s.Meta.GetState() == metapb.StoreState_Up {
			up = append(up, s.Meta.GetId())
		}
	}
	if len(up) < c.replicas {
		return nil
	}
	up = up[:c.replicas] // Stores() is sorted by id
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
	c.mu.Unlock()
	c.model.PutRegion(&schedule.RegionInfo{Meta: region})
	regionsGauge.Set(float64(c.model.RegionCount()))
	c.log.Info("cluster bootstrapped", "region_id", region.Id, "stores", up)
	return nil
}

// neverConfChanged reports whether r's membership is still the one it was
// created with (conf_ver 1): only such a region's peers may start from the
// shared initial raft state (index 5, voters = peers). A peer added by a
// conf change is created by a raft message and filled by a snapshot.
func neverConfChanged(r *metapb.Region) bool {
	return r.GetRegionEpoch().GetConfVer() == 1
}

// storeHeartbeat records stats and returns the regions never conf-changed
// with a peer on the store that the store did not list.
func (c *cluster) storeHeartbeat(req *pdpb.StoreHeartbeatRequest) *pdpb.StoreHeartbeatResponse {
	sid := req.GetStats().GetStoreId()
	c.model.StoreHeartbeat(req.GetStats())
	have := make(map[uint64]struct{}, len(req.RegionIds))
	for _, id := range req.RegionIds {
		have[id] = struct{}{}
	}
	out := &pdpb.StoreHeartbeatResponse{}
	for _, r := range c.model.StoreRegions(sid) {
		if _, ok := have[r.ID()]; !ok && neverConfChanged(r.Meta) {
			out.CreateRegions = append(out.CreateRegions, r.Meta)
		}
	}
	// A hibernated leader heartbeats rarely: ask for the heartbeats that
	// fetch waiting operator steps now.
	for _, id := range c.ops.RegionsWithOperator() {
		if r := c.model.GetRegion(id); r != nil && r.LeaderStore() == sid {
			out.AwakenRegions = append(out.AwakenRegions, id)
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

// regionHeartbeat applies a region leader's report and fills resp with the
// step of the region's operator, if any.
func (c *cluster) regionHeartbeat(ctx context.Context, req *pdpb.RegionHeartbeatRequest, resp *pdpb.RegionHeartbeatResponse) (hbOutcome, error) {
	region := req.GetRegion()
	if region == nil || region.Id == 0 || region.RegionEpoch == nil {
		return "", fmt.Errorf("%w: region heartbeat needs region id and epoch", ErrInvalidArgument)
	}
	ri := schedule.RegionFromHeartbeat(req)
	if stale, _ := c.model.HeartbeatCheck(ri); stale {
		return hbStale, nil
	}
	outcome := hbUnchanged
	if changed, _ := c.model.MetaChanged(ri); changed {
		c.writeMu.Lock()
		// Re-check under writeMu: another heartbeat may have moved on.
		if stale, _ := c.model.HeartbeatCheck(ri); stale {
			c.writeMu.Unlock()
			return hbStale, nil
		}
		changed, overlaps := c.model.MetaChanged(ri)
		if changed {
			ri.Meta = proto.CloneOf(region)
			ops := []clientv3.Op{clientv3.OpPut(regionKey(region.Id), mustMarshal(ri.Meta))}
			for _, o := range overlaps {
				ops = append(ops, clientv3.OpDelete(regionKey(o.ID())))
			}
			if err := c.kv.txn(ctx, nil, ops...); err != nil {
				c.writeMu.Unlock()
				return "", fmt.Errorf("persist region %d: %w", region.Id, err)
			}
			outcome = hbUpdated
			c.log.Debug("region updated", "region_id", region.Id, "epoch", region.RegionEpoch.String(), "overlaps_removed", len(overlaps))
		}
		c.model.PutRegion(ri)
		c.writeMu.Unlock()
		regionsGauge.Set(float64(c.model.RegionCount()))
	} else {
		c.model.PutRegion(ri)
	}
	c.ops.Dispatch(c.model.GetRegion(region.Id), resp)
	return outcome, nil
}

// getRegion returns the region containing key and its leader (may be nil).
func (c *cluster) getRegion(key []byte) (*metapb.Region, *metapb.Peer) {
	if r := c.model.GetRegionByKey(key); r != nil {
		return r.Meta, r.Leader
	}
	return nil, nil
}

func (c *cluster) getRegionByID(id uint64) (*metapb.Region, *metapb.Peer) {
	if r := c.model.GetRegion(id); r != nil {
		return r.Meta, r.Leader
	}
	return nil, nil
}
