package gc

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

var (
	storeSafePoint = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: "strata", Subsystem: "store_gc", Name: "safe_point",
		Help: "GC safe point this store knows (TSO timestamp; physical ms = value >> 18); reads below it are refused.",
	})
	versionsDeleted = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "store_gc", Name: "deleted_total",
		Help: "Records deleted by GC, by key space (write: version records, default: long values).",
	}, []string{"cf"})
	keysScanned = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "store_gc", Name: "records_scanned_total",
		Help: "WRITE records GC scanned looking for garbage.",
	})
	batchSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "store_gc", Name: "batch_seconds",
		Help:    "Time of one GC batch: latches, read index, recomputation and the raft write.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
	})
	regionRounds = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "store_gc", Name: "region_rounds_total",
		Help: "Regions collected by GC rounds, by result (ok, error).",
	}, []string{"result"})
	readsRefused = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "store_gc", Name: "reads_refused_total",
		Help: "Reads refused because their timestamp is below the GC safe point.",
	})
)
