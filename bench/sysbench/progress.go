package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// progressWriter receives a measured run's output as it is produced and
// logs one line every `every` seconds of it: sysbench's --report-interval
// lines (elapsed, QPS, TPS, p99) or go-tpc's [Current] NEW_ORDER lines,
// plus any FATAL line at once.
type progressWriter struct {
	label string
	every int
	total int
	tpcc  bool
	start time.Time

	mu   sync.Mutex
	buf  []byte
	last float64
}

func (w *progressWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := strings.IndexByte(string(w.buf), '\n')
		if i < 0 {
			break
		}
		w.line(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

func (w *progressWriter) line(line string) {
	trim := strings.TrimSpace(line)
	if strings.HasPrefix(trim, "FATAL") {
		logf("%s: %s", w.label, shorten(trim, 300))
		return
	}
	if w.tpcc {
		if kind, t, ok := parseTPCCLine(trim); ok && kind == "Current" && t.Name == "NEW_ORDER" {
			logf("%s %4.0fs/%ds  NEW_ORDER tpm %.0f  p50 %s ms  p99 %s ms",
				w.label, time.Since(w.start).Seconds(), w.total, t.TPM, ms(t.P50Ms), ms(t.P99Ms))
		}
		return
	}
	m := reInterval.FindStringSubmatch(trim)
	if m == nil {
		return
	}
	at := atof(m[1])
	if at-w.last < float64(w.every) && at < float64(w.total) {
		return
	}
	w.last = at
	logf("%s %4.0fs/%ds  qps %.0f  tps %.0f  p99 %s ms  err/s %s", w.label, at, w.total, atof(m[3]), atof(m[2]), ms(atof(m[4])), m[5])
}

// plan is the estimated length of a session.
type plan struct {
	Runs  int
	Total time.Duration
	Parts []string
}

func (p plan) String() string {
	return fmt.Sprintf("%s for %d sysbench runs (%s)", p.Total.Round(time.Second), p.Runs, strings.Join(p.Parts, "; "))
}

// Overheads per run, measured on the 2-core dev machine (2026-12-06, with
// some margin): a fresh Strata cluster starts in ~2 s and stops in ~2 s;
// MariaDB's database is dropped and re-created in well under a second (its
// server starts once, ~3 s); sysbench prepare writes ~10k rows/s to Strata
// and ~50k rows/s to MariaDB. go-tpc prepare loads one warehouse in ~30 s
// on Strata and ~5 s on MariaDB.
func planned(cfg config) plan {
	var p plan
	perTarget := func(name string) (setup, rowsPerSec, tpccPrepare float64) {
		if name == "mariadb" {
			return 1, 50000, 10
		}
		return 5, 10000, 35
	}
	var sysb, tpcc float64
	for _, tn := range cfg.Targets {
		setup, rate, tp := perTarget(tn)
		rows := float64(cfg.TableSize * cfg.Tables)
		one := setup + 1 + rows/rate + float64(cfg.WarmupSec+cfg.TimeSec) + 1
		n := len(cfg.Workloads) * len(cfg.ThreadCounts) * cfg.Runs
		p.Runs += n
		sysb += float64(n) * one
		if cfg.TPCC.TimeSec > 0 && contains(cfg.TPCC.Targets, tn) {
			tpcc += setup + tp*float64(cfg.TPCC.Warehouses) + float64(cfg.TPCC.TimeSec) + 2
		}
	}
	if contains(cfg.Targets, "mariadb") {
		sysb += 3
	}
	goWl := ""
	if n := countGoDriver(cfg.Workloads); n > 0 {
		goWl = fmt.Sprintf(" (%d of them with the Go driver)", n)
	}
	p.Parts = append(p.Parts, fmt.Sprintf("sysbench %s: %d workloads%s × threads %s × %d run(s) × %d target(s), %d s + %d s warm-up each",
		secs(sysb), len(cfg.Workloads), goWl, threadList(cfg), cfg.Runs, len(cfg.Targets), cfg.TimeSec, cfg.WarmupSec))
	if tpcc > 0 {
		p.Parts = append(p.Parts, fmt.Sprintf("TPC-C %s: %d warehouse(s), %d s on %s", secs(tpcc), cfg.TPCC.Warehouses, cfg.TPCC.TimeSec, strings.Join(cfg.TPCC.Targets, ",")))
	}
	p.Total = time.Duration((sysb + tpcc) * float64(time.Second))
	return p
}

// countGoDriver counts the workloads run by the Go driver.
func countGoDriver(workloads []string) int {
	n := 0
	for _, wl := range workloads {
		if _, opts := workloadSpec(wl); slices.Contains(opts, "--driver=go") {
			n++
		}
	}
	return n
}

func secs(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Second).String()
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func threadList(cfg config) string {
	if len(cfg.ThreadCounts) == 0 {
		return fmt.Sprint(cfg.Threads)
	}
	var s []string
	for _, t := range cfg.ThreadCounts {
		s = append(s, fmt.Sprint(t))
	}
	return strings.Join(s, ",")
}

// baselineOf returns the result of the baseline target measured with the
// same workload, thread count and run as r (nil if none).
func (s *session) baselineOf(r *Result) *Result {
	base := s.Config.Baseline
	if base == "" || r.Target == base {
		return nil
	}
	for i := range s.Results {
		b := &s.Results[i]
		if b.Target == base && b.Workload == r.Workload && b.Threads == r.Threads && b.Run == r.Run && b.Status == "ok" {
			return b
		}
	}
	return nil
}

func ratio(a, b float64) string {
	if a == 0 || b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return "—"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// printSummary writes the session's table to the terminal.
func printSummary(out io.Writer, s *session) {
	base := s.Config.Baseline
	fmt.Fprintf(out, "\nsession %s: %d sysbench run(s), %d TPC-C run(s), took %s (planned %s)\n\n", s.Stamp, len(s.Results), len(s.TPCC), s.Elapsed, s.Planned)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	hdr := "workload\tthreads\ttarget\tstatus\tQPS\tTPS\tp50 ms\tp90 ms\tp99 ms\tp999 ms\tmax ms\tCPU µs/q\t"
	if base != "" {
		hdr += "QPS/" + base + "\tCPU/" + base + "\t"
	}
	fmt.Fprintln(tw, hdr)
	for i := range s.Results {
		r := &s.Results[i]
		line := fmt.Sprintf("%s\t%d\t%s\t%s\t%.0f\t%.0f\t%s\t%s\t%s\t%s\t%s\t%.0f\t", r.Workload, r.Threads, r.Target, r.Status,
			r.QPS, r.TPS, ms(r.P50Ms), ms(r.P90Ms), ms(r.P99Ms), ms(r.P999Ms), ms(r.MaxMs), r.serverCPUUs())
		if base != "" {
			if b := s.baselineOf(r); b != nil {
				line += ratio(r.QPS, b.QPS) + "\t" + ratio(r.serverCPUUs(), b.serverCPUUs()) + "\t"
			} else {
				line += "\t\t"
			}
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	if len(s.TPCC) > 0 {
		fmt.Fprintln(out)
		tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "TPC-C\twarehouses\tthreads\tstatus\ttpmC\tNEW_ORDER p50 ms\tp90 ms\tp99 ms\tmax ms\tCPU µs/txn\terror lines\t")
		for i := range s.TPCC {
			r := &s.TPCC[i]
			no := r.txn("NEW_ORDER")
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%.0f\t%s\t%s\t%s\t%s\t%.0f\t%d\t\n", r.Target, r.Warehouses, r.Threads, r.Status, r.TpmC,
				ms(no.P50Ms), ms(no.P90Ms), ms(no.P99Ms), ms(no.MaxMs), r.serverCPUUs(), r.ErrorsCount)
		}
		tw.Flush()
	}
	if bad := s.failures(); len(bad) > 0 {
		fmt.Fprintf(out, "\n%d failed:\n  %s\n", len(bad), strings.Join(bad, "\n  "))
	}
	fmt.Fprintln(out)
}
