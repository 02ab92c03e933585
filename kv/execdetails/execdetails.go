// Package execdetails splits a statement's time into stages (issue 29):
// the SQL node attaches a Details to each statement's context (With),
// the layers below add the time they spent per stage under that context
// (Add), and when the statement ends its stages go to
// strata_sql_stage_seconds{stage}, the slow query log and the statements
// summary.
//
// Stages measure where a statement waited, as TiDB's execution details
// do; they can overlap (a backoff happens inside a read, a TSO wait
// inside a commit) and need not add up to the statement's latency. A
// Details is safe for concurrent use (a statement's region tasks run in
// parallel); a nil *Details ignores adds, so callers need not check From.
package execdetails

import (
	"context"
	"sync/atomic"
	"time"
)

// Stage is one kind of time a statement spends.
type Stage uint8

const (
	Parse       Stage = iota // parsing the statement text
	Compile                  // planning it (a plan cache hit plans nothing)
	TSOWait                  // waiting for timestamps from PD
	KVRead                   // read RPCs to stores (get, batch get, scan, coprocessor), summed over parallel ones
	LockKeys                 // acquiring pessimistic row locks, waits for other transactions included
	Commit                   // the commit protocol (prewrite, commit ts, commit)
	Backoff                  // sleeping before a retry (region errors, unreachable stores, locks not yet resolvable)
	ResolveLock              // resolving other transactions' locks met on the way
	NumStages
)

var names = [NumStages]string{"parse", "compile", "tso_wait", "kv_read", "lock_keys", "commit", "backoff", "resolve_lock"}

func (s Stage) String() string { return names[s] }

// Details is the time per stage of one statement.
type Details struct {
	ns [NumStages]atomic.Int64
}

// Add counts d in stage s. No-op on a nil Details.
func (x *Details) Add(s Stage, d time.Duration) {
	if x != nil {
		x.ns[s].Add(int64(d))
	}
}

// Since counts the time since start in stage s (no-op on nil).
func (x *Details) Since(s Stage, start time.Time) {
	if x != nil {
		x.ns[s].Add(int64(time.Since(start)))
	}
}

// Get returns the time counted in stage s (0 for nil).
func (x *Details) Get(s Stage) time.Duration {
	if x == nil {
		return 0
	}
	return time.Duration(x.ns[s].Load())
}

// Reset zeroes every stage (a connection reuses one Details per
// statement).
func (x *Details) Reset() {
	for i := range x.ns {
		x.ns[i].Store(0)
	}
}

type key struct{}

// With returns ctx carrying x.
func With(ctx context.Context, x *Details) context.Context {
	return context.WithValue(ctx, key{}, x)
}

// From returns the Details ctx carries, or nil.
func From(ctx context.Context) *Details {
	x, _ := ctx.Value(key{}).(*Details)
	return x
}
