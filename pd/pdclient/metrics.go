package pdclient

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

var (
	tsoStalls = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "pdclient", Name: "tso_stalls_total",
		Help: "TSO streams given up because the PD leader did not answer a batch within 2 s (then the client reconnects to the leader etcd names).",
	})
	tsoBatchWait = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "pdclient", Name: "tso_batch_duration_seconds",
		Help:    "Time from sending a TsoRequest to its answer, by TSO mode (default, parallel).",
		Buckets: prometheus.ExponentialBuckets(20e-6, 2, 18),
	}, []string{"mode"})
	tsoBatchSize = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "pdclient", Name: "tso_batch_size",
		Help:    "GetTS callers served by one TsoRequest, by TSO mode.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 13),
	}, []string{"mode"})
	tsoCallerWait = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "pdclient", Name: "tso_wait_seconds",
		Help:    "Time a successful GetTS caller waited (queueing, earlier batches, round trip and retries), by TSO mode.",
		Buckets: prometheus.ExponentialBuckets(20e-6, 2, 18),
	}, []string{"mode"})
)
