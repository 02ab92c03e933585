package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// report is report.md of a session directory (--session-dir): every
// workload and thread count with its ratios against the baseline and its
// plots, then TPC-C.
func (s *session) report(cfg config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Benchmark session %s\n\n", filepath.Base(cfg.ResultsDir))
	s.headerRun(&b, cfg)
	if s.Planned != "" {
		fmt.Fprintf(&b, "Planned %s", s.Planned)
		if s.Elapsed != "" {
			fmt.Fprintf(&b, ", took %s", s.Elapsed)
		} else {
			b.WriteString(", still running")
		}
		b.WriteString(".\n\n")
	}
	s.headerEnv(&b, cfg)
	base := s.Config.Baseline
	b.WriteString("How to read this: see bench/README.md (\"Reading `make bench` results\"). Latencies are per sysbench event in ms, from the `--histogram` buckets; ")
	b.WriteString("**server CPU µs/q** is the CPU time of every server process (Strata: PD + stores + SQL node; MariaDB: mariadbd) over the measured run divided by the queries, from /proc/<pid>/stat; ")
	if base != "" {
		fmt.Fprintf(&b, "ratios are against %s measured right before or after in the same noise window (QPS ratio above 1 and latency/CPU ratios below 1 favour the other target); ", base)
	}
	b.WriteString("**other cores** is CPU used by everything else on the machine during the run (noise).\n\n")

	b.WriteString("## sysbench\n\n")
	for _, wl := range s.workloads() {
		fmt.Fprintf(&b, "### %s\n\n", wl)
		if _, opts := workloadSpec(wl); slices.Contains(opts, "--driver=go") {
			b.WriteString("Load generator: the Go driver (bench/sysbench/godriver.go: the same prepared statements as sysbench over go-sql-driver/mysql, one connection per thread, every event's latency in an HDR histogram with 3 significant digits, so the percentiles and the plotted curve are exact to 0.1 %); the \"sysbench µs/q\" column is the Go driver's own CPU.\n\n")
		}
		hdr := "| threads | target | run | status | QPS | TPS | p50 | p90 | p99 | p999 | max | server CPU µs/q | per process µs/q | sysbench µs/q | other cores |"
		sep := "|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"
		if base != "" {
			hdr += fmt.Sprintf(" QPS / %s | p99 / %s | CPU / %s |", base, base, base)
			sep += "---:|---:|---:|"
		}
		b.WriteString(hdr + "\n" + sep + "\n")
		var threads []int
		for i := range s.Results {
			r := &s.Results[i]
			if r.Workload != wl {
				continue
			}
			if !containsInt(threads, r.Threads) {
				threads = append(threads, r.Threads)
			}
			var per []string
			for _, p := range r.Procs {
				per = append(per, fmt.Sprintf("%s %.0f", p.Name, p.CPUUsPerQuery))
			}
			sysb := 0.0
			if r.Queries > 0 {
				sysb = 1e6 * r.SysbenchCPUSec / float64(r.Queries)
			}
			status := r.Status
			if r.Error != "" {
				status += ": " + mdEscape(shorten(r.Error, 160))
			}
			fmt.Fprintf(&b, "| %d | %s | %d | %s | %.0f | %.0f | %s | %s | %s | %s | %s | %.0f | %s | %.0f | %.2f |",
				r.Threads, r.Target, r.Run, status, r.QPS, r.TPS, ms(r.P50Ms), ms(r.P90Ms), ms(r.P99Ms), ms(r.P999Ms), ms(r.MaxMs),
				r.serverCPUUs(), strings.Join(per, ", "), sysb, r.OtherCores)
			if base != "" {
				if bl := s.baselineOf(r); bl != nil {
					fmt.Fprintf(&b, " %s | %s | %s |", ratio(r.QPS, bl.QPS), ratio(r.P99Ms, bl.P99Ms), ratio(r.serverCPUUs(), bl.serverCPUUs()))
				} else {
					b.WriteString(" | | |")
				}
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
		for _, t := range threads {
			stem := fmt.Sprintf("plots/%s-%s-t%d", s.Stamp, safe(wl), t)
			for _, kind := range []string{"latency", "timeseries"} {
				f := stem + "-" + kind + ".png"
				if _, err := os.Stat(filepath.Join(cfg.ResultsDir, f)); err == nil {
					fmt.Fprintf(&b, "![%s %d threads %s](%s)\n", wl, t, kind, f)
				}
			}
		}
		b.WriteString("\n")
	}

	if len(s.TPCC) > 0 {
		b.WriteString("## TPC-C (go-tpc)\n\n")
		fmt.Fprintf(&b, "`go-tpc tpcc` prepare, then run with `--ignore-error`; one transaction = one TPC-C transaction (NEW_ORDER, PAYMENT, ...). CPU µs per transaction of every server process. **error lines** are the failed transactions go-tpc printed (the run fails on any); `*_ERR` rows also count the transactions cut off when `--time` ran out (at most one per thread, not printed).\n\n")
		b.WriteString("| target | status | warehouses | threads | prepare s | tpmC | tpmTotal | NEW_ORDER p50 | p90 | p99 | p999 | max | server CPU µs/txn | error lines |")
		sep := "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
		if base != "" {
			fmt.Fprintf(&b, " tpmC / %s | CPU / %s |", base, base)
			sep += "---:|---:|"
		}
		b.WriteString("\n" + sep + "\n")
		var bl *TPCCResult
		for i := range s.TPCC {
			if s.TPCC[i].Target == base && s.TPCC[i].Status == "ok" {
				bl = &s.TPCC[i]
			}
		}
		for i := range s.TPCC {
			r := &s.TPCC[i]
			no := r.txn("NEW_ORDER")
			status := r.Status
			if r.Error != "" {
				status += ": " + mdEscape(shorten(r.Error, 200))
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %d | %.0f | %.0f | %.0f | %s | %s | %s | %s | %s | %.0f | %d |", r.Target, status, r.Warehouses, r.Threads,
				r.PrepareSec, r.TpmC, r.TpmTotal, ms(no.P50Ms), ms(no.P90Ms), ms(no.P99Ms), ms(no.P999), ms(no.MaxMs), r.serverCPUUs(), r.ErrorsCount)
			if base != "" {
				if bl != nil && r != bl {
					fmt.Fprintf(&b, " %s | %s |", ratio(r.TpmC, bl.TpmC), ratio(r.serverCPUUs(), bl.serverCPUUs()))
				} else {
					b.WriteString(" | |")
				}
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
		for i := range s.TPCC {
			r := &s.TPCC[i]
			fmt.Fprintf(&b, "#### %s: every transaction type\n\n", r.Target)
			b.WriteString("| transaction | count | TPM | avg | p50 | p90 | p95 | p99 | p999 | max |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
			for _, t := range r.Txns {
				fmt.Fprintf(&b, "| %s | %d | %.0f | %s | %s | %s | %s | %s | %s | %s |\n", t.Name, t.Count, t.TPM, ms(t.AvgMs), ms(t.P50Ms), ms(t.P90Ms), ms(t.P95Ms), ms(t.P99Ms), ms(t.P999), ms(t.MaxMs))
			}
			b.WriteString("\n")
			if len(r.Errors) > 0 {
				b.WriteString("First errors go-tpc printed:\n\n```\n" + strings.Join(r.Errors, "\n") + "\n```\n\n")
			}
		}
	}

	b.WriteString("## Files\n\n")
	b.WriteString("- `raw/`: complete sysbench and go-tpc output of every prepare, warm-up and run\n")
	b.WriteString("- `runs/`: one JSON per run (all figures, per-process cost, histogram buckets, per-second intervals)\n")
	b.WriteString("- `plots/`: `*-latency.png` (latency by percentile) and `*-timeseries.png` (per-second QPS and p99) per workload and thread count\n")
	b.WriteString("- `*-sysbench-<workload>.json` / `.md`: per workload, with allocations per query and Strata's internal histogram means\n")
	return b.String()
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
