package main

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseReportInterval1(t *testing.T) {
	for _, tc := range []struct {
		file        string
		intervals   int
		first, last Interval
		events      int64
	}{
		{
			file:      "testdata/update_index_interval1_run.txt",
			intervals: 6,
			first:     Interval{AtSec: 1, TPS: 720.10, QPS: 720.10, LatPctMs: 12.98},
			last:      Interval{AtSec: 6, TPS: 713.99, QPS: 713.99, LatPctMs: 17.95},
			events:    5196,
		},
		{
			file:      "testdata/point_select_run.txt", // --report-interval=5
			intervals: 2,
			first:     Interval{AtSec: 5, TPS: 2954.92, QPS: 2954.92, LatPctMs: 10.09},
			last:      Interval{AtSec: 10, TPS: 1290.02, QPS: 1290.02, LatPctMs: 41.85},
			events:    21241,
		},
	} {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			b, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			o := ParseOutput(string(b))
			if len(o.Intervals) != tc.intervals {
				t.Fatalf("%d intervals, want %d", len(o.Intervals), tc.intervals)
			}
			if o.Intervals[0] != tc.first || o.Intervals[len(o.Intervals)-1] != tc.last {
				t.Errorf("intervals %+v ... %+v", o.Intervals[0], o.Intervals[len(o.Intervals)-1])
			}
			if o.Events != tc.events || HistogramCount(o.Histogram) != tc.events {
				t.Errorf("events %d, histogram %d, want %d", o.Events, HistogramCount(o.Histogram), tc.events)
			}
			if p99 := Percentile(o.Histogram, 0.99); math.Abs(p99-o.ReportedPctMs) > 0.01 {
				t.Errorf("p99 from histogram %v, sysbench says %v", p99, o.ReportedPctMs)
			}
			var r Result
			r.fill(o)
			if !(r.P50Ms <= r.P90Ms && r.P90Ms <= r.P95Ms && r.P95Ms <= r.P99Ms && r.P99Ms <= r.P999Ms && r.P999Ms <= r.MaxMs) {
				t.Errorf("percentiles out of order: %+v", r)
			}
			if len(r.Histogram) != len(o.Histogram) || len(r.Intervals) != tc.intervals {
				t.Errorf("result keeps %d buckets, %d intervals", len(r.Histogram), len(r.Intervals))
			}
		})
	}
}

func TestNines(t *testing.T) {
	for _, tc := range []struct {
		q, want float64
		label   string
		n       int
	}{
		{0, 0, "0%", 0},
		{0.9, 1, "90%", 1},
		{0.99, 2, "99%", 2},
		{0.999, 3, "99.9%", 3},
		{0.9999, 4, "99.99%", 4},
		{0.99999, 5, "99.999%", 5},
	} {
		if got := nines(tc.q); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("nines(%v) = %v, want %v", tc.q, got, tc.want)
		}
		if got := ninesLabel(tc.n); got != tc.label {
			t.Errorf("ninesLabel(%d) = %q, want %q", tc.n, got, tc.label)
		}
	}
	if !math.IsInf(nines(1), 1) {
		t.Error("nines(1) should be +Inf")
	}
}

func TestPercentileCurve(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    []Bucket
		want [][2]float64 // (nines, ms) points
	}{
		{"empty", nil, nil},
		{"one bucket", []Bucket{{Ms: 1.5, Count: 10}}, [][2]float64{{0, 1.5}, {1, 1.5}}},
		{
			// 100 events: 90 at 1 ms, 9 at 2 ms, 1 at 7 ms. The last step
			// ends at 1-1/100 = 99% (2 nines), not at infinity.
			"three buckets",
			[]Bucket{{Ms: 1, Count: 90}, {Ms: 2, Count: 9}, {Ms: 5, Count: 0}, {Ms: 7, Count: 1}},
			[][2]float64{{0, 1}, {1, 1}, {1, 2}, {2, 2}, {2, 7}, {2, 7}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := percentileCurve(tc.h)
			if len(got) != len(tc.want) {
				t.Fatalf("%d points %v, want %d", len(got), got, len(tc.want))
			}
			for i, p := range got {
				if math.Abs(p.X-tc.want[i][0]) > 1e-9 || p.Y != tc.want[i][1] {
					t.Errorf("point %d = (%v, %v), want %v", i, p.X, p.Y, tc.want[i])
				}
			}
		})
	}
	// On real output the curve is monotone in both axes and ends at
	// log10(N) nines with the highest bucket.
	b, err := os.ReadFile("testdata/update_index_interval1_run.txt")
	if err != nil {
		t.Fatal(err)
	}
	o := ParseOutput(string(b))
	xy := percentileCurve(o.Histogram)
	for i := 1; i < len(xy); i++ {
		if xy[i].X < xy[i-1].X || xy[i].Y < xy[i-1].Y {
			t.Fatalf("not monotone at %d: %v then %v", i, xy[i-1], xy[i])
		}
	}
	last := xy[len(xy)-1]
	if math.Abs(last.X-math.Log10(float64(o.Events))) > 1e-9 || last.Y != o.Histogram[len(o.Histogram)-1].Ms {
		t.Errorf("last point %v", last)
	}
}

