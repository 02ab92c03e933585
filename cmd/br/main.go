// Command br backs up a Strata cluster at a timestamp and restores the
// backup into a fresh cluster (package br has the design):
//
//	br backup full  --pd 127.0.0.1:2379 --storage local:///backups/b1 [--backupts TSO] [--ratelimit MB/s] [--db X] [--table Y]
//	br restore full --pd 127.0.0.1:2379 --storage local:///backups/b1 [--db X] [--table Y]
//
// The storage directory must be the same path on every store and on the
// machine running br (a shared mount): the stores write and read the data
// files, br the manifest. Progress goes to stdout, logs (JSON) to stderr;
// with --status-addr, /metrics serves the strata_br_* metrics while it
// runs. Exit status: 0 done, 1 failed, 2 bad usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stratadb/strata/br"
	"github.com/stratadb/strata/config"
	"github.com/stratadb/strata/internal/security"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = "usage: br backup full|restore full --pd ADDRS --storage local:///DIR [flags]"

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) < 2 || (args[0] != "backup" && args[0] != "restore") || args[1] != "full" {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	op := args[0]
	fs := flag.NewFlagSet("br "+op+" full", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pd := fs.String("pd", "127.0.0.1:2379", "PD client addresses, comma-separated")
	storage := fs.String("storage", "", "backup location: local:///absolute/dir (the same path on every store: a shared mount)")
	db := fs.String("db", "", "only this database")
	table := fs.String("table", "", "only tables of this name (with --db: that database's)")
	concurrency := fs.Int("concurrency", 4, "region requests in flight")
	statusAddr := fs.String("status-addr", "", "serve /metrics on this address while running (empty: none)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	var backupTS uint64
	var rateMB float64
	if op == "backup" {
		fs.Uint64Var(&backupTS, "backupts", 0, "TSO to back up at (0: now); must be above the GC safe point")
		fs.Float64Var(&rateMB, "ratelimit", 0, "cap of each store's export writes, MB/s (0: none)")
	}
	var secCfg security.Config
	secCfg.RegisterFlags(fs)
	if err := fs.Parse(args[2:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "br: unexpected arguments %v\n%s\n", fs.Args(), usage)
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintln(stderr, "br: --log-level:", err)
		return 2
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(logger)
	if *storage == "" {
		fmt.Fprintln(stderr, "br: --storage is required (local:///dir)")
		return 2
	}
	if _, err := br.LocalDir(*storage); err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if rateMB < 0 {
		fmt.Fprintln(stderr, "br: --ratelimit must be >= 0")
		return 2
	}
	sec, err := security.New(secCfg, "br")
	if err != nil {
		fmt.Fprintln(stderr, "br:", err)
		return 2
	}
	if *statusAddr != "" {
		ln, err := net.Listen("tcp", *statusAddr)
		if err != nil {
			fmt.Fprintln(stderr, "br: --status-addr:", err)
			return 2
		}
		srv := &http.Server{Handler: promhttp.Handler(), ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(ln)
		defer srv.Close()
	}
	cfg := br.Config{
		PD: config.SplitList(*pd), Security: sec, Storage: *storage, BackupTS: backupTS,
		RateLimit: uint64(rateMB * 1e6), Concurrency: *concurrency, Filter: br.Filter{DB: *db, Table: *table},
		Progress: stdout, Logger: logger,
	}
	start := time.Now()
	switch op {
	case "backup":
		m, err := br.Backup(ctx, cfg)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		secs := max(time.Since(start).Seconds(), 1e-3)
		fmt.Fprintf(stdout, "Backup done: backup ts %d, %d tables, %d files, %d kvs, %.1f MB in %.1fs (%.1f MB/s)\n",
			m.BackupTS, countTables(m), len(m.Files), m.Total.KVs, float64(m.Total.Bytes)/1e6, secs, float64(m.Total.Bytes)/1e6/secs)
	case "restore":
		res, err := br.Restore(ctx, cfg)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		secs := max(time.Since(start).Seconds(), 1e-3)
		fmt.Fprintf(stdout, "Restore done: %d tables, %d files, %d kvs, %.1f MB in %.1fs (%.1f MB/s), checksums verified\n",
			res.Tables, res.Files, res.Total.KVs, float64(res.Total.Bytes)/1e6, secs, float64(res.Total.Bytes)/1e6/secs)
	}
	return 0
}

func countTables(m *br.Manifest) int {
	n := 0
	for _, db := range m.Databases {
		n += len(db.Tables)
	}
	return n
}
