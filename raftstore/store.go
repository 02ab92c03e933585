package raftstore

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/kv/regionkeys"
	"github.com/stratadb/strata/proto/errorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/pdpb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
	"github.com/stratadb/strata/proto/raft_serverpb"
)

// PDClient is the part of the placement driver client the store uses.
// *pdclient.Client implements it.
type PDClient interface {
	AllocID(ctx context.Context, count uint32) (uint64, error)
	PutStore(ctx context.Context, store *metapb.Store) error
	GetStore(ctx context.Context, id uint64) (*metapb.Store, error)
	StoreHeartbeat(ctx context.Context, req *pdpb.StoreHeartbeatRequest) (*pdpb.StoreHeartbeatResponse, error)
	RegionHeartbeat(ctx context.Context, req *pdpb.RegionHeartbeatRequest) (*pdpb.RegionHeartbeatResponse, error)
	AskBatchSplit(ctx context.Context, region *metapb.Region, count uint32) ([]*pdpb.SplitID, error)
	ReportBatchSplit(ctx context.Context, regions []*metapb.Region) error
}

// Config configures a Store.
type Config struct {
	// DataDir holds the store's Pebble instance.
	DataDir string
	// Addr and StatusAddr are advertised to PD (other stores and clients dial
	// Addr).
	Addr       string
	StatusAddr string
	// Labels place the store for PD's location-labels (zone, host, ...).
	Labels []*metapb.StoreLabel
	// RaftTick is the raft logical clock period; ElectionTicks and
	// HeartbeatTicks are counted in ticks.
	RaftTick       time.Duration
	ElectionTicks  int
	HeartbeatTicks int
	// StoreHeartbeatInterval is the period of store heartbeats to PD (which
	// also deliver new regions); RegionHeartbeatInterval the period of
	// region heartbeats from leaders.
	StoreHeartbeatInterval  time.Duration
	RegionHeartbeatInterval time.Duration
	// SendQueue is the per-destination-store queue of message batches;
	// batches are dropped (and reported unreachable) when it is full.
	SendQueue int
	// MaxLeaderLease caps how long a leader serves reads without a ReadIndex
	// round after a quorum confirmed it (see leaderLease). 0 means 0.8x the
	// election timeout; any value is capped at 0.9 x (ElectionTicks-2) x
	// RaftTick (a margin for clock-rate drift, see leaseFor);
	// negative disables leases (every read uses ReadIndex).
	MaxLeaderLease time.Duration
	// LogGCInterval is how often a leader considers compacting its region's
	// raft log (default 3s; negative disables log GC). LogGCThreshold is the
	// number of entries every replica has beyond the truncated index that
	// triggers a compaction (default 50); LogGCSizeLimit triggers one by
	// the bytes appended since the last one (default 32 MiB).
	LogGCInterval  time.Duration
	LogGCThreshold int
	LogGCSizeLimit uint64
	// LogGCLagLimit: a peer more than this many entries behind the leader's
	// applied index does not hold log GC back; it gets a snapshot instead
	// (default 10000; negative: never, every peer holds it back).
	LogGCLagLimit int64
	// MaxUncommittedBytes bounds the payload of a leader's uncommitted log
	// tail per region (raft's MaxUncommittedEntriesSize); proposals beyond
	// it get ServerIsBusy. Default 256 MiB.
	MaxUncommittedBytes uint64
	// SnapshotMaxBytesPerSec caps the bytes per second this store sends
	// snapshots at, all destinations together (default
	// DefaultSnapshotMaxBytesPerSec; negative: no cap).
	SnapshotMaxBytesPerSec int64
	// SplitCheckInterval is how often the leaders' regions with new writes
	// are checked for a split by size (default 10s; negative disables the
	// split checker). A region larger than RegionSplitSize bytes (default
	// 96 MiB) or with more than RegionSplitKeys engine keys (default
	// 960000) is split in the middle (splitcheck.go).
	SplitCheckInterval time.Duration
	RegionSplitSize    uint64
	RegionSplitKeys    uint64
	// HibernateTicks: a leader whose region stayed idle this many ticks
	// stops ticking, and so do its followers (hibernate.go). 0 means 2x
	// ElectionTicks; negative disables hibernation.
	HibernateTicks int
	// HibernatedHeartbeatInterval is the period of the region heartbeats
	// of hibernated leaders (default 60s, spread over the period).
	HibernatedHeartbeatInterval time.Duration
	// BlockCacheSize is the engine's block cache in bytes (0: default
	// 512 MiB; with Pebble's own 8 MiB a point read of a store holding a
	// few small tables read and decompressed data and index blocks through
	// the file system, doc.go). The cache only grows as blocks are read.
	BlockCacheSize int64
	// ResolvedTSInterval is how often leaders compute their regions'
	// resolved ts for stale reads on replicas (replicaread.go; default 1s,
	// negative disables; needs SetResolvedTSHooks).
	ResolvedTSInterval time.Duration
	Logger             *slog.Logger

	// Seams for the deterministic harness (harness_test.go): a manual
	// clock for every time the lease and peer lifecycle depend on, an
	// in-process transport, and manual mode (Open starts no goroutine: the
	// harness runs loop iterations and heartbeats itself; snapshots are
	// generated and sent synchronously).
	clock  func() time.Time
	net    netTransport
	manual bool
	fs     vfs.FS // the engine's file system (nil: the OS's); a crashable MemFS in the harness
}

// netTransport carries raft messages and snapshots to other stores in
// process (harness). send reports whether b was queued; sendSnapshot
// whether the snapshot was delivered (stream produces its chunks).
type netTransport interface {
	send(from, to uint64, b *raft_serverpb.BatchRaftMessage) bool
	sendSnapshot(from, to uint64, m *raft_serverpb.RaftMessage, stream func(send func(*raft_serverpb.SnapshotChunk) error) error) error
}

// DefaultBlockCacheSize is Config.BlockCacheSize's default.
const DefaultBlockCacheSize = 512 << 20

// now is the store's clock: wall time, or the harness's manual clock.
func (s *Store) now() time.Time {
	if s.cfg.clock != nil {
		return s.cfg.clock()
	}
	return time.Now()
}

