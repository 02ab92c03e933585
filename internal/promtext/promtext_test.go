package promtext

import (
	"math"
	"os"
	"slices"
	"strings"
	"testing"
)

func load(t *testing.T) Families {
	t.Helper()
	f, err := os.Open("testdata/metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mfs, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

func TestByName(t *testing.T) {
	got := load(t).ByName()
	for _, tc := range []struct {
		key  string
		want float64
	}{
		{"go_memstats_mallocs_total", 1234567},
		{"strata_raftstore_regions", 10},
		{"strata_sql_errors_total", 7},
		{"strata_raftstore_read_index_wait_seconds_count", 20},
		{"strata_raftstore_read_index_wait_seconds_sum", 1.55},
		{"rpc_seconds_count", 1000},
		{"rpc_seconds_sum", 3},
	} {
		if math.Abs(got[tc.key]-tc.want) > 1e-9 {
			t.Errorf("%s = %v, want %v", tc.key, got[tc.key], tc.want)
		}
	}
	for k := range got {
		if strings.HasSuffix(k, "_bucket") {
			t.Errorf("ByName kept bucket %s", k)
		}
	}
}

func TestSeries(t *testing.T) {
	mfs := load(t)
	for _, tc := range []struct {
		buckets bool
		key     string
		want    float64
		absent  bool
	}{
		{false, "go_memstats_mallocs_total", 1234567, false},
		{false, `strata_raftstore_regions{type="leaders"}`, 3, false},
		{false, `strata_sql_errors_total{code="9007"}`, 5, false},
		{false, `strata_raftstore_read_index_wait_seconds_count{store="2"}`, 4, false},
		{false, `strata_raftstore_read_index_wait_seconds_bucket{store="1",le="0.01"}`, 0, true},
		{true, `strata_raftstore_read_index_wait_seconds_bucket{store="1",le="0.01"}`, 15, false},
		{true, `strata_raftstore_read_index_wait_seconds_bucket{store="2",le="+Inf"}`, 4, false},
		{false, `rpc_seconds{type="get",quantile="0.5"}`, 0.002, false},
		{true, `rpc_seconds{type="get",quantile="0.5"}`, 0.002, false},
		{false, `rpc_seconds_count{type="get"}`, 1000, false},
	} {
		got, ok := mfs.Series(tc.buckets)[tc.key]
		if tc.absent {
			if ok {
				t.Errorf("%s present (%v)", tc.key, got)
			}
			continue
		}
		if !ok || got != tc.want {
			t.Errorf("Series(%v)[%s] = %v, %v; want %v", tc.buckets, tc.key, got, ok, tc.want)
		}
	}
}

func TestSum(t *testing.T) {
	mfs := load(t)
	for _, tc := range []struct {
		name  string
		match map[string]string
		want  float64
	}{
		{"strata_sql_errors_total", nil, 7},
		{"strata_sql_errors_total", map[string]string{"code": "1062"}, 2},
		{"strata_sql_errors_total", map[string]string{"code": "1"}, 0},
		{"strata_raftstore_regions", map[string]string{"type": "peers"}, 7},
		{"strata_raftstore_read_index_wait_seconds_count", map[string]string{"store": "1"}, 16},
		{"rpc_seconds_count", map[string]string{"type": "get"}, 1000},
		{"missing", nil, 0},
	} {
		if got := mfs.Sum(tc.name, tc.match); got != tc.want {
			t.Errorf("Sum(%s, %v) = %v, want %v", tc.name, tc.match, got, tc.want)
		}
	}
}

func TestHistogram(t *testing.T) {
	mfs := load(t)
	h := mfs.Histogram("strata_raftstore_read_index_wait_seconds")
	if h == nil {
		t.Fatal("no histogram")
	}
	if !slices.Equal(h.Les, []float64{0.001, 0.01, math.Inf(1)}) || !slices.Equal(h.Cum, []float64{11, 17, 20}) {
		t.Errorf("buckets %v %v", h.Les, h.Cum)
	}
	if h.Count != 20 || math.Abs(h.Sum-1.55) > 1e-9 {
		t.Errorf("sum %v count %v", h.Sum, h.Count)
	}
	if mfs.Histogram("strata_sql_errors_total") != nil || mfs.Histogram("missing") != nil {
		t.Error("histogram of a counter / a missing family")
	}
}
