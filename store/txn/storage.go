package txn

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stratadb/strata/kv/regionkeys"
	"github.com/stratadb/strata/proto/errorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
	"github.com/stratadb/strata/store/concurrency"
	"github.com/stratadb/strata/store/mvcc"
)

// Snapshot is a consistent view of the store's engine; Close releases it.
// It is an alias of an unnamed interface so that an Engine can be written
// outside this package without importing it (store/storetest/memengine,
// which this package's own tests use).
type Snapshot = interface {
	mvcc.Snapshot
	Close() error
}

// Engine is what the transaction layer needs from a replicated store.
// raftstore implements it on the leader; tests implement it over a plain
// Pebble DB.
type Engine interface {
	// ReadIndex waits until the region of rctx may be read linearizably
	// from this store's engine (leader, lease or ReadIndex round, applied
	// index caught up) and returns the region (shared, read-only) or a
	// region error.
	ReadIndex(ctx context.Context, rctx *kvrpcpb.Context) (*metapb.Region, *errorpb.Error, error)
	// Snapshot returns a consistent view of the whole engine as of now.
	Snapshot() Snapshot
	// LeaderGeneration counts the region leaderships this store gained.
	LeaderGeneration() uint64
	// LeaderTerm returns the term in which this store's peer of regionID
	// leads it now, or 0 (not the leader, no peer here, installing a
	// snapshot). A read loads it before ReadIndex and again after its
	// Snapshot (ReadCheck): the snapshot holds the region's data only if
	// the peer led in the same term throughout.
	LeaderTerm(regionID uint64) uint64
	// Write replicates reqs in region (as returned by the ReadIndex the
	// command was evaluated after: its epoch is checked again at apply) and
	// returns once they are applied on this store (durable on a quorum).
	// rctx is the request's context. With leaderGen > 0
	// it refuses (region error, nothing written) when the store's leader
	// generation moved past leaderGen. A region error means nothing was
	// written; an error means the outcome is unknown. reqs are retained
	// until it returns. It adds the raft stages of the write to wd when
	// wd is not nil (the caller owns wd; not retained).
	Write(ctx context.Context, rctx *kvrpcpb.Context, region *metapb.Region, leaderGen uint64, reqs []*raft_cmdpb.Request, wd *kvrpcpb.WriteDetail) (*errorpb.Error, error)
}

// LocalReader is an Engine that serves some leader reads without waiting
// (raftstore's lease reads). Storage.GetLocal uses it.
type LocalReader interface {
	// ReadLocal returns the region of rctx (shared, read-only) when this
	// store may serve a linearizable read of it on the caller's goroutine
	// now, as ReadIndex would without waiting, and the leader term of the
	// lease that allows it (what LeaderTerm returns while the peer leads
	// in that term); nil when ReadIndex would have to wait (no valid
	// lease, epoch mismatch, not the leader).
	ReadLocal(rctx *kvrpcpb.Context) (*metapb.Region, uint64)
	// ReadIndexQueued is ReadIndex for a caller whose ReadLocal of rctx
	// just returned nil: it does not check the local lease again.
	ReadIndexQueued(ctx context.Context, rctx *kvrpcpb.Context) (*metapb.Region, *errorpb.Error, error)
}

// ReplicaReader is an Engine whose followers and learners serve reads
// (kvrpcpb.Context replica_read, stale_read; raftstore/replicaread.go).
// Storage's reads use it when the request asks for it.
type ReplicaReader interface {
	// ReadReplica waits until this replica may serve a read at ts of the
	// region of rctx: a follower read (replica_read) after the leader's
	// read index is applied here, a stale read (stale_read) when ts is at
	// or below the replica's safe ts (else DataIsNotReady). It returns the
	// region (shared, read-only) or a region error.
	ReadReplica(ctx context.Context, rctx *kvrpcpb.Context, ts uint64) (*metapb.Region, *errorpb.Error, error)
	// ReplicaPresent, called after the read took its Snapshot, reports
	// that the replica still exists here (its data is in the snapshot).
	ReplicaPresent(regionID uint64) bool
}

