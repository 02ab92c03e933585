package raftstore

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/proto/raft_cmdpb"
)

// After a DeleteRange command is applied (the ranges of dropped tables and
// indexes, store/server's KvDeleteRange), the store compacts the deleted
// engine range in the background, so the space its files held comes back
// at once instead of when Pebble next compacts there. Every replica applies
// the command and so compacts on its own. Not persisted: a store that
// restarts before compacting re-applies the command from its log (when the
// apply was not yet flushed) and compacts then; otherwise Pebble's own
// delete-only compactions drop the files the range tombstone covers.

var (
	rangeCompactions = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "delete_range_compactions_total",
		Help: "Compactions of ranges removed by DeleteRange commands, by result (ok, error).",
	}, []string{"result"})
	rangeCompactionsQueued = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "delete_range_compactions_queued",
		Help: "Ranges removed by DeleteRange commands waiting for (or in) their compaction.",
	})
	rangeCompactionSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "raftstore", Name: "delete_range_compaction_seconds",
		Help:    "Duration of compacting one range removed by a DeleteRange command.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 18),
	})
)

// engineRange is [lo, hi) of engine keys.
type engineRange struct{ lo, hi []byte }

// deletedRange returns the engine range a DeleteRange request removed.
func deletedRange(r *raft_cmdpb.Request) engineRange {
	return engineRange{lo: keys.EngineKey(nil, r.GetCf(), r.GetKey()), hi: keys.EngineKey(nil, r.GetCf(), r.GetEndKey())}
}

// rangeCompactor compacts deleted ranges one at a time on its own
// goroutine (run). queue is safe for concurrent use and never blocks.
type rangeCompactor struct {
	mu      sync.Mutex
	pending []engineRange
	wake    chan struct{}
}

func newRangeCompactor() *rangeCompactor {
	return &rangeCompactor{wake: make(chan struct{}, 1)}
}

// queue adds ranges to compact.
func (c *rangeCompactor) queue(rs []engineRange) {
	if len(rs) == 0 {
		return
	}
	c.mu.Lock()
	c.pending = append(c.pending, rs...)
	c.mu.Unlock()
	rangeCompactionsQueued.Add(float64(len(rs)))
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *rangeCompactor) take() []engineRange {
	c.mu.Lock()
	defer c.mu.Unlock()
	rs := c.pending
	c.pending = nil
	return rs
}

// compactLoop compacts queued ranges until the store stops (s.wg).
func (s *Store) compactLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.compactor.wake:
		}
		for _, r := range s.compactor.take() {
			start := time.Now()
			err := s.db.Compact(s.ctx, r.lo, r.hi, false)
			rangeCompactionsQueued.Dec()
			if err != nil {
				if s.ctx.Err() != nil {
					return
				}
				rangeCompactions.WithLabelValues("error").Inc()
				s.log.Warn("compact deleted range", "start", r.lo, "end", r.hi, "err", err)
				continue
			}
			rangeCompactions.WithLabelValues("ok").Inc()
			rangeCompactionSeconds.Observe(time.Since(start).Seconds())
			s.log.Info("deleted range compacted", "start", r.lo, "end", r.hi, "took", time.Since(start))
		}
	}
}
