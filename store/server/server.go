package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/stratadb/strata/internal/security"
	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/pd/pdclient"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/storepb"
	"github.com/stratadb/strata/raftstore"
	"github.com/stratadb/strata/store/gc"
)

// Config configures a store node.
type Config struct {
	// PDEndpoints are PD gRPC addresses.
	PDEndpoints []string
	// Addr is the gRPC listen address ("127.0.0.1:0" picks a free port);
	// AdvertiseAddr is what other nodes dial (default: the listen address).
	Addr          string
	AdvertiseAddr string
	// StatusAddr is advertised to PD as the store's status address.
	StatusAddr string
	// Labels are the store's location labels (raftstore.Config.Labels).
	Labels  []*metapb.StoreLabel
	DataDir string
	// Raft timing: tick period, election and heartbeat timeouts in ticks.
	RaftTick       time.Duration
	ElectionTicks  int
	HeartbeatTicks int
	// HeartbeatInterval is the store heartbeat period to PD.
	HeartbeatInterval time.Duration
	// LeaderTransferTimeout bounds the first step of a graceful stop:
	// handing every region this store leads to another replica (see
	// raftstore.Store.TransferLeaders). Zero means 5s; negative skips the
	// transfer (the store stops as if it crashed, for comparisons in tests).
	LeaderTransferTimeout time.Duration
	// DisableInMemoryPessimisticLock writes every pessimistic lock through
	// raft instead of keeping it in the region leader's memory
	// (txn.Config.InMemoryPessimisticLock, on by default).
	DisableInMemoryPessimisticLock bool
	// PD, when set, is used instead of dialling PDEndpoints (tests).
	PD PD
	// GC tunes the store's MVCC garbage collector (store/gc); it runs when
	// the PD client serves GC safe points (pdclient does).
	GC gc.Config
	// TSO, when set, replaces PD as the source of the timestamps the max
	// read timestamp is synced to on leadership changes. Only tests that
	// drive the store with their own synthetic timestamps (not PD's) set it.
	TSO TSO
	// BlockCacheSize is raftstore.Config.BlockCacheSize, the engine's
	// block cache in bytes (0: its default).
	BlockCacheSize int64
	// RaftMaxUncommittedBytes is raftstore.Config.MaxUncommittedBytes (0:
	// its default).
	RaftMaxUncommittedBytes uint64
	// RaftLogGCInterval and RaftLogGCThreshold are raftstore.Config's
	// LogGCInterval and LogGCThreshold (0: their defaults; a negative
	// interval disables raft log GC).
	RaftLogGCInterval  time.Duration
	RaftLogGCThreshold int
	// RaftLogGCLagLimit is raftstore.Config.LogGCLagLimit (0: default).
	RaftLogGCLagLimit int64
	// SnapMaxBytesPerSec is raftstore.Config.SnapshotMaxBytesPerSec
	// (0: 100 MiB/s; negative: no cap).
	SnapMaxBytesPerSec int64
	// SplitCheckInterval, RegionSplitSize and RegionSplitKeys are
	// raftstore.Config's (0: defaults 10s, 96 MiB, 960000 keys; a negative
	// interval disables splits by size).
	SplitCheckInterval time.Duration
	RegionSplitSize    uint64
	RegionSplitKeys    uint64
	// HibernateTicks is raftstore.Config.HibernateTicks (0: 2x the
	// election ticks; negative: idle regions never hibernate).
	HibernateTicks int
	// DisableFastFailover is raftstore.Config.DisableFastFailover.
	DisableFastFailover bool
	Logger              *slog.Logger
	// Security is cluster TLS for the gRPC service and every connection
	// the store makes (PD, other stores); nil is plaintext.
	Security *security.TLS
}

// DefaultLeaderTransferTimeout is Config.LeaderTransferTimeout's default.
const DefaultLeaderTransferTimeout = 5 * time.Second

// PD is what a store node needs from the placement driver (*pdclient.Client
// is one).
type PD interface {
	raftstore.PDClient
	TSO
	RegionLocator
}

