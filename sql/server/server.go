package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/internal/security"
	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/sql/auth"
	"github.com/stratadb/strata/sql/domain"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/privilege"
	"github.com/stratadb/strata/sql/session"
	"github.com/stratadb/strata/sql/trace"
)

// Config configures a Server.
type Config struct {
	// Addr is the MySQL listen address (host:port; port 0 picks one).
	Addr string
	// Store is the KV layer (production: PD + KV client).
	Store kv.Storage
	// Users maps the user names created at '%' with ALL PRIVILEGES WITH
	// GRANT OPTION when the cluster's privilege tables are bootstrapped
	// (first start) to their initial passwords. Nil means {"root": ""}.
	// Accounts live in the cluster (package privilege); these are ignored
	// once the tables exist.
	Users map[string]string
	// AuthPlugin is the plugin the greeting offers, the plugin of the
	// bootstrap accounts and of CREATE USER without IDENTIFIED WITH:
	// auth.NativePassword (default) or auth.CachingSHA2Password (MySQL 8's
	// default_authentication_plugin).
	AuthPlugin string
	// SkipGrantTables lets every login in without a password and every
	// statement through (recovery; docs/operations.md).
	SkipGrantTables bool
	// PrivilegePollInterval is how often the node checks the privilege
	// tables' version (0: privilege.DefaultPollInterval).
	PrivilegePollInterval time.Duration
	// TLS enables CLIENT_SSL with this configuration (nil: no TLS).
	TLS *tls.Config
	// RequireSecureTransport refuses plain connections with ERROR 3159.
	RequireSecureTransport bool
	// RSAKey is the key for caching_sha2_password's password exchange on
	// plain connections; nil means one is generated (in memory) on first
	// use.
	RSAKey *auth.RSAKey
	// ShutdownTimeout bounds how long running statements may finish after
	// Run's context is cancelled. Zero means 10s.
	ShutdownTimeout time.Duration
	// MaxPacket is max_allowed_packet for client packets. Zero means 64 MB.
	MaxPacket int
	// MaxConnections bounds open client connections on this node; one more
	// is answered with ERROR 1040 instead of a greeting and closed. Zero
	// means no limit.
	MaxConnections int
	// HandshakeTimeout (MySQL's connect_timeout) bounds the connection
	// phase: a client that has not finished authenticating by then is
	// disconnected. Zero means 10s.
	HandshakeTimeout time.Duration
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// CreateDefaultDB creates database "test" on start when missing.
	CreateDefaultDB bool
	// SchemaLease is the schema lease (catalog.DefaultLease when zero):
	// how long this node trusts its schema without confirming the
	// cluster's schema version, and half of how long a schema change
	// waits for every node to load it.
	SchemaLease time.Duration
	// NoAutoAnalyze: this node never runs auto-analyze, even as DDL owner
	// (TiDB's performance.run-auto-analyze = false). Tests whose plans
	// depend on pseudo statistics set it.
	NoAutoAnalyze bool
	// StatsLease is how often the node flushes its modify counts, reloads
	// statistics and (as DDL owner) looks for tables to auto-analyze
	// (domain.DefaultStatsLease when zero).
	StatsLease time.Duration
	// SlowQueryFile receives the statements that took SlowThreshold or
	// longer as JSON lines (rotated at 64 MiB); empty: they are logged
	// through Logger.
	SlowQueryFile string
	// PessimisticAutoCommit: see domain.Config.PessimisticAutoCommit.
	PessimisticAutoCommit bool
	// SlowThreshold is the slow query log's threshold (0:
	// DefaultSlowThreshold, TiDB's 300 ms; negative: nothing is logged).
	SlowThreshold time.Duration
	// Registry, when set, registers the node with PD's SQL node registry
	// for a server id (connection ids carry it) and makes KILL and
	// CLUSTER_PROCESSLIST reach the other registered nodes
	// (globalkill.go); nil: the node stands alone.
	Registry NodeRegistry
	// StatusAddr is the node's status address (host:port) that other
	// nodes reach InternalHandler at, published with the server id.
	StatusAddr string
	// Security is the cluster TLS of the status port: InternalHandler
	// answers only peers with a certificate of the cluster CA, and this
	// node presents its own to them (nil: plain HTTP, open).
	Security *security.TLS
}

