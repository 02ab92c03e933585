package pdclient

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

var tsoBatchWait = promauto.NewHistogram(prometheus.HistogramOpts{
	Namespace: "strata", Subsystem: "pdclient", Name: "tso_batch_duration_seconds",
	Help:    "Time from sending a TsoRequest to delivering its timestamps.",
	Buckets: prometheus.ExponentialBuckets(20e-6, 2, 18),
})