func TestLogTicks(t *testing.T) {
	var labels []string
	for _, tk := range (logTicks{}).Ticks(0.1, 10) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, " "); got != "0.1 0.2 0.5 1 2 5 10" {
		t.Errorf("labels %q", got)
	}
	if lo, hi := decades(0.14, 32, 1); lo != 0.1 || hi != 100 {
		t.Errorf("decades = %v, %v", lo, hi)
	}
}

// TestPlots draws both figures from captured output (two targets, one of
// them a second run) and checks they are PNGs of the expected size.
func TestPlots(t *testing.T) {
	b, err := os.ReadFile("testdata/update_index_interval1_run.txt")
	if err != nil {
		t.Fatal(err)
	}
	o := ParseOutput(string(b))
	var rs []Result
	for i, tgt := range []string{"strata", "mariadb", "strata"} {
		r := Result{Target: tgt, Workload: "oltp_update_index", Threads: 4, Run: 1 + i/2, Status: "ok", Started: time.Now()}
		r.fill(o)
		rs = append(rs, r)
	}
	// A stall: one second without events has p99 0 and must not break the
	// log scale.
	rs[1].Intervals = append([]Interval(nil), rs[1].Intervals...)
	rs[1].Intervals[2] = Interval{AtSec: 3}
	dir := t.TempDir()
	s := &session{Stamp: "2026-01-01-0000", Results: rs}
	cfg := config{Targets: []string{"strata", "mariadb"}, Runs: 2, ResultsDir: dir}
	s.plotWorkload(cfg, "oltp_update_index", 4)
	for _, kind := range []string{"latency", "timeseries"} {
		path := filepath.Join(dir, "plots", "2026-01-01-0000-oltp_update_index-t4-"+kind+".png")
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if b := img.Bounds(); b.Dx() < 600 || b.Dy() < 300 {
			t.Errorf("%s: %v", kind, b)
		}
	}
	// No usable result: nothing is drawn, nothing fails.
	s.plotWorkload(cfg, "oltp_insert", 4)
}

func TestParseGoTPC(t *testing.T) {
	for _, tc := range []struct {
		file        string
		tpmC        float64
		tpmTotal    float64
		summaries   int
		newOrder    TPCCTxn
		errors      int
		txns        int64
		firstErrHas string
	}{
		{
			file: "testdata/gotpc_run.txt", tpmC: 878.4, tpmTotal: 64.8 + 878.4 + 76.7 + 912.3 + 98.6, summaries: 6,
			newOrder: TPCCTxn{Name: "NEW_ORDER", Count: 219, TPM: 878.4, AvgMs: 48.4, P50Ms: 39.8, P90Ms: 88.1, P95Ms: 104.9, P99Ms: 142.6, P999: 226.5, MaxMs: 226.5},
			txns:     15 + 219 + 19 + 227 + 24,
		},
		{
			file: "testdata/gotpc_errors.txt", tpmC: 480, tpmTotal: 1020, summaries: 3,
			newOrder: TPCCTxn{Name: "NEW_ORDER", Count: 80, TPM: 480, AvgMs: 50, P50Ms: 40, P90Ms: 90, P95Ms: 100, P99Ms: 120, P999: 130, MaxMs: 140},
			errors:   2, txns: 170, firstErrHas: "Error 9007",
		},
	} {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			b, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			o := ParseGoTPC(string(b))
			if o.TpmC != tc.tpmC || math.Abs(o.TpmTotal-tc.tpmTotal) > 1e-6 || len(o.Summary) != tc.summaries {
				t.Errorf("tpmC %v tpmTotal %v summaries %d", o.TpmC, o.TpmTotal, len(o.Summary))
			}
			r := TPCCResult{Txns: o.Summary}
			if got := r.txn("NEW_ORDER"); got != tc.newOrder {
				t.Errorf("NEW_ORDER %+v", got)
			}
			if r.transactions() != tc.txns {
				t.Errorf("transactions %d, want %d", r.transactions(), tc.txns)
			}
			if o.ErrorsCount != tc.errors || (tc.firstErrHas != "" && !strings.Contains(o.Errors[0], tc.firstErrHas)) {
				t.Errorf("errors %d %q", o.ErrorsCount, o.Errors)
			}
		})
	}
}

func TestPlanned(t *testing.T) {
	cfg := config{Workloads: make([]string, 9), Targets: []string{"strata", "mariadb"}, ThreadCounts: []int{1, 8}, Runs: 1,
		TimeSec: 20, WarmupSec: 5, TableSize: 10000, Tables: 1,
		TPCC: tpccConfig{TimeSec: 120, Warehouses: 1, Targets: []string{"strata", "mariadb"}}}
	p := planned(cfg)
	if p.Runs != 36 {
		t.Errorf("runs %d", p.Runs)
	}
	// 36 runs of at least 25 s each plus two TPC-C runs of 120 s.
	if p.Total < 36*25*time.Second+240*time.Second || p.Total > 30*time.Minute {
		t.Errorf("planned %v", p.Total)
	}
}

func TestFailures(t *testing.T) {
	s := &session{Results: []Result{{Workload: "w", Target: "strata", Status: "ok"}, {Workload: "w", Target: "strata", Status: "run_failed", Error: "FATAL: x"}},
		TPCC: []TPCCResult{{Target: "strata", Status: "ok"}, {Target: "mariadb", Status: "prepare_failed"}}}
	if got := s.failures(); len(got) != 2 || !strings.Contains(got[0], "FATAL: x") || !strings.Contains(got[1], "tpcc mariadb") {
		t.Errorf("%q", got)
	}
}
