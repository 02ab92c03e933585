package txn

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

var (
	txnTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "txn", Name: "transactions_total",
		Help: "Finished transactions by commit mode (read_only, one_pc, async_commit, two_pc, rollback) and outcome (committed, aborted, conflict, undetermined, error).",
	}, []string{"mode", "outcome"})
	phaseSeconds = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "txn", Name: "commit_phase_seconds",
		Help:    "Latency of commit phases: prewrite, commit (primary), one_pc, async_commit (prewrites until the client is answered), pessimistic_lock.",
		Buckets: prometheus.ExponentialBuckets(100e-6, 2, 17), // 100µs .. 6.5s
	}, []string{"phase"})
	lockResolves = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "txn", Name: "lock_resolves_total",
		Help: "Locks of other transactions met, by what was done: committed, rolled_back, pushed (skipped by the reader), wait, cached, async_fallback (an expired async-commit primary whose transaction fell back to two-phase commit, decided by its primary).",
	}, []string{"result"})
)

var (
	phasePrewrite = phaseSeconds.WithLabelValues("prewrite")
	phaseCommit   = phaseSeconds.WithLabelValues("commit")
	phaseOnePC    = phaseSeconds.WithLabelValues("one_pc")
	phaseAsync    = phaseSeconds.WithLabelValues("async_commit")
	phaseLock     = phaseSeconds.WithLabelValues("pessimistic_lock")

	resolveCommitted  = lockResolves.WithLabelValues("committed")
	resolveRolledBack = lockResolves.WithLabelValues("rolled_back")
	resolvePushed     = lockResolves.WithLabelValues("pushed")
	resolveWait       = lockResolves.WithLabelValues("wait")
	resolveCached     = lockResolves.WithLabelValues("cached")

	asyncFallbacksResolved = lockResolves.WithLabelValues("async_fallback")

	lockResends = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "txn", Name: "pessimistic_lock_resends_total",
		Help: "Pessimistic lock requests sent again after an undetermined outcome (store died or answer lost), within the lock wait timeout.",
	})
	prewriteResends = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "txn", Name: "prewrite_resends_total",
		Help: "2PC prewrites sent again after an undetermined outcome (store died or answer lost): a prewrite is idempotent.",
	})
	onePCSettled = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "txn", Name: "one_pc_settled_total",
		Help: "1PC commits whose answer was lost, decided at the primary's new leader: committed, rolled_back (the client gets 1213 and may retry) or undetermined (8110).",
	}, []string{"outcome"})
	lockReleases = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "txn", Name: "lock_releases_total",
		Help: "Releases of a transaction's locks, by cause (failed_lock: a failed pessimistic lock round, rollback: ROLLBACK, failed_commit: a failed commit's prewrites and locks) and outcome (ok, error: left to their TTL).",
	}, []string{"cause", "outcome"})
	onePCFallbacks = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "txn", Name: "one_pc_fallbacks_total",
		Help: "Transactions that chose 1PC but found their keys in several regions at prewrite (a split) and committed with 2PC.",
	})
)

// outcomeLabel is a release's outcome label.
func outcomeLabel(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}
