package main

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// hist records latencies given in µs.
func hist(us ...int64) []Bucket {
	h := newHist()
	for _, v := range us {
		recordUs(h, time.Duration(v)*time.Microsecond)
	}
	return histBuckets(h)
}

// repeat returns n copies of v.
func repeat(v int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// ramp returns 1..n µs, each once.
func ramp(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i + 1)
	}
	return out
}

func TestHDRPercentiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		us   []int64
		q    float64
		ms   float64 // expected, exact or within 0.1 %
	}{
		{"single", []int64{250}, 0.5, 0.250},
		{"single p999", []int64{250}, 0.999, 0.250},
		{"sub-ms exact", []int64{100, 200, 300, 400}, 0.5, 0.200},
		{"sub-ms exact p75", []int64{100, 200, 300, 400}, 0.75, 0.300},
		{"ramp p50", ramp(1000), 0.50, 0.500},
		{"ramp p99", ramp(1000), 0.99, 0.990},
		{"ramp p999", ramp(1000), 0.999, 0.999},
		// 99 990 events at 300 µs and 10 at 50 ms: p99.99 is the last fast
		// one, p99.995 a slow one; sysbench's 1.8 % buckets could not tell
		// 50 ms from 50.9 ms.
		{"tail p9999", append(repeat(300, 99990), repeat(50_000, 10)...), 0.9999, 0.300},
		{"tail p99995", append(repeat(300, 99990), repeat(50_000, 10)...), 0.99995, 50.0},
		{"seconds", []int64{1_234_567}, 0.5, 1234.567},
		{"clamped high", []int64{700_000_000}, 0.5, 600_000},
		{"clamped low", []int64{0}, 0.5, 0.001},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Percentile(hist(tc.us...), tc.q)
			require.InEpsilon(t, tc.ms, got, 0.001, "p%g", 100*tc.q)
			require.GreaterOrEqual(t, got, tc.ms, "HDR reports the bucket's highest equivalent value")
		})
	}
}

func TestHistBucketsKeepEveryEvent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		us      []int64
		buckets int
	}{
		{"empty", nil, 0},
		{"one value", repeat(42, 7), 1},
		{"exact below 2048 µs", ramp(2000), 2000},
		{"two distant", []int64{1, 10_000_000}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := hist(tc.us...)
			require.Len(t, b, tc.buckets)
			require.EqualValues(t, len(tc.us), HistogramCount(b))
			require.True(t, slices.IsSortedFunc(b, func(x, y Bucket) int { return int(math.Copysign(1, x.Ms-y.Ms)) }))
		})
	}
}

func TestRecordUsRoundsUp(t *testing.T) {
	for _, tc := range []struct {
		d  time.Duration
		us float64
	}{
		{0, 0.001},
		{time.Nanosecond, 0.001},
		{999 * time.Nanosecond, 0.001},
		{1001 * time.Nanosecond, 0.002},
		{1500 * time.Microsecond, 1.5},
	} {
		h := newHist()
		recordUs(h, tc.d)
		require.Equal(t, []Bucket{{Ms: tc.us, Count: 1}}, histBuckets(h), "%v", tc.d)
	}
}

// The Go driver's report must read back through ParseOutput as sysbench's
// does: the figures the JSON, the report and the plots use.
func TestGoDriverReportParses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write bool
		us    []int64
	}{
		{"point select", false, append(ramp(5000), repeat(80_000, 3)...)},
		{"update", true, []int64{900, 950, 1000, 1_000_000}},
		{"no events", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := hist(tc.us...)
			var sum, mx int64
			mn := int64(math.MaxInt64)
			for _, v := range tc.us {
				sum += v
				mx, mn = max(mx, v), min(mn, v)
			}
			if len(tc.us) == 0 {
				mn = 0
			}
			var w bytes.Buffer
			w.WriteString(intervalLine(1, 4, 1000, 0, 99, 1.25, 0.5))
			n := int64(len(tc.us))
			writeSysbenchReport(&w, report{write: tc.write, events: n, ignored: 3, elapsed: 2,
				minMs: float64(mn) / 1000, maxMs: float64(mx) / 1000, sumMs: float64(sum) / 1000,
				percentile: 99, buckets: b, threads: 4, histogram: true})
			o := ParseOutput(w.String())
			require.Empty(t, o.Fatal)
			require.Equal(t, b, o.Histogram)
			require.Equal(t, n, o.Events)
			require.Equal(t, n, o.Transactions)
			require.Equal(t, n, o.Queries)
			if tc.write {
				require.Equal(t, n, o.Writes)
				require.Zero(t, o.Reads)
			} else {
				require.Equal(t, n, o.Reads)
				require.Zero(t, o.Writes)
			}
			require.EqualValues(t, 3, o.IgnoredErrors)
			require.InDelta(t, float64(n)/2, o.QPS, 0.01)
			require.InDelta(t, float64(mx)/1000, o.LatMaxMs, 0.001)
			require.InDelta(t, float64(mn)/1000, o.LatMinMs, 0.001)
			require.EqualValues(t, 99, o.ReportedPct)
			if n > 0 {
				require.InDelta(t, float64(sum)/float64(n)/1000, o.LatAvgMs, 0.001)
				require.InDelta(t, Percentile(b, 0.99), o.ReportedPctMs, 0.001)
			}
			require.Equal(t, []Interval{{AtSec: 1, TPS: 1000, QPS: 1000, LatPctMs: 1.25, ErrPerSec: 0.5}}, o.Intervals)

			// Without --histogram=on (the warm-up) the same report has no
			// histogram lines.
			w.Reset()
			writeSysbenchReport(&w, report{events: n, elapsed: 2, percentile: 99, buckets: b, threads: 4})
			o = ParseOutput(w.String())
			require.Empty(t, o.Histogram)
			require.Equal(t, n, o.Events)
		})
	}
}

