package memory

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// nodeBytes is what every running statement of the node tracks.
var nodeBytes atomic.Int64

// NodeBytes is what the running statements of this SQL node track.
func NodeBytes() int64 { return nodeBytes.Load() }

var _ = promauto.NewGaugeFunc(prometheus.GaugeOpts{
	Namespace: "strata", Subsystem: "sql", Name: "memory_bytes", ConstLabels: prometheus.Labels{"scope": "statements"},
	Help: "Memory held by statements on this SQL node, by scope: statements (tracked by operators), heap (the Go heap in use, read by the memory limiter), limit (tidb_server_memory_limit).",
}, func() float64 { return float64(nodeBytes.Load()) })

var (
	heapBytes = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: "strata", Subsystem: "sql", Name: "memory_bytes", ConstLabels: prometheus.Labels{"scope": "heap"},
		Help: "Memory held by statements on this SQL node, by scope: statements (tracked by operators), heap (the Go heap in use, read by the memory limiter), limit (tidb_server_memory_limit).",
	})
	serverLimit = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: "strata", Subsystem: "sql", Name: "memory_bytes", ConstLabels: prometheus.Labels{"scope": "limit"},
		Help: "Memory held by statements on this SQL node, by scope: statements (tracked by operators), heap (the Go heap in use, read by the memory limiter), limit (tidb_server_memory_limit).",
	})
	peakBytes = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "sql", Name: "statement_memory_peak_bytes",
		Help:    "Most memory a statement tracked at once.",
		Buckets: prometheus.ExponentialBuckets(1<<10, 4, 12),
	})
	oomCancels = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "sql", Name: "memory_cancels_total",
		Help: "Statements cancelled for memory, by reason: quota (tidb_mem_quota_query, ERROR 8175) or server_limit (tidb_server_memory_limit, ERROR 8176).",
	}, []string{"reason"})
)