// readIndex is the ReadIndex of a read at ts: on a replica when the
// request asks for it and the engine can. The read must call the
// returned check's Gone after taking its snapshot.
func (s *Storage) readIndex(ctx context.Context, rctx *kvrpcpb.Context, ts uint64) (check ReadCheck, region *metapb.Region, rerr *errorpb.Error, err error) {
	check = NewReadCheck(s.engine, nil, rctx.GetRegionId())
	if rctx.GetReplicaRead() || rctx.GetStaleRead() {
		if rr, ok := s.engine.(ReplicaReader); ok {
			check.replica = rr
			region, rerr, err = rr.ReadReplica(ctx, rctx, ts)
			return check, region, rerr, err
		}
	}
	region, rerr, err = s.engine.ReadIndex(ctx, rctx)
	return check, region, rerr, err
}

// ReadCheck is what a read re-checks after taking its engine snapshot
// (doc.go, "Leader reads"). The ReadIndex made the region readable here at
// one moment; the read then waited for the in-flight writes it must see
// (store/concurrency, up to the request's deadline) and only then took its
// snapshot. Meanwhile the peer may have lost the region: installed a
// snapshot (its ranges cleared before the ingest), been destroyed (its
// data deleted), or had a write's entry overwritten by another leader; in
// each case the writes it had in flight were answered undetermined and
// their in-memory locks released, which is what let the read go on. term
// is the peer's leader term loaded before the ReadIndex.
type ReadCheck struct {
	engine   Engine
	replica  ReplicaReader // a replica read
	regionID uint64
	term     uint64
}

// NewReadCheck starts the check of a read of regionID through engine,
// before its ReadIndex (replica: the replica read's engine, or nil for a
// leader read). store/server's coprocessor and follower-read index use it too.
func NewReadCheck(engine Engine, replica ReplicaReader, regionID uint64) ReadCheck {
	return ReadCheck{engine: engine, replica: replica, regionID: regionID, term: engine.LeaderTerm(regionID)}
}

// Gone returns the region error of a read whose snapshot may not hold the
// region as the ReadIndex confirmed it: a leader read whose peer did not
// lead in the same term from before the ReadIndex until now, a replica
// read whose peer was destroyed or is installing a snapshot (or, if it led
// the region when the read began, stopped leading: a stale read above the
// safe ts is a leader read). Both are errors the client retries elsewhere.
func (c ReadCheck) Gone() *errorpb.Error {
	if c.replica != nil && !c.replica.ReplicaPresent(c.regionID) {
		readsRefused.WithLabelValues("replica_gone").Inc()
		return &errorpb.Error{Message: "txn: replica removed during the read", RegionNotFound: &errorpb.RegionNotFound{RegionId: c.regionID}}
	}
	if c.replica != nil && c.term == 0 {
		return nil // a replica read on a follower: present is enough
	}
	if c.term == 0 || c.engine.LeaderTerm(c.regionID) != c.term {
		readsRefused.WithLabelValues("leadership_changed").Inc()
		return &errorpb.Error{Message: "txn: leadership of the region changed during the read", NotLeader: &errorpb.NotLeader{RegionId: c.regionID}}
	}
	return nil
}

// TSO hands out PD timestamps.
type TSO interface {
	GetTS(ctx context.Context) (uint64, error)
}

// Config tunes a Storage.
type Config struct {
	// LatchSlots is the number of latch slots (default 4096).
	LatchSlots int
	// ResolveBatch is the number of locks one ResolveLock write carries
	// (default 256).
	ResolveBatch int
	// LockWaitTimeout is how long a pessimistic lock request with
	// wait_timeout 0 waits for a conflicting lock (default 50 s, MySQL's
	// innodb_lock_wait_timeout).
	LockWaitTimeout time.Duration
	// Detector finds deadlocks between waiting transactions (default: a
	// LocalDetector for this store).
	Detector Detector
	// InMemoryPessimisticLock keeps the pessimistic locks a region's
	// leader takes in its memory instead of writing them through raft
	// (TiKV's in-memory pessimistic locks; doc.go). The store must call
	// LeaderChanged and Handover (raftstore's TxnHooks); LeaderChanged
	// also wakes the lock waiters of a region this store stopped leading,
	// so it is installed either way.
	InMemoryPessimisticLock bool
	// MemLockLimit caps the in-memory locks of one region (default
	// 16384); past it new locks go through raft.
	MemLockLimit int
	// HandoverFreeze is how long new locks of a region go through raft
	// after its in-memory locks were put into the log for a leader
	// transfer or split (default 10 s; the transfer or split normally
	// ends the table sooner).
	HandoverFreeze time.Duration
}

