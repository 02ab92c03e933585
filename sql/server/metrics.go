package server

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/stratadb/strata/kv/execdetails"
)

var (
	queryDuration = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "sql", Name: "query_duration_seconds",
		Help:    "Statement latency by statement type (parse to last packet written).",
		Buckets: prometheus.ExponentialBuckets(50e-6, 2, 20),
	}, []string{"type"})
	connectionsGauge = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: "strata", Subsystem: "sql", Name: "connections",
		Help: "Open client connections.",
	})
	queryErrors = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "sql", Name: "errors_total",
		Help: "Errors returned to clients, by MySQL error code.",
	}, []string{"code"})
	killTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "sql", Name: "kill_total",
		Help: "KILL [QUERY] statements by scope (local: the connection is this node's; remote: sent to the node owning it; peer: run here for another node) and outcome (ok, unknown_id, denied, error).",
	}, []string{"scope", "outcome"})
	peerSeconds = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "sql", Name: "peer_request_seconds",
		Help:    "Requests to other SQL nodes' status ports (call: kill, processlist; result: ok, error).",
		Buckets: prometheus.ExponentialBuckets(100e-6, 2, 16),
	}, []string{"call", "result"})
	refusedConnections = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "sql", Name: "connections_refused_total",
		Help: "Connections refused with ERROR 1040 because MaxConnections were open.",
	})
	idleDisconnects = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "sql", Name: "idle_disconnects_total",
		Help: "Connections closed with ERROR 4031 after wait_timeout (interactive_timeout) of idleness.",
	})
	abandonedStatements = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "sql", Name: "abandoned_statements_total",
		Help: "Statements cancelled because their client closed its connection while they ran.",
	})
	handshakeFailures = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "sql", Name: "handshake_failures_total",
		Help: "Connections closed during the connection phase, by reason (timeout, malformed, auth, closed).",
	}, []string{"reason"})
	sha2Auths = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "sql", Name: "caching_sha2_auths_total",
		Help: "Successful caching_sha2_password logins, by path (fast: from this node's cache; full: TLS or RSA).",
	}, []string{"path"})
	panicsTotal = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "sql", Name: "panics_total",
		Help: "Commands that panicked (bugs); each was answered with ERROR 1105 and logged.",
	})
)

// observers caches per-label histogram children so the hot path does no
// label hashing.
var observers sync.Map // string -> prometheus.Observer

// stageSeconds observes each statement's time per stage
// (strata_sql_stage_seconds{stage}), one observer per stage.
var stageSeconds = func() (out [execdetails.NumStages]prometheus.Observer) {
	h := promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "sql", Name: "stage_seconds",
		Help:    "Time statements spent per stage (parse, compile, tso_wait, kv_read, lock_keys, commit, backoff, resolve_lock; and the store's side of their RPCs: store_wait, store_process, store_read_index, store_cm_wait, store_kv_read, store_latch_wait, raft_propose, raft_persist_log, raft_commit_log, raft_apply), observed for the stages a statement spent time in; stages overlap (a backoff within a read, the store's stages within the RPC's stage) and need not add up to its latency.",
		Buckets: prometheus.ExponentialBuckets(10e-6, 2, 22),
	}, []string{"stage"})
	for st := range execdetails.NumStages {
		out[st] = h.WithLabelValues(st.String())
	}
	return out
}()

func durationFor(label string) prometheus.Observer {
	if o, ok := observers.Load(label); ok {
		return o.(prometheus.Observer)
	}
	o := queryDuration.WithLabelValues(label)
	observers.Store(label, o)
	return o
}

func countError(code uint16) {
	queryErrors.WithLabelValues(strconv.Itoa(int(code))).Inc()
}
