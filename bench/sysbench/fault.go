package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/stratadb/strata/internal/promtext"
	"github.com/stratadb/strata/localcluster"
)

// leadersSeries is the gauge of the regions a store leads.
const leadersSeries = `strata_raftstore_regions{type="leaders"}`

// startFault starts the fault of --kill-store-at or --ddl-at for the
// measured run about to begin on t, and returns a function that waits for
// it and describes what it did ("" when there was none).
func startFault(ctx context.Context, cfg config, t target) func() string {
	st, ok := t.(*strataTarget)
	if !ok || st.cluster == nil || (cfg.KillStoreAt <= 0 && cfg.DDLAt <= 0) {
		return func() string { return "" }
	}
	at, fault := cfg.KillStoreAt, func() string { return st.killBusiestStore(ctx, cfg.KillStoreAt) }
	if cfg.DDLAt > 0 {
		at, fault = cfg.DDLAt, func() string { return runDDL(ctx, st.port, cfg.DDLAt, cfg.DDL, cfg.Tables) }
	}
	done := make(chan string, 1)
	stop := make(chan struct{})
	go func() {
		select {
		case <-time.After(time.Duration(at) * time.Second):
			done <- fault()
		case <-stop:
			done <- ""
		case <-ctx.Done():
			done <- ""
		}
	}()
	return func() string {
		close(stop)
		return <-done
	}
}

// killBusiestStore kills -9 the store leading the most regions (by its
// /metrics) and says which, when, and what it led.
func (s *strataTarget) killBusiestStore(ctx context.Context, at int) string {
	var victim *localcluster.Proc
	best := -1.0
	for _, p := range s.cluster.Stores {
		mfs, err := promtext.Fetch(ctx, flagValue(p.Args, "--status-addr"))
		if err != nil {
			continue
		}
		if n := mfs.Series(false)[leadersSeries]; n > best {
			victim, best = p, n
		}
	}
	if victim == nil {
		return fmt.Sprintf("kill -9 at %ds failed: no store answered /metrics", at)
	}
	if err := victim.Kill(); err != nil {
		return fmt.Sprintf("kill -9 of %s at %ds failed: %v", victim.Name, at, err)
	}
	s.log("%s: killed %s (-9), leader of %.0f regions", s.name, victim.Name, best)
	return fmt.Sprintf("kill -9 of %s (leader of %.0f regions) at %ds", victim.Name, best, at)
}

// runDDL runs --ddl's statements one after another in database sbtest
// (at seconds into the run), then ADMIN CHECK TABLE on every sysbench
// table, and says how long each took and what failed.
func runDDL(ctx context.Context, port, at int, stmts []string, tables int) string {
	dsn := mysql.NewConfig()
	dsn.User, dsn.Net, dsn.Addr, dsn.DBName = "root", "tcp", fmt.Sprintf("127.0.0.1:%d", port), "sbtest"
	db, err := sql.Open("mysql", dsn.FormatDSN())
	if err != nil {
		return fmt.Sprintf("DDL at %ds: %v", at, err)
	}
	defer db.Close()
	var out []string
	exec := func(q string) {
		start := time.Now()
		_, err := db.ExecContext(ctx, q)
		what := fmt.Sprintf("%s: %.2f s", q, time.Since(start).Seconds())
		if err != nil {
			what += " FAILED: " + err.Error()
		}
		out = append(out, what)
	}
	for _, q := range stmts {
		exec(q)
	}
	for i := 1; i <= tables; i++ {
		exec(fmt.Sprintf("ADMIN CHECK TABLE sbtest%d", i))
	}
	return fmt.Sprintf("DDL at %ds: %s", at, strings.Join(out, "; "))
}