func (c *Config) setDefaults() {
	if c.RaftTick <= 0 {
		c.RaftTick = 100 * time.Millisecond
	}
	if c.ElectionTicks <= 0 {
		c.ElectionTicks = 10
	}
	if c.HeartbeatTicks <= 0 {
		c.HeartbeatTicks = 2
	}
	if c.StoreHeartbeatInterval <= 0 {
		c.StoreHeartbeatInterval = time.Second
	}
	if c.RegionHeartbeatInterval <= 0 {
		c.RegionHeartbeatInterval = c.StoreHeartbeatInterval
	}
	if c.SendQueue <= 0 {
		c.SendQueue = 1024
	}
	if c.BlockCacheSize <= 0 {
		c.BlockCacheSize = DefaultBlockCacheSize
	}
	if c.LogGCInterval == 0 {
		c.LogGCInterval = 3 * time.Second
	}
	if c.LogGCThreshold <= 0 {
		c.LogGCThreshold = 50
	}
	if c.LogGCLagLimit == 0 {
		c.LogGCLagLimit = 10000
	}
	if c.LogGCSizeLimit == 0 {
		c.LogGCSizeLimit = 32 << 20
	}
	if c.MaxUncommittedBytes == 0 {
		c.MaxUncommittedBytes = 256 << 20
	}
	if c.SnapshotMaxBytesPerSec == 0 {
		c.SnapshotMaxBytesPerSec = DefaultSnapshotMaxBytesPerSec
	}
	if c.SplitCheckInterval == 0 {
		c.SplitCheckInterval = 10 * time.Second
	}
	if c.RegionSplitSize == 0 {
		c.RegionSplitSize = 96 << 20
	}
	if c.RegionSplitKeys == 0 {
		c.RegionSplitKeys = 960000
	}
	if c.HibernateTicks == 0 {
		c.HibernateTicks = 2 * c.ElectionTicks
	}
	if c.HibernatedHeartbeatInterval <= 0 {
		c.HibernatedHeartbeatInterval = time.Minute
	}
	if c.ResolvedTSInterval == 0 {
		c.ResolvedTSInterval = time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// maxQueuedRequests bounds the writes (and, separately, the reads) waiting
// for one Ready loop iteration; beyond it requests get ServerIsBusy instead
// of queueing without bound.
const maxQueuedRequests = 20000

// Store is one store node's multi-raft engine: it owns the Pebble instance,
// every local region peer and the single Ready loop driving them.
type Store struct {
	cfg Config
	pd  PDClient
	eng engine
	db  *pebble.DB // eng.db
	id  uint64
	log *slog.Logger

	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopOnce sync.Once
	done     chan struct{} // closed when the Ready loop has exited

	inbox inbox
	trans *transport
	snaps snapshotSender

	// Owned by the Ready loop goroutine.
	peers map[uint64]*peer
	// Work sets (hibernate.go): active are the peers the next iteration
	// polls (polling: the current iteration's), awake those ticked,
	// sleepers the hibernated leaders (slow PD heartbeats, sleepCursor the
	// next to visit), splitDirty the regions written since the last split
	// check round; removed the peers that applied their own removal.
	active      []*peer
	polling     []*peer
	awake       []*peer
	sleepers    []*peer
	sleepCursor int
	splitDirty  []*peer
	removed     []*peer
	// Store liveness (hibernate.go): every store this one exchanges raft
	// messages with, by id and in id order; extraOut/extraTo the
	// raftstore messages (Hibernate, StoreLiveness) queued this iteration.
	live      map[uint64]*storeLive
	liveIDs   []uint64
	extraOut  map[uint64]*raft_serverpb.BatchRaftMessage
	extraTo   []uint64
	readSeq   uint64
	iter      uint64
	propSeq   uint64
	readies   []peerReady
	applyBufs []appliedProposal
	keyBuf    []byte                 // engine key scratch for apply
	splits    []splitResult          // applied in the current apply batch (split.go)
	newPeers  bool                   // a split created peers this iteration
	orphans   map[uint64]*orphanMsgs // raft messages for regions not hosted yet
	ticks     uint64                 // raft ticks so far
	phases    loopPhases             // the current iteration's (stall warning)

	// Store liveness support (support.go): livenessSeq numbers the
	// StoreLiveness messages sent; supportEpochBase is this process's
	// first support epoch; supportPub the grants other stores give this
	// one, published for local readers.
	livenessSeq      uint64
	supportEpochBase uint64
	supportPub       atomic.Pointer[map[uint64]supportGrant]

	// draining is set by TransferLeaders: every region this store leads is
	// handed to another replica, now and whenever it leads again.
	draining     bool
	drainWaiters []chan struct{}
	nParked      int // proposals parked across peers (see peer.parked)
	maxLease     time.Duration
	// leaseHook, when set (tests), sees every lease read and transfer start.
	leaseHook atomic.Pointer[func(LeaseEvent)]
	leaseSeq  atomic.Uint64 // LeaseEvent.Seq, counted only with a hook
	// txnHooks, when set, connect the transaction layer's in-memory
	// state with leader changes, transfers and splits (txnhooks.go).
	txnHooks atomic.Pointer[TxnHooks]
	// Resolved ts (replicaread.go): the hooks, and the resolved ts computed
	// for each other store, sent with the next StoreLiveness message.
	resolvedHooks atomic.Pointer[ResolvedTSHooks]
	safeTSOut     map[uint64][]*raft_serverpb.RegionSafeTS
	// raftFilter, when set (tests), drops raft messages to and from the
	// stores it returns true for.
	raftFilter atomic.Pointer[func(storeID uint64) bool]
	// ticksPaused (tests) stops raft's logical clock, as a stalled process
	// would: no CheckQuorum step-down, no election timeout.
	ticksPaused atomic.Bool

	// meta is the shared view of regions and leadership (for the PD
	// heartbeat loops, the KV service and tests).
	meta *storeMeta
	// delegates maps a region id to its local peer for reads served
	// outside the loop (localRead); only peer.delegate is read through it.
	delegates sync.Map
	// leaderGen counts the times a peer of this store became leader.
	leaderGen atomic.Uint64

	regionHeartbeats chan *pdpb.RegionHeartbeatRequest
	hbNudge          chan struct{}

	// Split checker (splitcheck.go): the loop sends candidate regions on
	// splitCheckCh; approx holds each region's last measured size.
	splitCheckCh chan []*metapb.Region
	approxMu     sync.Mutex
	approx       map[uint64]approxStat

	cons consistency // replicas' region hashes (consistency.go)
}

// Open opens (or creates) the store in cfg.DataDir, registers it with PD and
// starts the Ready loop, the transport and the heartbeat loops. The store
// serves nothing until its peers are created; reads of a region wait for
// replay of its committed log (ReadIndex + applied index).
func Open(ctx context.Context, cfg Config, pd PDClient) (*Store, error) {
	cfg.setDefaults()
	eng, err := openEngine(cfg.DataDir, cfg.fs, cfg.BlockCacheSize, cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("raftstore: open engine %s: %w", cfg.DataDir, err)
	}
	s := &Store{
		cfg: cfg, pd: pd, eng: eng, db: eng.db, log: cfg.Logger,
		done:             make(chan struct{}),
		peers:            map[uint64]*peer{},
		meta:             newStoreMeta(),
		regionHeartbeats: make(chan *pdpb.RegionHeartbeatRequest, 1024),
		hbNudge:          make(chan struct{}, 1),
		splitCheckCh:     make(chan []*metapb.Region, 1),
		approx:           map[uint64]approxStat{},
	}
	s.inbox.signal = make(chan struct{}, 1)
	if cfg.MaxLeaderLease >= 0 {
		s.maxLease = leaseFor(cfg.ElectionTicks, cfg.RaftTick, cfg.MaxLeaderLease)
	}
	s.propSeq = rand.Uint64() // proposal ids only need to be unique among this store's in-flight proposals
	// Support epochs only need to differ from every earlier process's
	// (support.go); 0 means none.
	s.supportEpochBase = rand.Uint64()>>1 + 1
	if err := s.bootstrap(ctx); err != nil {
		eng.close()
		return nil, err
	}
	s.log = s.log.With("store", s.id)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.trans = newTransport(s)
	if err := s.snaps.open(s); err != nil { // finishes interrupted snapshot installs
		eng.close()
		return nil, err
	}
	regions, err := s.loadRegions()
	if err != nil {
		eng.close()
		return nil, err
	}
	for _, r := range regions {
		if err := s.createPeer(r, false); err != nil {
			eng.close()
			return nil, err
		}
	}
	if !cfg.manual {
		if s.cfg.ResolvedTSInterval > 0 {
			s.wg.Add(1)
			go s.resolveLoop()
		}
		s.wg.Add(4)
		go s.run()
		go s.storeHeartbeatLoop()
		go s.regionHeartbeatLoop()
		go s.splitCheckLoop()
	}
	s.log.Info("raftstore started", "regions", len(regions), "addr", cfg.Addr)
	return s, nil
}

// bootstrap loads or allocates the store id and registers the store.
func (s *Store) bootstrap(ctx context.Context) error {
	v, closer, err := s.db.Get(storeIdentKey())
	switch {
	case err == nil:
		if len(v) != 8 {
			closer.Close()
			return fmt.Errorf("%w: store ident of %d bytes", ErrCorrupt, len(v))
		}
		s.id = binary.BigEndian.Uint64(v)
		closer.Close()
	case errors.Is(err, pebble.ErrNotFound):
		id, err := s.pd.AllocID(ctx, 1)
		if err != nil {
			return fmt.Errorf("raftstore: alloc store id: %w", err)
		}
		if id == 0 {
			return ErrNoStoreID
		}
		if err := s.db.Set(storeIdentKey(), binary.BigEndian.AppendUint64(nil, id), pebble.Sync); err != nil {
			return fmt.Errorf("raftstore: persist store ident: %w", err)
		}
		s.id = id
	default:
		return fmt.Errorf("raftstore: read store ident: %w", err)
	}
	st := &metapb.Store{Id: s.id, Address: s.cfg.Addr, StatusAddress: s.cfg.StatusAddr, State: metapb.StoreState_Up, Labels: s.cfg.Labels}
	if err := s.pd.PutStore(ctx, st); err != nil {
		return fmt.Errorf("raftstore: put store %d: %w", s.id, err)
	}
	return nil
}

func (s *Store) loadRegions() ([]*metapb.Region, error) {
	lo, hi := regionStateRange()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []*metapb.Region
	for valid := it.First(); valid; valid = it.Next() {
		state, r, err := decodeRegionState(it.Value())
		if err != nil {
			return nil, err
		}
		if state == peerStateTombstone {
			continue
		}
		out = append(out, r)
		s.meta.setRegion(r)
	}
	return out, it.Error()
}

// ID returns the store id.
func (s *Store) ID() uint64 { return s.id }

// Engine returns the store's Pebble instance. Readers may read MVCC data from
// it (after ReadIndex); only the Ready loop writes.
func (s *Store) Engine() *pebble.DB { return s.db }

// Regions returns copies of the regions this store hosts.
func (s *Store) Regions() []*metapb.Region {
	out := s.meta.sorted()
	for i, r := range out {
		out[i] = proto.Clone(r).(*metapb.Region)
	}
	return out
}

// LeaderGeneration increases whenever a peer of this store becomes leader;
// the KV service syncs its max read timestamp with PD when it changes.
func (s *Store) LeaderGeneration() uint64 { return s.leaderGen.Load() }

// IsLeader reports whether this store's peer of regionID is the raft leader.
func (s *Store) IsLeader(regionID uint64) bool { return s.meta.isLeader(regionID) }

// Stop stops the Ready loop, the transport and the heartbeat loops and
// answers waiting requests with ErrStopped. The engine stays open for
// readers still running; Close closes it. Idempotent.
func (s *Store) Stop() {
	s.stopOnce.Do(func() {
		s.cancel()
		if s.cfg.manual {
			s.shutdown() // the loop's exit, run by the harness's goroutine
			close(s.done)
		}
		s.wg.Wait()
		s.trans.close()
		s.snaps.wg.Wait()
		s.cons.wg.Wait()
	})
}

// Close stops the store and closes the engine. The raft log is already
// durable; the last applies were written without sync and are re-applied
// from the log after a crash. No reader may use Engine() after Close.
func (s *Store) Close() error {
	s.Stop()
	if err := s.db.Flush(); err != nil {
		s.log.Warn("flush on close", "err", err)
	}
	return s.eng.close()
}

// Propose replicates cmd through the raft group of its region and answers
// once the entry carrying it has been applied on this store (this store's
// peer must lead the region), or with a region error saying why nothing was
// written. It is the only way to write user data, and it evaluates nothing:
// cmd.requests are plain writes per key space (keys are cf keys; raftstore
// adds the key-space prefix, see kv/keys), decided by the caller beforehand.
//
// Contract for callers that evaluate against the engine (kv/txn, kv/server):
// a nil error and no region error mean every request of cmd was applied on
// this store, in one batch with the applied index, before Propose returned;
// so a caller that read the engine (after ReadIndex) under its own per-key
// latches and releases them after Propose returns orders the next
// evaluation on those keys after this write. A region error means nothing
// was written, now or later: NotLeader (with a hint when known),
// RegionNotFound, EpochNotMatch (at propose or at apply: the region changed
// since the caller looked; the current region is attached), KeyNotInRegion,
// ServerIsBusy (too many queued writes, a raft refusal, or leaderGen
// mismatch; retry), StaleCommand (another entry was committed at the
// proposal's index). An error means the outcome is unknown: ErrUndetermined
// (wrapping ErrStopped when the store stopped with the proposal in flight)
// or ctx's error. The entry may still apply later, so a caller holding
// latches should pass a ctx without cancellation (context.WithoutCancel):
// the store answers every proposal it accepted.
//
// cmd.header needs region_id and region_epoch (the epoch the caller
// evaluated under: a mismatch at propose or apply time is EpochNotMatch);
// header.term, when not 0, must be the leader's current term (else
// StaleCommand: nothing was proposed). Propose takes ownership of cmd (it
// sets header.proposal_id); the caller must not use it afterwards.
// admin_request is not supported yet (refused with an error).
//
// leaderGen, when not 0, is the store's LeaderGeneration at which the caller
// prepared the write (e.g. chose a commit timestamp above every read served
// so far): if a peer of this store has become leader since, the command is
// not proposed and gets ServerIsBusy, so the caller can prepare it again.
// Safe for concurrent use.
func (s *Store) Propose(ctx context.Context, cmd *raft_cmdpb.RaftCmdRequest, leaderGen uint64) (*raft_cmdpb.RaftCmdResponse, error) {
	if cmd.GetAdminRequest() != nil {
		return nil, ErrAdminNotSupported
	}
	return s.proposeAndWait(ctx, cmd, leaderGen)
}

// proposeAndWait is Propose without the admin check (SplitRegion proposes
// admin commands through it).
func (s *Store) proposeAndWait(ctx context.Context, cmd *raft_cmdpb.RaftCmdRequest, leaderGen uint64) (*raft_cmdpb.RaftCmdResponse, error) {
	pr := &proposal{cmd: cmd, leaderGen: leaderGen, start: time.Now(), done: make(chan proposalResult, 1)}
	if resp := s.queueProposal(pr); resp != nil {
		return resp, nil
	}
	select {
	case res := <-pr.done:
		return res.resp, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.done:
		// The loop answered everything it held before exiting.
		select {
		case res := <-pr.done:
			return res.resp, res.err
		default:
			return nil, fmt.Errorf("%w: %w", ErrUndetermined, ErrStopped)
		}
	}
}

// queueProposal hands pr to the Ready loop. It returns the response when pr
// was refused without being queued (a retryable region error), else nil.
func (s *Store) queueProposal(pr *proposal) *raft_cmdpb.RaftCmdResponse {
	busy := false
	if !s.inbox.push(func(m *inboxMsgs) {
		if busy = len(m.proposals) >= maxQueuedRequests; !busy {
			m.proposals = append(m.proposals, pr)
		}
	}) {
		// Never proposed: safe for the client to retry elsewhere.
		proposals.WithLabelValues("stopping").Inc()
		return &raft_cmdpb.RaftCmdResponse{RegionError: errStopping(pr.regionID())}
	}
	if busy {
		proposals.WithLabelValues("busy").Inc()
		return &raft_cmdpb.RaftCmdResponse{RegionError: ErrServerIsBusy("too many queued writes")}
	}
	return nil
}

// ReadIndex waits until a linearizable read of the region in rctx may be
// served from the engine: this peer is leader, its lease is valid or a
// ReadIndex round confirmed it, and its applied index reached the commit
// index of that moment (the read index). It returns the region at
// that point (shared, do not modify) or a region error. The caller then
// checks keys against the region and reads Engine().
func (s *Store) ReadIndex(ctx context.Context, rctx *kvrpcpb.Context) (*metapb.Region, *errorpb.Error, error) {
	if region := s.localRead(rctx); region != nil {
		return region, nil, nil
	}
	return s.submitRead(ctx, &readRequest{rctx: rctx, start: time.Now(), done: make(chan readResult, 1)})
}

// initLease sets up a new peer's lease and its publication to local readers.
func (s *Store) initLease(p *peer) {
	p.lease.maxLease = s.maxLease
	if s.maxLease > 0 {
		p.lease.pub = &p.delegate
	}
}

// localRead serves a read on the caller's goroutine when the region's
// leader here has published a lease (readDelegate) that is valid now, with
// at least half of it left (else the loop serves the read and renews the
// lease in the background), and the request's epoch matches. It returns
// the region, or nil when the read must go through the Ready loop.
func (s *Store) localRead(rctx *kvrpcpb.Context) *metapb.Region {
	h := s.leaseHook.Load()
	var seq uint64
	if h != nil {
		seq = s.leaseSeq.Add(1)
	}
	v, ok := s.delegates.Load(rctx.GetRegionId())
	if !ok {
		return nil
	}
	d := v.(*peer).delegate.Load()
	if d == nil || !epochMatches(rctx.GetRegionEpoch(), d.region) {
		return nil
	}
	rem := d.remaining(s)
	if d.support != nil {
		// A hibernated leader's support lease renews itself with the
		// stores' liveness answers: any time left will do.
		if rem <= 0 {
			return nil
		}
		readsTotal.WithLabelValues("local_hibernated_lease").Inc()
	} else {
		if rem < s.maxLease/2 {
			return nil
		}
		readsTotal.WithLabelValues("local_lease").Inc()
	}
	leaseRemainingSeconds.Observe(rem.Seconds())
	if h != nil {
		(*h)(LeaseEvent{RegionID: d.region.GetId(), Term: d.term, LeaseValid: true, Remaining: rem, Seq: seq})
	}
	return d.region
}

// LeasedRegion returns the region holding key when this store leads it and
// may serve a read of it on the caller's goroutine now, on localRead's
// terms: a published lease (the peer applied an entry of its term) valid
// for at least half its length. An engine snapshot taken after it returns
// then holds every write the region acknowledged. nil otherwise: a
// follower, no valid lease, leases disabled. The region is shared and
// read-only.
func (s *Store) LeasedRegion(key []byte) *metapb.Region {
	if s.maxLease <= 0 {
		return nil
	}
	r := s.meta.regionAt(key)
	if r == nil {
		return nil
	}
	v, ok := s.delegates.Load(r.GetId())
	if !ok {
		return nil
	}
	d := v.(*peer).delegate.Load()
	if d == nil || !regionkeys.KeyIn(key, d.region) {
		return nil
	}
	if rem := d.remaining(s); rem <= 0 || d.support == nil && rem < s.maxLease/2 {
		return nil
	}
	return d.region
}

// LedRegionAt returns the region holding key when this store's peer of it
// is the raft leader as far as the store knows (no lease implied: confirm
// with ReadIndex before reading), else nil.
func (s *Store) LedRegionAt(key []byte) *metapb.Region {
	r := s.meta.regionAt(key)
	if r == nil || !s.meta.isLeader(r.GetId()) {
		return nil
	}
	return r
}

// TransferLeaders prepares a graceful stop: it hands the leadership of every
// region this store leads to another replica (raft leader transfer, to the
// up-to-date follower with the highest match index) and returns once no
// local peer leads, each region it handed off has a new leader known here
// (the election is over, so this store's vote is not needed any more) and
// every write this store accepted has been answered; or when ctx is done
// (ctx.Err(); transfers may still be under way). The store keeps serving
// raft messages and requests meanwhile and afterwards, and transfers away
// any leadership it wins again until Stop.
//
// Writes that arrive while a transfer is in progress (raft refuses them) are
// held and answered, once the transfer ends, with NotLeader naming the new
// leader, or proposed here if the transfer was aborted. Writes already in
// the log are answered with their result when they apply (the transferee
// has every entry before it campaigns, so none is lost). The leader lease
// of each region ends when its transfer starts; reads then go through
// ReadIndex, which needs a quorum in the current term, so a read served
// during the transfer is linearizable; reads waiting when leadership moves
// are answered NotLeader.
func (s *Store) TransferLeaders(ctx context.Context) error {
	done := make(chan struct{})
	if !s.inbox.push(func(m *inboxMsgs) { m.drains = append(m.drains, done) }) {
		return ErrStopped
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.done:
		return ErrStopped
	}
}

// HandleRaftMessages queues raft messages received from another store for
// the Ready loop. It does not block on the loop.
func (s *Store) HandleRaftMessages(msgs []*raft_serverpb.RaftMessage) {
	if f := s.raftFilter.Load(); f != nil {
		kept := make([]*raft_serverpb.RaftMessage, 0, len(msgs))
		for _, m := range msgs {
			if !(*f)(m.GetFromPeer().GetStoreId()) {
				kept = append(kept, m)
			}
		}
		msgs = kept
	}
	s.inbox.push(func(m *inboxMsgs) { m.raft = append(m.raft, msgs...) })
}

// createPeer builds the raft node of a region whose state is persisted.
// Called from Open (before the loop starts) and then only by the loop.
// fromSplit: the region was just created by a split applied here (its
// campaign is decided by finishSplits, not by the bootstrap rule below).
func (s *Store) createPeer(region *metapb.Region, fromSplit bool) error {
	var meta *metapb.Peer
	for _, p := range region.GetPeers() {
		if p.GetStoreId() == s.id {
			meta = p
		}
	}
	if meta == nil {
		return fmt.Errorf("raftstore: region %d has no peer on store %d", region.GetId(), s.id)
	}
	ps, err := loadPeerStorage(s.db, region)
	if err != nil {
		return err
	}
	ps.snaps = &s.snaps
	rn, err := s.newRawNode(meta, ps, region)
	if err != nil {
		return err
	}
	p := &peer{meta: meta, region: region, rn: rn, ps: ps, unassigned: map[uint64]*proposal{}, created: s.now()}
	s.initLease(p)
	// A replica that may have acknowledged a leader before a restart lost
	// the memory of it (raft restarts with no leader, so CheckQuorum's vote
	// rejection does not apply): it refuses votes for an election timeout,
	// or that leader's lease could overlap a new leader.
	p.mayHaveAcked = ps.hardState.GetTerm() > initTerm || ps.lastIndex > initIndex
	s.addPeer(p)
	// A brand-new region: its first peer campaigns at once instead of
	// waiting for an election timeout.
	fresh := ps.lastIndex == initIndex && ps.hardState.GetTerm() == initTerm && ps.hardState.GetVote() == 0
	if !fromSplit && fresh && len(region.GetPeers()) > 0 && region.GetPeers()[0].GetId() == meta.GetId() {
		if err := rn.Campaign(); err != nil {
			s.log.Warn("campaign", "region", region.GetId(), "err", err)
		}
	}
	s.log.Info("peer created", "region", region.GetId(), "peer", meta.GetId(),
		"applied", ps.apply.applied, "last_index", ps.lastIndex, "commit", ps.hardState.GetCommit())
	return nil
}

// newRawNode builds the raft node of region's peer meta over ps.
func (s *Store) newRawNode(meta *metapb.Peer, ps *peerStorage, region *metapb.Region) (*raft.RawNode, error) {
	rn, err := raft.NewRawNode(&raft.Config{
		ID:              meta.GetId(),
		ElectionTick:    s.cfg.ElectionTicks,
		HeartbeatTick:   s.cfg.HeartbeatTicks,
		Storage:         ps,
		Applied:         ps.apply.applied,
		MaxSizePerMsg:   1 << 20,
		MaxInflightMsgs: 256,
		// A follower catching up (after a restart, up to LogGCLagLimit
		// entries behind) is sent at most this much per round trip: raft
		// reads those entries from the engine on the loop, and without a
		// byte bound one append response can make the leader read and
		// send up to 256 MiB per region in one iteration (the suspected
		// cause of a 3.3-6.5 s loop stall after a restart in a TPC-C
		// kill run, which cost other regions their leaders).
		MaxInflightBytes:          4 << 20,
		MaxUncommittedEntriesSize: s.cfg.MaxUncommittedBytes,
		CheckQuorum:               true,
		PreVote:                   true,
		ReadOnlyOption:            raft.ReadOnlySafe,
		DisableProposalForwarding: true,
		Logger:                    newRaftLogger(s.log.With("region", region.GetId(), "peer", meta.GetId())),
	})
	if err != nil {
		return nil, fmt.Errorf("raftstore: new raft node for region %d: %w", region.GetId(), err)
	}
	return rn, nil
}

// inbox hands requests and messages to the Ready loop: producers append
// under a mutex and signal; the loop swaps the whole batch out at once.
type inbox struct {
	mu     sync.Mutex
	cur    inboxMsgs
	spare  inboxMsgs
	closed bool
	signal chan struct{} // cap 1
}

type inboxMsgs struct {
	raft        []*raft_serverpb.RaftMessage
	proposals   []*proposal
	reads       []*readRequest
	creates     []*metapb.Region
	unreachable []unreachable
	drains      []chan struct{}                 // TransferLeaders waiters
	resolveTS   uint64                          // a PD timestamp for resolveRegions (replicaread.go)
	snaps       []receivedSnap                  // MsgSnaps received on the Snapshot RPC
	snapStatus  []snapshotStatus                // outcomes of snapshot sends
	ingested    []ingestResult                  // snapshot ingests done off the loop
	pdSteps     []*pdpb.RegionHeartbeatResponse // operator steps from PD (confchange.go)
	awaken      []uint64                        // regions PD has an operator step for (heartbeat now)
}

// unreachable is a raft message the transport lost (regionID 0: a
// StoreLiveness message to storeID).
type unreachable struct{ regionID, peerID, storeID uint64 }

func (m *inboxMsgs) reset() {
	clear(m.raft)
	clear(m.proposals)
	clear(m.reads)
	clear(m.creates)
	clear(m.drains)
	clear(m.snaps)
	clear(m.ingested)
	m.snaps, m.snapStatus, m.ingested = m.snaps[:0], m.snapStatus[:0], m.ingested[:0]
	clear(m.pdSteps)
	m.pdSteps, m.awaken = m.pdSteps[:0], m.awaken[:0]
	m.raft, m.proposals, m.reads, m.creates, m.unreachable = m.raft[:0], m.proposals[:0], m.reads[:0], m.creates[:0], m.unreachable[:0]
	m.drains = m.drains[:0]
	m.resolveTS = 0
}

func (in *inbox) push(f func(*inboxMsgs)) bool {
	in.mu.Lock()
	if in.closed {
		in.mu.Unlock()
		return false
	}
	f(&in.cur)
	in.mu.Unlock()
	select {
	case in.signal <- struct{}{}:
	default:
	}
	return true
}

// take swaps out everything queued; the returned batch is valid until the
// next take.
func (in *inbox) take() *inboxMsgs {
	in.mu.Lock()
	in.spare.reset()
	in.cur, in.spare = in.spare, in.cur
	in.mu.Unlock()
	return &in.spare
}

func (in *inbox) close() *inboxMsgs {
	in.mu.Lock()
	in.closed = true
	in.mu.Unlock()
	return in.take()
}

type peerReady struct {
	p  *peer
	rd raft.Ready
}

// run is the store-wide Ready loop.
func (s *Store) run() {
	defer s.wg.Done()
	defer close(s.done)
	ticker := time.NewTicker(s.cfg.RaftTick)
	defer ticker.Stop()
	again := false
	for {
		tick := false
		if again {
			select {
			case <-s.ctx.Done():
				s.shutdown()
				return
			case <-ticker.C:
				tick = true
			default:
			}
		} else {
			select {
			case <-s.ctx.Done():
				s.shutdown()
				return
			case <-s.inbox.signal:
			case <-ticker.C:
				tick = true
			}
		}
		again = s.iterate(tick)
		if len(s.drainWaiters) > 0 && s.drained() {
			for _, w := range s.drainWaiters {
				close(w)
			}
			s.drainWaiters = nil
			s.log.Info("leaders transferred away")
		}
	}
}

// shutdown answers everything the loop holds. Writes that were never
// proposed get a retryable region error; proposed ones ErrStopped (their
// outcome is unknown: the entry may still commit elsewhere).
func (s *Store) shutdown() {
	for _, p := range s.peers {
		p.lease.unpublish() // reads go to the closed inbox: ErrStopped
	}
	m := s.inbox.close()
	for _, pr := range m.proposals {
		pr.regionError(errStopping(pr.regionID()), "stopping")
	}
	for _, r := range m.reads {
		r.respond(readResult{err: ErrStopped})
	}
	for _, d := range m.drains {
		close(d) // nothing leads here any more
	}
	for _, d := range s.drainWaiters {
		close(d)
	}
	s.drainWaiters = nil
	for _, p := range s.peers {
		for _, pr := range p.parked {
			pr.regionError(errNotLeader(p.region.GetId(), p.leaderHint()), "stopping")
		}
		for _, pr := range p.unassigned {
			pr.respond(nil, errStoppedUndetermined, "stopped")
		}
		for _, pr := range p.pending {
			pr.respond(nil, errStoppedUndetermined, "stopped")
		}
		p.parked, p.unassigned, p.pending = nil, nil, nil
		p.failReads(nil, ErrStopped)
	}
	s.nParked = 0
}

// loopPhases times one loop iteration's phases for the stall warning.
type loopPhases struct {
	start, last time.Time
	n           int
	names       [8]string
	took        [8]time.Duration
}

func (lp *loopPhases) begin(now time.Time) { *lp = loopPhases{start: now, last: now} }

// mark ends the phase called name.
func (lp *loopPhases) mark(name string) {
	if lp.n == len(lp.names) {
		return
	}
	now := time.Now()
	lp.names[lp.n], lp.took[lp.n] = name, now.Sub(lp.last)
	lp.last, lp.n = now, lp.n+1
}

// endIteration records the iteration's duration and warns when it lasted
// an election timeout or more: this store then sent nothing, so the other
// stores may have called it down and elected new leaders for its regions
// (the in-memory pessimistic locks of those leaders are lost).
func (s *Store) endIteration() {
	d := time.Since(s.phases.start)
	loopIterationSeconds.Observe(d.Seconds())
	if s.cfg.manual || d < s.electionTimeout() {
		return
	}
	s.phases.mark("rest")
	attrs := make([]any, 0, 2*s.phases.n+2)
	attrs = append(attrs, "took", d)
	for i := range s.phases.n {
		attrs = append(attrs, s.phases.names[i], s.phases.took[i])
	}
	s.log.Warn("raftstore: a loop iteration took an election timeout or more; peers may have elected new leaders meanwhile (check disk fsync latency and CPU starvation)", attrs...)
}

// iterate runs one loop iteration and reports whether some peer still has
// a Ready (so the loop must run again without waiting).
func (s *Store) iterate(tick bool) bool {
	s.phases.begin(time.Now())
	defer s.endIteration()
	s.iter++
	if tick && !s.ticksPaused.Load() {
		s.tick()
	}
	m := s.inbox.take()
	for _, r := range m.creates {
		if _, ok := s.peers[r.GetId()]; ok {
			continue
		}
		if err := s.createPeer(r, false); err != nil {
			s.log.Error("create peer", "region", r.GetId(), "err", err)
		}
	}
	for _, rm := range m.raft {
		s.heard(rm.GetFromPeer().GetStoreId())
		s.stepRaftMessage(rm)
	}
	s.stepReceivedSnapshots(m.snaps)
	for _, r := range m.ingested {
		s.installDone(r.p, r.inst, r.err)
	}
	for _, st := range m.snapStatus {
		if p := s.peers[st.regionID]; p != nil {
			status := raft.SnapshotFailure
			if st.ok {
				status = raft.SnapshotFinish
				// Do not keep the files: a later request builds a
				// fresher one.
				if g := p.ps.snap; g != nil && g.isDone() {
					p.ps.dropSnap()
				}
			}
			p.rn.ReportSnapshot(st.peerID, status)
			s.wake(p)
		}
	}
	for _, st := range m.pdSteps {
		s.execPDStep(st)
	}
	for _, id := range m.awaken {
		if p := s.peers[id]; p != nil && p.isLeader {
			s.queueRegionHeartbeat(p) // PD answers with the step (execPDStep wakes it)
		}
	}
	for _, u := range m.unreachable {
		if u.regionID == 0 {
			s.storeUnreachable(u.storeID) // a StoreLiveness message was lost
			continue
		}
		if p := s.peers[u.regionID]; p != nil {
			p.rn.ReportUnreachable(u.peerID)
			s.touch(p)
		}
	}
	if len(m.drains) > 0 {
		if !s.draining {
			s.log.Info("transferring leaders away", "regions", len(s.peers))
		}
		s.draining = true
		s.drainWaiters = append(s.drainWaiters, m.drains...)
	}
	if s.draining {
		s.transferLeaders()
	}
	if s.nParked > 0 {
		s.unparkAborted()
	}
	for _, pr := range m.proposals {
		s.propose(pr)
	}
	for _, rr := range m.reads {
		s.queueRead(rr)
	}
	if m.resolveTS != 0 {
		s.resolveRegions(m.resolveTS)
	}
	s.flushExtra()
	s.phases.mark("inbox")

	// Only the peers touched since the last iteration can have reads to
	// issue or a Ready (hibernate.go); whatever touches a peer from here on
	// is for the next iteration.
	polling := s.active
	s.active, s.polling = s.polling[:0], nil
	defer func() {
		clear(polling)
		s.polling = polling[:0]
	}()
	activePeers.Observe(float64(len(polling)))
	for _, p := range polling {
		p.inActive = false
	}
	for _, p := range polling {
		if p.destroyed {
			continue
		}
		if len(p.reads) > 0 || (p.renewLease && p.isLeader && !p.readIndexInFlight()) {
			s.issueReadIndex(p)
		}
		p.renewLease = false
	}

	readies := s.readies[:0]
	for _, p := range polling {
		// A peer installing a snapshot neither applies nor sends until
		// its ingest finished (snapinstall.go).
		if !p.destroyed && !p.ps.installing() && p.rn.HasReady() {
			readies = append(readies, peerReady{p: p, rd: p.rn.Ready()})
		}
	}
	if len(readies) == 0 {
		return len(s.active) > 0
	}
	// In region order, not Go's random map order: what is sent, and so
	// what other stores step first, is then a function of the inputs
	// (the harness replays runs from a seed).
	slices.SortFunc(readies, func(a, b peerReady) int { return cmp.Compare(a.p.region.GetId(), b.p.region.GetId()) })
	s.phases.mark("collect")
	start := time.Now()
	readyRegions.Observe(float64(len(readies)))
	s.handleSoftState(readies)
	// A leader's appends go out before its own fsync (raft thesis 10.2.1):
	// the leader's disk write overlaps the followers' round trip. A leader
	// only counts itself for commit once persisted (raft self-acks after
	// Advance), and everything else waits for the fsync.
	s.sendMessages(readies, true)
	// Committed entries already in the local log are applied (and their
	// writers answered) before this Ready's new entries are fsynced: they
	// are durable on a quorum, and waiting for an fsync of unrelated
	// entries would add its whole duration to every write under load.
	s.apply(readies, true)
	s.phases.mark("apply_before_fsync")
	s.persist(readies)
	s.phases.mark("persist")
	s.sendMessages(readies, false)
	s.phases.mark("send")
	s.apply(readies, false)
	s.phases.mark("apply")
	for i := range readies {
		r := &readies[i]
		for _, rs := range r.rd.ReadStates {
			for _, b := range r.p.readBatches {
				if b.ctx != nil && bytes.Equal(b.ctx, rs.RequestCtx) {
					b.index = rs.Index
					// A quorum acknowledged a heartbeat sent after b.issued.
					r.p.lease.renew(b.term, b.issued)
					r.p.publishLease()
				}
			}
		}
		r.p.serveReads()
		r.p.serveApplyWaits()
		r.p.applySafeTS()
		r.p.rn.Advance(r.rd)
		if r.p.rn.HasReady() && !r.p.ps.installing() {
			s.touch(r.p)
		}
		readies[i] = peerReady{}
	}
	s.readies = readies[:0]
	s.destroyRemoved()
	readyLoopSeconds.Observe(time.Since(start).Seconds())
	s.newPeers = false // peers created by a split are touched (addPeer)
	return len(s.active) > 0
}

func (s *Store) tick() {
	hbTicks := int(s.cfg.RegionHeartbeatInterval / s.cfg.RaftTick)
	s.ticks++
	gc := false
	if s.cfg.LogGCInterval > 0 {
		gcTicks := max(uint64(s.cfg.LogGCInterval/s.cfg.RaftTick), 1)
		gc = s.ticks%gcTicks == 0
	}
	readTimeout := 4 * time.Duration(s.cfg.ElectionTicks) * s.cfg.RaftTick
	if hbTicks > 0 && s.ticks%uint64(hbTicks) == 0 {
		n, leaders := s.meta.counts()
		regionsGauge.WithLabelValues("peers").Set(float64(n))
		regionsGauge.WithLabelValues("leaders").Set(float64(leaders))
		s.expireOrphans(s.now())
	}
	if s.cfg.SplitCheckInterval > 0 && s.ticks%max(uint64(s.cfg.SplitCheckInterval/s.cfg.RaftTick), 1) == 0 {
		s.splitCandidates()
	}
	now := s.now()
	// Only awake peers tick (hibernate.go); a leader idle long enough
	// hibernates here instead. The slice is compacted in place, in order.
	// In manual mode (the harness) they tick in region order: a tick may
	// start an election, which draws its randomized timeout from one
	// process-wide source, so the order of the draws must be replayable.
	if s.cfg.manual {
		slices.SortFunc(s.awake, func(a, b *peer) int { return cmp.Compare(a.region.GetId(), b.region.GetId()) })
	}
	awake := s.awake[:0]
	for _, p := range s.awake {
		if p.destroyed || p.hibernated || s.maybeHibernate(p) {
			p.inAwake = false
			continue
		}
		awake = append(awake, p)
		p.rn.Tick()
		s.touch(p)
		if p.isLeader {
			s.samplePeerActivity(p, now)
			p.ticksSinceHeartbeat++
			if p.ticksSinceHeartbeat >= hbTicks {
				s.queueRegionHeartbeat(p)
			}
		}
		// Safety net: a ReadIndex that never completes (lost leadership
		// without noticing) is failed so its callers can retry.
		if len(p.readBatches) > 0 && now.Sub(p.readBatches[0].issued) > readTimeout {
			p.failReads(errStaleCommand(), nil)
		}
		if len(p.pending) > 0 {
			p.expireOverwritten(now, readTimeout)
		}
		if gc && p.isLeader {
			s.maybeCompactLog(p)
		}
	}
	clear(s.awake[len(awake):])
	s.awake = awake
	s.heartbeatSleepers()
	s.checkLiveness()
}

func (s *Store) stepRaftMessage(rm *raft_serverpb.RaftMessage) {
	switch rm.GetExtra().GetType() {
	case raft_serverpb.ExtraMessageType_Hibernate:
		s.handleHibernate(rm)
		return
	case raft_serverpb.ExtraMessageType_StoreLiveness:
		s.handleLivenessPing(rm) // heard() noted it
		return
	case raft_serverpb.ExtraMessageType_StoreLivenessResp:
		s.handleLivenessResp(rm)
		return
	case raft_serverpb.ExtraMessageType_HibernateAck:
		s.handleHibernateAck(rm)
		return
	}
	p := s.routeRaftMessage(rm) // confchange.go
	if p == nil {
		return
	}
	msg := &raftpb.Message{}
	if err := proto.Unmarshal(rm.GetMessage(), msg); err != nil {
		s.log.Warn("bad raft message", "region", rm.GetRegionId(), "err", err)
		return
	}
	s.stepMessage(p, rm, msg)
}

func (s *Store) stepMessage(p *peer, rm *raft_serverpb.RaftMessage, msg *raftpb.Message) {
	if t := msg.GetType(); (t == raftpb.MessageType_MsgVote || t == raftpb.MessageType_MsgPreVote) &&
		p.mayHaveAcked && s.now().Sub(p.created) < s.electionTimeout() {
		// Restarted without knowing the leader it may have acknowledged
		// just before: voting now could elect a leader while the old one
		// still holds a lease (see createPeer). Dropping a vote request is
		// always safe for raft; the candidate retries.
		return
	}
	if msg.GetFrom() != 0 && msg.GetFrom() == p.leaderID {
		switch msg.GetType() {
		case raftpb.MessageType_MsgApp, raftpb.MessageType_MsgHeartbeat, raftpb.MessageType_MsgSnap:
			p.leaderMsgTick = s.ticks // raft resets its election timer on these
		}
	}
	if p.hold && msg.GetFrom() == p.holdLeader {
		p.hold = false // the leader is awake: its hibernated lease is gone (support.go)
	}
	if err := p.rn.Step(msg); err != nil && !errors.Is(err, raft.ErrStepPeerNotFound) && !errors.Is(err, raft.ErrStepLocalMsg) {
		s.log.Debug("step raft message", "region", rm.GetRegionId(), "err", err)
	}
	if p.hibernated && !wakesOnMessage(p, msg) {
		s.touch(p)
		return
	}
	s.wake(p)
}

func (s *Store) propose(pr *proposal) {
	h := pr.cmd.GetHeader()
	p := s.peers[h.GetRegionId()]
	if p == nil {
		pr.regionError(errRegionNotFound(h.GetRegionId()), "region_not_found")
		return
	}
	if !p.isLeader {
		pr.regionError(errNotLeader(p.region.GetId(), p.leaderHint()), "not_leader")
		return
	}
	s.busy(p)
	if pr.leaderGen != 0 && pr.leaderGen != s.leaderGen.Load() {
		pr.regionError(ErrServerIsBusy("leadership changed while the write was prepared"), "leader_changed")
		return
	}
	if h.GetRegionEpoch() == nil || checkCmdEpoch(pr.cmd, p.region) != nil {
		pr.regionError(p.epochNotMatch(), "epoch_not_match")
		return
	}
	if t := h.GetTerm(); t != 0 && t != p.rn.BasicStatus().GetTerm() {
		pr.regionError(errStaleCommand(), "stale_term")
		return
	}
	if e := checkCmdKeys(pr.cmd, p.region); e != nil {
		pr.regionError(e, "key_not_in_region")
		return
	}
	s.propSeq++
	pr.id = s.propSeq
	h.ProposalId = pr.id
	data, err := encodeCmd(pr.cmd)
	if err != nil {
		pr.respond(nil, err, "error")
		return
	}
	pr.proposed = s.now()
	if err := p.rn.Propose(data); err != nil {
		st := p.rn.BasicStatus()
		if st.RaftState == raft.StateLeader && st.LeadTransferee != 0 {
			// Raft refuses proposals while leadership is being transferred:
			// hold the write until the transfer ends (see peer.parked).
			p.transferee = st.LeadTransferee
			p.parked = append(p.parked, pr)
			s.nParked++
			return
		}
		if st.RaftState == raft.StateLeader {
			// Still leader, no transfer: raft refused it for another reason
			// (too many uncommitted bytes). NotLeader without a hint would
			// send the client around the other peers; this one is the
			// leader, it is only busy.
			pr.regionError(ErrServerIsBusy("raft refused the proposal: "+err.Error()), "raft_refused")
			return
		}
		// Raft stepped down earlier in this iteration (p.isLeader catches up
		// after the Ready): name raft's current leader, or the transfer
		// target while the new leader is not known yet.
		hint := p.peerMeta(st.Lead)
		if hint == nil || st.Lead == p.meta.GetId() {
			hint = p.peerMeta(p.transferee)
		}
		pr.regionError(errNotLeader(p.region.GetId(), hint), "not_leader")
		return
	}
	p.unassigned[pr.id] = pr
}

// transferLeaders starts a leader transfer for every region this store
// leads that has none in progress (raft aborts a transfer that did not
// finish within an election timeout; the next iteration starts another).
func (s *Store) transferLeaders() {
	for _, p := range s.peers {
		if !p.isLeader {
			continue
		}
		// Raft's own state: p.isLeader lags a step-down within this
		// iteration, and a follower would forward the request to the leader.
		if st := p.rn.BasicStatus(); st.RaftState != raft.StateLeader || st.LeadTransferee != 0 {
			continue
		}
		if p.splitInFlight() {
			continue // hand it over once the split applied (split.go)
		}
		target := transferTarget(p.rn, p.meta.GetId())
		if target == 0 {
			continue // no other voter: keep serving until stopped
		}
		p.handedOff = s.startTransfer(p, target) // else tried again next iteration
	}
}

// startTransfer starts a leader transfer of p (a leader with no transfer in
// progress) to peer target. It reports false, starting nothing, when raft
// refused the handover write (the transaction layer's in-memory locks
// would be lost with the leadership); the caller tries again later.
func (s *Store) startTransfer(p *peer, target uint64) bool {
	s.busy(p)
	// The transaction layer's in-memory state goes into the log first: the
	// transferee has every entry before it campaigns.
	if s.handover(p.region, s.propose) {
		transfersDeferred.Inc()
		s.log.Info("leader transfer deferred: the handover of in-memory locks was refused", "region", p.region.GetId(), "to_peer", target)
		return false
	}
	p.transferee = target
	// The MsgTimeoutNow this may send lets the target win an election
	// with forced votes that ignore CheckQuorum: no lease read from here
	// on in this term, decided before the message can go out.
	p.lease.transferStarted()
	p.rn.TransferLeader(target)
	if h := s.leaseHook.Load(); h != nil {
		st := p.rn.BasicStatus()
		(*h)(LeaseEvent{Transfer: true, RegionID: p.region.GetId(), Term: st.GetTerm(), LeadTransferee: st.LeadTransferee,
			LeaseValid: p.lease.valid(s.now(), st.RaftState == raft.StateLeader, st.GetTerm(), st.LeadTransferee),
			Seq:        s.leaseSeq.Add(1)})
	}
	leaderTransfers.Inc()
	s.log.Info("transferring leader", "region", p.region.GetId(), "to_peer", target)
	return true
}

// transferTarget picks the target of a leader transfer among rn's voters
// (see betterTransferee); 0 when there is none.
func transferTarget(rn *raft.RawNode, self uint64) uint64 {
	var best transferCandidate
	rn.WithProgress(func(id uint64, typ raft.ProgressType, pr tracker.Progress) {
		c := transferCandidate{id: id, match: pr.Match, active: pr.RecentActive}
		if id != self && typ == raft.ProgressTypePeer && !pr.IsLearner && betterTransferee(c, best) {
			best = c
		}
	})
	return best.id
}

type transferCandidate struct {
	id, match uint64
	active    bool // raft heard from it within the last election timeout
}

// betterTransferee orders transfer targets: recently active first, then the
// highest match index (least to catch up before the transfer can finish),
// then the lowest id (deterministic). The zero candidate loses to any.
func betterTransferee(c, best transferCandidate) bool {
	switch {
	case best.id == 0:
		return true
	case c.active != best.active:
		return c.active
	case c.match != best.match:
		return c.match > best.match
	default:
		return c.id < best.id
	}
}

// unparkAborted proposes again the parked writes of peers that are still
// leader with no transfer in progress (the transfer was aborted).
func (s *Store) unparkAborted() {
	for _, p := range s.peers {
		if len(p.parked) == 0 {
			continue
		}
		if st := p.rn.BasicStatus(); st.RaftState != raft.StateLeader || st.LeadTransferee != 0 {
			continue // still transferring, or stepped down (answered after the Ready)
		}
		parked := p.parked
		p.parked = nil
		s.nParked -= len(parked)
		for _, pr := range parked {
			s.propose(pr)
		}
	}
}

// answerParked answers a peer's parked writes with NotLeader and the best
// leader hint, once it has stepped down.
func (s *Store) answerParked(p *peer) {
	if len(p.parked) == 0 {
		return
	}
	hint := p.leaderHint()
	for _, pr := range p.parked {
		pr.regionError(errNotLeader(p.region.GetId(), hint), "transfer_not_leader")
	}
	s.nParked -= len(p.parked)
	clear(p.parked)
	p.parked = p.parked[:0]
}

// drained reports whether no local peer leads, every region handed off has
// a known new leader, and no accepted write is waiting for its result.
func (s *Store) drained() bool {
	for _, p := range s.peers {
		if p.isLeader || len(p.parked) > 0 || len(p.unassigned) > 0 || len(p.pending) > 0 {
			return false
		}
		electing := p.leaderID == 0 || p.leaderID == p.meta.GetId()
		if p.handedOff && electing && s.now().Sub(p.steppedDown) < s.electionTimeout() {
			return false
		}
	}
	return true
}

func (s *Store) electionTimeout() time.Duration {
	return time.Duration(s.cfg.ElectionTicks) * s.cfg.RaftTick
}

func (s *Store) queueRead(rr *readRequest) {
	p := s.peers[rr.rctx.GetRegionId()]
	switch {
	case p == nil:
		rr.respond(readResult{rerr: errRegionNotFound(rr.rctx.GetRegionId())})
	case rr.waitIndex > 0:
		s.queueApplyWait(p, rr) // a follower read (replicaread.go)
	case !p.isLeader:
		rr.respond(readResult{rerr: errNotLeader(p.region.GetId(), p.leaderHint())})
	case !epochMatches(rr.rctx.GetRegionEpoch(), p.region):
		rr.respond(readResult{rerr: p.epochNotMatch()})
	case s.hibernatedLeaseRead(p, rr): // served without waking the region (support.go)
	default:
		s.busy(p)
		if s.maxLease > 0 && s.leaseRead(p, rr) {
			return
		}
		p.reads = append(p.reads, rr)
	}
}

// status returns raft's status of p, computed once per iteration: reads are
// queued after every message, transfer and proposal of the iteration was
// stepped, and nothing in between changes raft's term, state or transferee.
func (s *Store) status(p *peer) *raft.BasicStatus {
	if p.stIter != s.iter {
		p.st, p.stIter = p.rn.BasicStatus(), s.iter
	}
	return &p.st
}

// leaseRead serves rr under p's lease if it is valid now: at once when the
// applied index has reached raft's commit index, else once it does (as a
// ReadIndex would). It reports false when the read needs a ReadIndex.
func (s *Store) leaseRead(p *peer, rr *readRequest) bool {
	st := s.status(p)
	p.syncLease(st)
	now := s.now()
	if !p.lease.valid(now, st.RaftState == raft.StateLeader, st.GetTerm(), st.LeadTransferee) {
		return false
	}
	rem := p.lease.remaining(now)
	readsTotal.WithLabelValues("lease").Inc()
	leaseRemainingSeconds.Observe(rem.Seconds())
	if h := s.leaseHook.Load(); h != nil {
		(*h)(LeaseEvent{RegionID: p.region.GetId(), Term: st.GetTerm(), LeadTransferee: st.LeadTransferee, LeaseValid: true, Remaining: rem,
			Seq: s.leaseSeq.Add(1)})
	}
	if rem < s.maxLease/2 {
		p.renewLease = true // renew in the background, before it runs out
	}
	commit := st.GetCommit()
	if p.ps.apply.applied >= commit {
		rr.respond(readResult{region: proto.Clone(p.region).(*metapb.Region)})
		return true
	}
	if n := len(p.readBatches); n > 0 && p.readBatches[n-1].ctx == nil && p.readBatches[n-1].index == commit {
		p.readBatches[n-1].reqs = append(p.readBatches[n-1].reqs, rr)
		return true
	}
	p.readBatches = append(p.readBatches, &readBatch{index: commit, reqs: []*readRequest{rr}, issued: now, term: st.GetTerm()})
	return true
}

// issueReadIndex puts p's queued reads (possibly none: a lease renewal)
// behind one ReadIndex with a unique context.
func (s *Store) issueReadIndex(p *peer) {
	s.readSeq++
	ctx := binary.BigEndian.AppendUint64(make([]byte, 0, 8), s.readSeq)
	readsTotal.WithLabelValues("read_index").Add(float64(len(p.reads)))
	// issued is taken before raft can send the heartbeat carrying ctx, so
	// the lease this ReadIndex renews starts no later than that send.
	issued := s.now()
	term := p.rn.BasicStatus().GetTerm()
	p.rn.ReadIndex(ctx)
	p.readBatches = append(p.readBatches, &readBatch{ctx: ctx, reqs: p.reads, issued: issued, term: term})
	p.reads = nil
}

func (s *Store) handleSoftState(readies []peerReady) {
	for _, r := range readies {
		st := r.p.rn.BasicStatus()
		r.p.syncLease(&st)
		ss := r.rd.SoftState
		p := r.p
		if p.isLeader && st.RaftState == raft.StateLeader && st.GetTerm() != p.leaderTerm {
			// Re-elected in a later term between two Readies (no
			// SoftState change to see): what the old term's leadership
			// kept in memory is void all the same.
			s.leaderChanged(p.region.GetId(), false)
			s.leaderChanged(p.region.GetId(), true)
			p.leaderTerm = st.GetTerm()
		}
		if ss == nil {
			continue
		}
		wasLeader := p.isLeader
		p.leaderID = ss.Lead
		p.leaderPub.Store(ss.Lead)
		p.isLeader = ss.RaftState == raft.StateLeader
		if wasLeader && !p.isLeader {
			p.steppedDown = s.now()
		}
		if p.isLeader != wasLeader {
			p.leaderTerm = st.GetTerm()
			s.leaderChanged(p.region.GetId(), p.isLeader)
			s.meta.setLeader(p.region.GetId(), p.isLeader)
			s.log.Info("leadership changed", "region", p.region.GetId(), "leader", p.isLeader, "lead", ss.Lead)
		}
		if p.isLeader && !wasLeader {
			leaderChanges.Inc()
			s.leaderGen.Add(1)
			p.transferee = 0
			s.queueRegionHeartbeat(p)
			s.markSplitDirty(p) // written while following: the checker looks at it now
		}
		if !p.isLeader {
			p.failReads(errNotLeader(p.region.GetId(), p.leaderHint()), nil)
			s.answerParked(p)
			if ss.Lead != 0 {
				p.transferee = 0 // the real leader is known now
			}
		}
	}
}

// persist writes every Ready's entries and hard state in one batch with one
// fsync (group commit across regions).
func (s *Store) persist(readies []peerReady) {
	b := s.db.NewBatch()
	defer b.Close()
	nEntries, nRegions := 0, 0
	mustSync := false
	for _, r := range readies {
		// raft's MustSync ignores a snapshot, but once it is applied raft
		// acknowledges it (MsgAppResp at its index): it must be durable
		// first, or a crash leaves the leader counting entries this
		// replica lost (found by TestHarnessChaos).
		mustSync = mustSync || r.rd.MustSync || (r.rd.Snapshot != nil && !raft.IsEmptySnap(r.rd.Snapshot))
		if len(r.rd.Entries) > 0 || r.rd.HardState != nil {
			nRegions++
		}
		if r.rd.Snapshot != nil && !raft.IsEmptySnap(r.rd.Snapshot) {
			r.p.installingPub.Store(true) // before the ranges are cleared (replicaread.go)
			if err := r.p.ps.writeSnapshot(b, r.rd.Snapshot); err != nil {
				s.fatal("apply snapshot", err)
			}
		}
		if err := r.p.ps.appendEntries(b, r.rd.Entries); err != nil {
			s.fatal("append raft entries", err)
		}
		nEntries += len(r.rd.Entries)
		if r.rd.HardState != nil {
			data, err := proto.Marshal(r.rd.HardState)
			if err != nil {
				s.fatal("marshal hard state", err)
			}
			if err := b.Set(hardStateKey(r.p.region.GetId()), data, nil); err != nil {
				s.fatal("write hard state", err)
			}
		}
	}
	switch {
	case mustSync:
		start := time.Now()
		if err := b.Commit(pebble.Sync); err != nil {
			s.fatal("commit raft batch", err)
		}
		raftLogFsyncSeconds.Observe(time.Since(start).Seconds())
		appendedEntries.Observe(float64(nEntries))
		fsyncRegions.Observe(float64(nRegions))
	case !b.Empty():
		// Only the commit index moved: losing it in a crash is harmless
		// (it is learnt again), so no fsync.
		if err := b.Commit(pebble.NoSync); err != nil {
			s.fatal("commit raft batch", err)
		}
	}
	now := s.now()
	for _, r := range readies {
		if r.rd.Snapshot != nil && !raft.IsEmptySnap(r.rd.Snapshot) {
			s.snapshotWritten(r.p, r.rd.Snapshot) // starts the ingest
		}
		r.p.ps.entriesPersisted(r.rd.Entries, r.rd.HardState)
		for _, e := range r.rd.Entries {
			r.p.logBytes += uint64(len(e.GetData())) + 16
		}
		r.p.trackProposals(r.rd.Entries, now)
	}
}

// earlySendable reports whether m may be sent before this Ready is
// persisted: only a leader's appends and heartbeats (their term is already
// durable since the election).
func earlySendable(p *peer, m *raftpb.Message) bool {
	if !p.isLeader {
		return false
	}
	switch m.GetType() {
	case raftpb.MessageType_MsgApp, raftpb.MessageType_MsgHeartbeat:
		return true
	}
	return false
}

// sendMessages hands the Ready's messages that may go early (early) or the
// rest (!early) to the transport, one batch per destination store.
func (s *Store) sendMessages(readies []peerReady, early bool) {
	var byStore map[uint64]*raft_serverpb.BatchRaftMessage
	for _, r := range readies {
		p := r.p
		for _, m := range r.rd.Messages {
			if earlySendable(p, m) != early {
				continue
			}
			to := p.storeOf(m.GetTo())
			if to == 0 {
				continue
			}
			if m.GetType() == raftpb.MessageType_MsgSnap {
				s.sendSnapshot(p, to, m)
				continue
			}
			data, err := proto.Marshal(m)
			if err != nil {
				s.fatal("marshal raft message", err)
			}
			if byStore == nil {
				byStore = map[uint64]*raft_serverpb.BatchRaftMessage{}
			}
			b := byStore[to]
			if b == nil {
				b = &raft_serverpb.BatchRaftMessage{}
				byStore[to] = b
			}
			b.Msgs = append(b.Msgs, &raft_serverpb.RaftMessage{
				RegionId:    p.region.GetId(),
				FromPeer:    p.meta,
				ToPeer:      &metapb.Peer{Id: m.GetTo(), StoreId: to},
				RegionEpoch: p.region.GetRegionEpoch(),
				StartKey:    p.region.GetStartKey(),
				EndKey:      p.region.GetEndKey(),
				Message:     data,
			})
		}
	}
	filter := s.raftFilter.Load()
	for storeID, b := range byStore {
		if filter != nil && (*filter)(storeID) {
			continue // partitioned by a test
		}
		if s.sendBatch(storeID, b) {
			raftMessagesSent.Add(float64(len(b.Msgs)))
			continue
		}
		raftMessagesDropped.Add(float64(len(b.Msgs)))
		for _, m := range b.Msgs {
			if p := s.peers[m.GetRegionId()]; p != nil {
				p.rn.ReportUnreachable(m.GetToPeer().GetId())
			}
		}
	}
}

// sendBatch hands b to the transport; false means it was dropped.
func (s *Store) sendBatch(to uint64, b *raft_serverpb.BatchRaftMessage) bool {
	if s.cfg.net != nil {
		return s.cfg.net.send(s.id, to, b)
	}
	return s.trans.send(to, b)
}

// apply writes every Ready's committed entries into one batch, records
// each region's applied index in the same batch, commits it without fsync
// (the raft log is synced and is re-applied from the applied index after a
// crash), then answers proposals. Each command's epoch is re-checked
// against the region at its index: a command proposed before the region
// changed writes nothing and is answered EpochNotMatch (on every replica
// alike, so they stay identical).
//
// With persistedOnly (before the Ready is persisted) it applies only the
// entries the local log already holds; a Ready with a snapshot waits for it.
func (s *Store) apply(readies []peerReady, persistedOnly bool) {
	var b *pebble.Batch
	results := s.applyBufs[:0]
	start := time.Now()
	for _, r := range readies {
		ents := r.rd.CommittedEntries
		if persistedOnly {
			if r.rd.Snapshot != nil && !raft.IsEmptySnap(r.rd.Snapshot) {
				continue
			}
			n := 0
			for n < len(ents) && ents[n].GetIndex() <= r.p.ps.lastIndex {
				n++
			}
			ents = ents[:n]
		}
		if len(ents) == 0 || ents[len(ents)-1].GetIndex() <= r.p.ps.apply.applied {
			continue
		}
		if b == nil {
			b = s.db.NewBatch()
		}
		p := r.p
		as := p.ps.apply
		for _, e := range ents {
			if e.GetIndex() <= as.applied {
				continue
			}
			// An entry of the lease's term committed: the leader's no-op
			// (or a later entry) proves it knows every committed entry.
			p.lease.committedInTerm(e.GetTerm())
			var resp *raft_cmdpb.RaftCmdResponse
			var hashAdmin *raft_cmdpb.AdminRequest // ComputeHash / VerifyHash (consistency.go)
			switch e.GetType() {
			case raftpb.EntryType_EntryNormal:
				if len(e.GetData()) == 0 {
					break // a new leader's empty entry
				}
				cmd, err := decodeCmd(e.GetData())
				if err != nil {
					s.fatal("decode entry", err)
				}
				if cmd.GetAdminRequest() != nil && !isHashAdmin(cmd.GetAdminRequest()) {
					// May change the region (split, conf change): local
					// readers wait for the next renewal's copy of it. (A
					// consistency check changes nothing.)
					p.lease.unpublish()
				}
				resp = s.applyCmd(b, p, &as, cmd, e.GetIndex())
				if isHashAdmin(cmd.GetAdminRequest()) && resp.GetRegionError() == nil {
					hashAdmin = cmd.GetAdminRequest()
				}
			default:
				resp = s.applyConfChange(b, p, e)
			}
			as.applied = e.GetIndex()
			p.ackApplied(e.GetIndex(), e.GetTerm(), resp, &results)
			if hashAdmin != nil {
				b = s.applyHashAdmin(b, p, as, hashAdmin)
			}
		}
		if err := b.Set(applyStateKey(p.region.GetId()), as.encode(), nil); err != nil {
			s.fatal("write apply state", err)
		}
		p.nextApply = as
		p.applyPending = true
	}
	if b == nil {
		return
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		s.fatal("commit apply batch", err)
	}
	b.Close()
	if len(s.splits) > 0 {
		s.finishSplits()
	}
	for _, r := range readies {
		if !r.p.applyPending {
			continue
		}
		r.p.applyPending = false
		ps, as := r.p.ps, r.p.nextApply
		if as.truncatedIndex > ps.apply.truncatedIndex {
			ps.logCompacted(as.truncatedIndex, as.truncatedTerm)
			raftLogGCApplied.Inc()
		}
		ps.apply.applied = max(ps.apply.applied, as.applied)
		// Before any proposal is answered: a follower read's index
		// (AppliedIndex) covers every write acknowledged here.
		r.p.appliedPub.Store(ps.apply.applied)
		r.p.regionChangedStale()
		// Only now may local readers rely on the lease: the entries that
		// renewed it (and every earlier one) are in the engine.
		r.p.publishLease()
	}
	applySeconds.Observe(time.Since(start).Seconds())
	for i, ap := range results {
		switch {
		case ap.stale:
			ap.pr.respond(ap.resp, nil, "stale")
		case ap.resp.GetRegionError() != nil:
			ap.pr.respond(ap.resp, nil, "apply_region_error")
		default:
			ap.pr.respond(ap.resp, nil, "ok")
		}
		results[i] = appliedProposal{}
	}
	s.applyBufs = results[:0]
}

// applyCmd executes one committed command of p at index into b and returns
// its response. Deterministic given the region state, so every replica
// reaches the same outcome.
func (s *Store) applyCmd(b *pebble.Batch, p *peer, as *applyState, cmd *raft_cmdpb.RaftCmdRequest, index uint64) *raft_cmdpb.RaftCmdResponse {
	if rid := cmd.GetHeader().GetRegionId(); rid != p.region.GetId() {
		s.fatal("apply", fmt.Errorf("%w: command for region %d in the log of region %d", ErrCorrupt, rid, p.region.GetId()))
	}
	if e := checkCmdEpoch(cmd, p.region); e != nil {
		applyEpochNotMatch.Inc()
		return &raft_cmdpb.RaftCmdResponse{RegionError: p.epochNotMatch(), AppliedIndex: index}
	}
	if admin := cmd.GetAdminRequest(); admin != nil {
		switch admin.GetCmdType() {
		case raft_cmdpb.AdminCmdType_CompactLog:
			if err := s.applyCompactLog(b, p, as, admin.GetCompactLog(), index); err != nil {
				s.fatal("apply compact log", err)
			}
		case raft_cmdpb.AdminCmdType_Split:
			return s.applySplit(b, p, admin.GetSplit(), index)
		case raft_cmdpb.AdminCmdType_ComputeHash, raft_cmdpb.AdminCmdType_VerifyHash:
			// Handled by the caller once the applied index is set (applyHashAdmin).
		default:
			s.fatal("apply", fmt.Errorf("%w: unsupported admin command %v at index %d of region %d",
				ErrCorrupt, admin.GetCmdType(), index, p.region.GetId()))
		}
		return &raft_cmdpb.RaftCmdResponse{AppliedIndex: index, AdminResponse: &raft_cmdpb.AdminResponse{}}
	}
	var err error
	if s.keyBuf, err = applyWrites(b, cmd, s.keyBuf); err != nil {
		s.fatal("apply writes", err)
	}
	for _, r := range cmd.GetRequests() {
		if r.GetCf() == raft_cmdpb.CF_LOCK {
			p.locksKnown = false // the resolved ts rescans (replicaread.go)
		}
		n := uint64(len(r.GetKey()) + len(r.GetValue()))
		p.sizeDiff += n
		p.writtenBytes += n
	}
	p.writtenKeys += uint64(len(cmd.GetRequests()))
	p.keysDiff += uint64(len(cmd.GetRequests()))
	s.markSplitDirty(p)
	return &raft_cmdpb.RaftCmdResponse{AppliedIndex: index}
}

// fatal stops the process: the engine or state machine is in a state the
// store cannot continue from safely (replicas would diverge).
func (s *Store) fatal(what string, err error) {
	s.log.Error("raftstore fatal: "+what, "err", err)
	panic(fmt.Sprintf("raftstore: %s: %v", what, err))
}
