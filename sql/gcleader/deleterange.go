package gcleader

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/stratadb/strata/sql/deleterange"
	"github.com/stratadb/strata/tso"
)

var (
	rangesPending = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: "strata", Subsystem: "gc", Name: "delete_range_pending",
		Help: "Key ranges of dropped tables and indexes waiting to be deleted, as the GC leader last counted them (most wait for the GC safe point to pass their drop).",
	})
	rangesDone = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "gc", Name: "delete_range_done_total",
		Help: "Key ranges of dropped tables and indexes this node deleted as GC leader.",
	})
	rangeRegions = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "gc", Name: "delete_range_regions_total",
		Help: "Per-region deletions (one raft command each) of the ranges this node deleted.",
	})
	rangeErrors = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "gc", Name: "delete_range_errors_total",
		Help: "Range deletions that failed (the range stays pending and is tried again next round).",
	})
	rangeBytes = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "gc", Name: "delete_range_bytes_total",
		Help: "The region leaders' estimate of the flushed disk space the deleted ranges took (one replica).",
	})
	rangeSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "gc", Name: "delete_range_seconds",
		Help:    "Duration of deleting one range through the stores (all its regions), until it is marked done.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 18),
	})
)

// DeleteRanges deletes the ranges dropped tables and indexes left whose
// drop committed at or below safePoint (those visible when read at
// safePoint, see sql/deleterange), and marks each done. now is a current
// timestamp: the pending count is read there. A failed range stays pending
// and the others go on; the first error is returned. Without Config.Meta
// it does nothing.
func (l *Leader) DeleteRanges(ctx context.Context, safePoint, now uint64) error {
	if l.cfg.Meta == nil {
		return nil
	}
	due, err := deleterange.Pending(ctx, l.cfg.Meta, safePoint, 0)
	if err != nil {
		return fmt.Errorf("gcleader: pending delete ranges: %w", err)
	}
	var first error
	for _, r := range due {
		if err := l.deleteRange(ctx, r, safePoint, now); err != nil {
			rangeErrors.Inc()
			l.log.Warn("delete range failed", "job", r.JobID, "element", r.ElementID, "what", r.What, "err", err)
			first = errors.Join(first, err)
			if ctx.Err() != nil {
				break
			}
		}
	}
	if all, err := deleterange.Pending(ctx, l.cfg.Meta, now, 0); err == nil {
		rangesPending.Set(float64(len(all)))
	}
	return first
}

func (l *Leader) deleteRange(ctx context.Context, r deleterange.Range, safePoint, now uint64) error {
	start := time.Now()
	st, err := l.kv.DeleteRange(ctx, r.StartKey, r.EndKey, safePoint)
	if err != nil {
		return fmt.Errorf("gcleader: delete %s of job %d: %w", r.What, r.JobID, err)
	}
	if err := deleterange.MarkDone(ctx, l.cfg.Meta, r, tso.Physical(now)); err != nil {
		return fmt.Errorf("gcleader: mark %s of job %d done: %w", r.What, r.JobID, err)
	}
	took := time.Since(start)
	rangesDone.Inc()
	rangeRegions.Add(float64(st.Regions))
	rangeBytes.Add(float64(st.ApproximateBytes))
	rangeSeconds.Observe(took.Seconds())
	l.log.Info("delete range done", "job", r.JobID, "element", r.ElementID, "what", r.What,
		"start", fmt.Sprintf("%x", r.StartKey), "end", fmt.Sprintf("%x", r.EndKey), "ts", r.TS,
		"safe_point", safePoint, "regions", st.Regions, "approximate_bytes", st.ApproximateBytes, "took", took)
	return nil
}