// ErrNoPD is returned when neither PD endpoints nor a PD client are set.
var ErrNoPD = errors.New("server: no PD endpoints")

// Server is a store node process: listener, gRPC server, PD client and
// raftstore.
type Server struct {
	cfg   Config
	lis   net.Listener
	log   *slog.Logger
	ready chan struct{}

	mu    sync.Mutex
	store *raftstore.Store
	gc    *gc.Worker
	svc   atomic.Pointer[Service] // set once serving (tests)
}

// New validates cfg and binds the gRPC listener (so Addr is known before
// Run).
func New(cfg Config) (*Server, error) {
	if cfg.PD == nil && len(cfg.PDEndpoints) == 0 {
		return nil, ErrNoPD
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.LeaderTransferTimeout == 0 {
		cfg.LeaderTransferTimeout = DefaultLeaderTransferTimeout
	}
	lis, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("server: listen %s: %w", cfg.Addr, err)
	}
	if cfg.AdvertiseAddr == "" {
		cfg.AdvertiseAddr = lis.Addr().String()
	}
	return &Server{cfg: cfg, lis: lis, log: cfg.Logger, ready: make(chan struct{})}, nil
}

// Addr is the advertised gRPC address.
func (s *Server) Addr() string { return s.cfg.AdvertiseAddr }

// Ready is closed once the store serves gRPC.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Store returns the raftstore once Ready (nil before).
// LockWaiters is the number of pessimistic lock requests queued on this
// store (0 before it serves).
func (s *Server) LockWaiters() int {
	if svc := s.svc.Load(); svc != nil {
		return svc.Storage().LockWaiters()
	}
	return 0
}

func (s *Server) Store() *raftstore.Store {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.store
}

// GC returns the store's GC worker once Ready (nil before, or when the PD
// client serves no safe points).
func (s *Server) GC() *gc.Worker {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gc
}

// GRPCServerOptions are the options of a store node's gRPC server
// (store/storetest serves with the same).
func GRPCServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.WaitForHandlers(true), grpc.MaxRecvMsgSize(raftstore.MaxRaftBatchBytes),
		// Reuse a fixed pool of goroutines for incoming streams instead of
		// one new goroutine (and stack growth) per RPC; gRPC still spawns
		// one when every worker is busy, so a slow request never blocks others.
		grpc.NumStreamWorkers(uint32(4 * runtime.GOMAXPROCS(0))),
		// Static flow-control windows, as the SQL nodes' side
		// (kv.StreamWindowSize): no BDP ping per request.
		grpc.InitialWindowSize(kv.StreamWindowSize), grpc.InitialConnWindowSize(kv.ConnWindowSize),
		// SQL nodes and other stores ping idle connections to notice
		// partitions (kv.KeepaliveTime); allow it.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: time.Second, PermitWithoutStream: true})}
}

