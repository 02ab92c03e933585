package main

import (
	"bufio"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Output is what one `sysbench ... run` printed, parsed.
type Output struct {
	Reads, Writes, Others, Queries int64
	Transactions                   int64
	TPS, QPS                       float64
	IgnoredErrors, Reconnects      int64
	TotalTimeSec                   float64
	Events                         int64
	LatMinMs, LatAvgMs, LatMaxMs   float64
	// ReportedPct is sysbench's own percentile line ("99th percentile").
	ReportedPct   float64
	ReportedPctMs float64
	// Histogram holds the --histogram=on buckets: value (ms) and count,
	// in increasing value order.
	Histogram []Bucket
	Intervals []Interval
	// Fatal holds sysbench's FATAL/error lines (first ones only).
	Fatal []string
}

// Bucket is one line of sysbench's latency histogram.
type Bucket struct {
	Ms    float64 `json:"ms"`
	Count int64   `json:"count"`
}

// Interval is one --report-interval line.
type Interval struct {
	AtSec     float64 `json:"at_s"`
	TPS       float64 `json:"tps"`
	QPS       float64 `json:"qps"`
	LatPctMs  float64 `json:"lat_pct_ms"`
	ErrPerSec float64 `json:"err_per_s"`
}

var (
	reHist     = regexp.MustCompile(`^\s*([0-9]+\.[0-9]+)\s+\|[* ]*\s+([0-9]+)\s*$`)
	reKV       = regexp.MustCompile(`^\s*([a-z0-9 ]+):\s+([0-9.]+)s?\s*(?:\(([0-9.]+) per sec\.\))?\s*$`)
	rePct      = regexp.MustCompile(`^\s*([0-9]+)th percentile:\s+([0-9.]+)`)
	reInterval = regexp.MustCompile(`^\[\s*([0-9.]+)s\s*\].*?tps:\s*([0-9.]+)\s+qps:\s*([0-9.]+).*?lat \(ms,[0-9.]+%\):\s*([0-9.]+)\s+err/s:?\s*([0-9.]+)`)
)

// ParseOutput reads sysbench 1.0's text report. Unknown lines are ignored, so
// a run that died early parses to zeros plus its Fatal lines.
func ParseOutput(text string) Output {
	var o Output
	section := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		trim := strings.TrimSpace(line)
		if strings.HasPrefix(trim, "FATAL") || strings.Contains(trim, "error ") && strings.Contains(trim, "returned") {
			if len(trim) > 400 {
				trim = trim[:400] + "…"
			}
			if len(o.Fatal) < 8 && !slices.Contains(o.Fatal, trim) {
				o.Fatal = append(o.Fatal, trim)
			}
			continue
		}
		if m := reInterval.FindStringSubmatch(trim); m != nil {
			o.Intervals = append(o.Intervals, Interval{
				AtSec: atof(m[1]), TPS: atof(m[2]), QPS: atof(m[3]), LatPctMs: atof(m[4]), ErrPerSec: atof(m[5]),
			})
			continue
		}
		if m := reHist.FindStringSubmatch(line); m != nil {
			o.Histogram = append(o.Histogram, Bucket{Ms: atof(m[1]), Count: atoi(m[2])})
			continue
		}
		if strings.HasSuffix(trim, ":") && !strings.Contains(trim, "  ") {
			section = strings.TrimSuffix(trim, ":")
			continue
		}
		if m := rePct.FindStringSubmatch(trim); m != nil {
			o.ReportedPct, o.ReportedPctMs = atof(m[1]), atof(m[2])
			continue
		}
		m := reKV.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		key, val, rate := strings.TrimSpace(m[1]), m[2], m[3]
		switch key {
		case "read":
			o.Reads = atoi(val)
		case "write":
			o.Writes = atoi(val)
		case "other":
			o.Others = atoi(val)
		case "transactions":
			o.Transactions, o.TPS = atoi(val), atof(rate)
		case "queries":
			o.Queries, o.QPS = atoi(val), atof(rate)
		case "ignored errors":
			o.IgnoredErrors = atoi(val)
		case "reconnects":
			o.Reconnects = atoi(val)
		case "total time":
			o.TotalTimeSec = atof(val)
		case "total number of events":
			o.Events = atoi(val)
		case "min":
			if section == "Latency (ms)" {
				o.LatMinMs = atof(val)
			}
		case "avg":
			if section == "Latency (ms)" {
				o.LatAvgMs = atof(val)
			}
		case "max":
			if section == "Latency (ms)" {
				o.LatMaxMs = atof(val)
			}
		}
	}
	return o
}

// Percentile returns the latency (ms) at quantile q (0..1) of the histogram:
// the value of the first bucket at which the cumulative count reaches
// q*total rounded to the nearest integer, which is how sysbench computes its
// own percentile line (checked against its output in the tests). It returns
// NaN for an empty histogram.
func Percentile(h []Bucket, q float64) float64 {
	var total int64
	for _, b := range h {
		total += b.Count
	}
	if total == 0 {
		return math.NaN()
	}
	need := int64(math.Floor(q*float64(total) + 0.5))
	if need < 1 {
		need = 1
	}
	var cum int64
	for _, b := range h {
		cum += b.Count
		if cum >= need {
			return b.Ms
		}
	}
	return h[len(h)-1].Ms
}

// HistogramCount is the number of events in a histogram.
func HistogramCount(h []Bucket) int64 {
	var n int64
	for _, b := range h {
		n += b.Count
	}
	return n
}

func atof(s string) float64 {
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

func atoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// measuredRun returns the part of a raw output file (as runSysbench writes
// it: "==== <command>" headers) that belongs to the measured run, the last
// command with --histogram=on.
func measuredRun(raw string) string {
	out := ""
	for _, part := range strings.Split(raw, "==== ") {
		if first, _, _ := strings.Cut(part, "\n"); strings.Contains(first, "--histogram=on") {
			out = part
		}
	}
	return out
}
