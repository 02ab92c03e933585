package txn

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

var (
	commandSeconds = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "txn", Name: "command_seconds",
		Help:    "Latency of transaction commands on the store by command (evaluation, latches and the raft write).",
		Buckets: prometheus.ExponentialBuckets(0.00005, 2, 20),
	}, []string{"cmd"})
	lockWaitSeconds = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "txn", Name: "lock_wait_seconds",
		Help:    "Time pessimistic lock requests waited for another transaction's lock, by outcome (acquired, timeout, lock_expired, prewrite_lock (not waited: the client resolves or backs off), deadlock, canceled).",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18),
	}, []string{"outcome"})
	latchWaitSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "txn", Name: "latch_wait_seconds",
		Help:    "Time write commands waited for their keys' latches.",
		Buckets: prometheus.ExponentialBuckets(0.00001, 2, 22),
	})
	writeReadIndexSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "txn", Name: "write_read_index_seconds",
		Help:    "Time write commands waited, latches held, for a linearizable view of their region (lease check or ReadIndex, applied index).",
		Buckets: prometheus.ExponentialBuckets(0.00001, 2, 22),
	})
	readsRefused = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "txn", Name: "reads_refused_total",
		Help: "Reads refused after their engine snapshot because the region left this peer meanwhile, by reason (leadership_changed: NotLeader; replica_gone: RegionNotFound). The client retries them elsewhere.",
	}, []string{"reason"})
	memLocksGauge = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: "strata", Subsystem: "txn", Name: "memory_pessimistic_locks",
		Help: "Pessimistic locks held in the memory of region leaders on this store.",
	})
	pessimisticLockWrites = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "txn", Name: "pessimistic_lock_writes_total",
		Help: "Pessimistic lock records taken, by where they went (memory: the leader's in-memory table, no raft round; raft).",
	}, []string{"where"})
	memLocksFlushed = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "txn", Name: "memory_locks_flushed_total",
		Help: "In-memory pessimistic locks proposed through raft before a leader transfer or split, by outcome (ok, failed: lost).",
	}, []string{"outcome"})
	memLocksDropped = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "txn", Name: "memory_locks_dropped_total",
		Help: "In-memory pessimistic locks lost, by reason (leader_change: not flushed before leadership moved; epoch_change).",
	}, []string{"reason"})
	memLockFull = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "txn", Name: "memory_locks_full_total",
		Help: "Pessimistic locks written through raft because their region's in-memory table was full.",
	})
	prewriteAmended = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "txn", Name: "prewrite_amended_locks_total",
		Help: "Pessimistic prewrites that found their pessimistic lock missing (lost with a leader) and wrote anyway: nothing was committed or locked on the key after for_update_ts.",
	})
	deadlocks = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "txn", Name: "deadlocks_total",
		Help: "Pessimistic lock requests failed as deadlock victims.",
	})
	lockWaitersMoved = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "txn", Name: "lock_waiters_moved_total",
		Help: "Queued pessimistic lock waiters woken because this store stopped leading their region: they evaluate again, get NotLeader, and the client retries at the new leader.",
	})
	lockRechecks = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "txn", Name: "lock_wait_rechecks_total",
		Help: "Queued pessimistic lock waiters told to evaluate again because another transaction took the key they waited for (they then wait for, and are checked for deadlock against, the new holder).",
	})
)
