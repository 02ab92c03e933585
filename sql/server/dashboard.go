package server

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/stratadb/strata/kv/execdetails"
	"github.com/stratadb/strata/sql/session"
	"github.com/stratadb/strata/sql/trace"
)

// The /dashboard page (issue 29) is rendered on the server from this
// template: no script, no external resource, so it reads the same in a
// browser, in curl and in a headless Chromium's DOM dump.
//
//go:embed dashboard.html
var dashboardHTML string

var dashboardTmpl = template.Must(template.New("dashboard").Funcs(template.FuncMap{
	"ms":  func(d time.Duration) string { return fmtMS(d.Seconds()) },
	"sec": func(s float64) string { return fmtMS(s) },
	"pct": func(f float64) string { return fmt.Sprintf("%.2f%%", f) },
}).Parse(dashboardHTML))

// fmtMS formats seconds as milliseconds (microseconds below 1 ms).
func fmtMS(s float64) string {
	ms := s * 1e3
	switch {
	case ms >= 100:
		return fmt.Sprintf("%.0f ms", ms)
	case ms >= 10:
		return fmt.Sprintf("%.1f ms", ms)
	case ms >= 1:
		return fmt.Sprintf("%.2f ms", ms)
	default:
		return fmt.Sprintf("%.0f µs", ms*1e3)
	}
}

// dashboardTop bounds the digests, slow queries and traces shown.
const dashboardTop = 20

// DashboardHandler serves /dashboard (HTML) and its JSON endpoints
// /dashboard/api/{statements,slow,traces,stages,latency} on the node's
// status port. Every request reads the node's live state; nothing is
// cached.
func (s *Server) DashboardHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/dashboard", s.serveDashboard)
	mux.HandleFunc("/dashboard/", s.serveDashboard)
	api := func(name string, f func() any) {
		mux.HandleFunc("/dashboard/api/"+name, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(f())
		})
	}
	api("statements", func() any { return s.topStatements() })
	api("slow", func() any { return s.slowRing.Recent() })
	api("traces", func() any { return s.traces.Recent() })
	api("stages", func() any { return stageHistograms() })
	api("latency", func() any { return latencyCurves() })
	return mux
}

// dashStmt is a digest of the statements summary as the page shows it.
type dashStmt struct {
	session.StmtSummary
	Avg, P99 time.Duration
	Stages   []dashStage // the stages it spent time in, per execution
	Slowest  string
}

type dashStage struct {
	Name  string
	Avg   time.Duration
	Share float64 // % of the digest's average latency (bar width)
}

// topStatements is the current window's digests, the largest total
// latency first.
func (s *Server) topStatements() []dashStmt {
	rows := s.summary.rows(time.Now(), false)
	sort.Slice(rows, func(i, j int) bool { return rows[i].SumLatency > rows[j].SumLatency })
	if len(rows) > dashboardTop {
		rows = rows[:dashboardTop]
	}
	out := make([]dashStmt, 0, len(rows))
	for _, r := range rows {
		n := time.Duration(max(r.ExecCount, 1))
		d := dashStmt{StmtSummary: r, Avg: r.SumLatency / n, P99: r.P99Latency}
		for st, sum := range r.SumStages {
			if sum <= 0 {
				continue
			}
			avg := sum / n
			d.Stages = append(d.Stages, dashStage{Name: execdetails.Stage(st).String(), Avg: avg,
				Share: min(100, 100*avg.Seconds()/max(d.Avg.Seconds(), 1e-9))})
		}
		// As the slow log names it (the sums order the stages as their
		// averages do).
		if st := execdetails.Slowest(&r.SumStages); st < execdetails.NumStages {
			d.Slowest = st.String()
		}
		out = append(out, d)
	}
	return out
}

// stageHist is one stage's histogram (strata_sql_stage_seconds).
type stageHist struct {
	Stage   string       `json:"stage"`
	Count   uint64       `json:"count"`
	Sum     float64      `json:"sum_seconds"`
	P50     float64      `json:"p50_seconds"`
	P99     float64      `json:"p99_seconds"`
	Buckets []histBucket `json:"buckets"` // non-cumulative, up to the last non-empty
	Max     uint64       `json:"-"`       // the largest bucket count (bar scale)
	Last    float64      `json:"-"`       // the last bucket's bound shown
}

