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
		Help:    "Time pessimistic lock requests waited for another transaction's lock, by outcome (acquired, timeout, lock_expired, deadlock, canceled).",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18),
	}, []string{"outcome"})
	deadlocks = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "txn", Name: "deadlocks_total",
		Help: "Pessimistic lock requests failed as deadlock victims.",
	})
)
