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
	pipelinedWrites = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "txn", Name: "pipelined_write_seconds",
		Help:    "Writes answered before they applied (pipelined pessimistic locks): time from handing them to raft to their outcome, by command and outcome (ok, region_error: the lock was not written, error: unknown).",
		Buckets: prometheus.ExponentialBuckets(0.00005, 2, 20),
	}, []string{"cmd", "outcome"})
	deadlocks = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "txn", Name: "deadlocks_total",
		Help: "Pessimistic lock requests failed as deadlock victims.",
	})
)