// Server accepts MySQL connections and serves them.
type Server struct {
	cfg Config
	log *slog.Logger
	dom *domain.Domain
	// serverID is the node's id in PD's SQL node registry (0: not
	// registered); connection ids carry it (connid.go, globalkill.go).
	serverID atomic.Uint64
	ids      connIDs // under mu

	ready chan struct{}
	// defaultDB is closed once database "test" exists (CreateDefaultDB).
	defaultDB chan struct{}
	addr      net.Addr
	mu        sync.Mutex
	conns     map[*clientConn]struct{}
	byID      map[uint64]*clientConn // the same connections by id
	wg        sync.WaitGroup
	stopping  bool

	sha2Cache *auth.SHA2Cache
	rsaMu     sync.Mutex // guards rsa; held while a key is generated
	rsa       *auth.RSAKey
	slow      *SlowLog
	summary   *stmtSummary
	digests   digestCache
	// traces are the last kept traces; slowRing the last slow log
	// entries (the /dashboard's, whether or not the log has a file).
	traces   *trace.Ring[trace.Trace]
	slowRing *trace.Ring[SlowEntry]
	// peers calls the other nodes' InternalHandler; guard protects ours.
	peers *http.Client
	guard *security.Guard
}

// Ring sizes of the kept traces and slow queries a node remembers.
const (
	keptTraces  = 256
	recentSlows = 64
)

// New validates cfg and returns a Server; call Run to serve.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("server: Config.Store is required")
	}
	if cfg.Users == nil {
		cfg.Users = map[string]string{"root": ""}
	}
	if cfg.AuthPlugin == "" {
		cfg.AuthPlugin = auth.NativePassword
	}
	if cfg.RequireSecureTransport && cfg.TLS == nil {
		return nil, errors.New("server: RequireSecureTransport needs a TLS configuration")
	}
	if _, err := auth.HashPassword(cfg.AuthPlugin, ""); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = 10 * time.Second
	}
	if cfg.HandshakeTimeout == 0 {
		cfg.HandshakeTimeout = 10 * time.Second
	}
	if cfg.MaxPacket == 0 {
		cfg.MaxPacket = 64 << 20
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:4000"
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	slow, err := OpenSlowLog(cfg.SlowQueryFile, cfg.SlowThreshold, log.With("component", "sql"))
	if err != nil {
		return nil, fmt.Errorf("server: %w (--slow-query-file names a file in a writable directory)", err)
	}
	dom := domain.New(domain.Config{Store: cfg.Store, Addr: cfg.Addr, SchemaLease: cfg.SchemaLease, StatsLease: cfg.StatsLease,
		NoAutoAnalyze: cfg.NoAutoAnalyze, PessimisticAutoCommit: cfg.PessimisticAutoCommit, Logger: log,
		Privilege: privilege.Config{DefaultPlugin: cfg.AuthPlugin, Bootstrap: cfg.Users, SkipGrantTables: cfg.SkipGrantTables,
			PollInterval: cfg.PrivilegePollInterval, Logger: log}})
	return &Server{
		cfg:       cfg,
		log:       log.With("component", "sql"),
		dom:       dom,
		ready:     make(chan struct{}),
		defaultDB: make(chan struct{}),
		conns:     map[*clientConn]struct{}{},
		byID:      map[uint64]*clientConn{},
		sha2Cache: auth.NewSHA2Cache(),
		rsa:       cfg.RSAKey,
		slow:      slow,
		summary:   newStmtSummary(time.Now()),
		traces:    trace.NewRing[trace.Trace](keptTraces),
		slowRing:  trace.NewRing[SlowEntry](recentSlows),
		peers:     cfg.Security.HTTPClient(peerTimeout),
		guard:     newGuard(cfg.Security),
	}, nil
}