// Storage evaluates Percolator commands for a store: reads with lock checks,
// and writes evaluated under latches and applied through the Engine. All
// methods are safe for concurrent use; each runs on the caller's goroutine.
// Responses carry region errors and key errors; a returned error means the
// request could not be run (engine stopped, context ended) or, for writes,
// that its outcome is unknown.
type Storage struct {
	engine  Engine
	cm      *concurrency.Manager
	tso     TSO
	latches *Latches
	cfg     Config

	waits    *lockWaits
	detector Detector
	// mem, when not nil, holds the leaders' in-memory pessimistic locks.
	mem *memLocks

	syncMu    sync.Mutex
	syncedGen atomic.Uint64
}

// New returns a Storage over engine. cm is the store's concurrency manager
// (shared with anything else that reads or writes the engine); tso is used
// to sync cm's max timestamp after this store gains a leadership.
func New(engine Engine, cm *concurrency.Manager, tso TSO, cfg Config) *Storage {
	if cfg.LatchSlots <= 0 {
		cfg.LatchSlots = 4096
	}
	if cfg.ResolveBatch <= 0 {
		cfg.ResolveBatch = 256
	}
	if cfg.LockWaitTimeout <= 0 {
		cfg.LockWaitTimeout = 50 * time.Second
	}
	if cfg.Detector == nil {
		cfg.Detector = NewLocalDetector()
	}
	if cfg.MemLockLimit <= 0 {
		cfg.MemLockLimit = 16384
	}
	if cfg.HandoverFreeze <= 0 {
		cfg.HandoverFreeze = 10 * time.Second
	}
	s := &Storage{
		engine: engine, cm: cm, tso: tso, cfg: cfg,
		latches: NewLatches(cfg.LatchSlots), waits: newLockWaits(), detector: cfg.Detector,
	}
	if cfg.InMemoryPessimisticLock {
		s.mem = newMemLocks(cfg.HandoverFreeze, cfg.MemLockLimit)
	}
	return s
}

// LeaderChanged tells the storage that this store's peer of regionID
// became its leader or stopped being it (raftstore's
// TxnHooks.LeaderChanged): the region's in-memory locks are dropped.
func (s *Storage) LeaderChanged(regionID uint64, leader bool) {
	if s.mem != nil {
		s.mem.leaderChanged(regionID, leader)
	}
	if !leader {
		lockWaitersMoved.Add(float64(s.waits.recheckRegion(regionID)))
	}
}

// Handover puts region's in-memory pessimistic locks into the raft log
// through propose before a leader transfer or split (raftstore's
// TxnHooks.Handover).
func (s *Storage) Handover(region *metapb.Region, propose func([]*raft_cmdpb.Request, func(error))) {
	if s.mem != nil {
		s.mem.handover(region, propose)
	}
}

// newReader returns a TxnReader over snap that sees regionID's in-memory
// locks.
func (s *Storage) newReader(snap Snapshot, regionID uint64) *mvcc.TxnReader {
	r := mvcc.NewTxnReader(snap)
	if s.mem != nil {
		r.SetOverlay(lockView{m: s.mem, id: regionID})
	}
	return r
}

// Latches returns the latches write commands take; a component writing the
// same keys outside Storage (store/gc) takes them too.
func (s *Storage) Latches() *Latches { return s.latches }

// ConcurrencyManager returns the store's concurrency manager.
func (s *Storage) ConcurrencyManager() *concurrency.Manager { return s.cm }

