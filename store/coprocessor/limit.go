package coprocessor

import (
	"context"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/stratadb/strata/proto/coprocessorpb"
)

var (
	waitSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    "strata_coprocessor_wait_seconds",
		Help:    "Time a coprocessor request waited for one of the store's coprocessor slots.",
		Buckets: prometheus.ExponentialBuckets(0.00005, 4, 10),
	})
	requests = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "strata_coprocessor_requests_total",
		Help: "Coprocessor requests executed, by executor shape (e.g. TableScan+Selection+Limit).",
	}, []string{"shape"})
	rowsScanned = promauto.NewCounter(prometheus.CounterOpts{
		Name: "strata_coprocessor_rows_scanned_total",
		Help: "Rows the coprocessor read from the MVCC snapshot.",
	})
	rowsReturned = promauto.NewCounter(prometheus.CounterOpts{
		Name: "strata_coprocessor_rows_returned_total",
		Help: "Rows (or partial aggregate rows) the coprocessor returned.",
	})
	lookupRows = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "strata_coprocessor_index_lookup_rows_total",
		Help: "Rows of IndexLookUp requests: read on this store (local) or left to the SQL node (remote).",
	}, []string{"path"})
	lookupLocal, lookupRemote = lookupRows.WithLabelValues("local"), lookupRows.WithLabelValues("remote")
)

// Limiter bounds the coprocessor requests a store executes at once, so that
// long scans queue behind each other instead of taking every core from
// point gets and writes (which do not pass through it).
type Limiter struct{ slots chan struct{} }

// NewLimiter returns a limiter admitting n requests at once (n >= 1).
func NewLimiter(n int) *Limiter { return &Limiter{slots: make(chan struct{}, max(n, 1))} }

// Acquire waits for a slot; it returns ctx's error if ctx ends first.
// Every nil return must be paired with one Release.
func (l *Limiter) Acquire(ctx context.Context) error {
	select {
	case l.slots <- struct{}{}:
		return nil
	default:
	}
	start := time.Now()
	defer func() { waitSeconds.Observe(time.Since(start).Seconds()) }()
	select {
	case l.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Release frees a slot taken by Acquire.
func (l *Limiter) Release() { <-l.slots }

// shape names an executor chain for metrics.
func shape(dag *coprocessorpb.DAGRequest) string {
	var b strings.Builder
	for i, e := range dag.GetExecutors() {
		if i > 0 {
			b.WriteByte('+')
		}
		b.WriteString(strings.TrimPrefix(e.GetTp().String(), "Type"))
	}
	return b.String()
}

func observe(dag *coprocessorpb.DAGRequest, resp *coprocessorpb.SelectResponse) {
	requests.WithLabelValues(shape(dag)).Inc()
	rowsScanned.Add(float64(resp.GetScannedRows()))
	n := len(resp.GetRows())
	if len(resp.GetAggRow()) > 0 || len(resp.GetAggValues()) > 0 {
		n = 1
	}
	rowsReturned.Add(float64(n))
	if l, r := resp.GetLocalLookups(), resp.GetRemoteLookups(); l+r > 0 {
		lookupLocal.Add(float64(l))
		lookupRemote.Add(float64(r))
	}
}
