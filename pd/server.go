package pd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/failpoint"
	"github.com/stratadb/strata/internal/security"
	"github.com/stratadb/strata/proto/pdpb"
	"github.com/stratadb/strata/tso"
)

// Server is one PD member. Create it with NewServer and drive it with Run.
type Server struct {
	cfg Config
	log *slog.Logger

	ready    chan struct{} // closed once gRPC serves
	quit     chan struct{} // closed when shutdown starts (ends Tso streams)
	addr     net.Addr
	etcd     *embed.Etcd
	cli      *clientv3.Client
	member   *pdpb.Member
	memberV  string // marshalled member, the election value
	grpcSrv  *grpc.Server
	guard    *security.Guard      // of the HTTP API's state-changing requests
	httpCli  *http.Client         // forwards API requests to the leader
	leader   atomic.Pointer[term] // nil when not leader
	stopping atomic.Bool          // set when shutdown starts (quiets etcd)
}

// term is the state of one leadership term. Everything that may only be done
// by the leader hangs off it; it is dropped (and its TSO allocator reset) when
// the term ends.
type term struct {
	hdr     *pdpb.ResponseHeader // shared, read-only once the term starts
	kv      *fencedKV
	tso     *tso.Allocator
	ids     *idAllocator
	cluster *cluster
	// lease fences TSO: a batch is answered only while it is valid.
	lease *leaderLease
	gc    *gcState // gc.go
}

// NewServer validates cfg; nothing is started until Run.
func NewServer(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	guard, err := security.NewGuard(cfg.Security, cfg.HTTPTokenFile)
	if err != nil {
		return nil, err
	}
	return &Server{
		guard:   guard,
		httpCli: cfg.Security.HTTPClient(30 * time.Second),
		cfg:     cfg,
		log:     slog.Default().With("component", "pd", "name", cfg.Name),
		ready:   make(chan struct{}),
		quit:    make(chan struct{}),
	}, nil
}

// Ready is closed once the gRPC service is listening (not necessarily leader).
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Addr is the bound gRPC address; valid after Ready.
func (s *Server) Addr() net.Addr { return s.addr }

// Config returns the effective configuration (defaults filled in).
func (s *Server) Config() Config { return s.cfg }

// SetStatusAddr sets the HTTP API address this member publishes (see
// Config.StatusAddr). Call it before Run.
func (s *Server) SetStatusAddr(addr string) { s.cfg.StatusAddr = addr }

// IsLeader reports whether this member currently serves as PD leader.
func (s *Server) IsLeader() bool { return s.leader.Load() != nil }