// SyncMaxTS raises the max read timestamp to a fresh PD timestamp once
// after every leadership this store gained (reads the previous leader
// served had smaller timestamps) and returns the leader generation that
// covers. A commit_ts chosen from max_ts after this call must be proposed
// at that generation.
func (s *Storage) SyncMaxTS(ctx context.Context) (uint64, error) {
	gen := s.engine.LeaderGeneration()
	if s.syncedGen.Load() == gen {
		return gen, nil
	}
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	gen = s.engine.LeaderGeneration()
	if s.syncedGen.Load() == gen {
		return gen, nil
	}
	ts, err := s.tso.GetTS(ctx)
	if err != nil {
		return 0, err
	}
	s.cm.SyncMaxTS(ts)
	s.syncedGen.Store(gen)
	return gen, nil
}

// errServerIsBusy builds a ServerIsBusy region error.
func errServerIsBusy(reason string) *errorpb.Error {
	return &errorpb.Error{Message: "server is busy: " + reason, ServerIsBusy: &errorpb.ServerIsBusy{Reason: reason}}
}

// command is one write command being evaluated: its latches, snapshot,
// reader and collected writes.
type command struct {
	s      *Storage
	kind   string
	start  time.Time
	gen    uint64
	guard  *LatchGuard
	region *metapb.Region
	snap   Snapshot
	r      *mvcc.TxnReader
	t      mvcc.Txn
	// memTable is the region's in-memory pessimistic lock table (nil when
	// they are off); memChanges the leader changes seen before ReadIndex.
	memTable   *regionLocks
	memChanges uint64
	// memRelease releases in-memory locks (async commit, 1PC) after the
	// write's outcome is known.
	memRelease func()
	// released are the locks the command removes (wakes their waiters).
	released []releasedLock
	// det is the command's side of its response (latch wait, ReadIndex,
	// evaluation, the raft write); evaluated is when its evaluation began.
	det       *kvrpcpb.ExecDetails
	evaluated time.Time
}

type releasedLock struct {
	key     []byte
	startTS uint64
}

// begin takes the latches of keys, waits for a linearizable view of the
// region and checks keys against it.
func (s *Storage) begin(ctx context.Context, kind string, rctx *kvrpcpb.Context, keys [][]byte, gen uint64) (*command, *errorpb.Error, error) {
	start := time.Now()
	guard, err := s.latches.Acquire(ctx, keys)
	if err != nil {
		return nil, nil, err
	}
	var changes uint64
	if s.mem != nil {
		// Before the ReadIndex: a leader change after this (of any
		// region) keeps the command's locks out of memory.
		changes = s.mem.changes.Load()
	}
	latched := time.Now()
	latchWaitSeconds.Observe(latched.Sub(start).Seconds())
	region, rerr, err := s.engine.ReadIndex(ctx, rctx)
	evaluated := time.Now()
	writeReadIndexSeconds.Observe(evaluated.Sub(latched).Seconds())
	if err == nil && rerr == nil {
		for _, k := range keys {
			if rerr = regionkeys.CheckKey(k, region); rerr != nil {
				break
			}
		}
	}
	if err != nil || rerr != nil {
		guard.Release()
		return nil, rerr, err
	}
	var table *regionLocks
	if s.mem != nil {
		table = s.mem.table(region.GetId())
		table.syncVersion(region.GetRegionEpoch().GetVersion())
	}
	c := &command{s: s, kind: kind, gen: gen, guard: guard, region: region, start: start, memTable: table, memChanges: changes,
		det: NewWriteDetails(), evaluated: evaluated}
	c.det.WriteDetail.LatchWaitNanos = uint64(latched.Sub(start))
	c.det.TimeDetail.ReadIndexWaitNs = uint64(evaluated.Sub(latched))
	c.snap = s.engine.Snapshot()
	c.r = s.newReader(c.snap, region.GetId())
	return c, nil, nil
}

// write applies the collected writes, if any, after the in-memory lock
// table took its part (memLocks.absorb). The write does not follow ctx's
// cancellation: once proposed, the latches stay held until the outcome is
// known.
func (c *command) write(ctx context.Context, rctx *kvrpcpb.Context) (*errorpb.Error, error) {
	if c.memTable != nil && c.t.Len() > 0 {
		if err := c.s.mem.absorb(c); err != nil {
			return nil, err
		}
	}
	// The reader is done: release its iterators and snapshot before the
	// raft round trip.
	c.closeReader()
	c.det.TimeDetail.ProcessWallTimeNs = uint64(time.Since(c.evaluated))
	if c.t.Len() == 0 {
		return nil, nil
	}
	return c.s.engine.Write(context.WithoutCancel(ctx), rctx, c.region, c.gen, c.t.Writes(), c.det.WriteDetail)
}

