package storetest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/pdpb"
	"github.com/stratadb/strata/proto/storepb"
	"github.com/stratadb/strata/store/concurrency"
	"github.com/stratadb/strata/store/server"
	"github.com/stratadb/strata/store/storetest/memengine"
	"github.com/stratadb/strata/store/txn"
	"github.com/stratadb/strata/tso"
)

// Options configures a Store. Zero values take the defaults.
type Options struct {
	// Stores is how many store nodes the Store looks like (default 1):
	// each has its own gRPC listener and a peer of every region; region id
	// N is led by store N mod Stores + 1 (until SetLeader moves it). They
	// share one engine and one transaction layer.
	Stores int
	// RegionKeys, when positive, splits every region holding more than that
	// many committed keys before each coprocessor request is served (a
	// store's split checker, run at a point where tests see its effect:
	// the SQL node then merges the answers of many small regions).
	RegionKeys int
	// PageScanRows, when positive, ends every time-bounded coprocessor
	// page (page_ms set) after that many scanned rows, as a store whose
	// page time ran out does: the client then resumes each region several
	// times and merges the pages.
	PageScanRows uint64
	// SplitKeys are split at when the Store starts.
	SplitKeys [][]byte
	// DisableInMemoryPessimisticLock is store/server.Config's.
	DisableInMemoryPessimisticLock bool
	// LockWaitTimeout is txn.Config's (default 50s).
	LockWaitTimeout time.Duration
	// ClockAhead runs the timestamp clock (PD's, which GetTS answers and
	// the store syncs max_ts with) that far ahead of this process's wall
	// clock, as a PD whose clock is off from the SQL node's.
	ClockAhead time.Duration
	// IgnoreStoreBatch makes the nodes serve a coprocessor request's own
	// region only and ignore its batched tasks (store_batch_tasks), as a
	// store from before store batching does.
	IgnoreStoreBatch bool
}

// Store is an in-process store for tests: store/txn and store/coprocessor
// over an in-memory engine (memengine), served over gRPC on loopback, with
// the PD services a client needs (regions, stores, timestamps, ids). See
// the package doc.
type Store struct {
	opts  Options
	eng   *memengine.Engine
	st    *txn.Storage
	cm    *concurrency.Manager
	nodes []*node
	clock clock
	ids   atomic.Uint64
	det   *countingDetector

	// splitMu serialises split checks; checkedWrites is the engine's
	// write count at the last one.
	splitMu       sync.Mutex
	checkedWrites int64

	// lead is who leads each region, for the nodes and for PD.
	lead *leadership

	mu         sync.Mutex
	calls      map[string]int
	nodeCalls  map[nodeMethod]int
	pdCalls    map[string]int
	pdErr      error
	faults     []*Fault
	gcLifeTime uint64
	gcInterval uint64
	affinity   []int64 // the affinity tables (no scheduling here: groups stay pending)
}

// node is one simulated store node: an id and a listener.
type node struct {
	id  uint64
	lis net.Listener
	gs  *grpc.Server
}

// nodeMethod counts one node's requests of one method.
type nodeMethod struct {
	store  uint64
	method string
}

// New starts a Store listening on 127.0.0.1. Close stops it.
func New(opts Options) (*Store, error) {
	if opts.Stores <= 0 {
		opts.Stores = 1
	}
	n := uint64(opts.Stores)
	lead := &leadership{stores: n, leader: map[uint64]uint64{}, noHint: map[uint64]bool{}, pd: map[uint64]uint64{}}
	eng, err := memengine.Open(memengine.Options{
		Peers: func(id uint64) []*metapb.Peer {
			ps := make([]*metapb.Peer, n)
			for i := range ps {
				ps[i] = &metapb.Peer{Id: id<<8 | uint64(i+1), StoreId: uint64(i + 1)}
			}
			return ps
		},
		Leader: lead.leaderPeer,
		Hint:   lead.hint,
	})
	if err != nil {
		return nil, err
	}
	s := &Store{opts: opts, eng: eng, cm: concurrency.New(), lead: lead, gcLifeTime: uint64((10 * time.Minute).Milliseconds()),
		gcInterval: uint64((10 * time.Minute).Milliseconds())}
	s.ids.Store(0)
	s.clock.ahead = opts.ClockAhead
	s.det = &countingDetector{Detector: txn.NewLocalDetector()}
	s.st = txn.New(eng, s.cm, &s.clock, txn.Config{
		Detector:                s.det,
		InMemoryPessimisticLock: !opts.DisableInMemoryPessimisticLock,
		LockWaitTimeout:         opts.LockWaitTimeout,
	})
	eng.SetHandover(s.st.Handover)
	eng.Split(opts.SplitKeys...)
	for i := range opts.Stores {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("storetest: listen: %w", err)
		}
		nd := &node{id: uint64(i + 1), lis: lis, gs: grpc.NewServer(server.GRPCServerOptions()...)}
		storepb.RegisterStoreServer(nd.gs, &service{s: s, storeID: nd.id})
		go func() { _ = nd.gs.Serve(lis) }()
		s.nodes = append(s.nodes, nd)
	}
	return s, nil
}

