package session

import (
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/sql/errno"
)

// Transaction outcomes (the outcome label of strata_sql_transactions_total).
const (
	outcomeCommit       = "commit"
	outcomeRollback     = "rollback"     // ROLLBACK, or the connection closed
	outcomeConflict     = "conflict"     // write conflict at commit (9007)
	outcomeDeadlock     = "deadlock"     // deadlock victim (1213)
	outcomeLockTimeout  = "lock_timeout" // autocommit statement gave up a lock wait (1205)
	outcomeDuplicate    = "duplicate"    // duplicate key (1062)
	outcomeUndetermined = "undetermined" // commit sent, outcome unknown (8110)
	outcomeError        = "error"        // any other failure
)

var (
	txnTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "sql", Name: "transactions_total",
		Help: "Transactions ended by this SQL node, by mode (pessimistic, optimistic) and outcome.",
	}, []string{"mode", "outcome"})
	txnDuration = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "sql", Name: "transaction_duration_seconds",
		Help:    "Transaction latency from begin to commit or rollback, by mode.",
		Buckets: prometheus.ExponentialBuckets(100e-6, 2, 20),
	}, []string{"mode"})
	// parseFallbacks counts the statements of texts the TiDB parser
	// refused that parseSQL then read as MySQL syntax it lacks.
	parseFallbacks = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "sql", Name: "parse_fallback_total",
		Help: "Statements the TiDB parser refused and the SQL node recognised as MySQL syntax that parser lacks, by syntax (checksum_table, row_alias).",
	}, []string{"syntax"})
	checksumTableStatements = parseFallbacks.WithLabelValues("checksum_table")
	rowAliasStatements      = parseFallbacks.WithLabelValues("row_alias")
)

type txnMetricKey struct {
	pessimistic bool
	outcome     string
}

// txnCounters caches label children: the hot path does no label hashing.
var txnCounters sync.Map // txnMetricKey -> prometheus.Counter

func modeLabel(pessimistic bool) string {
	if pessimistic {
		return "pessimistic"
	}
	return "optimistic"
}

var txnDurations = [2]prometheus.Observer{
	txnDuration.WithLabelValues(modeLabel(false)),
	txnDuration.WithLabelValues(modeLabel(true)),
}

func observeTxn(opts kv.TxnOptions, began time.Time, outcome string) {
	k := txnMetricKey{opts.Pessimistic, outcome}
	c, ok := txnCounters.Load(k)
	if !ok {
		c, _ = txnCounters.LoadOrStore(k, txnTotal.WithLabelValues(modeLabel(opts.Pessimistic), outcome))
	}
	c.(prometheus.Counter).Inc()
	if !began.IsZero() {
		i := 0
		if opts.Pessimistic {
			i = 1
		}
		txnDurations[i].Observe(time.Since(began).Seconds())
	}
}

func outcomeOf(err error) string {
	var (
		wc *kv.WriteConflictError
		dl *kv.DeadlockError
		ke *kv.KeyExistsError
	)
	switch {
	case err == nil:
		return outcomeCommit
	case errors.As(err, &wc):
		return outcomeConflict
	case errors.As(err, &dl):
		return outcomeDeadlock
	case errors.Is(err, kv.ErrLockWaitTimeout):
		return outcomeLockTimeout
	case errors.As(err, &ke):
		return outcomeDuplicate
	case errors.Is(err, kv.ErrUndetermined):
		return outcomeUndetermined
	}
	var e *errno.Error
	if errors.As(err, &e) && e.Code == errno.ErrDupEntry {
		return outcomeDuplicate
	}
	return outcomeError
}
