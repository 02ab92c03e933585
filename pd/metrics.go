package pd

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

var (
	rpcDuration = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "pd", Name: "rpc_duration_seconds",
		Help:    "Latency of PD unary RPCs by method and result.",
		Buckets: prometheus.ExponentialBuckets(50e-6, 2, 18),
	}, []string{"method", "result"})
	tsoDuration = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "pd", Name: "tso_request_duration_seconds",
		Help:    "Server-side latency of one TsoRequest (one client batch).",
		Buckets: prometheus.ExponentialBuckets(1e-6, 2, 22),
	})
	tsoBatchSize = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "pd", Name: "tso_batch_size",
		Help:    "Timestamps requested per TsoRequest.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 14),
	})
	tsoErrors = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "pd", Name: "tso_errors_total",
		Help: "TsoRequests answered with an error.",
	})
	tsoLeaseRefused = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "pd", Name: "tso_lease_refused_total",
		Help: "TsoRequests refused because the leader's local lease had expired (a deposed leader that has not noticed yet).",
	})
	allocIDTotal = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "pd", Name: "alloc_id_total",
		Help: "Ids handed out by AllocID (including bootstrap).",
	})
	storeHeartbeats = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "pd", Name: "store_heartbeats_total",
		Help: "Store heartbeats received.",
	})
	regionHeartbeats = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "pd", Name: "region_heartbeats_total",
		Help: "Region heartbeats received, by outcome (unchanged, updated, stale, error).",
	}, []string{"outcome"})
	storesGauge = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: "strata", Subsystem: "pd", Name: "stores",
		Help: "Stores registered (leader's view).",
	})
	regionsGauge = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: "strata", Subsystem: "pd", Name: "regions",
		Help: "Regions known (leader's view).",
	})
	isLeaderGauge = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: "strata", Subsystem: "pd", Name: "is_leader",
		Help: "1 while this member is the PD leader.",
	})
	apiForwarded = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "pd", Name: "api_forwarded_total",
		Help: "HTTP API requests a follower forwarded to the PD leader, by result (ok, error).",
	}, []string{"result"})
	apiForwardSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "pd", Name: "api_forward_seconds",
		Help:    "Time a follower took to forward an HTTP API request to the leader and get its answer.",
		Buckets: prometheus.ExponentialBuckets(100e-6, 2, 16),
	})
)