// Run starts embedded etcd and the gRPC service, campaigns for leadership and
// serves until ctx is cancelled; then it resigns and shuts down gracefully.
func (s *Server) Run(ctx context.Context) error {
	if err := s.startEtcd(ctx); err != nil {
		return err
	}
	defer s.etcd.Close()
	s.cli = v3client.New(s.etcd.Server)
	defer s.cli.Close()

	lis, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("pd: listen %s: %w", s.cfg.Addr, err)
	}
	s.addr = lis.Addr()
	adv := s.cfg.AdvertiseAddr
	if adv == "" {
		adv = s.addr.String()
	}
	s.member = &pdpb.Member{
		Name:       s.cfg.Name,
		MemberId:   uint64(s.etcd.Server.MemberID()),
		ClientUrls: []string{adv},
		PeerUrls:   []string{s.cfg.PeerURL},
	}
	s.memberV = mustMarshal(s.member)
	if _, err := s.cli.Put(ctx, prefixMembers+s.cfg.Name, s.memberV); err != nil {
		lis.Close()
		return fmt.Errorf("pd: register member: %w", err)
	}
	if s.cfg.StatusAddr != "" {
		if _, err := s.cli.Put(ctx, prefixMemberHTTP+s.cfg.Name, s.cfg.StatusAddr); err != nil {
			lis.Close()
			return fmt.Errorf("pd: register member HTTP address: %w", err)
		}
	}

	s.grpcSrv = grpc.NewServer(
		s.cfg.Security.ServerOption(),
		grpc.ChainUnaryInterceptor(unaryMetrics),
		// pdclient pings every 10s; allow it.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
	)
	pdpb.RegisterPDServer(s.grpcSrv, &service{s: s})
	serveErr := make(chan error, 1)
	go func() { serveErr <- s.grpcSrv.Serve(lis) }()
	close(s.ready)

	// The leader loop outlives ctx: on shutdown the member first hands over
	// etcd leadership while still serving, then resigns (shutdown below).
	loopCtx, stopLoop := context.WithCancel(context.WithoutCancel(ctx))
	loopDone := make(chan struct{})
	go func() { defer close(loopDone); s.leaderLoop(loopCtx) }()

	var runErr error
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		runErr = fmt.Errorf("pd: grpc serve: %w", err)
	case err := <-s.etcd.Err():
		runErr = fmt.Errorf("pd: etcd: %w", err)
	case <-s.etcd.Server.StopNotify():
		// The etcd member stopped by itself: removed from the cluster
		// (DELETE /members/...) or failed.
		runErr = errors.New("pd: the etcd member stopped: removed from the PD cluster, or failed (see the etcd log)")
	}
	s.log.Info("pd shutting down", "leader", s.IsLeader())
	s.stopping.Store(true)
	s.shutdown(stopLoop, loopDone)
	s.log.Info("pd stopped")
	return runErr
}

// etcdTransferTimeout bounds the etcd leadership hand-over on shutdown (a
// transfer takes about one etcd election; a member whose peers are gone
// would otherwise wait out etcd's request timeout).
const etcdTransferTimeout = 2 * time.Second

// shutdown stops serving in the order that lets another member take over at
// once:
//
//  1. If this member leads PD and its etcd is the etcd raft leader, move
//     the etcd leadership to another member first (bounded), while PD keeps
//     serving: otherwise the next PD leader's first etcd requests would race
//     the transfer that etcd's own Close does, fail with "leader changed"
//     and retry. (A member that does not lead PD leaves that to etcd.)
//  2. Stop the leader loop: the term ends (TSO stops at once), and the
//     session lease is revoked, which deletes our election key, so the next
//     campaigner wins now instead of after the lease TTL.
//  3. End every Tso stream with Unavailable (clients treat it as retryable
//     and reconnect to the new leader) and stop gRPC.
func (s *Server) shutdown(stopLoop context.CancelFunc, loopDone <-chan struct{}) {
	if es := s.etcd.Server; s.IsLeader() && es.Leader() == es.MemberID() && len(es.Cluster().Members()) > 1 {
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- es.TryTransferLeadershipOnShutdown() }()
		select {
		case err := <-done:
			if err != nil {
				s.log.Warn("etcd leadership transfer failed", "err", err)
			} else {
				s.log.Info("etcd leadership handed over", "took", time.Since(start))
			}
		case <-time.After(etcdTransferTimeout):
			s.log.Warn("etcd leadership transfer still running; resigning anyway", "timeout", etcdTransferTimeout)
		}
	}
	stopLoop()
	<-loopDone // resigned
	close(s.quit)
	s.grpcSrv.GracefulStop()
}

