// Command playground runs a local Strata cluster (1 or more PD members, N
// store nodes, M SQL nodes) as processes on this machine; `make run` builds and starts it.
// Data and logs live under --data-dir and are reused by the next run.
// Ctrl-C (or SIGTERM) stops every process cleanly.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/stratadb/strata/localcluster"
)

func main() {
	exe, _ := os.Executable()
	binDir := flag.String("bin-dir", filepath.Dir(exe), "directory holding pd, storenode and sqlnode")
	dataDir := flag.String("data-dir", "data", "data and log directory (reused across runs)")
	pds := flag.Int("pds", 1, "number of PD members")
	stores := flag.Int("stores", 3, "number of store nodes")
	sqlNodes := flag.Int("sql", 1, "number of SQL nodes")
	readyTimeout := flag.Duration("ready-timeout", 2*time.Minute, "how long to wait for the cluster to serve SQL")
	freePorts := flag.Bool("free-ports", false, "listen on free loopback ports instead of the defaults (4000, 2379, 20160...); the SQL addresses are printed")
	goMaxProcs := flag.Int("gomaxprocs", 0, "GOMAXPROCS of each process: 0 is Go's default (every core each), -1 shares this host's cores among the cluster's processes (at least one each: less CPU per query, but a worse p999 for writes on 2 cores), N sets it; a GOMAXPROCS in the environment wins")
	flag.Parse()
	if *pds < 1 || *stores < 1 || *sqlNodes < 1 {
		fmt.Fprintln(os.Stderr, "playground: --pds, --stores and --sql must be at least 1")
		os.Exit(2)
	}
	if err := run(localcluster.Config{BinDir: *binDir, DataDir: *dataDir, PDs: *pds, Stores: *stores, SQLNodes: *sqlNodes, FreePorts: *freePorts, GoMaxProcs: *goMaxProcs}, *readyTimeout); err != nil {
		fmt.Fprintln(os.Stderr, "playground:", err)
		os.Exit(1)
	}
}

func run(cfg localcluster.Config, readyTimeout time.Duration) error {
	dataDir, stores, sqlNodes := cfg.DataDir, cfg.Stores, cfg.SQLNodes
	c, err := localcluster.New(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer c.Stop(10 * time.Second)

	if err := c.Start(); err != nil {
		return err
	}
	fmt.Printf("Starting Strata: %d PD (%s), %d store nodes, %d SQL nodes; logs in %s\n",
		len(c.PDs), strings.Join(c.PDAddrs(), ","), stores, sqlNodes, filepath.Join(dataDir, "logs"))
	readyCtx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for i := range c.SQL {
		if err := c.WaitReady(readyCtx, i); err != nil {
			return err
		}
	}
	fmt.Println("\nStrata is ready. Connect with:")
	for _, a := range c.SQLAddrs {
		host, port, _ := net.SplitHostPort(a)
		fmt.Printf("  mysql -h %s -P %s -u root\n", host, port)
	}
	fmt.Println("\nPress Ctrl-C to stop the cluster (data is kept in " + dataDir + ").")

	// Report processes that exit while the playground runs; a killed store
	// is a legitimate experiment, so keep the rest running.
	exited := make(chan *localcluster.Proc)
	for _, p := range c.Procs() {
		go func() {
			<-p.Exited()
			select {
			case exited <- p:
			case <-ctx.Done():
			}
		}()
	}
	for {
		select {
		case <-ctx.Done():
			fmt.Println("\nStopping Strata...")
			return nil
		case p := <-exited:
			slog.Warn("process exited; the rest of the cluster keeps running", "name", p.Name, "err", p.ExitErr(), "log", p.LogPath)
		}
	}
}
