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
