package kvclient

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// rpcKind is the type of a store RPC, used as a metric label.
type rpcKind uint8

const (
	kindGet rpcKind = iota
	kindScan
	kindCop
	kindBatchGet
	kindPrewrite
	kindCommit
	kindBatchRollback
	kindCleanup
	kindCheckTxnStatus
	kindCheckSecondaryLocks
	kindResolveLock
	kindTxnHeartBeat
	kindPessimisticLock
	kindPessimisticRollback
	kindScanLock
	kindSplitRegion
	kindDeleteRange
	kindExport
	kindIngest
	numKinds
)

var kindNames = [numKinds]string{"get", "scan", "coprocessor", "batch_get",
	"prewrite", "commit", "batch_rollback", "cleanup", "check_txn_status",
	"check_secondary_locks", "resolve_lock", "txn_heart_beat", "pessimistic_lock",
	"pessimistic_rollback", "scan_lock", "split_region", "delete_range",
	"export", "ingest"}

func (k rpcKind) String() string { return kindNames[k] }

// replicaReadable: a read a replica may serve (tidb_replica_read, stale
// reads); lock scans and resolution stay on the leader.
func (k rpcKind) replicaReadable() bool {
	switch k {
	case kindGet, kindBatchGet, kindScan, kindCop:
		return true
	}
	return false
}

// isWrite: the command may change store state, so an answer lost after it
// was sent leaves its outcome unknown.
func (k rpcKind) isWrite() bool {
	switch k {
	case kindGet, kindScan, kindCop, kindBatchGet, kindCheckSecondaryLocks, kindScanLock, kindExport:
		return false
	}
	return true
}

var (
	rpcDuration = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "strata",
		Subsystem: "kvclient",
		Name:      "rpc_duration_seconds",
		Help:      "Latency of store RPCs sent by the KV client, by type and result (ok, region_error, rpc_error).",
		Buckets:   prometheus.ExponentialBuckets(50e-6, 2, 18), // 50µs .. 6.5s
	}, []string{"type", "result"})
	regionErrors = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata",
		Subsystem: "kvclient",
		Name:      "region_errors_total",
		Help:      "Region errors received from stores, by type.",
	}, []string{"type"})
	backoffs = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata",
		Subsystem: "kvclient",
		Name:      "backoff_total",
		Help:      "Backoff sleeps by reason.",
	}, []string{"reason"})
	backoffSeconds = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata",
		Subsystem: "kvclient",
		Name:      "backoff_seconds_total",
		Help:      "Time slept in backoff, by reason.",
	}, []string{"reason"})
	batchSize = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata",
		Subsystem: "kvclient",
		Name:      "batch_commands_size",
		Help:      "Requests per BatchCommands message sent to a store.",
		Buckets:   []float64{1, 2, 4, 8, 16, 32, 64, 128},
	})
	batchWait = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "strata",
		Subsystem: "kvclient",
		Name:      "batch_wait_seconds",
		Help:      "Time the BatchCommands sender held a message to collect more requests, observed for each message it held (only while the stream was busy).",
		Buckets:   []float64{1e-6, 2e-6, 5e-6, 10e-6, 20e-6, 50e-6, 100e-6, 200e-6, 500e-6, 1e-3, 1e-2},
	})
	copBatchedTasks = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata",
		Subsystem: "kvclient",
		Name:      "cop_batched_tasks_total",
		Help:      "Coprocessor region tasks sent inside another region's RPC to the same store (store batching).",
	})
	replicaReadFallbacks = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata",
		Subsystem: "kvclient",
		Name:      "replica_read_fallbacks_total",
		Help:      "Replica (follower or stale) reads that got a region error on a replica; the call then reads from the leader.",
	})
	undetermined = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata",
		Subsystem: "kvclient",
		Name:      "undetermined_writes_total",
		Help:      "Writes that failed with an unknown outcome.",
	})
)

// Observers resolved once so the hot path does no label lookup.
var (
	rpcOK, rpcRegionErr, rpcErr [numKinds]prometheus.Observer
)

func init() {
	for k := range numKinds {
		rpcOK[k] = rpcDuration.WithLabelValues(kindNames[k], "ok")
		rpcRegionErr[k] = rpcDuration.WithLabelValues(kindNames[k], "region_error")
		rpcErr[k] = rpcDuration.WithLabelValues(kindNames[k], "rpc_error")
	}
}