// caps is the capability set the greeting advertises.
func (s *Server) caps() uint32 {
	if s.cfg.TLS != nil {
		return serverCaps | mysql.ClientSSL
	}
	return serverCaps
}

// rsaKey returns the node's RSA key, generating it on first use.
func (s *Server) rsaKey() (*auth.RSAKey, error) {
	s.rsaMu.Lock()
	defer s.rsaMu.Unlock()
	if s.rsa == nil {
		k, err := auth.LoadOrCreateRSAKey("")
		if err != nil {
			return nil, err
		}
		s.rsa = k
	}
	return s.rsa, nil
}

// StatementsSummary implements session.StmtSummaries.
func (s *Server) StatementsSummary(history bool) []session.StmtSummary {
	return s.summary.rows(time.Now(), history)
}

// SlowQueries implements session.SlowQueryLog.
func (s *Server) SlowQueries() ([]session.SlowQuery, error) { return s.slow.Entries() }

// List implements session.Processes: this node's connections.
func (s *Server) List() []session.ProcessInfo {
	s.mu.Lock()
	conns := make([]*clientConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	now := time.Now()
	out := make([]session.ProcessInfo, 0, len(conns))
	for _, c := range conns {
		out = append(out, c.process(now))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// killLocal runs r against this node's connection r.ID: KILL QUERY
// cancels its running statement (it fails with 1317 when it next waits
// for the cluster; an idle connection is left alone), KILL CONNECTION
// cancels it and closes the connection. 1094 when there is no such
// connection, 1095 when r.User does not own it and r.Super is false.
func (s *Server) killLocal(r session.KillRequest) error {
	s.mu.Lock()
	c := s.byID[r.ID]
	s.mu.Unlock()
	if c == nil {
		return errUnknownThread(r.ID)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shown.user != r.User && !r.Super {
		return errno.New(1095, "You are not owner of thread %d", r.ID)
	}
	if c.busy && c.stmtCancel != nil {
		c.stmtCancel()
	}
	if !r.Query {
		c.closing = true
		_ = c.netConn.Close()
	}
	return nil
}

func errUnknownThread(id uint64) error { return errno.New(1094, "Unknown thread id: %d", id) }

// Privileges is the node's privilege manager.
func (s *Server) Privileges() *privilege.Manager { return s.dom.Privileges() }

// Addr returns the listen address once Ready is closed.
func (s *Server) Addr() net.Addr { return s.addr }

// Ready is closed once the server listens.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// DefaultDBReady is closed once database "test" exists; it never closes
// when Config.CreateDefaultDB is false.
func (s *Server) DefaultDBReady() <-chan struct{} { return s.defaultDB }

// Run listens and serves until ctx is cancelled, then shuts down gracefully
// (see the package doc) and returns nil; or returns a listen error.
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("server: listen %s: %w", s.cfg.Addr, err)
	}
	s.addr = ln.Addr()
	if s.cfg.Registry != nil {
		lease, err := s.register(ctx)
		if err != nil {
			_ = ln.Close()
			return err
		}
		regDone := make(chan int64, 1)
		go func() { regDone <- s.keepRegistered(ctx, lease) }()
		defer func() { s.unregister(ctx, <-regDone) }() // after every connection ended
	}
	defer s.slow.Close() // after every connection ended
	// Statements run under stmtCtx, which outlives ctx by ShutdownTimeout.
	stmtCtx, cancelStmts := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelStmts()
	acceptDone := make(chan struct{})
	go func() {
		defer close(acceptDone)
		for {
			nc, err := ln.Accept()
			if err != nil {
				if ctx.Err() == nil {
					s.log.Error("accept failed; no longer accepting connections", "err", err)
				}
				return
			}
			c := s.newConn(nc)
			if c == nil {
				continue
			}
			go c.serve(stmtCtx)
		}
	}()
	// The domain's background work (schema version and privilege pollers,
	// the DDL worker, statistics) runs until ctx ends; Run returns after
	// it. It starts before Ready: tests count goroutines from there.
	waitDomain := s.dom.Start(ctx)
	watchDone := make(chan struct{})
	go func() { defer close(watchDone); s.watchDisconnects(ctx) }() // clients gone mid-statement
	defer func() { waitDomain(); <-watchDone }()
	// Ready once the accept loop runs (tests count goroutines from here).
	s.log.Info("sql ready", "addr", s.addr.String())
	close(s.ready)
	if s.cfg.CreateDefaultDB {
		go s.ensureDefaultDB(ctx)
	}
	if s.cfg.SkipGrantTables {
		s.log.Warn("--skip-grant-tables: every login is accepted without a password and has every privilege")
	}
	<-ctx.Done()
	_ = ln.Close()
	<-acceptDone
	s.mu.Lock()
	s.stopping = true
	for c := range s.conns {
		c.shutdown()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(s.cfg.ShutdownTimeout):
		s.log.Warn("shutdown timeout: cancelling running statements", "timeout", s.cfg.ShutdownTimeout)
		cancelStmts()
		s.mu.Lock()
		for c := range s.conns {
			_ = c.netConn.Close()
		}
		s.mu.Unlock()
		<-done
	}
	s.log.Info("sql stopped")
	return nil
}

func (s *Server) newConn(nc net.Conn) *clientConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		_ = nc.Close()
		return nil
	}
	if s.cfg.MaxConnections > 0 && len(s.conns) >= s.cfg.MaxConnections {
		refusedConnections.Inc()
		refuseConn(nc)
		return nil
	}
	sid := s.serverID.Load()
	local, ok := s.ids.next(func(l uint64) bool { return s.byID[makeConnID(sid, l)] != nil })
	if !ok { // 2^20-1 open connections
		refusedConnections.Inc()
		refuseConn(nc)
		return nil
	}
	c := &clientConn{srv: s, id: makeConnID(sid, local), pkt: newPacketIO(nc, s.cfg.MaxPacket), netConn: nc}
	c.log = s.log.With("conn", c.id, "remote", nc.RemoteAddr().String())
	s.conns[c] = struct{}{}
	s.byID[c.id] = c
	s.wg.Add(1)
	connectionsGauge.Inc()
	return c
}

