package security

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

var (
	handshakeFailures = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "tls", Name: "handshake_failures_total",
		Help: "Failed TLS handshakes between components by component and side (server: a peer was refused or gave up; client: dialling a component failed).",
	}, []string{"component", "side"})
	reloads = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "tls", Name: "reloads_total",
		Help: "Re-reads of changed cluster TLS files by component and result (error: the previous certificate stays in use).",
	}, []string{"component", "result"})
	notAfter = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "strata", Subsystem: "tls", Name: "certificate_not_after_seconds",
		Help: "Expiry (Unix seconds) of the cluster TLS certificate in use, by component: alert well before it.",
	}, []string{"component"})
	httpRefused = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "tls", Name: "http_unauthorized_total",
		Help: "State-changing HTTP API requests refused with 401 (no verified client certificate, no valid token).",
	})
)