func (c *command) closeReader() {
	if c.r != nil {
		c.r.Close()
		c.snap.Close()
		c.r, c.snap = nil, nil
	}
}

// finish releases everything the command holds.
func (c *command) finish() {
	c.closeReader()
	if c.memRelease != nil {
		c.memRelease()
		c.memRelease = nil
	}
	c.guard.Release()
	commandSeconds.WithLabelValues(c.kind).Observe(time.Since(c.start).Seconds())
}

// run is the common path of write commands whose evaluation is eval.
// It returns the region error or the key error eval or the write produced.
func (s *Storage) run(ctx context.Context, kind string, rctx *kvrpcpb.Context, keys [][]byte, eval func(c *command) error) (*errorpb.Error, *kvrpcpb.KeyError, error) {
	c, rerr, err := s.begin(ctx, kind, rctx, keys, 0)
	if err != nil || rerr != nil {
		return rerr, nil, err
	}
	defer c.finish()
	if err := eval(c); err != nil {
		if ke, ok := toKeyError(err); ok {
			return nil, ke, nil
		}
		return nil, nil, err
	}
	rerr, err = c.write(ctx, rctx)
	return rerr, nil, err
}

func keysOf(muts []*kvrpcpb.Mutation) [][]byte {
	ks := make([][]byte, len(muts))
	for i, m := range muts {
		ks[i] = m.GetKey()
	}
	return ks
}

func observeSince(cmd string, start time.Time) {
	commandSeconds.WithLabelValues(cmd).Observe(time.Since(start).Seconds())
}

// ---- reads ----

// Get serves a GetRequest: the newest version at version, or the lock that
// blocks it.
func (s *Storage) Get(ctx context.Context, req *kvrpcpb.GetRequest) (*kvrpcpb.GetResponse, error) {
	return s.getWaiting(ctx, req, time.Now(), false)
}

// getWaiting is Get, begun at start; queued: the caller found no local
// lease just now (GetLocal), so the ReadIndex goes straight to the
// engine's queue (LocalReader.ReadIndexQueued) instead of checking the
// lease a second time.
func (s *Storage) getWaiting(ctx context.Context, req *kvrpcpb.GetRequest, start time.Time, queued bool) (*kvrpcpb.GetResponse, error) {
	defer observeSince("get", start)
	var (
		check  ReadCheck
		region *metapb.Region
		rerr   *errorpb.Error
		err    error
	)
	if lr, ok := s.engine.(LocalReader); ok && queued {
		check = NewReadCheck(s.engine, nil, req.GetContext().GetRegionId())
		region, rerr, err = lr.ReadIndexQueued(ctx, req.GetContext())
	} else {
		check, region, rerr, err = s.readIndex(ctx, req.GetContext(), req.GetVersion())
	}
	if err != nil {
		return nil, err
	}
	if rerr == nil {
		rerr = regionkeys.CheckKey(req.GetKey(), region)
	}
	if rerr != nil {
		return &kvrpcpb.GetResponse{RegionError: rerr}, nil
	}
	rt := StartRead(start)
	rt.ReadIndexDone()
	if err := s.cm.ReadKey(ctx, req.GetKey(), req.GetVersion()); err != nil {
		return nil, err
	}
	rt.CMDone()
	return s.readKey(req, check, &rt)
}