// refuseConn answers a connection over the limit with ERROR 1040 in place
// of the greeting (as MySQL does; drivers read it as the connect error) and
// closes it. The packet fits the socket buffer of a fresh connection, so the
// write does not block the accept loop; the deadline bounds it anyway.
func refuseConn(nc net.Conn) {
	_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
	p := newPacketIO(nc, 0)
	b := errPacket(nil, &errno.Error{Code: errConCount, State: "08004", Msg: "Too many connections"})
	if p.writePacket(b) == nil {
		_ = p.flush()
	}
	countError(errConCount)
	_ = nc.Close()
}

func (s *Server) removeConn(c *clientConn) {
	s.mu.Lock()
	delete(s.conns, c)
	if s.byID[c.id] == c {
		delete(s.byID, c.id)
	}
	s.mu.Unlock()
	connectionsGauge.Dec()
	s.wg.Done()
}

var processStart = time.Now()

func (s *Server) startTime() time.Time { return processStart }

func (s *Server) connCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// ensureDefaultDB creates database "test" if missing, retrying while the
// cluster comes up.
func (s *Server) ensureDefaultDB(ctx context.Context) {
	wait := 100 * time.Millisecond
	for {
		err := s.dom.Catalog().CreateDB(ctx, &model.DBInfo{Name: "test"}, true, nil)
		if err == nil {
			close(s.defaultDB)
			return
		}
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("default database test not created yet; retrying", "err", err, "retry_in", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, 5*time.Second)
	}
}