// Close stops serving (requests in flight are answered first) and closes
// the engine.
func (s *Store) Close() error {
	for _, nd := range s.nodes {
		nd.gs.GracefulStop()
	}
	return s.eng.Close()
}

// Engine is the store's engine (regions, raw data).
func (s *Store) Engine() *memengine.Engine { return s.eng }

// Storage is the transaction layer requests run in.
func (s *Store) Storage() *txn.Storage { return s.st }

// LockWaiters is the number of pessimistic lock requests waiting for
// another transaction's lock.
func (s *Store) LockWaiters() int { return s.st.LockWaiters() }

// splitCheck splits the regions holding more than Options.RegionKeys
// keys, if anything was written since the last check.
func (s *Store) splitCheck() error {
	if s.opts.RegionKeys <= 0 {
		return nil
	}
	s.splitMu.Lock()
	defer s.splitMu.Unlock()
	w := s.eng.Writes()
	if w == s.checkedWrites {
		return nil
	}
	if _, err := s.eng.SplitBySize(s.opts.RegionKeys); err != nil {
		return fmt.Errorf("storetest: split check: %w", err)
	}
	s.checkedWrites = w
	return nil
}

// Deadlocks is how many lock waits the deadlock detector refused.
func (s *Store) Deadlocks() int { return int(s.det.deadlocks.Load()) }

// Locks returns every lock in the store with lock_version <= maxVersion,
// in key order, as ScanLock finds them (pessimistic locks kept in memory
// included).
func (s *Store) Locks(ctx context.Context, maxVersion uint64) ([]*kvrpcpb.LockInfo, error) {
	var out []*kvrpcpb.LockInfo
	for _, r := range s.eng.Regions() {
		resp, err := s.st.ScanLock(ctx, &kvrpcpb.ScanLockRequest{MaxVersion: maxVersion,
			Context: &kvrpcpb.Context{RegionId: r.GetId(), RegionEpoch: r.GetRegionEpoch(), Peer: s.eng.Leader(r)}})
		if err != nil {
			return nil, err
		}
		if rerr := resp.GetRegionError(); rerr != nil {
			// A split in between: the caller may ask again.
			return nil, fmt.Errorf("storetest: scan locks of region %d: %s", r.GetId(), rerr.GetMessage())
		}
		out = append(out, resp.GetLocks()...)
	}
	return out, nil
}

// countingDetector counts the deadlocks a detector finds.
type countingDetector struct {
	txn.Detector
	deadlocks atomic.Int64
}

func (d *countingDetector) Detect(waiter, holder uint64, key []byte) *kvrpcpb.Deadlock {
	dl := d.Detector.Detect(waiter, holder, key)
	if dl != nil {
		d.deadlocks.Add(1)
	}
	return dl
}

// Split splits the regions at keys (memengine.Engine.Split) and returns
// the resulting regions.
func (s *Store) Split(keys ...[]byte) []*metapb.Region { return s.eng.Split(keys...) }

// ---- PD ----

// GetRegion returns the region holding key and its leader (kvclient.PD).
func (s *Store) GetRegion(_ context.Context, key []byte) (*metapb.Region, *metapb.Peer, error) {
	if err := s.pdCall("GetRegion"); err != nil {
		return nil, nil, err
	}
	r := s.eng.RegionByKey(key)
	return r, s.lead.pdLeader(r), nil
}