type histBucket struct {
	LE    float64 `json:"le"` // upper bound in seconds (+Inf last)
	Count uint64  `json:"count"`
	Bar   float64 `json:"-"` // % of the largest bucket
}

// readHist reads a histogram child of a HistogramVec.
func readHist(o prometheus.Observer) *dto.Histogram {
	m, ok := o.(prometheus.Metric)
	if !ok {
		return nil
	}
	var pb dto.Metric
	if m.Write(&pb) != nil {
		return nil
	}
	return pb.GetHistogram()
}

// histQuantile is the latency below which a fraction q of h's samples
// fall, interpolated linearly within a bucket (as PromQL's
// histogram_quantile).
func histQuantile(h *dto.Histogram, q float64) float64 {
	total := h.GetSampleCount()
	if total == 0 {
		return 0
	}
	rank := q * float64(total)
	lo, prev := 0.0, uint64(0)
	for _, b := range h.GetBucket() {
		c := b.GetCumulativeCount()
		if float64(c) >= rank {
			if c == prev {
				return b.GetUpperBound()
			}
			return lo + (b.GetUpperBound()-lo)*(rank-float64(prev))/float64(c-prev)
		}
		lo, prev = b.GetUpperBound(), c
	}
	return lo // in +Inf: the last finite bound
}

func stageHistograms() []stageHist {
	var out []stageHist
	for st := range execdetails.NumStages {
		h := readHist(stageSeconds[st])
		if h == nil {
			continue
		}
		sh := stageHist{Stage: st.String(), Count: h.GetSampleCount(), Sum: h.GetSampleSum(),
			P50: histQuantile(h, 0.5), P99: histQuantile(h, 0.99)}
		var prev uint64
		last := -1
		for i, b := range h.GetBucket() {
			c := b.GetCumulativeCount() - prev
			prev = b.GetCumulativeCount()
			sh.Buckets = append(sh.Buckets, histBucket{LE: b.GetUpperBound(), Count: c})
			if c > 0 {
				last = i
			}
			sh.Max = max(sh.Max, c)
		}
		if over := sh.Count - prev; over > 0 {
			sh.Buckets = append(sh.Buckets, histBucket{LE: math.Inf(1), Count: over})
			last = len(sh.Buckets) - 1
			sh.Max = max(sh.Max, over)
		}
		sh.Buckets = sh.Buckets[:last+1]
		if last >= 0 {
			sh.Last = sh.Buckets[last].LE
		}
		for i := range sh.Buckets {
			sh.Buckets[i].Bar = 100 * float64(sh.Buckets[i].Count) / float64(max(sh.Max, 1))
		}
		out = append(out, sh)
	}
	return out
}

// curvePercentiles are the points of a latency curve.
var curvePercentiles = []float64{50, 75, 90, 95, 99, 99.9, 99.99}

// latencyCurve is one statement type's latency by percentile
// (strata_sql_query_duration_seconds).
type latencyCurve struct {
	Type     string            `json:"type"`
	Count    uint64            `json:"count"`
	Points   []curvePoint      `json:"points"`
	Polyline template.HTMLAttr `json:"-"`
	Color    template.CSS      `json:"-"`
}

type curvePoint struct {
	Percentile float64 `json:"percentile"`
	Seconds    float64 `json:"seconds"`
}

// The latency chart's geometry: x is -log10(1 - percentile) (50 % at
// the left, 99.99 % at the right), y is log10(seconds) from 10 µs to 10 s.
const (
	chartW, chartH = 640.0, 240.0
	chartPad       = 40.0
	chartMinLog    = -5.0
	chartMaxLog    = 1.0
)

func chartX(p float64) float64 {
	x := -math.Log10(1-p/100) - math.Log10(2) // 0 at 50 %
	return chartPad + x/(4-math.Log10(2))*(chartW-2*chartPad)
}

func chartY(s float64) float64 {
	l := math.Min(math.Max(math.Log10(math.Max(s, 1e-6)), chartMinLog), chartMaxLog)
	return chartH - chartPad - (l-chartMinLog)/(chartMaxLog-chartMinLog)*(chartH-2*chartPad)
}