// Run opens the store, serves until ctx is cancelled, then shuts down
// gracefully:
//
//  1. transfer the leadership of every region it leads to another replica
//     and wait for that (bounded by LeaderTransferTimeout), still serving
//     raft messages and KV requests (which now get NotLeader with the new
//     leader as hint, so clients move at once instead of waiting for an
//     election timeout);
//  2. stop accepting connections and RPCs and stop the raft loop: requests
//     still waiting are answered (a write never proposed with a retryable
//     NotLeader, a proposed one with codes.Unknown: its outcome is unknown);
//  3. once every handler has returned, close Pebble.
func (s *Server) Run(ctx context.Context) error {
	defer s.lis.Close()
	pd := s.cfg.PD
	if pd == nil {
		c, err := pdclient.New(ctx, s.cfg.PDEndpoints, pdclient.WithSecurity(s.cfg.Security))
		if err != nil {
			return fmt.Errorf("server: connect PD: %w", err)
		}
		defer c.Close()
		pd = c
	}
	store, err := raftstore.Open(ctx, raftstore.Config{
		DataDir:                s.cfg.DataDir,
		Addr:                   s.cfg.AdvertiseAddr,
		StatusAddr:             s.cfg.StatusAddr,
		Labels:                 s.cfg.Labels,
		RaftTick:               s.cfg.RaftTick,
		ElectionTicks:          s.cfg.ElectionTicks,
		HeartbeatTicks:         s.cfg.HeartbeatTicks,
		StoreHeartbeatInterval: s.cfg.HeartbeatInterval,
		MaxUncommittedBytes:    s.cfg.RaftMaxUncommittedBytes,
		LogGCInterval:          s.cfg.RaftLogGCInterval,
		LogGCThreshold:         s.cfg.RaftLogGCThreshold,
		LogGCLagLimit:          s.cfg.RaftLogGCLagLimit,
		SnapshotMaxBytesPerSec: s.cfg.SnapMaxBytesPerSec,
		SplitCheckInterval:     s.cfg.SplitCheckInterval,
		HibernateTicks:         s.cfg.HibernateTicks,
		DisableFastFailover:    s.cfg.DisableFastFailover,
		RegionSplitSize:        s.cfg.RegionSplitSize,
		RegionSplitKeys:        s.cfg.RegionSplitKeys,
		BlockCacheSize:         s.cfg.BlockCacheSize,
		Logger:                 s.log,
		Security:               s.cfg.Security,
	}, pd)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.store = store
	s.mu.Unlock()

	gs := grpc.NewServer(append(GRPCServerOptions(), s.cfg.Security.ServerOption())...)
	tso := s.cfg.TSO
	if tso == nil {
		tso = pd
	}
	svc := NewService(store, tso, pd, s.log, !s.cfg.DisableInMemoryPessimisticLock)
	defer svc.Close()
	s.svc.Store(svc)
	storepb.RegisterStoreServer(gs, svc)
	gcDone := make(chan struct{})
	gcCtx, stopGC := context.WithCancel(context.Background())
	if gpd, ok := pd.(gc.PD); ok {
		cfg := s.cfg.GC
		cfg.Logger = s.log
		svc.gc = gc.NewWorker(gcStore{store}, store.ID(), gpd, svc.Storage().Latches(), cfg)
		s.mu.Lock()
		s.gc = svc.gc
		s.mu.Unlock()
		go func() { defer close(gcDone); svc.gc.Run(gcCtx) }()
	} else {
		close(gcDone)
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- gs.Serve(s.lis) }()
	s.log.Info("store ready", "store", store.ID(), "addr", s.cfg.AdvertiseAddr, "listen", s.lis.Addr().String(), "status_addr", s.cfg.StatusAddr)
	close(s.ready)

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-serveErr:
	}
	if runErr == nil && s.cfg.LeaderTransferTimeout > 0 {
		start := time.Now()
		tctx, cancel := context.WithTimeout(context.Background(), s.cfg.LeaderTransferTimeout)
		err := store.TransferLeaders(tctx)
		cancel()
		if err != nil {
			s.log.Warn("leader transfer before stop did not finish; stopping anyway",
				"store", store.ID(), "timeout", s.cfg.LeaderTransferTimeout, "err", err)
		} else {
			s.log.Info("leaders transferred before stop", "store", store.ID(), "took", time.Since(start))
		}
	}
	stopGC()
	<-gcDone
	// Stop the raft loop, then stop accepting: waiting requests are
	// answered at once and raft streams from other stores end. The order
	// matters: the loop withdraws every lease before the listener closes,
	// so a store that refuses connections serves no read any more, which
	// lets its followers elect a new leader at once (raftstore/failover.go).
	// Handlers have all returned before Pebble is closed; a handler stuck
	// elsewhere is cut off after a grace period.
	store.Stop()
	stopped := make(chan struct{})
	go func() { gs.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(2 * time.Second):
		gs.Stop()
		<-stopped
	}
	if err := store.Close(); err != nil && runErr == nil {
		runErr = fmt.Errorf("server: close store: %w", err)
	}
	s.log.Info("store stopped", "store", store.ID())
	return runErr
}
