// Command sqlnode runs a stateless Strata SQL node: the MySQL protocol
// server (sql/server) backed by PD (timestamps, ids, routing) and the KV
// client, plus the HTTP status endpoints (/status, /metrics, /debug/pprof,
// /dashboard).
//
// Configuration comes from flags, optionally on top of a TOML file given with
// --config (keys are the flag names; unknown keys and wrong types are
// rejected).
//
// SIGINT/SIGTERM: stop accepting, close idle connections, let running
// statements finish (bounded by --shutdown-timeout), exit. A second signal
// exits at once.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/stratadb/strata/config"
	"github.com/stratadb/strata/internal/security"
	"github.com/stratadb/strata/kvclient"
	"github.com/stratadb/strata/kvclient/txn"
	"github.com/stratadb/strata/pd/pdclient"
	"github.com/stratadb/strata/sql/auth"
	"github.com/stratadb/strata/sql/catalog"
	"github.com/stratadb/strata/sql/executor/spill"
	"github.com/stratadb/strata/sql/gcleader"
	"github.com/stratadb/strata/sql/memory"
	"github.com/stratadb/strata/sql/server"
	"github.com/stratadb/strata/sql/trace"
	"github.com/stratadb/strata/status"
)

// Config is the SQL node configuration (TOML keys; flags override).
type Config struct {
	PD              string        `toml:"pd"`
	Addr            string        `toml:"addr"`
	StatusAddr      string        `toml:"status-addr"`
	RootPassword    string        `toml:"root-password"`
	ShutdownTimeout time.Duration `toml:"shutdown-timeout"`
	MaxConnections  int           `toml:"max-connections"`
	ConnectTimeout  time.Duration `toml:"connect-timeout"`
	// TLS and authentication.
	TLS                    bool   `toml:"tls"`
	TLSCert                string `toml:"tls-cert"`
	TLSKey                 string `toml:"tls-key"`
	DataDir                string `toml:"data-dir"`
	RequireSecureTransport bool   `toml:"require-secure-transport"`
	DefaultAuthPlugin      string `toml:"default-auth-plugin"`
	SkipGrantTables        bool   `toml:"skip-grant-tables"`
	LogLevel               string `toml:"log-level"`
	// TSOClientRPCMode is TiDB's tidb_tso_client_rpc_mode: "default" or
	// "parallel" (pdclient.TSOMode).
	TSOClientRPCMode string `toml:"tso-client-rpc-mode"`
	// TxnTotalSizeLimit bounds one transaction's write buffer (TiDB's
	// performance.txn-total-size-limit); past it, ERROR 8004.
	TxnTotalSizeLimit int `toml:"txn-total-size-limit"`
	// PessimisticAutoCommit is TiDB's pessimistic-txn.pessimistic-auto-commit
	// (domain.Config.PessimisticAutoCommit).
	PessimisticAutoCommit bool `toml:"pessimistic-auto-commit"`
	// SchemaLease is TiDB's lease: see catalog.DefaultLease.
	SchemaLease time.Duration `toml:"schema-lease"`
	// GCMinLifeTime bounds tidb_gc_life_time from below (gcleader's
	// DefaultMinLifeTime; tests lower it).
	GCMinLifeTime time.Duration `toml:"gc-min-life-time"`
	// SlowQueryFile and SlowThreshold: see sql/server Config.
	SlowQueryFile string        `toml:"slow-query-file"`
	SlowThreshold time.Duration `toml:"slow-threshold"`
	// TmpStoragePath is where operators spill past tidb_mem_quota_query
	// (sql/executor/spill; "": os.TempDir()).
	TmpStoragePath string `toml:"tmp-storage-path"`
	// ServerMemoryLimit is tidb_server_memory_limit's initial value
	// (sql/memory.ParseServerLimit).
	ServerMemoryLimit string `toml:"server-memory-limit"`
	// RunAutoAnalyze: this node runs auto-analyze while it is the DDL
	// owner (TiDB's performance.run-auto-analyze).
	RunAutoAnalyze bool `toml:"run-auto-analyze"`
	// EnableTrace and TraceKeepThreshold: tail-based trace sampling's
	// start values (sql/trace; SET GLOBAL strata_enable_trace and
	// strata_trace_keep_threshold change them at run time).
	EnableTrace        bool          `toml:"enable-trace"`
	TraceKeepThreshold time.Duration `toml:"trace-keep-threshold"`
	// AdvertiseStatusAddr is the status address other SQL nodes reach
	// this one at (global KILL, CLUSTER_PROCESSLIST); empty: the bound
	// status address, an unspecified host (0.0.0.0) replaced by the host
	// name.
	AdvertiseStatusAddr string `toml:"advertise-status-addr"`
	// Cluster TLS (--cluster-ssl-*; docs/operations.md "Cluster TLS") for
	// the connections to PD and the stores (the MySQL side is --tls).
	security.Config
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "sqlnode:", err)
		os.Exit(1)
	}
}

