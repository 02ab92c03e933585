package raftstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.etcd.io/raft/v3"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/internal/security"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/pdpb"
	"github.com/stratadb/strata/proto/raft_serverpb"
)

// PDClient is the part of the placement driver client the store uses.
// *pdclient.Client implements it.
type PDClient interface {
	AllocID(ctx context.Context, count uint32) (uint64, error)
	PutStore(ctx context.Context, store *metapb.Store) error
	GetStore(ctx context.Context, id uint64) (*metapb.Store, error)
	StoreHeartbeat(ctx context.Context, req *pdpb.StoreHeartbeatRequest) (*pdpb.StoreHeartbeatResponse, error)
	RegionHeartbeats(ctx context.Context, reqs []*pdpb.RegionHeartbeatRequest) ([]*pdpb.RegionHeartbeatResponse, error)
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
	// DisableFastFailover keeps followers of a leader whose store refused
	// a connection waiting out the election timeout (failover.go); for
	// networks whose firewalls forge TCP resets for live hosts.
	DisableFastFailover bool
	Logger              *slog.Logger
	// Security dials other stores (raft messages, snapshots) with cluster
	// TLS (nil: plaintext).
	Security *security.TLS

	// Seams for the deterministic harness (harness_test.go): a manual
	// clock for every time the lease and peer lifecycle depend on, an
	// in-process transport, and manual mode (Open starts no goroutine: the
	// harness runs loop iterations and heartbeats itself; snapshots are
	// generated and sent synchronously).
	clock  func() time.Time
	net    netTransport
	manual bool
	fs     vfs.FS // the engine's file system (nil: the OS's); a crashable MemFS in the harness
	// persisted, when set, is called right after each step of persistence
	// named in persistSteps has written (and, where the step syncs,
	// synced): the harness takes its crash image there.
	persisted func(step string)
	// sendBytesPerIteration (the sendBudget) and maxBatchBytes (one
	// BatchRaftMessage sendMessages builds) are the constants of those
	// names unless a test shrinks them.
	sendBytesPerIteration uint64
	maxBatchBytes         int
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

// persistSteps names the points where the store's durable state changes,
// in the order a region meets them: the harness crashes a store at each
// (TestHarnessCrashAtEveryPersistenceStep).
var persistSteps = []string{
	"raft-log",          // a Ready's entries and hard state (synced when raft asks)
	"apply",             // an apply round's writes and applied indexes (not synced)
	"snapshot-received", // a received snapshot's files, each synced
	"snapshot-ingested", // its SSTs ingested into the engine
	"snapshot-install",  // the region marked normal again (synced)
	"region-create",     // a region PD created on this store (synced)
	"peer-destroy",      // a removed peer's tombstone (synced)
}

// stepPersisted reports step to the harness (Config.persisted).
func (s *Store) stepPersisted(step string) {
	if f := s.cfg.persisted; f != nil {
		f(step)
	}
}

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
	if c.sendBytesPerIteration == 0 {
		c.sendBytesPerIteration = sendBytesPerIteration
	}
	if c.maxBatchBytes == 0 {
		c.maxBatchBytes = maxBytesPerSend
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

// Store is one store node's multi-raft engine: it owns the Pebble instance,
// every local region peer and the single Ready loop driving them.
type Store struct {
	cfg Config
	pd  PDClient
	eng engine
	db  *pebble.DB // eng.db
	// sends bounds the entries read to send per loop iteration (loop only).
	sends sendBudget
	id    uint64
	log   *slog.Logger

	// compactor compacts ranges removed by DeleteRange (compact.go).
	compactor *rangeCompactor

	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopOnce sync.Once
	done     chan struct{} // closed when the Ready loop has exited

	inbox inbox
	trans *transport
	snaps snapshotSender

	// Owned by the Ready loop goroutine. led holds the peers raft last
	// reported leading (a destroyed or replaced one until the loop notices:
	// users check p.isLeader and s.peers), so a per-leader round need not
	// touch every follower.
	peers map[uint64]*peer
	led   map[uint64]*peer
	// Work sets (hibernate.go): active are the peers the next iteration
	// polls (polling: the current iteration's), awake those ticked,
	// sleepers the hibernated leaders (slow PD heartbeats, sleepCursor the
	// next to visit, sleepRoundAt the tick the next round may start),
	// splitDirty the regions written since the last split
	// check round; removed the peers that applied their own removal.
	active       []*peer
	polling      []*peer
	awake        []*peer
	sleepers     []*peer
	sleepCursor  int
	sleepRoundAt uint64
	splitDirty   []*peer
	removed      []*peer
	// Store liveness (hibernate.go): every store this one exchanges raft
	// messages with, by id and in id order; extraOut/extraTo the
	// raftstore messages (Hibernate, StoreLiveness) queued this iteration.
	live map[uint64]*storeLive
	// failovers are followers with a fast campaign due at a later tick
	// (failover.go).
	failovers  []*peer
	liveIDs    []uint64
	extraOut   map[uint64]*raft_serverpb.BatchRaftMessage
	extraTo    []uint64
	readSeq    uint64
	iter       uint64
	propSeq    uint64
	readies    []peerReady
	applier    applier                // executes committed entries (apply.go)
	applyTasks []applyTask            // scratch for apply
	newPeers   bool                   // a split created peers this iteration
	orphans    map[uint64]*orphanMsgs // raft messages for regions not hosted yet
	ticks      uint64                 // raft ticks so far
	phases     loopPhases             // the current iteration's (stall warning)

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
	safeTSOut     map[uint64]*raft_serverpb.SafeTSBatch
	// raftFilter, when set (tests), drops raft messages to and from the
	// stores it returns true for.
	raftFilter atomic.Pointer[func(storeID uint64) bool]
	// ticksPaused (tests) stops raft's logical clock, as a stalled process
	// would: no CheckQuorum step-down, no election timeout.
	ticksPaused atomic.Bool
	// gcSafePoint is the GC safe point this store knows (gcsafepoint.go).
	gcSafePoint atomic.Uint64

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
	// format is the storage format of the engine's data (format.go).
	format uint32
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
	format, err := checkStorageFormat(eng.db, cfg.DataDir)
	if err != nil {
		eng.close()
		return nil, err
	}
	s := &Store{
		cfg: cfg, pd: pd, eng: eng, db: eng.db, log: cfg.Logger, format: format,
		done:             make(chan struct{}),
		peers:            map[uint64]*peer{},
		led:              map[uint64]*peer{},
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
	if err := s.loadGCSafePoint(); err != nil {
		eng.close()
		return nil, err
	}
	s.log = s.log.With("store", s.id)
	s.applier = applier{db: s.db, host: s, log: s.log}
	s.compactor = newRangeCompactor()
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
		s.wg.Add(5)
		go s.compactLoop()
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
	st := &metapb.Store{Id: s.id, Address: s.cfg.Addr, StatusAddress: s.cfg.StatusAddr, State: metapb.StoreState_Up, Labels: s.cfg.Labels,
		StorageFormat: s.format, MaxStorageFormat: StorageFormat}
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
	ps.sends = &s.sends
	rn, err := s.newRawNode(meta, ps, region)
	if err != nil {
		return err
	}
	p := &peer{meta: meta, region: region, rn: rn, ps: ps, unassigned: map[uint64]*proposal{}, created: s.now()}
	p.initLease(s.maxLease)
	// A replica that may have acknowledged a leader before a restart lost
	// the memory of it (raft restarts with no leader, so CheckQuorum's vote
	// rejection does not apply): it refuses votes for an election timeout,
	// or that leader's lease could overlap a new leader.
	p.mayHaveAcked = ps.hardState.GetTerm() > initTerm || ps.lastIndex > initIndex
	p.createdTerm = ps.hardState.GetTerm()
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
		ID:            meta.GetId(),
		ElectionTick:  s.cfg.ElectionTicks,
		HeartbeatTick: s.cfg.HeartbeatTicks,
		Storage:       ps,
		Applied:       ps.apply.applied,
		MaxSizePerMsg: 1 << 20,
		// A follower catching up (after a restart, up to LogGCLagLimit
		// entries behind) is sent at most this much per round trip: raft
		// reads those entries from the engine on the loop, and without a
		// byte bound one append response can make the leader read and
		// send up to 256 MiB per region in one iteration (the suspected
		// cause of a 3.3-6.5 s loop stall after a restart in a TPC-C
		// kill run, which cost other regions their leaders). Store-wide,
		// sendBudget bounds it; past that budget each message carries one
		// entry, so the message count bounds the rest (an up-to-date
		// follower has a few appends in flight: one per fsync).
		MaxInflightMsgs:           32,
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

// fatal stops the process: the engine or state machine is in a state the
// store cannot continue from safely (replicas would diverge).
func (s *Store) fatal(what string, err error) {
	s.log.Error("raftstore fatal: "+what, "err", err)
	panic(fmt.Sprintf("raftstore: %s: %v", what, err))
}

// Security is the cluster TLS other stores are dialled with (nil:
// plaintext); the store's other outgoing connections use it too.
func (s *Store) Security() *security.TLS { return s.cfg.Security }
