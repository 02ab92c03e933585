package trace

import (
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/stratadb/strata/kv/execdetails"
)

// DefaultKeepThreshold is strata_trace_keep_threshold's default: a
// statement this slow keeps its trace whatever its digest's p95.
const DefaultKeepThreshold = 100 * time.Millisecond

var (
	enabled       atomic.Bool
	keepThreshold atomic.Int64
)

func init() {
	enabled.Store(true)
	keepThreshold.Store(int64(DefaultKeepThreshold))
}

// Enabled reports whether statements record spans (strata_enable_trace).
func Enabled() bool { return enabled.Load() }

// SetEnabled turns span recording on or off for the statements that
// start afterwards.
func SetEnabled(on bool) { enabled.Store(on) }

// KeepThreshold is strata_trace_keep_threshold: statements at least this
// long keep their trace (0: only the p95 rule and the slow log keep).
func KeepThreshold() time.Duration { return time.Duration(keepThreshold.Load()) }

// SetKeepThreshold sets KeepThreshold (negative is taken as 0).
func SetKeepThreshold(d time.Duration) { keepThreshold.Store(int64(max(d, 0))) }

var (
	tracesTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "sql", Name: "traces_total",
		Help: "Statement traces recorded, by outcome: kept (slower than the digest's running p95, strata_trace_keep_threshold or the slow log threshold) or dropped.",
	}, []string{"outcome"})
	tracesKept    = tracesTotal.WithLabelValues("kept")
	tracesDropped = tracesTotal.WithLabelValues("dropped")
	spansTotal    = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "sql", Name: "trace_spans_total",
		Help: "Spans recorded by the traces that were kept.",
	})
	spansOverflow = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "sql", Name: "trace_spans_overflow_total",
		Help: "Spans not recorded because a statement already had execdetails.MaxSpans (its trace is cut short).",
	})
)

// Dropped counts a recorded trace that was not kept.
func Dropped() { tracesDropped.Inc() }

// Quantile is a streaming estimate of a latency quantile (frugal
// streaming: each sample moves the estimate up by step·q or down by
// step·(1-q), step an eighth of the estimate, so that at equilibrium a
// fraction 1-q of the samples lie above it). The first WarmUp samples
// set it to their mean. Not safe for concurrent use: its owner locks.
type Quantile struct {
	est float64 // ns
	n   uint64
}

// WarmUp is the number of samples before a Quantile is trusted.
const WarmUp = 20

// Observe adds sample d to the q-quantile estimate and returns the
// estimate from before it, and whether that estimate had warmed up.
func (e *Quantile) Observe(q float64, d time.Duration) (before time.Duration, warm bool) {
	before, warm = time.Duration(e.est), e.n >= WarmUp
	x := float64(d)
	e.n++
	switch {
	case e.n <= WarmUp:
		e.est += (x - e.est) / float64(e.n)
	case x > e.est:
		e.est = min(e.est+max(e.est/8, 1e3)*q, x)
	case x < e.est:
		e.est = max(e.est-max(e.est/8, 1e3)*(1-q), x)
	}
	return before, warm
}

// Value returns the current estimate.
func (e *Quantile) Value() time.Duration { return time.Duration(e.est) }

// Span is one span of a kept trace, as written to the slow log.
type Span struct {
	Name    string `json:"name"`
	StartNS int64  `json:"start_ns"` // since the statement began
	DurNS   int64  `json:"dur_ns"`
	RPC     bool   `json:"rpc,omitempty"`
	Region  uint64 `json:"region,omitempty"`
	Store   uint64 `json:"store,omitempty"`
	Retries uint32 `json:"retries,omitempty"`
	Failed  bool   `json:"failed,omitempty"`
}

// Trace is one statement's kept trace.
type Trace struct {
	Time      time.Time `json:"time"` // when the statement ended
	ConnID    uint64    `json:"conn_id"`
	Type      string    `json:"type"`
	Digest    string    `json:"digest"`
	Query     string    `json:"query"`
	Duration  float64   `json:"duration"`            // seconds
	P95       float64   `json:"p95"`                 // seconds: the digest's running p95 before this execution (0 before warm-up)
	Reason    string    `json:"reason"`              // why it was kept: "slow_log", "threshold" or "p95"
	Slowest   string    `json:"slowest_stage"`       // the stage it spent most time in ("" if none)
	Spans     []Span    `json:"spans"`               // in the order they ended
	Truncated int       `json:"truncated,omitempty"` // spans not recorded past execdetails.MaxSpans
}