// parseFlags applies defaults, then the --config TOML file, then flags.
func parseFlags(args []string) (Config, error) {
	cfg := Config{PD: "127.0.0.1:2379", Addr: "127.0.0.1:4000", StatusAddr: "127.0.0.1:10080", ShutdownTimeout: 10 * time.Second, LogLevel: "info", TSOClientRPCMode: "default",
		MaxConnections: 1000, ConnectTimeout: 10 * time.Second, SchemaLease: catalog.DefaultLease, GCMinLifeTime: gcleader.DefaultMinLifeTime, SlowThreshold: server.DefaultSlowThreshold, TxnTotalSizeLimit: 100 << 20, TLS: true, DefaultAuthPlugin: auth.NativePassword,
		ServerMemoryLimit: fmt.Sprintf("%d%%", memory.DefaultServerLimitPercent), RunAutoAnalyze: true,
		EnableTrace: true, TraceKeepThreshold: trace.DefaultKeepThreshold}
	fs := newFlagSet(&cfg)
	if err := config.Parse(fs, args, &cfg); err != nil {
		return cfg, err
	}
	if cfg.ShutdownTimeout <= 0 {
		return cfg, fmt.Errorf("--shutdown-timeout must be > 0, got %v", cfg.ShutdownTimeout)
	}
	if _, err := pdclient.ParseTSOMode(cfg.TSOClientRPCMode); err != nil {
		return cfg, fmt.Errorf("--tso-client-rpc-mode: %w", err)
	}
	if cfg.MaxConnections < 0 {
		return cfg, fmt.Errorf("--max-connections must be >= 0 (0: no limit), got %d", cfg.MaxConnections)
	}
	if cfg.TxnTotalSizeLimit < 1<<20 {
		return cfg, fmt.Errorf("--txn-total-size-limit must be at least 1 MiB, got %d", cfg.TxnTotalSizeLimit)
	}
	if cfg.SchemaLease < 10*time.Millisecond {
		return cfg, fmt.Errorf("--schema-lease must be at least 10ms, got %v", cfg.SchemaLease)
	}
	if cfg.ConnectTimeout <= 0 {
		return cfg, fmt.Errorf("--connect-timeout must be > 0, got %v", cfg.ConnectTimeout)
	}
	if cfg.DefaultAuthPlugin != auth.NativePassword && cfg.DefaultAuthPlugin != auth.CachingSHA2Password {
		return cfg, fmt.Errorf("--default-auth-plugin must be %s or %s, got %q", auth.NativePassword, auth.CachingSHA2Password, cfg.DefaultAuthPlugin)
	}
	if cfg.RequireSecureTransport && !cfg.TLS {
		return cfg, errors.New("--require-secure-transport needs --tls")
	}
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return cfg, errors.New("--tls-cert and --tls-key go together")
	}
	if _, ok := memory.ParseServerLimit(cfg.ServerMemoryLimit, 1<<30); !ok {
		return cfg, fmt.Errorf("--server-memory-limit must be 0, a size such as 4GB or a percentage such as 80%%, got %q", cfg.ServerMemoryLimit)
	}
	return cfg, nil
}