// GetLocal serves req as Get does when that needs no waiting: a leader
// read the engine serves on the caller's goroutine now (LocalReader) of a
// key no in-flight write visible at its version holds. Otherwise it
// returns where it stopped (pending): the caller finishes the get with
// pending.Finish where waiting is allowed (a stream's worker), which
// repeats neither the lease check nor the concurrency manager's check
// GetLocal made. Each get passes one lease (or ReadIndex) check and one
// concurrency-manager check (a wait for an in-flight write checks again
// once it was released, as ReadKey does).
func (s *Storage) GetLocal(ctx context.Context, req *kvrpcpb.GetRequest) (resp *kvrpcpb.GetResponse, pending *PendingGet, err error) {
	start := time.Now()
	rctx := req.GetContext()
	lr, ok := s.engine.(LocalReader)
	if !ok || rctx.GetReplicaRead() || rctx.GetStaleRead() {
		return nil, &PendingGet{s: s, req: req}, nil
	}
	region, term := lr.ReadLocal(rctx)
	if region == nil {
		return nil, &PendingGet{s: s, req: req, queued: true}, nil
	}
	// The lease's term stands for the leader term other reads load before
	// their ReadIndex: the lease was valid in it, so the peer led in it at
	// the check, and a peer never leads again in a term it stopped leading
	// in. ReadCheck.Gone compares it after the snapshot, as for any read.
	check := ReadCheck{engine: s.engine, regionID: rctx.GetRegionId(), term: term}
	if rerr := regionkeys.CheckKey(req.GetKey(), region); rerr != nil {
		observeSince("get", start)
		return &kvrpcpb.GetResponse{RegionError: rerr}, nil, nil
	}
	rt := StartRead(start)
	rt.ReadIndexDone()
	if !s.cm.TryReadKey(req.GetKey(), req.GetVersion()) {
		// The read is recorded (max_ts raised); Finish waits.
		return nil, &PendingGet{s: s, req: req, leased: true, check: check, rt: rt, start: start}, nil
	}
	rt.CMDone()
	resp, err = s.readKey(req, check, &rt)
	observeSince("get", start)
	return resp, nil, err
}

// PendingGet is a get GetLocal began and could not finish without
// waiting.
type PendingGet struct {
	s   *Storage
	req *kvrpcpb.GetRequest
	// queued: the lease check found no local lease (the ReadIndex goes to
	// the engine's queue). leased: it passed, and the key was held by an
	// in-flight write; check, rt and start are the get's so far.
	queued, leased bool
	check          ReadCheck
	rt             ReadTimer
	start          time.Time
}

// Request is the get's request.
func (p *PendingGet) Request() *kvrpcpb.GetRequest { return p.req }

// Finish serves the get from where GetLocal stopped, waiting as Get does:
// for the ReadIndex (no second lease check), or, after the lease check
// passed, for the in-flight write on the key (ReadKey), then reads as
// Get does, after the same ReadCheck of the leader term the lease had.
func (p *PendingGet) Finish(ctx context.Context) (*kvrpcpb.GetResponse, error) {
	if !p.leased {
		return p.s.getWaiting(ctx, p.req, time.Now(), p.queued)
	}
	defer observeSince("get", p.start)
	// The time from GetLocal to here was spent queued for a worker, which
	// the caller accounts for (a stream's wait): not the manager's.
	p.rt.Lap()
	if err := p.s.cm.ReadKey(ctx, p.req.GetKey(), p.req.GetVersion()); err != nil {
		return nil, err
	}
	p.rt.CMDone()
	return p.s.readKey(p.req, p.check, &p.rt)
}

// getAnswer is a get's response and its execution details in one
// allocation.
type getAnswer struct {
	resp kvrpcpb.GetResponse
	det  execDetails
}

// readKey is the end of a get that passed its ReadIndex (or lease) and
// concurrency-manager checks: it takes the snapshot, checks the leader
// term (check.Gone) and reads the key with a pooled reader.
func (s *Storage) readKey(req *kvrpcpb.GetRequest, check ReadCheck, rt *ReadTimer) (*kvrpcpb.GetResponse, error) {
	snap := s.engine.Snapshot()
	defer snap.Close()
	if rerr := check.Gone(); rerr != nil {
		return &kvrpcpb.GetResponse{RegionError: rerr}, nil
	}
	sr := mvcc.AcquireSnapshotReader(snap, mvcc.ReadOptionsFrom(req.GetContext(), req.GetVersion()))
	v, found, err := sr.Get(req.GetKey())
	sr.Release()
	rt.kvReadDone()
	if ke, ok := toKeyError(err); ok {
		a := &getAnswer{}
		a.resp.Error, a.resp.ExecDetails = ke, rt.detailsIn(&a.det, 0, 0)
		return &a.resp, nil
	}
	if err != nil {
		return nil, err
	}
	n := 0
	if found {
		n = 1
	}
	a := &getAnswer{}
	a.resp.Value, a.resp.NotFound, a.resp.ExecDetails = v, !found, rt.detailsIn(&a.det, n, len(req.GetKey())+len(v))
	return &a.resp, nil
}

