// Command pd runs one placement-driver member: embedded etcd for metadata and
// leader election, the PD gRPC service (TSO, ids, stores, regions) and the
// HTTP status endpoints (/status, /metrics, /debug/pprof).
//
// Configuration comes from flags, optionally on top of a TOML file given with
// --config (keys are the flag names; unknown keys and wrong types are
// rejected). SIGINT/SIGTERM shut down gracefully: a leader hands etcd
// leadership over and resigns at once, so another member serves within
// milliseconds; a second signal exits at once.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/stratadb/strata/config"
	"github.com/stratadb/strata/internal/security"
	"github.com/stratadb/strata/pd"
	"github.com/stratadb/strata/pd/schedule"
	"github.com/stratadb/strata/status"
)

// fileConfig is the flag / TOML configuration of a PD member.
type fileConfig struct {
	Name                string `toml:"name"`
	DataDir             string `toml:"data-dir"`
	Addr                string `toml:"addr"`
	AdvertiseAddr       string `toml:"advertise-addr"`
	PeerURL             string `toml:"peer-url"`
	EtcdClientURL       string `toml:"etcd-client-url"`
	ListenPeerURL       string `toml:"listen-peer-url"`
	ListenEtcdClientURL string `toml:"listen-etcd-client-url"`
	StatusAddr          string `toml:"status-addr"`
	AdvertiseStatusAddr string `toml:"advertise-status-addr"`
	InitialCluster      string `toml:"initial-cluster"`
	InitialClusterState string `toml:"initial-cluster-state"`
	Replicas            int    `toml:"replicas"`
	LogLevel            string `toml:"log-level"`
	EtcdLogLevel        string `toml:"etcd-log-level"`
	// Scheduling defaults (the HTTP API's POST /pd/api/v1/config overrides
	// them and persists the result).
	MaxStoreDownTime time.Duration `toml:"max-store-down-time"`
	StoreLimit       float64       `toml:"store-limit"`
	ScheduleInterval time.Duration `toml:"schedule-interval"`
	// Cluster TLS (--cluster-ssl-*; docs/operations.md "Cluster TLS"):
	// gRPC, the embedded etcd (its URLs must then be https) and the HTTP
	// API.
	security.Config
	// HTTPTokenFile: the bearer token state-changing HTTP API requests may
	// carry instead of a client certificate.
	HTTPTokenFile string `toml:"http-token-file"`
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "pd:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (fileConfig, error) {
	cfg := fileConfig{
		Name: "pd", DataDir: "data/pd", Addr: "127.0.0.1:2379",
		PeerURL: "http://127.0.0.1:2380", EtcdClientURL: "http://127.0.0.1:2381",
		StatusAddr: "127.0.0.1:2382", InitialClusterState: "new", Replicas: 3,
		LogLevel: "info", EtcdLogLevel: "warn",
	}
	fs := newFlagSet(&cfg)
	if err := config.Parse(fs, args, &cfg); err != nil {
		return cfg, err
	}
	if cfg.Replicas < 1 {
		return cfg, fmt.Errorf("--replicas must be >= 1, got %d", cfg.Replicas)
	}
	return cfg, nil
}