func (s *Server) startEtcd(ctx context.Context) error {
	ec := embed.NewConfig()
	ec.Name = s.cfg.Name
	ec.Dir = s.cfg.DataDir
	lpu, pu, lcu, cu, err := s.cfg.etcdURLs()
	if err != nil {
		return err
	}
	ec.ListenPeerUrls, ec.AdvertisePeerUrls = []url.URL{lpu}, []url.URL{pu}
	ec.ListenClientUrls, ec.AdvertiseClientUrls = []url.URL{lcu}, []url.URL{cu}
	ec.InitialCluster = s.cfg.InitialCluster
	ec.ClusterState = s.cfg.InitialClusterState
	ec.InitialClusterToken = "strata-pd"
	ec.LogLevel = s.cfg.EtcdLogLevel
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(newEtcdZapLogger(slog.Default().With("component", "etcd"), s.cfg.EtcdLogLevel, &s.stopping))
	ec.EnableGRPCGateway = false
	if sec := s.cfg.Security; sec != nil {
		c := sec.Config()
		info := transport.TLSInfo{
			CertFile: c.Cert, KeyFile: c.Key, TrustedCAFile: c.CA, ClientCertAuth: true,
			AllowedCNs: sec.VerifyCNs(), MinVersion: tls.VersionTLS12,
			HandshakeFailure: func(_ *tls.Conn, err error) { sec.HandshakeFailed("server", err) },
		}
		// etcd re-reads the certificate and key at every handshake.
		ec.PeerTLSInfo, ec.ClientTLSInfo = info, info
	}
	if s.cfg.EtcdTick > 0 {
		ec.TickMs = uint(s.cfg.EtcdTick.Milliseconds())
		ec.ElectionMs = uint(10 * s.cfg.EtcdTick.Milliseconds())
	}
	// A split reported at once (ReportBatchSplit) is one transaction of a
	// put per region plus a delete per overlapped region: SPLIT TABLE
	// makes up to 1000 regions (etcd's default limit is 128 operations).
	ec.MaxTxnOps = maxSplitTxnOps
	ec.AutoCompactionMode = embed.CompactorModePeriodic
	ec.AutoCompactionRetention = "1h"
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return fmt.Errorf("pd: start etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return fmt.Errorf("pd: etcd: %w", err)
	case <-ctx.Done():
		e.Close()
		return ctx.Err()
	}
	s.etcd = e
	return nil
}

// leaderLoop campaigns, leads while it can, and campaigns again. After a
// failed attempt it waits 20ms, doubling up to 1s while attempts keep failing
// (a transient etcd error, e.g. an etcd leader change, costs little).
func (s *Server) leaderLoop(ctx context.Context) {
	s.clearOwnStaleLeaderKey(ctx)
	const minWait, maxWait = 20 * time.Millisecond, time.Second
	wait := minWait
	for ctx.Err() == nil {
		err := s.campaignAndLead(ctx)
		if err == nil || ctx.Err() != nil {
			wait = minWait
			continue
		}
		s.log.Warn("leadership term ended", "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, maxWait)
	}
}

// clearOwnStaleLeaderKey deletes a leader key left by this member's previous
// incarnation (killed without resigning), so restart does not wait for its
// lease to expire. The data-dir lock guarantees that incarnation is gone.
func (s *Server) clearOwnStaleLeaderKey(ctx context.Context) {
	resp, err := s.cli.Get(ctx, prefixLeader+"/", clientv3.WithPrefix())
	if err != nil {
		return
	}
	for _, kv := range resp.Kvs {
		m := &pdpb.Member{}
		if proto.Unmarshal(kv.Value, m) != nil || m.Name != s.cfg.Name {
			continue
		}
		_, err := s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision)).
			Then(clientv3.OpDelete(string(kv.Key))).Commit()
		s.log.Info("removed own stale leader key", "key", string(kv.Key), "err", err)
	}
}

