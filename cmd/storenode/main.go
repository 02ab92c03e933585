// Command storenode runs one Strata store node: Raft-replicated regions on
// Pebble, the Store gRPC service (KV, coprocessor, raft transport) and the
// HTTP status endpoints (/status, /metrics, /debug/pprof).
//
// Configuration comes from flags, optionally on top of a TOML file given with
// --config (keys are the flag names; unknown keys and wrong types are
// rejected). SIGINT/SIGTERM shut down gracefully: region leaders move to
// other stores first (bounded by --leader-transfer-timeout), then the store
// stops accepting requests and closes its engine.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/stratadb/strata/config"
	"github.com/stratadb/strata/internal/security"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/raftstore"
	"github.com/stratadb/strata/status"
	"github.com/stratadb/strata/store/server"
)

// fileConfig is the TOML/flag configuration of a store node.
type fileConfig struct {
	PD                string        `toml:"pd"`
	Addr              string        `toml:"addr"`
	AdvertiseAddr     string        `toml:"advertise-addr"`
	StatusAddr        string        `toml:"status-addr"`
	DataDir           string        `toml:"data-dir"`
	RaftTick          time.Duration `toml:"raft-tick"`
	ElectionTicks     int           `toml:"election-ticks"`
	HeartbeatTicks    int           `toml:"heartbeat-ticks"`
	HeartbeatInterval time.Duration `toml:"heartbeat-interval"`
	// LeaderTransferTimeout bounds the leader hand-off on SIGTERM; 0 skips it.
	LeaderTransferTimeout time.Duration `toml:"leader-transfer-timeout"`
	// Splits by size (TiKV's split-region-check-tick-interval,
	// region-split-size, region-split-keys); a negative interval disables.
	SplitCheckInterval time.Duration `toml:"split-check-interval"`
	// HibernateTicks: idle ticks after which a region's raft group stops
	// ticking (0: 2x election ticks; negative: never).
	HibernateTicks int `toml:"hibernate-ticks"`
	// DisableFastFailover keeps followers of a leader whose store refused
	// a connection waiting out the election timeout (raftstore/failover.go).
	DisableFastFailover bool   `toml:"disable-fast-failover"`
	RegionSplitSize     uint64 `toml:"region-split-size"`
	RegionSplitKeys     uint64 `toml:"region-split-keys"`
	// Raft log GC (raftstore.Config LogGCInterval, LogGCThreshold,
	// LogGCLagLimit; 0: defaults 3s, 50 entries, 10000 entries; a negative
	// interval disables it).
	RaftLogGCInterval  time.Duration `toml:"raft-log-gc-interval"`
	RaftLogGCThreshold int           `toml:"raft-log-gc-threshold"`
	RaftLogGCLagLimit  int64         `toml:"raft-log-gc-lag-limit"`
	SnapMaxBytesPerSec int64         `toml:"snap-max-write-bytes-per-sec"`
	LogLevel           string        `toml:"log-level"`
	// BlockCacheSize is the engine's block cache in bytes (0: 512 MiB).
	BlockCacheSize int64 `toml:"block-cache-size"`
	// Labels are the store's location labels, "zone=z1,host=h1".
	Labels string `toml:"labels"`
	// InMemoryPessimisticLock: see store/txn Config (on by default).
	InMemoryPessimisticLock bool `toml:"in-memory-pessimistic-lock"`
	// Cluster TLS (--cluster-ssl-*; docs/operations.md "Cluster TLS") for
	// the gRPC service and the connections to PD and other stores.
	security.Config
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "storenode:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	cfg, err := parseFlags(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	logger, err := config.SetupLogger(cfg.LogLevel)
	if err != nil {
		return err
	}

	ctx, stop := config.ShutdownContext()
	defer stop()
	// The store opens inside srv.Run; the consistency check answers 503
	// until then.
	var srvp atomic.Pointer[server.Server]
	consistency := raftstore.ConsistencyHandler(func() *raftstore.Store {
		if srv := srvp.Load(); srv != nil {
			return srv.Store()
		}
		return nil
	})
	statusBound, err := status.Serve(ctx, cfg.StatusAddr, "storenode", status.Route{Pattern: "/debug/consistency", Handler: consistency})
	if err != nil {
		return err
	}
	labels, err := parseLabels(cfg.Labels)
	if err != nil {
		return err
	}
	sec, err := security.New(cfg.Config, "store")
	if err != nil {
		return err
	}
	transfer := cfg.LeaderTransferTimeout
	if transfer == 0 {
		transfer = -1 // server.Config: negative skips the transfer
	}
	srv, err := server.New(server.Config{
		LeaderTransferTimeout: transfer,
		PDEndpoints:           config.SplitList(cfg.PD),
		Addr:                  cfg.Addr,
		AdvertiseAddr:         cfg.AdvertiseAddr,
		StatusAddr:            statusBound.String(),
		Labels:                labels,
		DataDir:               cfg.DataDir,
		RaftTick:              cfg.RaftTick,
		ElectionTicks:         cfg.ElectionTicks,
		HeartbeatTicks:        cfg.HeartbeatTicks,
		HeartbeatInterval:     cfg.HeartbeatInterval,
		SplitCheckInterval:    cfg.SplitCheckInterval,
		HibernateTicks:        cfg.HibernateTicks,
		DisableFastFailover:   cfg.DisableFastFailover,
		RegionSplitSize:       cfg.RegionSplitSize,
		RegionSplitKeys:       cfg.RegionSplitKeys,
		RaftLogGCInterval:     cfg.RaftLogGCInterval,
		RaftLogGCThreshold:    cfg.RaftLogGCThreshold,
		RaftLogGCLagLimit:     cfg.RaftLogGCLagLimit,
		SnapMaxBytesPerSec:    cfg.SnapMaxBytesPerSec,
		BlockCacheSize:        cfg.BlockCacheSize,
		Logger:                logger,
		Security:              sec,

		DisableInMemoryPessimisticLock: !cfg.InMemoryPessimisticLock,
	})
	if err != nil {
		return err
	}
	srvp.Store(srv)
	return srv.Run(ctx)
}

