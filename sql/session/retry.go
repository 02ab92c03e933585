package session

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/executor"
)

// maxStatementRetries bounds how often an autocommit INSERT, UPDATE or
// DELETE is run again before the client sees the error.
const maxStatementRetries = 10

var statementRetries = promauto.NewCounter(prometheus.CounterOpts{
	Namespace: "strata", Subsystem: "sql", Name: "statement_retries_total",
	Help: "Autocommit write statements run again after a write conflict (optimistic mode), a request lost before commit, or a one-phase commit lost and rolled back.",
})

var autocommitOptimistic = promauto.NewCounterVec(prometheus.CounterOpts{
	Namespace: "strata", Subsystem: "sql", Name: "autocommit_optimistic_total",
	Help: "Optimistic first attempts of autocommit INSERT, UPDATE and DELETE in pessimistic mode, by outcome: committed, fallback (met a lock or a conflict, or lost a request; run again pessimistically) or failed (any other error, returned).",
}, []string{"outcome"})

var (
	optimisticCommitted = autocommitOptimistic.WithLabelValues("committed")
	optimisticFallback  = autocommitOptimistic.WithLabelValues("fallback")
	optimisticFailed    = autocommitOptimistic.WithLabelValues("failed")
)

// autocommitWrite runs an autocommit INSERT, UPDATE, DELETE or locking
// SELECT as its own transaction with opts, retried by retryStatement.
//
// With optimisticFirst (pessimistic mode without --pessimistic-auto-commit,
// TiDB's default), an INSERT, UPDATE or DELETE first runs optimistically:
// no lock round before the commit, which is then one 1PC prewrite when
// the statement's keys are in one region. A prewrite that meets another
// transaction's lock fails at once (kv.TxnOptions.FailOnLock) and one
// that meets a newer commit fails with a write conflict; both roll back
// what they prewrote, and the statement then runs again pessimistically,
// from the start at a new timestamp, so that under contention it queues
// for the lock (deadlock detection, innodb_lock_wait_timeout, 1205)
// exactly as without the optimistic attempt. A duplicate key found by the
// prewrite runs again too: the pessimistic run reports it with the
// values of the statement's row (an index key holds collation sort keys),
// or succeeds if the row was deleted meanwhile. Nothing of the first
// attempt is visible: it committed nothing. Only a statement that is the
// whole transaction runs so; inside BEGIN every statement is pessimistic.
func (s *Session) autocommitWrite(ctx context.Context, opts kv.TxnOptions, optimisticFirst bool, run func() (*executor.Result, error)) (*executor.Result, error) {
	if optimisticFirst {
		first := opts
		first.Pessimistic, first.FailOnLock = false, true
		res, err := s.autocommitStmt(ctx, first, true, run)
		switch {
		case err == nil:
			optimisticCommitted.Inc()
			return res, nil
		case !fallBack(err):
			optimisticFailed.Inc()
			return nil, err
		}
		optimisticFallback.Inc()
	}
	return retryStatement(ctx, !opts.Pessimistic, func() (*executor.Result, error) { return s.autocommitStmt(ctx, opts, true, run) })
}

// fallBack: an optimistic first attempt that failed with err runs again
// pessimistically.
func fallBack(err error) bool {
	var e *errno.Error
	return errors.Is(err, kv.ErrWriteLocked) || retryable(err, true) || errors.As(err, &e) && e.Code == errno.ErrDupEntry
}

// retryStatement runs an autocommit write statement, and runs it again from
// the start (new start_ts, fresh reads), with exponential backoff, when
//   - optimistic is set and its commit lost a write conflict, or
//   - a request it sent before committing was lost with its store
//     (errno.ErrStoreTimeout: nothing was committed), or
//   - a table it wrote changed schema under it (errno.ErrInfoSchemaChanged), or
//   - its one-phase commit was lost with its store and then rolled back at
//     the new leader (kv.ErrCommitLost: decided, nothing written).
//
// This is not the silent transaction retry that gave TiDB 2.1.7 read skew:
// the statement is the whole transaction, nothing of the failed attempt was
// written (a conflict rejects the whole commit, and a commit that applied
// in some regions comes back as undetermined, never as a conflict), and
// every read the statement's writes depend on is made again at the new
// timestamp, exactly as if the client had sent the statement a moment
// later. A statement inside an explicit transaction is never run again.
func retryStatement(ctx context.Context, optimistic bool, run func() (*executor.Result, error)) (*executor.Result, error) {
	wait := time.Millisecond
	for attempt := 0; ; attempt++ {
		res, err := run()
		if err == nil || attempt == maxStatementRetries || !retryable(err, optimistic) {
			return res, err
		}
		statementRetries.Inc()
		t := time.NewTimer(wait/2 + rand.N(wait))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 100*time.Millisecond)
	}
}

func retryable(err error, optimistic bool) bool {
	var wc *kv.WriteConflictError
	if optimistic && errors.As(err, &wc) || errors.Is(err, kv.ErrCommitLost) {
		return true
	}
	var e *errno.Error
	// 8028: a table it wrote changed schema before it committed; nothing
	// was written and the new run resolves the table again.
	return errors.As(err, &e) && (e.Code == errno.ErrStoreTimeout || e.Code == errno.ErrInfoSchemaChanged)
}