func (s *Server) campaignAndLead(ctx context.Context) error {
	// Our own lease, kept alive by our own loop (the local expiry counts
	// from each renewal's send time, see leaderLease), and also by the
	// session's keepalive, which can only make etcd expire it later.
	lease, err := grantLease(ctx, s.cli, s.cfg.LeaderLease)
	if err != nil {
		return err
	}
	leaseCtx, stopLease := context.WithCancel(ctx)
	defer stopLease()
	go lease.keepAlive(leaseCtx)
	sess, err := concurrency.NewSession(s.cli, concurrency.WithLease(lease.id))
	if err != nil {
		rctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, _ = s.cli.Revoke(rctx, lease.id)
		cancel()
		return fmt.Errorf("new session: %w", err)
	}
	defer func() {
		// Revoke the lease so our leader key disappears at once; bounded so
		// shutdown does not hang when quorum is already gone.
		sess.Orphan()
		rctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, _ = s.cli.Revoke(rctx, sess.Lease())
		cancel()
	}()
	el := concurrency.NewElection(sess, prefixLeader)
	if err := el.Campaign(ctx, s.memberV); err != nil {
		return fmt.Errorf("campaign: %w", err)
	}
	kv := &fencedKV{cli: s.cli, fence: clientv3.Compare(clientv3.CreateRevision(el.Key()), "=", el.Rev())}
	t := &term{kv: kv, ids: &idAllocator{kv: kv}, lease: lease}
	t.tso = tso.NewAllocator(tsoWindowStore{kv}, tso.Options{Window: s.cfg.TSOWindow, Now: failpoint.Now, Logger: slog.Default().With("component", "tso", "name", s.cfg.Name)})
	t.cluster = newCluster(kv, t.ids, s.cfg.Replicas, s.cfg.Schedule, s.log)
	t.gc = newGCState(kv)
	defer t.tso.Reset()
	if err := s.startTerm(ctx, t); err != nil {
		return err // the deferred revoke resigns
	}
	s.setLeader(t)
	isLeaderGauge.Set(1)
	s.log.Info("became pd leader", "cluster_id", t.cluster.id(), "leader_key", el.Key())
	schedCtx, stopSched := context.WithCancel(ctx)
	schedDone := make(chan struct{})
	go func() { defer close(schedDone); t.cluster.coord.Run(schedCtx) }()
	defer func() { stopSched(); <-schedDone }()

	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var endErr error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-sess.Done():
			endErr = errors.New("etcd session expired")
			break loop
		case <-tick.C:
			if !lease.valid() {
				endErr = fmt.Errorf("leader lease expired %v ago", -lease.remaining())
				break loop
			}

			if err := t.tso.Tick(ctx); err != nil && ctx.Err() == nil {
				if errors.Is(err, ErrNotLeader) {
					endErr = err
					break loop
				}
				s.log.Warn("tso window extension failed", "err", err)
			}
		}
	}
	s.setLeader(nil)
	isLeaderGauge.Set(0)
	t.tso.Reset()
	s.log.Info("pd leadership ended", "reason", endErr)
	return endErr
}

func (s *Server) startTerm(ctx context.Context, t *term) error {
	if err := t.cluster.load(ctx); err != nil {
		return err
	}
	if err := t.ids.load(ctx); err != nil {
		return err
	}
	if err := t.tso.Sync(ctx); err != nil {
		return err
	}
	t.hdr = &pdpb.ResponseHeader{ClusterId: t.cluster.id()}
	return t.cluster.maybeBootstrap(ctx)
}

func (s *Server) setLeader(t *term) { s.leader.Store(t) }

// leaderTerm returns the current term, or nil when not leader.
func (s *Server) leaderTerm() *term { return s.leader.Load() }

// members lists the registered PD members and the current leader.
func (s *Server) members(ctx context.Context) ([]*pdpb.Member, *pdpb.Member, error) {
	ms, err := loadPrefix(ctx, s.cli, prefixMembers, func() *pdpb.Member { return &pdpb.Member{} })
	if err != nil {
		return nil, nil, err
	}
	resp, err := s.cli.Get(ctx, prefixLeader+"/", clientv3.WithFirstCreate()...)
	if err != nil {
		return nil, nil, fmt.Errorf("pd: get leader: %w", err)
	}
	var leader *pdpb.Member
	if len(resp.Kvs) > 0 {
		leader = &pdpb.Member{}
		if err := proto.Unmarshal(resp.Kvs[0].Value, leader); err != nil {
			return nil, nil, fmt.Errorf("pd: decode leader: %w", err)
		}
	}
	return ms, leader, nil
}