// BatchGet serves a BatchGetRequest.
func (s *Storage) BatchGet(ctx context.Context, req *kvrpcpb.BatchGetRequest) (*kvrpcpb.BatchGetResponse, error) {
	start := time.Now()
	defer observeSince("batch_get", start)
	check, region, rerr, err := s.readIndex(ctx, req.GetContext(), req.GetVersion())
	if err != nil {
		return nil, err
	}
	for _, k := range req.GetKeys() {
		if rerr != nil {
			break
		}
		rerr = regionkeys.CheckKey(k, region)
	}
	if rerr != nil {
		return &kvrpcpb.BatchGetResponse{RegionError: rerr}, nil
	}
	rt := StartRead(start)
	rt.ReadIndexDone()
	for _, k := range req.GetKeys() {
		if err := s.cm.ReadKey(ctx, k, req.GetVersion()); err != nil {
			return nil, err
		}
	}
	rt.CMDone()
	snap := s.engine.Snapshot()
	defer snap.Close()
	if rerr := check.Gone(); rerr != nil {
		return &kvrpcpb.BatchGetResponse{RegionError: rerr}, nil
	}
	sr := mvcc.NewSnapshotReader(snap, mvcc.ReadOptionsFrom(req.GetContext(), req.GetVersion()))
	defer sr.Close()
	kvs, err := sr.BatchGet(req.GetKeys())
	rt.kvReadDone()
	if err != nil {
		return nil, err
	}
	resp := &kvrpcpb.BatchGetResponse{Pairs: make([]*kvrpcpb.KvPair, len(kvs))}
	size := 0
	for i, kv := range kvs {
		resp.Pairs[i] = &kvrpcpb.KvPair{Key: kv.Key, Value: kv.Value}
		size += len(kv.Key) + len(kv.Value)
		if kv.Err != nil {
			resp.Pairs[i].Error = kv.Err.Err
		}
	}
	resp.ExecDetails = rt.Details(len(kvs), size)
	return resp, nil
}

// Scan serves a ScanRequest; the range is clamped to the region.
func (s *Storage) Scan(ctx context.Context, req *kvrpcpb.ScanRequest) (*kvrpcpb.ScanResponse, error) {
	begun := time.Now()
	defer observeSince("scan", begun)
	check, region, rerr, err := s.readIndex(ctx, req.GetContext(), req.GetVersion())
	if err != nil {
		return nil, err
	}
	start, end := req.GetStartKey(), req.GetEndKey()
	if rerr == nil {
		if req.GetReverse() {
			// Keys below end_key: end_key may be the region's end.
			if len(end) > 0 && !regionkeys.KeyIn(end, region) && !bytes.Equal(end, region.GetEndKey()) {
				rerr = regionkeys.CheckKey(end, region)
			}
			start = regionkeys.ClampStart(start, region)
		} else {
			rerr = regionkeys.CheckKey(start, region)
		}
	}
	if rerr != nil {
		return &kvrpcpb.ScanResponse{RegionError: rerr}, nil
	}
	end = regionkeys.ClampEnd(end, region)
	rt := StartRead(begun)
	rt.ReadIndexDone()
	if err := s.cm.ReadRange(ctx, start, end, req.GetVersion()); err != nil {
		return nil, err
	}
	rt.CMDone()
	snap := s.engine.Snapshot()
	defer snap.Close()
	if rerr := check.Gone(); rerr != nil {
		return &kvrpcpb.ScanResponse{RegionError: rerr}, nil
	}
	sr := mvcc.NewSnapshotReader(snap, mvcc.ReadOptionsFrom(req.GetContext(), req.GetVersion()))
	defer sr.Close()
	resp := &kvrpcpb.ScanResponse{}
	limit := int(req.GetLimit())
	size := 0
	err = sr.Scan(start, end, req.GetKeyOnly(), req.GetReverse(), func(k, v []byte) bool {
		p := &kvrpcpb.KvPair{Key: bytes.Clone(k)}
		if !req.GetKeyOnly() {
			p.Value = bytes.Clone(v)
		}
		size += len(p.Key) + len(p.Value)
		resp.Pairs = append(resp.Pairs, p)
		return limit <= 0 || len(resp.Pairs) < limit
	})
	rt.kvReadDone()
	if ke, ok := toKeyError(err); ok {
		resp.Error = ke
		resp.ExecDetails = rt.Details(len(resp.Pairs), size)
		return resp, nil
	}
	if err != nil {
		return nil, err
	}
	resp.ExecDetails = rt.Details(len(resp.Pairs), size)
	return resp, nil
}