// parseFlags applies defaults, then the --config TOML file, then flags.
func parseFlags(args []string) (fileConfig, error) {
	cfg := fileConfig{
		PD: "127.0.0.1:2379", Addr: "127.0.0.1:20160", StatusAddr: "127.0.0.1:20180",
		DataDir: "data/store", RaftTick: 100 * time.Millisecond, ElectionTicks: 10, HeartbeatTicks: 2,
		HeartbeatInterval: time.Second, LeaderTransferTimeout: server.DefaultLeaderTransferTimeout, LogLevel: "info",
		SplitCheckInterval: 10 * time.Second, RegionSplitSize: 96 << 20, RegionSplitKeys: 960000,
		InMemoryPessimisticLock: true,
	}
	fs := newFlagSet(&cfg)
	if err := config.Parse(fs, args, &cfg); err != nil {
		return cfg, err
	}
	if cfg.AdvertiseAddr == "" {
		cfg.AdvertiseAddr = cfg.Addr
	}
	if cfg.LeaderTransferTimeout < 0 {
		return cfg, fmt.Errorf("--leader-transfer-timeout must be >= 0, got %v", cfg.LeaderTransferTimeout)
	}
	return cfg, nil
}

// newFlagSet binds one flag per configuration key (TOML key = flag name).
func newFlagSet(cfg *fileConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("storenode", flag.ContinueOnError)
	fs.StringVar(&cfg.PD, "pd", cfg.PD, "comma-separated PD gRPC addresses")
	fs.StringVar(&cfg.Addr, "addr", cfg.Addr, "gRPC listen address")
	fs.StringVar(&cfg.AdvertiseAddr, "advertise-addr", cfg.AdvertiseAddr, "gRPC address other nodes dial (default: --addr)")
	fs.StringVar(&cfg.StatusAddr, "status-addr", cfg.StatusAddr, "HTTP status address (/status, /metrics, /debug/pprof)")
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory of the store's Pebble instance")
	fs.DurationVar(&cfg.RaftTick, "raft-tick", cfg.RaftTick, "raft tick period")
	fs.IntVar(&cfg.ElectionTicks, "election-ticks", cfg.ElectionTicks, "raft election timeout, in ticks")
	fs.IntVar(&cfg.HeartbeatTicks, "heartbeat-ticks", cfg.HeartbeatTicks, "raft heartbeat period, in ticks")
	fs.DurationVar(&cfg.HeartbeatInterval, "heartbeat-interval", cfg.HeartbeatInterval, "store heartbeat period to PD")
	fs.DurationVar(&cfg.SplitCheckInterval, "split-check-interval", cfg.SplitCheckInterval, "how often written regions are checked for a split by size (negative: never)")
	fs.BoolVar(&cfg.DisableFastFailover, "disable-fast-failover", cfg.DisableFastFailover, "do not elect a new leader at once when a leader's store refuses connections (set it where a firewall forges TCP resets for live hosts)")
	fs.IntVar(&cfg.HibernateTicks, "hibernate-ticks", cfg.HibernateTicks, "idle raft ticks after which a region's group hibernates (0: 2x election ticks; negative: never)")
	fs.Uint64Var(&cfg.RegionSplitSize, "region-split-size", cfg.RegionSplitSize, "a region larger than this many bytes is split")
	fs.Uint64Var(&cfg.RegionSplitKeys, "region-split-keys", cfg.RegionSplitKeys, "a region with more engine keys than this is split")
	fs.DurationVar(&cfg.LeaderTransferTimeout, "leader-transfer-timeout", cfg.LeaderTransferTimeout,
		"on SIGTERM, how long to wait for region leaders to move to other stores before stopping (0: stop at once)")
	fs.DurationVar(&cfg.RaftLogGCInterval, "raft-log-gc-interval", cfg.RaftLogGCInterval, "how often region leaders consider compacting their raft log (0: 3s; negative: never)")
	fs.IntVar(&cfg.RaftLogGCThreshold, "raft-log-gc-threshold", cfg.RaftLogGCThreshold, "entries above the truncated index that trigger a log compaction (0: 50)")
	fs.Int64Var(&cfg.RaftLogGCLagLimit, "raft-log-gc-lag-limit", cfg.RaftLogGCLagLimit, "a follower more entries behind than this does not hold log GC back and gets a snapshot (0: 10000)")
	fs.Int64Var(&cfg.SnapMaxBytesPerSec, "snap-max-write-bytes-per-sec", cfg.SnapMaxBytesPerSec,
		"cap on the bytes per second this store sends raft snapshots at, all destinations together (0: 100 MiB/s; negative: no cap)")
	fs.Int64Var(&cfg.BlockCacheSize, "block-cache-size", cfg.BlockCacheSize, "the engine's block cache in bytes (0: 512 MiB)")
	fs.StringVar(&cfg.LogLevel, "log-level", cfg.LogLevel, "log level: debug, info, warn, error")
	fs.StringVar(&cfg.Labels, "labels", cfg.Labels, `location labels "key=value,..." for PD's location-labels (e.g. "zone=z1,host=h1")`)
	fs.BoolVar(&cfg.InMemoryPessimisticLock, "in-memory-pessimistic-lock", cfg.InMemoryPessimisticLock,
		"keep pessimistic locks in the region leader's memory (no raft round; put into the log before a leader transfer or split; lost in a crash, when a transaction whose lock was taken meanwhile fails at commit with a retryable error)")
	cfg.Config.RegisterFlags(fs)
	return fs
}

// parseLabels reads "zone=z1,host=h1" (empty: no labels).
func parseLabels(s string) ([]*metapb.StoreLabel, error) {
	var out []*metapb.StoreLabel
	for _, kv := range config.SplitList(s) {
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("--labels: %q is not key=value", kv)
		}
		out = append(out, &metapb.StoreLabel{Key: k, Value: v})
	}
	return out, nil
}