// Keep converts the recorded spans into a Trace's (copying them) and
// counts the trace kept.
func Keep(t *Trace, spans []execdetails.Span, overflow int) {
	t.Spans = make([]Span, len(spans))
	for i, s := range spans {
		t.Spans[i] = Span{Name: s.Name, StartNS: int64(s.Start), DurNS: int64(s.Dur), RPC: s.RPC,
			Region: s.Region, Store: s.Store, Retries: s.Retries, Failed: s.Failed}
	}
	t.Truncated = overflow
	tracesKept.Inc()
	spansTotal.Add(float64(len(spans)))
	if overflow > 0 {
		spansOverflow.Add(float64(overflow))
	}
}

// Ring keeps the last n values added (kept traces, slow log entries).
// Safe for concurrent use.
type Ring[T any] struct {
	mu   sync.Mutex
	buf  []*T
	next int
	full bool
}

// NewRing returns a ring of n values.
func NewRing[T any](n int) *Ring[T] { return &Ring[T]{buf: make([]*T, n)} }

// Add puts v in the ring, over the oldest when full. The ring owns v.
func (r *Ring[T]) Add(v *T) {
	r.mu.Lock()
	r.buf[r.next] = v
	r.next++
	if r.next == len(r.buf) {
		r.next, r.full = 0, true
	}
	r.mu.Unlock()
}

// Recent returns the values in the ring, newest first. They are shared:
// the caller must not modify them.
func (r *Ring[T]) Recent() []*T {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*T, 0, len(r.buf))
	for i := r.next - 1; i >= 0; i-- {
		out = append(out, r.buf[i])
	}
	if r.full {
		for i := len(r.buf) - 1; i >= r.next; i-- {
			out = append(out, r.buf[i])
		}
	}
	return out
}

// Node is a span in a trace's tree: Depth 0 is the statement itself.
type Node struct {
	Span
	Depth int
}

// Tree returns the trace's spans as a tree in depth-first order under a
// root span named root lasting total: a span is the child of the
// innermost earlier span whose interval contains it (spans that overlap
// without nesting become siblings). Siblings are in start order.
func Tree(root string, total time.Duration, spans []Span) []Node {
	sorted := make([]Span, len(spans))
	copy(sorted, spans)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if a.StartNS != b.StartNS {
			return a.StartNS < b.StartNS
		}
		if a.DurNS != b.DurNS {
			return a.DurNS > b.DurNS // the enclosing one first
		}
		return !a.RPC && b.RPC // a stage before the RPC it times
	})
	out := make([]Node, 0, len(sorted)+1)
	out = append(out, Node{Span: Span{Name: root, DurNS: int64(total)}})
	stack := []Span{out[0].Span}
	for _, s := range sorted {
		for len(stack) > 1 {
			top := stack[len(stack)-1]
			if s.StartNS >= top.StartNS && s.StartNS+s.DurNS <= top.StartNS+top.DurNS {
				break
			}
			stack = stack[:len(stack)-1]
		}
		out = append(out, Node{Span: s, Depth: len(stack)})
		stack = append(stack, s)
	}
	return out
}

// Label is how a span reads in TRACE and on /dashboard: the stage name,
// or the RPC's method with its region, store and retries.
func (s Span) Label() string {
	if !s.RPC {
		return s.Name
	}
	b := make([]byte, 0, 48)
	b = append(b, "rpc."...)
	b = append(b, s.Name...)
	b = append(b, " region="...)
	b = strconv.AppendUint(b, s.Region, 10)
	b = append(b, " store="...)
	b = strconv.AppendUint(b, s.Store, 10)
	if s.Retries > 0 {
		b = append(b, " retries="...)
		b = strconv.AppendUint(b, uint64(s.Retries), 10)
	}
	if s.Failed {
		b = append(b, " failed"...)
	}
	return string(b)
}