// ScanLock serves a ScanLockRequest: locks with lock_version <= max_version.
func (s *Storage) ScanLock(ctx context.Context, req *kvrpcpb.ScanLockRequest) (*kvrpcpb.ScanLockResponse, error) {
	defer observeSince("scan_lock", time.Now())
	check := NewReadCheck(s.engine, nil, req.GetContext().GetRegionId())
	region, rerr, err := s.engine.ReadIndex(ctx, req.GetContext())
	if err != nil {
		return nil, err
	}
	if rerr == nil {
		rerr = regionkeys.CheckKey(regionkeys.ClampStart(req.GetStartKey(), region), region)
	}
	if rerr != nil {
		return &kvrpcpb.ScanLockResponse{RegionError: rerr}, nil
	}
	snap := s.engine.Snapshot()
	defer snap.Close()
	if rerr := check.Gone(); rerr != nil {
		return &kvrpcpb.ScanLockResponse{RegionError: rerr}, nil
	}
	r := s.newReader(snap, region.GetId())
	defer r.Close()
	resp := &kvrpcpb.ScanLockResponse{}
	limit := int(req.GetLimit())
	err = r.ScanLocks(regionkeys.ClampStart(req.GetStartKey(), region), regionkeys.ClampEnd(req.GetEndKey(), region), func(k []byte, l *mvcc.Lock) bool {
		if l.StartTS <= req.GetMaxVersion() {
			resp.Locks = append(resp.Locks, l.Info(k))
		}
		return limit <= 0 || len(resp.Locks) < limit
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// ScanFunc calls fn, in key order, with every pair of [start, end) clamped
// to the region of rctx that a read at ts sees, after the checks of Scan
// (leader, epoch, in-memory locks, GC is the caller's); k and v are valid
// only during the call. fn's error stops the scan and is returned. A lock
// the read must not pass is returned as a KeyError (Locked) after the
// pairs before it were passed to fn. It returns the region the scan
// covered. store/server's KvExport (backups) uses it.
func (s *Storage) ScanFunc(ctx context.Context, rctx *kvrpcpb.Context, start, end []byte, ts uint64, fn func(k, v []byte) error) (*metapb.Region, *errorpb.Error, *kvrpcpb.KeyError, error) {
	defer observeSince("scan_func", time.Now())
	check, region, rerr, err := s.readIndex(ctx, rctx, ts)
	if err != nil {
		return nil, nil, nil, err
	}
	if rerr == nil {
		start = regionkeys.ClampStart(start, region)
		rerr = regionkeys.CheckKey(start, region)
	}
	if rerr != nil {
		return nil, rerr, nil, nil
	}
	end = regionkeys.ClampEnd(end, region)
	if err := s.cm.ReadRange(ctx, start, end, ts); err != nil {
		return nil, nil, nil, err
	}
	snap := s.engine.Snapshot()
	defer snap.Close()
	if rerr := check.Gone(); rerr != nil {
		return nil, rerr, nil, nil
	}
	sr := mvcc.NewSnapshotReader(snap, mvcc.ReadOptionsFrom(rctx, ts))
	defer sr.Close()
	var fnErr error
	err = sr.Scan(start, end, false, false, func(k, v []byte) bool {
		fnErr = fn(k, v)
		return fnErr == nil
	})
	if fnErr != nil {
		return region, nil, nil, fnErr
	}
	if ke, ok := toKeyError(err); ok {
		return region, nil, ke, nil
	}
	return region, nil, nil, err
}