// With HDR buckets the percentile curve reaches 1 - 1/N: five nines for
// 100 000 events.
func TestGoDriverPercentileCurveReach(t *testing.T) {
	for _, tc := range []struct {
		n     int
		nines float64
	}{{10, 1}, {1000, 3}, {100_000, 5}} {
		xy := percentileCurve(hist(ramp(tc.n)...))
		require.InDelta(t, tc.nines, xy[len(xy)-1].X, 1e-9, "n=%d", tc.n)
		require.InEpsilon(t, float64(tc.n)/1000, xy[len(xy)-1].Y, 0.001, "n=%d", tc.n)
	}
}

func TestSbRandSpecial(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		a, b uint32
	}{{1, 10000}, {1, 100}, {1, 2}, {5, 5}} {
		hot := 0
		const draws = 200_000
		t0 := float64(tc.b - tc.a)
		lo := float64(tc.a) + t0/2 - t0/200
		hi := lo + t0/100 + 1
		for range draws {
			v := sbRandSpecial(r, tc.a, tc.b)
			require.GreaterOrEqual(t, v, tc.a)
			require.LessOrEqual(t, v, max(tc.a, tc.b))
			if float64(v) >= lo && float64(v) < hi {
				hot++
			}
		}
		if tc.b-tc.a >= 10000 {
			// 75 % of the draws go to the middle 1 % (plus the bell's share).
			require.InDelta(t, 0.75, float64(hot)/draws, 0.03, "%d..%d", tc.a, tc.b)
		}
	}
}

func TestCValue(t *testing.T) {
	c := cValue(rand.New(rand.NewPCG(3, 4)))
	require.Len(t, c, 119)
	require.Regexp(t, `^([0-9]{11}-){9}[0-9]{11}$`, c)
}

func TestParseGoClientArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		err  string
		want goClientOpts
	}{
		{name: "sysbench's", args: []string{"oltp_point_select", "--db-driver=mysql", "--mysql-host=127.0.0.1", "--mysql-port=4123",
			"--mysql-user=root", "--mysql-db=sbtest", "--tables=2", "--table-size=500", "--create_secondary=off",
			"--mysql-ignore-errors=1213,9007", "--threads=16", "--time=20", "--histogram=on", "--percentile=99", "--report-interval=1", "run"},
			want: goClientOpts{script: "oltp_point_select", host: "127.0.0.1", port: 4123, user: "root", db: "sbtest",
				tables: 2, size: 500, threads: 16, timeSec: 20, reportInterval: 1, percentile: 99, ignore: []uint16{1213, 9007}, histogram: true}},
		{name: "ignore all", args: []string{"oltp_update_non_index", "--mysql-ignore-errors=all"},
			want: goClientOpts{script: "oltp_update_non_index", host: "127.0.0.1", port: 3306, user: "root", db: "sbtest",
				tables: 1, size: 10000, threads: 1, timeSec: 10, percentile: 95, ignoreAll: true}},
		{name: "other script", args: []string{"oltp_read_write"}, err: "runs only"},
		{name: "bad number", args: []string{"oltp_point_select", "--threads=x"}, err: "bad option --threads=x"},
		{name: "bad error code", args: []string{"oltp_point_select", "--mysql-ignore-errors=abc"}, err: "bad error code"},
		{name: "zero threads", args: []string{"oltp_point_select", "--threads=0"}, err: "must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseGoClientArgs(tc.args)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestExpandDrivers(t *testing.T) {
	for _, tc := range []struct {
		name      string
		workloads []string
		drivers   []string
		want      []string
		err       string
	}{
		{"default", []string{"oltp_point_select", "oltp_insert"}, nil, []string{"oltp_point_select", "oltp_insert"}, ""},
		{"both", []string{"oltp_point_select", "oltp_insert", "oltp_update_non_index"}, []string{"sysbench", "go"},
			[]string{"oltp_point_select", "oltp_point_select:driver=go", "oltp_insert", "oltp_update_non_index", "oltp_update_non_index:driver=go"}, ""},
		{"go only", []string{"oltp_update_non_index"}, []string{"go"}, []string{"oltp_update_non_index:driver=go"}, ""},
		{"go only, unsupported", []string{"oltp_insert"}, []string{"go"}, nil, "runs only"},
		{"named in the workload", []string{"oltp_point_select:driver=go", "oltp_insert"}, nil, []string{"oltp_point_select:driver=go", "oltp_insert"}, ""},
		{"named, unsupported", []string{"oltp_insert:driver=go"}, nil, nil, "runs only"},
		{"unknown", []string{"oltp_insert"}, []string{"jdbc"}, nil, "unknown driver"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := expandDrivers(tc.workloads, tc.drivers)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestDriverOf(t *testing.T) {
	for _, tc := range []struct {
		opts   []string
		driver string
		rest   []string
	}{
		{nil, "sysbench", nil},
		{[]string{"--skip_trx=on"}, "sysbench", []string{"--skip_trx=on"}},
		{[]string{"--driver=go", "--skip_trx=on"}, "go", []string{"--skip_trx=on"}},
	} {
		d, rest := driverOf(tc.opts)
		require.Equal(t, tc.driver, d)
		require.Equal(t, tc.rest, rest)
	}
}
