// Command pd runs one placement-driver member: embedded etcd for metadata and
// leader election, the PD gRPC service (TSO, ids, stores, regions) and the
// HTTP status endpoints (/status, /metrics, /debug/pprof).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/stratadb/strata/pd"
	"github.com/stratadb/strata/status"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("pd", flag.ContinueOnError)
	var (
		name           = fs.String("name", "pd", "member name, unique in the PD cluster")
		dataDir        = fs.String("data-dir", "data/pd", "directory for the embedded etcd data")
		addr           = fs.String("addr", "127.0.0.1:2379", "PD gRPC listen address")
		advertiseAddr  = fs.String("advertise-addr", "", "PD gRPC address clients should dial (default: --addr)")
		peerURL        = fs.String("peer-url", "http://127.0.0.1:2380", "etcd peer URL")
		clientURL      = fs.String("etcd-client-url", "http://127.0.0.1:2381", "etcd client URL")
		statusAddr     = fs.String("status-addr", "127.0.0.1:2382", "HTTP status address (/status, /metrics, /debug/pprof)")
		initialCluster = fs.String("initial-cluster", "", `etcd initial cluster "name=peer-url,..." (default "<name>=<peer-url>")`)
		clusterState   = fs.String("initial-cluster-state", "new", `etcd initial cluster state: "new" or "existing"`)
		replicas       = fs.Int("replicas", 3, "replicas of the first region; bootstrap waits for this many stores")
		etcdLogLevel   = fs.String("etcd-log-level", "warn", "embedded etcd log level")
	)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if *replicas < 1 {
		return fmt.Errorf("--replicas must be >= 1, got %d", *replicas)
	}
	cfg := pd.Config{
		Name: *name, DataDir: *dataDir, Addr: *addr, AdvertiseAddr: *advertiseAddr,
		PeerURL: *peerURL, ClientURL: *clientURL,
		InitialCluster: *initialCluster, InitialClusterState: *clusterState,
		Replicas: *replicas, EtcdLogLevel: *etcdLogLevel,
	}
	srv, err := pd.NewServer(cfg)
	if err != nil {
		return err
	}
	cfg = srv.Config() // defaults filled in
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	statusBound, err := status.Serve(ctx, *statusAddr, "pd")
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	select {
	case <-srv.Ready():
		slog.Info("pd ready", "name", cfg.Name, "addr", srv.Addr().String(), "peer_url", cfg.PeerURL,
			"etcd_client_url", cfg.ClientURL, "status_addr", statusBound.String(), "data_dir", cfg.DataDir,
			"replicas", cfg.Replicas)
	case err := <-done:
		return err
	}
	return <-done
}
