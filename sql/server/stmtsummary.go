package server

import (
	"math/bits"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pingcap/tidb/pkg/parser"

	"github.com/stratadb/strata/kv/execdetails"
	"github.com/stratadb/strata/sql/session"
	"github.com/stratadb/strata/sql/trace"
)

// Statement summary limits (TiDB's tidb_stmt_summary_refresh_interval,
// tidb_stmt_summary_history_size and tidb_stmt_summary_max_stmt_count).
const (
	stmtSummaryWindow   = 30 * time.Minute
	stmtSummaryHistory  = 24
	stmtSummaryMaxStmts = 3000
	// stmtSummarySample bounds QUERY_SAMPLE_TEXT.
	stmtSummarySample = 1024
	// latencyBuckets are powers of two from 1 µs (bucket i counts
	// latencies below 2^i µs; the last, everything longer).
	latencyBuckets = 36
)

// stmtSummary aggregates this node's statements by schema and digest in
// windows of stmtSummaryWindow (information_schema.STATEMENTS_SUMMARY is
// the current window, STATEMENTS_SUMMARY_HISTORY the earlier ones). A
// window keeps at most stmtSummaryMaxStmts digests; the statements past
// that are counted under an empty digest. Safe for concurrent use.
type stmtSummary struct {
	mu      sync.Mutex
	begin   time.Time
	cur     map[stmtKey]*stmtStats
	history []stmtWindow // oldest first
}

type stmtKey struct{ schema, digest string }

type stmtWindow struct {
	begin, end time.Time
	stmts      map[stmtKey]*stmtStats
}

type stmtStats struct {
	stmtType, digestText, sample string
	prepared                     bool
	execCount, errors, rows      uint64
	sumLatency, minLatency       time.Duration
	maxLatency                   time.Duration
	buckets                      [latencyBuckets]uint64
	stages                       [execdetails.NumStages]time.Duration // sums
	firstSeen, lastSeen          time.Time
	// p95 is the running p95 latency of the digest, by which a
	// statement's trace is kept (sql/trace); it carries over windows.
	p95 *trace.Quantile
}

func newStmtSummary(now time.Time) *stmtSummary {
	return &stmtSummary{begin: now, cur: map[stmtKey]*stmtStats{}}
}

// stmtDigest is a statement's normalized text and digest.
type stmtDigest struct{ normalized, digest string }

// digestCacheMax bounds the statement texts (of at most 1 KiB) whose
// digests are kept: the prepared statements and repeated texts of an
// application fit; texts with their literals inline mostly do not repeat
// and are digested anew.
const digestCacheMax = 4096

// digestCache keeps the digests of statement texts seen before (digesting
// is a lexer pass over the text). Safe for concurrent use.
type digestCache struct {
	m sync.Map // string -> stmtDigest
	n atomic.Int64
}

func (c *digestCache) get(query string) stmtDigest {
	if v, ok := c.m.Load(query); ok {
		return v.(stmtDigest)
	}
	n, d := parser.NormalizeDigest(query)
	dg := stmtDigest{normalized: n, digest: d.String()}
	if len(query) <= stmtSummarySample && c.n.Load() < digestCacheMax {
		if _, loaded := c.m.LoadOrStore(query, dg); !loaded {
			c.n.Add(1)
		}
	}
	return dg
}

// add records one execution that ended at now. It returns its digest's
// running p95 latency from before it and whether that had warmed up
// (trace.Quantile).
func (s *stmtSummary) add(now time.Time, schema, stmtType string, dg stmtDigest, query string, prepared bool, d time.Duration, rows uint64, failed bool, stages *[execdetails.NumStages]time.Duration) (p95 time.Duration, warm bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rotate(now)
	key := stmtKey{schema: schema, digest: dg.digest}
	st := s.cur[key]
	if st == nil {
		if len(s.cur) >= stmtSummaryMaxStmts {
			key = stmtKey{}
			st = s.cur[key]
		}
		if st == nil {
			st = &stmtStats{stmtType: stmtType, prepared: prepared, firstSeen: now, minLatency: d, p95: s.carried(key)}
			if key.digest != "" {
				st.digestText = dg.normalized
				st.sample = query
				if len(st.sample) > stmtSummarySample {
					st.sample = st.sample[:stmtSummarySample]
				}
			}
			s.cur[key] = st
		}
	}
	st.execCount++
	if failed {
		st.errors++
	}
	st.rows += rows
	st.sumLatency += d
	st.minLatency = min(st.minLatency, d)
	st.maxLatency = max(st.maxLatency, d)
	st.buckets[min(latencyBuckets-1, bits.Len64(uint64(d.Microseconds())))]++
	for i, v := range stages {
		st.stages[i] += v
	}
	st.lastSeen = now
	return st.p95.Observe(0.95, d)
}

// carried returns the p95 estimate key had in the last window, or a new
// one: a digest's estimate survives the window's end.
func (s *stmtSummary) carried(key stmtKey) *trace.Quantile {
	if n := len(s.history); n > 0 {
		if st := s.history[n-1].stmts[key]; st != nil {
			return st.p95
		}
	}
	return &trace.Quantile{}
}

// rotate starts a new window at now when the current one is over, moving
// it to the history.
func (s *stmtSummary) rotate(now time.Time) {
	if now.Sub(s.begin) < stmtSummaryWindow {
		return
	}
	s.history = append(s.history, stmtWindow{begin: s.begin, end: now, stmts: s.cur})
	if len(s.history) > stmtSummaryHistory {
		s.history = s.history[len(s.history)-stmtSummaryHistory:]
	}
	s.begin, s.cur = now, map[stmtKey]*stmtStats{}
}

// quantile returns the upper bound of the bucket holding the q-th latency.
func (st *stmtStats) quantile(q float64) time.Duration {
	rank := uint64(q*float64(st.execCount) + 0.5)
	var seen uint64
	for i, n := range st.buckets {
		seen += n
		if seen >= rank && n > 0 {
			return min(time.Duration(1<<i)*time.Microsecond, st.maxLatency)
		}
	}
	return st.maxLatency
}

// rows returns the current window's statements (history false) or the
// earlier windows' (true), most executed first within a window.
func (s *stmtSummary) rows(now time.Time, history bool) []session.StmtSummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rotate(now)
	windows := []stmtWindow{{begin: s.begin, end: now, stmts: s.cur}}
	if history {
		windows = s.history
	}
	var out []session.StmtSummary
	for _, w := range windows {
		start := len(out)
		for k, st := range w.stmts {
			out = append(out, session.StmtSummary{
				Begin: w.begin, End: w.end, Schema: k.schema, Digest: k.digest, DigestText: st.digestText,
				StmtType: st.stmtType, Prepared: st.prepared, ExecCount: st.execCount, Errors: st.errors,
				SumLatency: st.sumLatency, MaxLatency: st.maxLatency, MinLatency: st.minLatency,
				P99Latency: st.quantile(0.99), SumStages: st.stages, Rows: st.rows, FirstSeen: st.firstSeen, LastSeen: st.lastSeen,
				Sample: st.sample,
			})
		}
		sort.Slice(out[start:], func(i, j int) bool {
			a, b := out[start+i], out[start+j]
			if a.ExecCount != b.ExecCount {
				return a.ExecCount > b.ExecCount
			}
			return a.Digest < b.Digest
		})
	}
	return out
}