// GetRegionByID returns region id and its leader, or nils when there is
// no such region (kvclient.PD).
func (s *Store) GetRegionByID(_ context.Context, id uint64) (*metapb.Region, *metapb.Peer, error) {
	if err := s.pdCall("GetRegionByID"); err != nil {
		return nil, nil, err
	}
	r := s.eng.RegionByID(id)
	if r == nil {
		return nil, nil, nil
	}
	return r, s.lead.pdLeader(r), nil
}

// GetStore returns store id with its address (kvclient.PD).
func (s *Store) GetStore(_ context.Context, id uint64) (*metapb.Store, error) {
	if id == 0 || id > uint64(len(s.nodes)) {
		return nil, fmt.Errorf("storetest: no store %d", id)
	}
	return &metapb.Store{Id: id, Address: s.nodes[id-1].lis.Addr().String(), State: metapb.StoreState_Up}, nil
}

// GetTS returns a timestamp: the wall clock in PD's layout, strictly
// increasing.
func (s *Store) GetTS(context.Context) (uint64, error) { return s.clock.next(), nil }

// AllocID returns the first of count fresh ids.
func (s *Store) AllocID(_ context.Context, count uint32) (uint64, error) {
	return s.ids.Add(uint64(count)) - uint64(count) + 1, nil
}

// SetGCConfig changes the GC settings kept for the SQL node (a zero field
// keeps its value) and returns them, as PD does. Nothing collects garbage.
func (s *Store) SetGCConfig(_ context.Context, lifeTime, runInterval time.Duration) (*pdpb.GCConfig, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lifeTime > 0 {
		s.gcLifeTime = uint64(lifeTime.Milliseconds())
	}
	if runInterval > 0 {
		s.gcInterval = uint64(runInterval.Milliseconds())
	}
	return &pdpb.GCConfig{LifeTimeMs: s.gcLifeTime, RunIntervalMs: s.gcInterval}, nil
}

// SetAffinityTables keeps the affinity table list as PD does; this store
// schedules nothing, so every group stays pending.
func (s *Store) SetAffinityTables(_ context.Context, add, remove []int64) ([]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range add {
		if !slices.Contains(s.affinity, id) {
			s.affinity = append(s.affinity, id)
		}
	}
	s.affinity = slices.DeleteFunc(s.affinity, func(id int64) bool { return slices.Contains(remove, id) })
	return slices.Clone(s.affinity), nil
}

// AffinityGroups reports the groups of tableIDs (every configured table
// when empty), all pending.
func (s *Store) AffinityGroups(_ context.Context, tableIDs []int64) ([]*pdpb.AffinityGroup, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(tableIDs) == 0 {
		tableIDs = s.affinity
	}
	out := make([]*pdpb.AffinityGroup, 0, len(tableIDs))
	for _, id := range tableIDs {
		out = append(out, &pdpb.AffinityGroup{TableId: id, Configured: slices.Contains(s.affinity, id), Phase: "pending"})
	}
	return out, nil
}

// ScanRegions returns the regions overlapping [start, end) (an empty end:
// to the end), at most limit of them when limit is positive.
func (s *Store) ScanRegions(_ context.Context, start, end []byte, limit int) ([]*pdpb.RegionStat, error) {
	if err := s.pdCall("ScanRegions"); err != nil {
		return nil, err
	}
	var out []*pdpb.RegionStat
	for _, r := range s.eng.Regions() {
		if len(r.GetEndKey()) > 0 && bytes.Compare(r.GetEndKey(), start) <= 0 {
			continue
		}
		if len(end) > 0 && bytes.Compare(r.GetStartKey(), end) >= 0 {
			break
		}
		out = append(out, &pdpb.RegionStat{Region: r, Leader: s.lead.pdLeader(r)})
		if limit > 0 && len(out) == limit {
			break
		}
	}
	return out, nil
}

// clock hands out strictly increasing timestamps from the wall clock.
type clock struct {
	mu   sync.Mutex
	last uint64

	// ahead is Options.ClockAhead.
	ahead time.Duration
}

func (c *clock) next() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	ts := tso.ComposeTS(time.Now().Add(c.ahead).UnixMilli(), 0)
	if ts <= c.last {
		ts = c.last + 1
	}
	c.last = ts
	return ts
}

// GetTS implements txn.TSO (the store syncs max_ts with it).
func (c *clock) GetTS(context.Context) (uint64, error) { return c.next(), nil }