func run(args []string) error {
	fc, err := parseFlags(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if _, err := config.SetupLogger(fc.LogLevel); err != nil {
		return err
	}

	sec, err := security.New(fc.Config, "pd")
	if err != nil {
		return err
	}
	srv, err := pd.NewServer(pd.Config{
		Security: sec, HTTPTokenFile: fc.HTTPTokenFile,
		Name: fc.Name, DataDir: fc.DataDir, Addr: fc.Addr, AdvertiseAddr: fc.AdvertiseAddr,
		PeerURL: fc.PeerURL, ClientURL: fc.EtcdClientURL,
		ListenPeerURL: fc.ListenPeerURL, ListenClientURL: fc.ListenEtcdClientURL,
		InitialCluster: fc.InitialCluster, InitialClusterState: fc.InitialClusterState,
		Replicas: fc.Replicas, EtcdLogLevel: fc.EtcdLogLevel,
		Schedule: schedule.Config{MaxStoreDownTime: schedule.Duration(fc.MaxStoreDownTime), StoreLimit: fc.StoreLimit,
			ScheduleInterval: schedule.Duration(fc.ScheduleInterval)},
	})
	if err != nil {
		return err
	}
	cfg := srv.Config() // defaults filled in

	ctx, stop := config.ShutdownContext()
	defer stop()
	statusBound, err := status.ServeTLS(ctx, fc.StatusAddr, "pd", sec, status.Route{Pattern: pd.APIPrefix, Handler: srv.APIHandler()})
	if err != nil {
		return err
	}
	// Followers forward API requests to the leader's published address.
	adv := fc.AdvertiseStatusAddr
	if adv == "" {
		adv = statusBound.String()
	}
	srv.SetStatusAddr(adv)
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	select {
	case <-srv.Ready():
		slog.Info("pd ready", "name", cfg.Name, "addr", srv.Addr().String(), "peer_url", cfg.PeerURL,
			"etcd_client_url", cfg.ClientURL, "status_addr", statusBound.String(), "data_dir", cfg.DataDir,
			"initial_cluster", cfg.InitialCluster, "replicas", cfg.Replicas)
	case err := <-done:
		return err
	}
	if err := <-done; err != nil {
		return err
	}
	slog.Info("pd exited")
	return nil
}

// newFlagSet binds one flag per configuration key (TOML key = flag name).
func newFlagSet(cfg *fileConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("pd", flag.ContinueOnError)
	fs.StringVar(&cfg.Name, "name", cfg.Name, "member name, unique in the PD cluster")
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory for the embedded etcd data")
	fs.StringVar(&cfg.Addr, "addr", cfg.Addr, "PD gRPC listen address")
	fs.StringVar(&cfg.AdvertiseAddr, "advertise-addr", cfg.AdvertiseAddr, "PD gRPC address clients dial (default: the bound --addr)")
	fs.StringVar(&cfg.PeerURL, "peer-url", cfg.PeerURL, "etcd peer URL advertised to other members (also listened on unless --listen-peer-url)")
	fs.StringVar(&cfg.EtcdClientURL, "etcd-client-url", cfg.EtcdClientURL, "etcd client URL advertised (also listened on unless --listen-etcd-client-url)")
	fs.StringVar(&cfg.ListenPeerURL, "listen-peer-url", cfg.ListenPeerURL, `etcd peer URL to bind, an IP address (e.g. "http://0.0.0.0:2380"; default: --peer-url)`)
	fs.StringVar(&cfg.ListenEtcdClientURL, "listen-etcd-client-url", cfg.ListenEtcdClientURL, "etcd client URL to bind, an IP address (default: --etcd-client-url)")
	fs.StringVar(&cfg.StatusAddr, "status-addr", cfg.StatusAddr, "HTTP status address (/status, /metrics, /debug/pprof)")
	fs.StringVar(&cfg.AdvertiseStatusAddr, "advertise-status-addr", cfg.AdvertiseStatusAddr, "HTTP API address other PD members forward leader-only requests to (default: the bound --status-addr)")
	fs.StringVar(&cfg.InitialCluster, "initial-cluster", cfg.InitialCluster, `etcd initial cluster "name=peer-url,..." (default "<name>=<peer-url>")`)
	fs.StringVar(&cfg.InitialClusterState, "initial-cluster-state", cfg.InitialClusterState, `etcd initial cluster state: "new" or "existing"`)
	fs.IntVar(&cfg.Replicas, "replicas", cfg.Replicas, "replicas of the first region; bootstrap waits for this many stores")
	fs.StringVar(&cfg.LogLevel, "log-level", cfg.LogLevel, "log level: debug, info, warn, error")
	fs.StringVar(&cfg.EtcdLogLevel, "etcd-log-level", cfg.EtcdLogLevel, "embedded etcd log level: debug, info, warn, error")
	fs.DurationVar(&cfg.MaxStoreDownTime, "max-store-down-time", cfg.MaxStoreDownTime, "a store without a heartbeat this long is Down and its replicas are rebuilt elsewhere (default 30m)")
	fs.Float64Var(&cfg.StoreLimit, "store-limit", cfg.StoreLimit, "peers added to (and removed from) one store per minute at most (default 15)")
	fs.DurationVar(&cfg.ScheduleInterval, "schedule-interval", cfg.ScheduleInterval, "how often checkers and schedulers run (default 1s)")
	cfg.Config.RegisterFlags(fs)
	fs.StringVar(&cfg.HTTPTokenFile, "http-token-file", cfg.HTTPTokenFile, "file holding the bearer token (\"Authorization: Bearer <token>\") the HTTP API's state-changing requests must carry unless they present a cluster client certificate (empty: no token; without cluster TLS the API then answers everyone)")
	return fs
}
