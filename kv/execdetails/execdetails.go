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
//
// # Spans
//
// When its owner turned tracing on (Begin), a Details also records each
// stage interval and each KV RPC (region, store, method, retries) as a
// Span, the raw material of tail-based trace sampling (sql/trace): the
// statement's spans are kept only when it ends slow.
//
// # The store's side
//
// Every KV response carries the store's side of the request
// (kvrpcpb.ExecDetails, after TiKV's ExecDetailsV2): the kvclient adds it
// with Store as the store stages (StoreWait to RaftApply), summed over
// the statement's RPCs. They lie inside the client stage that sent the
// RPC (kv_read, lock_keys, commit) and say where on the store it waited:
// queued, on the lease or a ReadIndex round, on the concurrency manager,
// in Pebble, on latches, or in the raft round of a write (propose,
// persist, commit, apply). When tracing, they become spans nested in the
// RPC's span, laid out in the order the store runs them (the store
// reports durations, not start times). Slowest names the stage an
// operator should look at first. The span buffer
// belongs to the Details, which a connection reuses for every statement,
// so recording allocates nothing once the buffer has grown; a statement
// records at most MaxSpans spans and counts the rest as dropped.
package execdetails

import (
	"context"
	"sync"
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

	// The store's side of the RPCs (kvrpcpb.ExecDetails), summed over them.
	StoreWait      // queued on the store before processing (a stream worker, a coprocessor slot): TiDB's Wait_time
	StoreProcess   // processing on the store (evaluation, engine reads): TiDB's Process_time
	StoreReadIndex // the lease check or ReadIndex round that made a region readable
	StoreCMWait    // waiting for in-flight async-commit / 1PC writes (the concurrency manager)
	StoreKVRead    // reading Pebble (a part of StoreProcess)
	StoreLatchWait // a write waiting for its keys' latches
	RaftPropose    // a write's proposal waiting for raft to take it
	RaftPersistLog // from raft taking it to the leader's log fsync
	RaftCommitLog  // from raft taking it to a quorum storing it (the persist included)
	RaftApply      // from commit to apply on the leader
	NumStages
)

// FirstStoreStage is the first of the store's stages; they run to NumStages.
const FirstStoreStage = StoreWait

var names = [NumStages]string{"parse", "compile", "tso_wait", "kv_read", "lock_keys", "commit", "backoff", "resolve_lock",
	"store_wait", "store_process", "store_read_index", "store_cm_wait", "store_kv_read", "store_latch_wait",
	"raft_propose", "raft_persist_log", "raft_commit_log", "raft_apply"}

func (s Stage) String() string { return names[s] }

// MaxSpans bounds the spans one statement records.
const MaxSpans = 512

// Span is one timed interval of a statement: a stage (RPC false) or one
// KV RPC attempt (RPC true, inside the stage that issued it).
type Span struct {
	Name    string        // the stage's name, or the RPC's method ("get", "prewrite", ...)
	Start   time.Duration // since the statement began
	Dur     time.Duration
	RPC     bool
	Region  uint64 // RPC: the region it was sent to
	Store   uint64 // RPC: the store it was sent to
	Retries uint32 // RPC: the attempts before this one (backoffs and immediate retries)
	Failed  bool   // RPC: it ended in an RPC or region error
}

// Details is the time per stage of one statement.
type Details struct {
	ns [NumStages]atomic.Int64

	tracing atomic.Bool
	mu      sync.Mutex // guards what follows
	begin   time.Time
	spans   []Span
	dropped int
}

// Add counts d in stage s. No-op on a nil Details.
func (x *Details) Add(s Stage, d time.Duration) {
	if x != nil {
		x.ns[s].Add(int64(d))
		if x.tracing.Load() {
			x.record(Span{Name: names[s], Dur: d}, time.Now().Add(-d))
		}
	}
}

// Since counts the time since start in stage s (no-op on nil).
func (x *Details) Since(s Stage, start time.Time) {
	if x != nil {
		d := time.Since(start)
		x.ns[s].Add(int64(d))
		if x.tracing.Load() {
			x.record(Span{Name: names[s], Dur: d}, start)
		}
	}
}

// RPC counts one KV RPC attempt that began at start and took d in stage
// s (none when s is NumStages: its caller's stage covers it) and, when
// tracing, records it as a span. No-op on nil. method must be a constant
// string: the span keeps it.
func (x *Details) RPC(s Stage, method string, region, store uint64, start time.Time, d time.Duration, retries int, failed bool) {
	if x == nil {
		return
	}
	if s < NumStages {
		x.ns[s].Add(int64(d))
	}
	if x.tracing.Load() {
		x.record(Span{Name: method, Dur: d, RPC: true, Region: region, Store: store, Retries: uint32(retries), Failed: failed}, start)
	}
}

func (x *Details) record(sp Span, start time.Time) {
	x.mu.Lock()
	if len(x.spans) < MaxSpans {
		sp.Start = start.Sub(x.begin)
		x.spans = append(x.spans, sp)
	} else {
		x.dropped++
	}
	x.mu.Unlock()
}

// Begin starts a statement at start: the stages are zeroed, the span
// buffer emptied (its memory kept), and spans are recorded from now on
// only if trace.
func (x *Details) Begin(start time.Time, trace bool) {
	x.Reset()
	x.mu.Lock()
	x.begin, x.spans, x.dropped = start, x.spans[:0], 0
	x.mu.Unlock()
	x.tracing.Store(trace)
}

// Tracing reports whether spans are being recorded (false for nil).
func (x *Details) Tracing() bool { return x != nil && x.tracing.Load() }

// Spans appends the statement's spans so far to dst (in the order they
// ended) and returns it, with the count of spans dropped past MaxSpans.
func (x *Details) Spans(dst []Span) ([]Span, int) {
	if x == nil {
		return dst, 0
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return append(dst, x.spans...), x.dropped
}

// Get returns the time counted in stage s (0 for nil).
func (x *Details) Get(s Stage) time.Duration {
	if x == nil {
		return 0
	}
	return time.Duration(x.ns[s].Load())
}

// Reset zeroes every stage (a connection reuses one Details per
// statement); Begin also empties the spans.
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