func run(args []string) error {
	cfg, err := parseFlags(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if _, err := config.SetupLogger(cfg.LogLevel); err != nil {
		return err
	}

	ctx, stop := config.ShutdownContext()
	defer stop()

	if err := spill.SetRoot(cfg.TmpStoragePath); err != nil {
		return err
	}
	defer spill.Cleanup()
	memory.NodeLimiter.Set(cfg.ServerMemoryLimit) // validated by parseFlags
	trace.SetEnabled(cfg.EnableTrace)
	trace.SetKeepThreshold(cfg.TraceKeepThreshold)
	go memory.NodeLimiter.Run(ctx)

	sec, err := security.New(cfg.Config, "sql")
	if err != nil {
		return err
	}
	// /dashboard and the peer endpoints (sql/server) are served once the
	// server exists; with cluster TLS the status port is HTTPS, as PD's.
	dashboard, internal := new(status.Deferred), new(status.Deferred)
	statusBound, err := status.ServeTLS(ctx, cfg.StatusAddr, "sql", sec,
		status.Route{Pattern: "/dashboard", Handler: dashboard}, status.Route{Pattern: "/dashboard/", Handler: dashboard},
		status.Route{Pattern: server.InternalPrefix, Handler: internal})
	if err != nil {
		return err
	}
	advertise, err := advertiseAddr(cfg.AdvertiseStatusAddr, statusBound.String())
	if err != nil {
		return err
	}
	endpoints := config.SplitList(cfg.PD)
	slog.Info("connecting to pd", "pd", endpoints)
	tsoMode, _ := pdclient.ParseTSOMode(cfg.TSOClientRPCMode) // validated by parseFlags
	pd, err := pdclient.New(ctx, endpoints, pdclient.WithTSOMode(tsoMode), pdclient.WithSecurity(sec))
	if err != nil {
		return fmt.Errorf("connect to pd %v: %w", endpoints, err)
	}
	defer pd.Close()
	kv := kvclient.New(pd, kvclient.Config{Security: sec})
	defer kv.Close()

	txnClient := txn.NewClient(kv, pd, txn.Config{MaxTxnSize: cfg.TxnTotalSizeLimit})
	// Every SQL node takes part in the GC leader election; the leader runs
	// GC rounds (sql/gcleader).
	host, _ := os.Hostname()
	gcl := gcleader.New(pd, kv, txnClient.Resolver(), gcleader.Config{NodeID: fmt.Sprintf("%s/%s/%d", host, cfg.Addr, os.Getpid()),
		MinStartTS: txnClient.MinStartTS, MinLifeTime: cfg.GCMinLifeTime, Meta: txn.NewStorage(pd, kv, txnClient)})
	gcCtx, gcStop := context.WithCancel(ctx)
	gcDone := make(chan struct{})
	go func() { defer close(gcDone); gcl.Run(gcCtx) }()
	defer func() { gcStop(); <-gcDone }()

	tlsCfg, rsaKey, err := tlsAndKeys(cfg)
	if err != nil {
		return err
	}
	srv, err := server.New(server.Config{
		TLS:                    tlsCfg,
		RSAKey:                 rsaKey,
		RequireSecureTransport: cfg.RequireSecureTransport,
		AuthPlugin:             cfg.DefaultAuthPlugin,
		Addr:                   cfg.Addr,
		Store:                  txn.NewStorage(pd, kv, txnClient),
		Users:                  map[string]string{"root": cfg.RootPassword},
		SkipGrantTables:        cfg.SkipGrantTables,
		ShutdownTimeout:        cfg.ShutdownTimeout,
		MaxConnections:         cfg.MaxConnections,
		HandshakeTimeout:       cfg.ConnectTimeout,
		CreateDefaultDB:        true,
		SchemaLease:            cfg.SchemaLease,
		SlowQueryFile:          cfg.SlowQueryFile,
		SlowThreshold:          cfg.SlowThreshold,
		NoAutoAnalyze:          !cfg.RunAutoAnalyze,
		PessimisticAutoCommit:  cfg.PessimisticAutoCommit,
		Registry:               pd,
		StatusAddr:             advertise,
		Security:               sec,
	})
	if err != nil {
		return err
	}
	dashboard.Set(srv.DashboardHandler())
	internal.Set(srv.InternalHandler())
	slog.Info("sql node starting", "addr", cfg.Addr, "status_addr", statusBound.String(), "advertise_status_addr", advertise, "pd", endpoints)
	return srv.Run(ctx)
}

// advertiseAddr is the status address published to the other SQL nodes.
func advertiseAddr(flagged, bound string) (string, error) {
	if flagged != "" {
		if _, _, err := net.SplitHostPort(flagged); err != nil {
			return "", fmt.Errorf("--advertise-status-addr must be host:port: %w", err)
		}
		return flagged, nil
	}
	host, port, err := net.SplitHostPort(bound)
	if err != nil {
		return "", err
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if host, err = os.Hostname(); err != nil {
			return "", fmt.Errorf("status address %s binds every interface and the host name is unknown (%w); set --advertise-status-addr", bound, err)
		}
	}
	return net.JoinHostPort(host, port), nil
}

// tlsAndKeys loads (or, on first start, creates and persists in
// --data-dir) the node's TLS certificate and RSA key.
func tlsAndKeys(cfg Config) (*tls.Config, *auth.RSAKey, error) {
	var rsaKey *auth.RSAKey
	if cfg.DataDir != "" {
		k, err := auth.LoadOrCreateRSAKey(cfg.DataDir)
		if err != nil {
			return nil, nil, err
		}
		rsaKey = k
	}
	if !cfg.TLS {
		return nil, rsaKey, nil
	}
	cert, generated, err := auth.LoadOrCreateCert(cfg.TLSCert, cfg.TLSKey, cfg.DataDir)
	if err != nil {
		return nil, nil, err
	}
	if generated {
		where := "in memory only (no --data-dir)"
		if cfg.DataDir != "" {
			where = "in " + cfg.DataDir
		}
		slog.Warn("using a generated self-signed TLS certificate; set --tls-cert/--tls-key for one clients can verify", "stored", where)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, rsaKey, nil
}

// newFlagSet binds one flag per configuration key (TOML key = flag name).
func newFlagSet(cfg *Config) *flag.FlagSet {
	fs := flag.NewFlagSet("sqlnode", flag.ContinueOnError)
	fs.StringVar(&cfg.PD, "pd", cfg.PD, "comma-separated PD addresses")
	fs.StringVar(&cfg.Addr, "addr", cfg.Addr, "MySQL protocol listen address")
	fs.StringVar(&cfg.StatusAddr, "status-addr", cfg.StatusAddr, "HTTP status address (/status, /metrics, /debug/pprof, /dashboard; HTTPS with cluster TLS)")
	fs.StringVar(&cfg.AdvertiseStatusAddr, "advertise-status-addr", cfg.AdvertiseStatusAddr, "status address other SQL nodes reach this one at for global KILL and CLUSTER_PROCESSLIST (empty: the bound --status-addr, 0.0.0.0 replaced by the host name)")
	fs.StringVar(&cfg.RootPassword, "root-password", cfg.RootPassword, "initial password of root@'%' when this node creates the cluster's privilege tables (first start of a fresh cluster; empty: no password); afterwards accounts live in the cluster (ALTER USER)")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", cfg.ShutdownTimeout, "how long running statements may finish on SIGTERM")
	fs.IntVar(&cfg.MaxConnections, "max-connections", cfg.MaxConnections, "client connections this node accepts at once; one more gets ERROR 1040 (0: no limit)")
	fs.DurationVar(&cfg.ConnectTimeout, "connect-timeout", cfg.ConnectTimeout, "a client that has not logged in by then is disconnected (MySQL's connect_timeout)")
	fs.BoolVar(&cfg.TLS, "tls", cfg.TLS, "offer TLS to clients (certificate from --tls-cert/--tls-key, else self-signed)")
	fs.StringVar(&cfg.TLSCert, "tls-cert", cfg.TLSCert, "PEM file of the server certificate (chain)")
	fs.StringVar(&cfg.TLSKey, "tls-key", cfg.TLSKey, "PEM file of the server certificate's private key")
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory for the generated TLS certificate and RSA key, kept across restarts (empty: regenerated in memory at each start)")
	fs.BoolVar(&cfg.RequireSecureTransport, "require-secure-transport", cfg.RequireSecureTransport, "refuse connections without TLS (ERROR 3159)")
	fs.StringVar(&cfg.DefaultAuthPlugin, "default-auth-plugin", cfg.DefaultAuthPlugin, "authentication plugin of root on a fresh cluster and of CREATE USER without IDENTIFIED WITH: mysql_native_password or caching_sha2_password")
	fs.BoolVar(&cfg.SkipGrantTables, "skip-grant-tables", cfg.SkipGrantTables, "recovery only: accept every login without a password and skip every privilege check (docs/operations.md)")
	fs.StringVar(&cfg.LogLevel, "log-level", cfg.LogLevel, "log level: debug, info, warn, error")
	fs.StringVar(&cfg.TSOClientRPCMode, "tso-client-rpc-mode", cfg.TSOClientRPCMode, `how timestamps are fetched from PD: "default" (one batch in flight) or "parallel" (several streams, one batch in flight each; for network-bound PD round trips)`)
	fs.IntVar(&cfg.TxnTotalSizeLimit, "txn-total-size-limit", cfg.TxnTotalSizeLimit, "bytes of keys and values one transaction may buffer; past it the statement fails with ERROR 8004")
	fs.BoolVar(&cfg.PessimisticAutoCommit, "pessimistic-auto-commit", cfg.PessimisticAutoCommit, "in pessimistic mode, an autocommit INSERT / UPDATE / DELETE locks its rows before committing, as in an explicit transaction (TiDB's pessimistic-auto-commit); off, it first runs optimistically with one-phase commit and runs again pessimistically only if it met a lock or a conflict")
	fs.StringVar(&cfg.TmpStoragePath, "tmp-storage-path", cfg.TmpStoragePath, "directory under which sorts, hash joins and hash aggregations over tidb_mem_quota_query spill to disk (a strata-spill-<pid> directory; empty: the system temp directory)")
	fs.BoolVar(&cfg.EnableTrace, "enable-trace", cfg.EnableTrace, "record every statement's spans and keep the traces of the slow ones (slower than their digest's p95 or --trace-keep-threshold; SET GLOBAL strata_enable_trace)")
	fs.DurationVar(&cfg.TraceKeepThreshold, "trace-keep-threshold", cfg.TraceKeepThreshold, "statements at least this long keep their trace (0: only those slower than their digest's p95 and slow log entries; SET GLOBAL strata_trace_keep_threshold)")
	fs.BoolVar(&cfg.RunAutoAnalyze, "run-auto-analyze", cfg.RunAutoAnalyze, "analyze tables whose rows changed enough (tidb_auto_analyze_ratio) while this node is the DDL owner")
	fs.StringVar(&cfg.ServerMemoryLimit, "server-memory-limit", cfg.ServerMemoryLimit, "initial tidb_server_memory_limit: past it the statement using the most memory is cancelled (ERROR 8176); 0, a size (4GB) or a percentage of RAM / the cgroup limit (80%)")
	fs.StringVar(&cfg.SlowQueryFile, "slow-query-file", cfg.SlowQueryFile, "file the slow query log is written to as JSON lines, rotated at 64 MiB with 4 old files kept (empty: slow queries go to the process log)")
	fs.DurationVar(&cfg.SlowThreshold, "slow-threshold", cfg.SlowThreshold, "statements taking this long or longer go to the slow query log (TiDB's tidb_slow_log_threshold; negative: none)")
	cfg.Config.RegisterFlags(fs)
	fs.DurationVar(&cfg.GCMinLifeTime, "gc-min-life-time", cfg.GCMinLifeTime, "the smallest GC life time this node uses as GC leader, whatever tidb_gc_life_time says (TiDB's 10m; lower it only for tests)")
	fs.DurationVar(&cfg.SchemaLease, "schema-lease", cfg.SchemaLease, "how long this node trusts its schema without confirming the cluster's schema version; a schema change waits 2 leases for every node to load it")
	return fs
}
