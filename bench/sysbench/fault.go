package main

import (
	"context"
	"fmt"
	"time"

	"github.com/stratadb/strata/internal/promtext"
	"github.com/stratadb/strata/localcluster"
)

// leadersSeries is the gauge of the regions a store leads.
const leadersSeries = `strata_raftstore_regions{type="leaders"}`

// startFault starts --kill-store-at's fault for the measured run about to
// begin on t, and returns a function that waits for it and describes what
// it did ("" when there was none).
func startFault(ctx context.Context, cfg config, t target) func() string {
	st, ok := t.(*strataTarget)
	if cfg.KillStoreAt <= 0 || !ok || st.cluster == nil {
		return func() string { return "" }
	}
	done := make(chan string, 1)
	stop := make(chan struct{})
	go func() {
		select {
		case <-time.After(time.Duration(cfg.KillStoreAt) * time.Second):
			done <- st.killBusiestStore(ctx, cfg.KillStoreAt)
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