var curveColors = []template.CSS{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"}

func latencyCurves() []latencyCurve {
	var out []latencyCurve
	observers.Range(func(k, v any) bool {
		h := readHist(v.(prometheus.Observer))
		if h == nil || h.GetSampleCount() == 0 {
			return true
		}
		c := latencyCurve{Type: k.(string), Count: h.GetSampleCount()}
		var pts []string
		for _, p := range curvePercentiles {
			s := histQuantile(h, p/100)
			c.Points = append(c.Points, curvePoint{Percentile: p, Seconds: s})
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", chartX(p), chartY(s)))
		}
		c.Polyline = template.HTMLAttr(`points="` + strings.Join(pts, " ") + `"`)
		out = append(out, c)
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Count > out[j].Count })
	for i := range out {
		out[i].Color = curveColors[i%len(curveColors)]
	}
	return out
}

// dashTrace is a kept trace as a waterfall.
type dashTrace struct {
	*trace.Trace
	Rows []waterfallRow
}

type waterfallRow struct {
	Label       string
	Depth       int
	Indent      int // px
	RPC         bool
	Left, Width float64 // % of the statement's duration
	Dur         time.Duration
	Slowest     bool
}

func waterfall(t *trace.Trace) dashTrace {
	if t == nil {
		return dashTrace{}
	}
	total := time.Duration(t.Duration * float64(time.Second))
	out := dashTrace{Trace: t}
	for _, n := range trace.Tree(t.Type, total, t.Spans) {
		r := waterfallRow{Label: n.Label(), Depth: n.Depth, Indent: 12 * n.Depth, RPC: n.RPC, Dur: time.Duration(n.DurNS),
			Slowest: !n.RPC && n.Depth > 0 && n.Name == t.Slowest}
		if total > 0 {
			r.Left = min(100, 100*float64(n.StartNS)/float64(total))
			r.Width = max(0.3, min(100-r.Left, 100*float64(n.DurNS)/float64(total)))
		}
		out.Rows = append(out.Rows, r)
	}
	return out
}

type dashSlow struct {
	*SlowEntry
	Waterfall dashTrace
}

type dashboardPage struct {
	Now        time.Time
	Tracing    bool
	KeepMS     int64
	SlowMS     int64
	Statements []dashStmt
	Slow       []dashSlow
	Traces     []dashTrace
	Stages     []stageHist
	Curves     []latencyCurve
	ChartW     float64
	ChartH     float64
	XTicks     []chartTick
	YTicks     []chartTick
}

type chartTick struct {
	Pos   float64
	Label string
}

func (s *Server) serveDashboard(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/dashboard" && r.URL.Path != "/dashboard/" {
		http.NotFound(w, r)
		return
	}
	p := dashboardPage{Now: time.Now(), Tracing: trace.Enabled(), KeepMS: trace.KeepThreshold().Milliseconds(),
		Statements: s.topStatements(), Stages: stageHistograms(), Curves: latencyCurves(), ChartW: chartW, ChartH: chartH}
	if s.slow != nil {
		p.SlowMS = s.slow.threshold.Milliseconds()
	}
	for i, e := range s.slowRing.Recent() {
		if i == dashboardTop {
			break
		}
		p.Slow = append(p.Slow, dashSlow{SlowEntry: e, Waterfall: waterfall(e.Trace)})
	}
	traces := s.traces.Recent()
	sort.SliceStable(traces, func(i, j int) bool { return traces[i].Duration > traces[j].Duration })
	for i, t := range traces {
		if i == dashboardTop/2 {
			break
		}
		p.Traces = append(p.Traces, waterfall(t))
	}
	for _, pc := range curvePercentiles {
		p.XTicks = append(p.XTicks, chartTick{Pos: chartX(pc), Label: fmt.Sprintf("p%g", pc)})
	}
	for l := chartMinLog; l <= chartMaxLog; l++ {
		p.YTicks = append(p.YTicks, chartTick{Pos: chartY(math.Pow(10, l)), Label: fmtMS(math.Pow(10, l))})
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := dashboardTmpl.Execute(w, p); err != nil {
		s.log.Warn("dashboard render failed", "err", err)
	}
}
