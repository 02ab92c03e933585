package main

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/stratadb/strata/internal/promtext"
)

func TestParseOutput(t *testing.T) {
	b, err := os.ReadFile("testdata/point_select_run.txt")
	if err != nil {
		t.Fatal(err)
	}
	o := ParseOutput(string(b))
	if o.Queries != 21241 || o.Transactions != 21241 || o.Events != 21241 || o.Reads != 21241 {
		t.Errorf("counts: %+v", o)
	}
	if o.QPS != 2122.86 || o.TPS != 2122.86 {
		t.Errorf("rates: qps %v tps %v", o.QPS, o.TPS)
	}
	if o.LatMinMs != 0.38 || o.LatAvgMs != 3.77 || o.LatMaxMs != 162.97 || o.ReportedPct != 99 || o.ReportedPctMs != 26.68 {
		t.Errorf("latency: %+v", o)
	}
	if o.TotalTimeSec != 10.0055 {
		t.Errorf("total time %v", o.TotalTimeSec)
	}
	if n := HistogramCount(o.Histogram); n != o.Events {
		t.Errorf("histogram holds %d events, sysbench counted %d", n, o.Events)
	}
	// Our percentile from the histogram agrees with sysbench's own.
	if p99 := Percentile(o.Histogram, 0.99); math.Abs(p99-o.ReportedPctMs) > 0.01 {
		t.Errorf("p99 from histogram %v, sysbench says %v", p99, o.ReportedPctMs)
	}
	p50, p999 := Percentile(o.Histogram, 0.5), Percentile(o.Histogram, 0.999)
	if !(o.LatMinMs <= p50 && p50 <= o.ReportedPctMs && o.ReportedPctMs <= p999 && p999 <= o.LatMaxMs) {
		t.Errorf("percentiles out of order: p50 %v p99 %v p999 %v", p50, o.ReportedPctMs, p999)
	}
	if len(o.Intervals) != 2 || o.Intervals[0].TPS != 2954.92 || o.Intervals[1].LatPctMs != 41.85 {
		t.Errorf("intervals: %+v", o.Intervals)
	}
	if len(o.Fatal) != 0 {
		t.Errorf("fatal: %v", o.Fatal)
	}
}

func TestParseFatal(t *testing.T) {
	b, err := os.ReadFile("testdata/fatal.txt")
	if err != nil {
		t.Fatal(err)
	}
	o := ParseOutput(string(b))
	if len(o.Fatal) != 2 || !strings.Contains(o.Fatal[0], "error 9007") {
		t.Errorf("fatal: %q", o.Fatal)
	}
	if got := failure(string(b), nil); !strings.Contains(got, "Write conflict") {
		t.Errorf("failure: %q", got)
	}
}

func TestPercentile(t *testing.T) {
	h := []Bucket{{1, 50}, {2, 40}, {3, 9}, {10, 1}}
	for _, c := range []struct{ q, want float64 }{{0.5, 1}, {0.51, 2}, {0.9, 2}, {0.99, 3}, {0.999, 10}, {1, 10}} {
		if got := Percentile(h, c.q); got != c.want {
			t.Errorf("q %v: got %v want %v", c.q, got, c.want)
		}
	}
	// sysbench rounds the rank: 0.99 * 4867 = 4818.33 -> the 4818th event
	// (a read_only run where ceil would have picked the next bucket).
	h2 := []Bucket{{144.974, 4817}, {147.608, 1}, {150.29, 1}, {153.021, 48}}
	if got := Percentile(h2, 0.99); got != 147.608 {
		t.Errorf("rank rounding: got %v want 147.608", got)
	}
	if !math.IsNaN(Percentile(nil, 0.5)) {
		t.Error("empty histogram should give NaN")
	}
}

func TestParseProm(t *testing.T) {
	in := `# HELP x
go_memstats_mallocs_total 1.5e+06
strata_raftstore_proposals_total{result="ok"} 10
strata_raftstore_proposals_total{result="err"} 2
# TYPE strata_sql_query_duration_seconds histogram
strata_sql_query_duration_seconds_bucket{type="select",le="0.1"} 7
strata_sql_query_duration_seconds_bucket{type="select",le="+Inf"} 7
strata_sql_query_duration_seconds_sum{type="select"} 0.5
strata_sql_query_duration_seconds_count{type="select"} 7
`
	mfs, err := promtext.Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	m := mfs.ByName()
	if m["go_memstats_mallocs_total"] != 1.5e6 || m["strata_raftstore_proposals_total"] != 12 ||
		m["strata_sql_query_duration_seconds_sum"] != 0.5 || m["strata_sql_query_duration_seconds_bucket"] != 0 {
		t.Errorf("%v", m)
	}
}

func TestWorkloadSpec(t *testing.T) {
	s, o := workloadSpec("oltp_read_only:skip_trx=on:mysql-ignore-errors=9007")
	if s != "oltp_read_only" || len(o) != 2 || o[0] != "--skip_trx=on" || o[1] != "--mysql-ignore-errors=9007" {
		t.Errorf("%q %q", s, o)
	}
}

func TestMeasuredRun(t *testing.T) {
	raw := "==== sysbench x prepare\nprep\n==== sysbench x --time=5 run\nwarm\n==== sysbench x --histogram=on run\nmeasured\n==== exit: 1\n"
	if got := measuredRun(raw); got != "sysbench x --histogram=on run\nmeasured\n" {
		t.Errorf("%q", got)
	}
}
