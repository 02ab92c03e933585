package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/stratadb/strata/pd/pdclient"
	"github.com/stratadb/strata/proto/storepb"
	"github.com/stratadb/strata/raftstore"
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
	DataDir    string
	// Raft timing: tick period, election and heartbeat timeouts in ticks.
	RaftTick       time.Duration
	ElectionTicks  int
	HeartbeatTicks int
	// HeartbeatInterval is the store heartbeat period to PD.
	HeartbeatInterval time.Duration
	// PD, when set, is used instead of dialling PDEndpoints (tests).
	PD     raftstore.PDClient
	Logger *slog.Logger
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
func (s *Server) Store() *raftstore.Store {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.store
}

// Run opens the store, serves until ctx is cancelled, then shuts down
// gracefully: stop accepting, drain in-flight RPCs (bounded), stop the raft
// loop, close Pebble.
func (s *Server) Run(ctx context.Context) error {
	defer s.lis.Close()
	pd := s.cfg.PD
	if pd == nil {
		c, err := pdclient.New(ctx, s.cfg.PDEndpoints)
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
		RaftTick:               s.cfg.RaftTick,
		ElectionTicks:          s.cfg.ElectionTicks,
		HeartbeatTicks:         s.cfg.HeartbeatTicks,
		StoreHeartbeatInterval: s.cfg.HeartbeatInterval,
		Logger:                 s.log,
	}, pd)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.store = store
	s.mu.Unlock()

	gs := grpc.NewServer(grpc.WaitForHandlers(true), grpc.MaxRecvMsgSize(raftstore.MaxRaftBatchBytes))
	storepb.RegisterStoreServer(gs, NewService(store))
	serveErr := make(chan error, 1)
	go func() { serveErr <- gs.Serve(s.lis) }()
	s.log.Info("store ready", "store", store.ID(), "addr", s.cfg.AdvertiseAddr, "listen", s.lis.Addr().String(), "status_addr", s.cfg.StatusAddr)
	close(s.ready)

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-serveErr:
	}
	// Stop accepting; stop the raft loop so waiting requests return
	// ErrStopped (Unavailable) at once; raft streams from other stores never
	// end on their own, so after a short grace period force the rest.
	// Handlers have all returned before Pebble is closed.
	stopped := make(chan struct{})
	go func() { gs.GracefulStop(); close(stopped) }()
	store.Stop()
	select {
	case <-stopped:
	case <-time.After(500 * time.Millisecond):
		gs.Stop()
		<-stopped
	}
	if err := store.Close(); err != nil && runErr == nil {
		runErr = fmt.Errorf("server: close store: %w", err)
	}
	s.log.Info("store stopped", "store", store.ID())
	return runErr
}
