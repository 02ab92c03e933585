package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"
)

// Result is one (target, workload, run).
type Result struct {
	Target   string    `json:"target"`
	Workload string    `json:"workload"`
	Run      int       `json:"run"`
	Status   string    `json:"status"` // ok, setup_failed, prepare_failed, run_failed
	Error    string    `json:"error,omitempty"`
	Started  time.Time `json:"started"`
	Command  string    `json:"command,omitempty"`
	Profiled bool      `json:"profiled,omitempty"`
	// Fault is what --kill-store-at did during the measured run.
	Fault string `json:"fault,omitempty"`
	// Driver is the load generator of the warm-up and measured run:
	// sysbench, or go (godriver.go: HDR histogram, 0.1 % buckets).
	Driver string `json:"driver,omitempty"`

	Threads    int     `json:"threads"`
	TimeSec    int     `json:"time_s"`
	TableSize  int     `json:"table_size"`
	PrepareSec float64 `json:"prepare_s"`

	TPS           float64 `json:"tps"`
	QPS           float64 `json:"qps"`
	Transactions  int64   `json:"transactions"`
	Queries       int64   `json:"queries"`
	Reads         int64   `json:"reads"`
	Writes        int64   `json:"writes"`
	Others        int64   `json:"others"`
	IgnoredErrors int64   `json:"ignored_errors"`
	Reconnects    int64   `json:"reconnects"`
	// Latencies are per sysbench event (one transaction = one statement for
	// the single-statement workloads), in milliseconds. P50/P95/P99/P999 are
	// computed from the --histogram output; SysbenchP99 is sysbench's own.
	MinMs       float64 `json:"min_ms"`
	AvgMs       float64 `json:"avg_ms"`
	P50Ms       float64 `json:"p50_ms"`
	P90Ms       float64 `json:"p90_ms"`
	P95Ms       float64 `json:"p95_ms"`
	P99Ms       float64 `json:"p99_ms"`
	P999Ms      float64 `json:"p999_ms"`
	MaxMs       float64 `json:"max_ms"`
	SysbenchP99 float64 `json:"sysbench_p99_ms"`
	HistEvents  int64   `json:"histogram_events"`

	// Histogram is sysbench's --histogram of the measured run (the
	// percentile plots are drawn from it).
	Histogram []Bucket    `json:"histogram,omitempty"`
	Intervals []Interval  `json:"intervals,omitempty"`
	Procs     []ProcStats `json:"procs,omitempty"`
	Leader    string      `json:"leader_store,omitempty"`
	Profiles  []Profile   `json:"profiles,omitempty"`

	SysbenchCPUSec float64 `json:"sysbench_cpu_s"`
	// MachineBusyCores is how many cores the whole machine kept busy during
	// the run; OursCores the part used by this target's processes and
	// sysbench; OtherCores the rest (other users: the noise).
	MachineBusyCores float64 `json:"machine_busy_cores"`
	OursCores        float64 `json:"ours_cores"`
	OtherCores       float64 `json:"other_cores"`
	LoadAvgBefore    float64 `json:"loadavg_before"`
	LoadAvgAfter     float64 `json:"loadavg_after"`
	RawOutput        string  `json:"raw_output"`
}

func (r *Result) fill(o Output) {
	r.TPS, r.QPS = o.TPS, o.QPS
	r.Transactions, r.Queries = o.Transactions, o.Queries
	r.Reads, r.Writes, r.Others = o.Reads, o.Writes, o.Others
	r.IgnoredErrors, r.Reconnects = o.IgnoredErrors, o.Reconnects
	r.MinMs, r.AvgMs, r.MaxMs = o.LatMinMs, o.LatAvgMs, o.LatMaxMs
	r.SysbenchP99 = o.ReportedPctMs
	r.HistEvents = HistogramCount(o.Histogram)
	if r.HistEvents > 0 {
		r.setPercentiles(o.Histogram)
	}
	r.Histogram = o.Histogram
	r.Intervals = o.Intervals
}

func (r *Result) setPercentiles(h []Bucket) {
	r.P50Ms = Percentile(h, 0.50)
	r.P90Ms = Percentile(h, 0.90)
	r.P95Ms = Percentile(h, 0.95)
	r.P99Ms = Percentile(h, 0.99)
	r.P999Ms = Percentile(h, 0.999)
	// A bucket's value can lie a little above the slowest event (buckets
	// are ~1.8 % wide): no percentile is reported above sysbench's max.
	if r.MaxMs > 0 {
		for _, p := range []*float64{&r.P50Ms, &r.P90Ms, &r.P95Ms, &r.P99Ms, &r.P999Ms} {
			*p = min(*p, r.MaxMs)
		}
	}
}

// serverCPUUs is the CPU µs per query of every server process together
// (not sysbench).
func (r *Result) serverCPUUs() float64 {
	var s float64
	for _, p := range r.Procs {
		s += p.CPUUsPerQuery
	}
	return s
}

// stem names the run's files (the raw output's base name).
func (r *Result) stem() string {
	return strings.TrimSuffix(filepath.Base(r.RawOutput), ".txt")
}

func (r *Result) ignoredRate() string {
	if r.IgnoredErrors == 0 || r.TimeSec == 0 {
		return "0"
	}
	return fmt.Sprintf("%.1f", float64(r.IgnoredErrors)/float64(r.TimeSec))
}

func (r *Result) oneLine() string {
	if r.Status != "ok" && r.Queries == 0 {
		return r.Status + ": " + r.Error
	}
	s := fmt.Sprintf("%s: %.0f QPS, %.0f TPS, p50 %.2f ms, p99 %.2f ms, p999 %.2f ms, max %.2f ms (other load %.2f cores)",
		r.Status, r.QPS, r.TPS, r.P50Ms, r.P99Ms, r.P999Ms, r.MaxMs, r.OtherCores)
	if r.Error != "" {
		s += " error: " + r.Error
	}
	return s
}

type session struct {
	Stamp    string            `json:"stamp"`
	Started  time.Time         `json:"started"`
	Config   config            `json:"config"`
	Env      map[string]string `json:"environment"`
	Versions map[string]string `json:"versions"`
	Planned  string            `json:"planned,omitempty"`
	Elapsed  string            `json:"elapsed,omitempty"`
	Results  []Result          `json:"results"`
	TPCC     []TPCCResult      `json:"tpcc,omitempty"`
}

func newSession(cfg config) *session {
	now := time.Now().UTC()
	s := &session{Stamp: now.Format("2006-01-02-1504"), Started: now, Config: cfg,
		Env: map[string]string{}, Versions: map[string]string{}}
	s.Env["cpus"] = fmt.Sprint(runtime.NumCPU())
	s.Env["go"] = runtime.Version()
	s.Env["loadavg_at_start"] = fmt.Sprintf("%.2f", loadAvg())
	if out, err := exec.Command(cfg.Sysbench, "--version").Output(); err == nil {
		s.Env["sysbench"] = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("uname", "-srm").Output(); err == nil {
		s.Env["kernel"] = strings.TrimSpace(string(out))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				s.Env["cpu_model"] = strings.TrimSpace(v)
				break
			}
		}
	}
	return s
}

// workloads in first-seen order.
func (s *session) workloads() []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range s.Results {
		if !seen[r.Workload] {
			seen[r.Workload] = true
			out = append(out, r.Workload)
		}
	}
	return out
}

func (s *session) stem(cfg config, what string) string {
	st := s.Stamp + "-sysbench-" + safe(what)
	if cfg.Label != "" {
		st += "-" + safe(cfg.Label)
	}
	return filepath.Join(cfg.ResultsDir, st)
}

func (s *session) files(cfg config) []string {
	var out []string
	for _, wl := range s.workloads() {
		out = append(out, s.stem(cfg, wl)+".json", s.stem(cfg, wl)+".md")
	}
	if len(s.workloads()) > 1 {
		out = append(out, s.stem(cfg, "summary")+".md")
	}
	if cfg.SessionReport {
		out = append(out, filepath.Join(cfg.ResultsDir, "report.md"))
	}
	return out
}

// write (re)writes every result file; called after each run so an
// interrupted session keeps what it measured.
func (s *session) write(cfg config) error {
	for _, wl := range s.workloads() {
		sub := *s
		sub.Results = nil
		for _, r := range s.Results {
			if r.Workload == wl {
				sub.Results = append(sub.Results, r)
			}
		}
		b, err := json.MarshalIndent(&sub, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(s.stem(cfg, wl)+".json", append(b, '\n'), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(s.stem(cfg, wl)+".md", []byte(sub.markdown(cfg, wl)), 0o644); err != nil {
			return err
		}
	}
	if len(s.workloads()) > 1 {
		if err := os.WriteFile(s.stem(cfg, "summary")+".md", []byte(s.summary(cfg)), 0o644); err != nil {
			return err
		}
	}
	// One JSON per run (with its histogram and per-second intervals).
	if err := os.MkdirAll(filepath.Join(cfg.ResultsDir, "runs"), 0o755); err != nil {
		return err
	}
	for i := range s.Results {
		r := &s.Results[i]
		if r.RawOutput == "" {
			continue
		}
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(cfg.ResultsDir, "runs", r.stem()+".json"), append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	for i := range s.TPCC {
		r := &s.TPCC[i]
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(cfg.ResultsDir, "runs", r.stem(s.Stamp)+".json"), append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if cfg.SessionReport {
		return os.WriteFile(filepath.Join(cfg.ResultsDir, "report.md"), []byte(s.report(cfg)), 0o644)
	}
	return nil
}

// failures lists the runs that did not finish cleanly.
func (s *session) failures() []string {
	var out []string
	for _, r := range s.Results {
		if r.Status != "ok" {
			out = append(out, fmt.Sprintf("sysbench %s threads=%d %s run %d: %s: %s", r.Workload, r.Threads, r.Target, r.Run, r.Status, shorten(r.Error, 300)))
		}
	}
	for _, r := range s.TPCC {
		if r.Status != "ok" {
			out = append(out, fmt.Sprintf("tpcc %s: %s: %s", r.Target, r.Status, shorten(r.Error, 300)))
		}
	}
	return out
}

func (s *session) header(b *strings.Builder, cfg config) {
	s.headerRun(b, cfg)
	s.headerEnv(b, cfg)
}

func (s *session) headerRun(b *strings.Builder, cfg config) {
	fmt.Fprintf(b, "Session %s (UTC). %s threads, %d s measured after %d s warm-up, table size %d, %d table(s), Strata with %d stores + 1 SQL node + 1 PD, fresh cluster per run.\n\n",
		s.Stamp, threadList(cfg), cfg.TimeSec, cfg.WarmupSec, cfg.TableSize, cfg.Tables, cfg.Stores)
}

func (s *session) headerEnv(b *strings.Builder, cfg config) {
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var env []string
	for _, k := range keys {
		env = append(env, k+": "+s.Env[k])
	}
	for _, k := range cfg.Targets {
		if v, ok := s.Versions[k]; ok {
			env = append(env, k+": "+v)
		}
	}
	fmt.Fprintf(b, "Environment: %s.\n\n", strings.Join(env, "; "))
	if cfg.Note != "" {
		fmt.Fprintf(b, "Note: %s\n\n", cfg.Note)
	}
}

func (s *session) markdown(cfg config, wl string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# sysbench %s — %s\n\n", wl, s.Stamp)
	s.header(&b, cfg)
	for _, r := range s.Results {
		if r.Command != "" {
			fmt.Fprintf(&b, "Measured command (%s): `%s`\n\n", r.Target, r.Command)
			break
		}
	}
	for _, r := range s.Results {
		if r.Fault != "" && r.Workload == wl {
			fmt.Fprintf(&b, "Fault in %s run %d (%d threads): %s\n\n", r.Target, r.Run, r.Threads, r.Fault)
		}
	}
	b.WriteString("## Throughput and latency\n\n")
	b.WriteString("Latency is per sysbench event, in ms; p50/p95/p99/p999 from the `--histogram` buckets (bucket value where the cumulative count reaches the quantile, as sysbench computes its own percentile). \"other cores\" is CPU used on the machine by processes that are not this benchmark during the run (the noise).\n\n")
	b.WriteString("\"ignored err/s\" counts errors sysbench was told to ignore (`--mysql-ignore-errors`): each one restarted an event and is not in QPS.\n\n")
	b.WriteString("| threads | target | run | status | QPS | TPS | p50 | p90 | p95 | p99 | p999 | max | avg | ignored err/s | other cores | error |\n")
	b.WriteString("|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range s.Results {
		run := fmt.Sprint(r.Run)
		if r.Profiled {
			run += " (profiled)"
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %.0f | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %.2f | %s |\n",
			r.Threads, r.Target, run, r.Status, r.QPS, r.TPS, ms(r.P50Ms), ms(r.P90Ms), ms(r.P95Ms), ms(r.P99Ms), ms(r.P999Ms), ms(r.MaxMs), ms(r.AvgMs),
			r.ignoredRate(), r.OtherCores, mdEscape(shorten(r.Error, 300)))
	}
	b.WriteString("\n")
	s.ratios(&b, wl)

	b.WriteString("## Cost per query\n\n")
	b.WriteString("CPU from /proc/<pid>/stat over the measured run; allocations from each Go process's go_memstats_mallocs_total / go_memstats_alloc_bytes_total; Strata histogram means from its /metrics. \"sysbench\" is the client's own CPU.\n\n")
	b.WriteString("| threads | target | run | process | CPU (% of a core) | CPU µs/query | allocs/query | bytes/query | notes |\n")
	b.WriteString("|---:|---|---|---|---:|---:|---:|---:|---|\n")
	for _, r := range s.Results {
		if r.Queries == 0 {
			continue
		}
		for _, p := range r.Procs {
			name := p.Name
			if p.Name == r.Leader {
				name += " (leader)"
			}
			var notes []string
			if p.ReadIndexCount > 0 {
				notes = append(notes, fmt.Sprintf("ReadIndex wait %.3f ms (%.0f)", p.ReadIndexWaitMs, p.ReadIndexCount))
			}
			if p.ProposeCount > 0 {
				notes = append(notes, fmt.Sprintf("write from arrival: fsynced %.3f, committed %.3f, applied %.3f ms (%.0f)", p.ProposalAppendMs, p.ProposalCommitMs, p.ProposeWaitMs, p.ProposeCount))
			}
			if p.RaftMsgsPerQuery > 0 {
				notes = append(notes, fmt.Sprintf("%.2f raft msgs sent/query, %.2f Ready loops/query", p.RaftMsgsPerQuery, p.ReadyLoopsPerQuery))
			}
			if p.FsyncCount > 0 {
				notes = append(notes, fmt.Sprintf("raft fsync %.3f ms (%.0f, %.1f entries each; %.1f entries per apply)", p.FsyncMs, p.FsyncCount, p.EntriesPerFsync, p.EntriesPerApply))
			}
			if p.SQLQueryMs > 0 {
				notes = append(notes, fmt.Sprintf("server-side statement %.3f ms", p.SQLQueryMs))
			}
			if p.SQLErrors > 0 {
				notes = append(notes, fmt.Sprintf("%.0f errors", p.SQLErrors))
			}
			allocs, bytes := "", ""
			if p.Mallocs > 0 {
				allocs, bytes = fmt.Sprintf("%.0f", p.MallocsPerQuery), fmt.Sprintf("%.0f", p.AllocBytesPerQuery)
			}
			fmt.Fprintf(&b, "| %d | %s | %d | %s | %.0f | %.1f | %s | %s | %s |\n",
				r.Threads, r.Target, r.Run, name, p.CPUPercent, p.CPUUsPerQuery, allocs, bytes, strings.Join(notes, "; "))
		}
		q := float64(r.Queries)
		fmt.Fprintf(&b, "| %d | %s | %d | sysbench | %.0f | %.1f | | | |\n", r.Threads, r.Target, r.Run,
			100*r.SysbenchCPUSec/float64(r.TimeSec), 1e6*r.SysbenchCPUSec/q)
	}
	b.WriteString("\n")

	var prof []string
	for _, r := range s.Results {
		for _, p := range r.Profiles {
			line := fmt.Sprintf("- %s run %d %s %s: [%s](%s)", r.Target, r.Run, p.Proc, p.Kind, filepath.Base(p.File), p.File)
			if p.Top != "" {
				line += fmt.Sprintf(", top: [%s](%s)", filepath.Base(p.Top), p.Top)
			}
			if p.Proc == r.Leader {
				line += " (leader)"
			}
			if p.Err != "" {
				line += " — error: " + p.Err
			}
			prof = append(prof, line)
		}
	}
	if len(prof) > 0 {
		sort.Strings(prof)
		b.WriteString("## Profiles\n\n")
		b.WriteString(strings.Join(prof, "\n"))
		b.WriteString("\n\n")
		s.cpuBreakdown(&b)
	}
	b.WriteString("## Raw output\n\n")
	for _, r := range s.Results {
		fmt.Fprintf(&b, "- %s run %d: [%s](%s)\n", r.Target, r.Run, filepath.Base(r.RawOutput), r.RawOutput)
	}
	return b.String()
}

// ratios writes every target against the baseline target for QPS and
// latency, per run and as a geometric mean over runs.
func (s *session) ratios(b *strings.Builder, wl string) {
	base := s.Config.Baseline
	if base == "" {
		return
	}
	type key struct{ threads, run int }
	byRun := map[key]map[string]*Result{}
	for i := range s.Results {
		r := &s.Results[i]
		if r.Workload != wl || r.Status != "ok" {
			continue
		}
		k := key{r.Threads, r.Run}
		if byRun[k] == nil {
			byRun[k] = map[string]*Result{}
		}
		byRun[k][r.Target] = r
	}
	for _, tname := range s.Config.Targets {
		if tname == base {
			continue
		}
		var runs []key
		for k, m := range byRun {
			if m[tname] != nil && m[base] != nil {
				runs = append(runs, k)
			}
		}
		if len(runs) == 0 {
			continue
		}
		sort.Slice(runs, func(i, j int) bool {
			if runs[i].threads != runs[j].threads {
				return runs[i].threads < runs[j].threads
			}
			return runs[i].run < runs[j].run
		})
		fmt.Fprintf(b, "### %s / %s\n\n", tname, base)
		fmt.Fprintf(b, "Ratios of runs measured back to back (same noise window). QPS below 1 and latency above 1 mean %s is slower than %s.\n\n", tname, base)
		b.WriteString("| threads | run | QPS | p50 | p99 | p999 | server CPU µs/query |\n|---:|---|---:|---:|---:|---:|---:|\n")
		var q, p50, p99, p999 []float64
		for _, run := range runs {
			st, ma := byRun[run][tname], byRun[run][base]
			q = append(q, st.QPS/ma.QPS)
			p50 = append(p50, st.P50Ms/ma.P50Ms)
			p99 = append(p99, st.P99Ms/ma.P99Ms)
			p999 = append(p999, st.P999Ms/ma.P999Ms)
			cpu := "—"
			if st.serverCPUUs() > 0 && ma.serverCPUUs() > 0 {
				cpu = fmt.Sprintf("%.1f×", st.serverCPUUs()/ma.serverCPUUs())
			}
			fmt.Fprintf(b, "| %d | %d | %.3f | %.1f× | %.1f× | %.1f× | %s |\n", run.threads, run.run, q[len(q)-1], p50[len(p50)-1], p99[len(p99)-1], p999[len(p999)-1], cpu)
		}
		if len(runs) > 1 {
			fmt.Fprintf(b, "| all | geomean | %.3f | %.1f× | %.1f× | %.1f× | |\n", geomean(q), geomean(p50), geomean(p99), geomean(p999))
		}
		b.WriteString("\n")
	}
}

func (s *session) summary(cfg config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# sysbench summary — %s\n\n", s.Stamp)
	s.header(&b, cfg)
	b.WriteString("| workload | threads | target | run | status | QPS | p50 ms | p99 ms | p999 ms | ignored err/s | other cores | error |\n")
	b.WriteString("|---|---:|---|---|---|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range s.Results {
		fmt.Fprintf(&b, "| %s | %d | %s | %d | %s | %.0f | %s | %s | %s | %s | %.2f | %s |\n",
			r.Workload, r.Threads, r.Target, r.Run, r.Status, r.QPS, ms(r.P50Ms), ms(r.P99Ms), ms(r.P999Ms), r.ignoredRate(), r.OtherCores,
			mdEscape(shorten(r.Error, 200)))
	}
	b.WriteString("\n")
	for _, wl := range s.workloads() {
		var sub strings.Builder
		s.ratios(&sub, wl)
		if sub.Len() > 0 {
			fmt.Fprintf(&b, "## %s\n\n%s", wl, strings.ReplaceAll(sub.String(), "### ", "#### "))
		}
	}
	b.WriteString("Per-workload details (cost per query, profiles, raw output):\n\n")
	for _, wl := range s.workloads() {
		f := filepath.Base(s.stem(cfg, wl)) + ".md"
		fmt.Fprintf(&b, "- [%s](%s)\n", wl, f)
	}
	return b.String()
}

func ms(v float64) string {
	if v == 0 || math.IsNaN(v) {
		return "—"
	}
	if v < 10 {
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func geomean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += math.Log(x)
	}
	return math.Exp(s / float64(len(xs)))
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", "\\|", "\n", " ").Replace(s)
}

// cpuBreakdown writes, for every CPU profile, the share of samples in each
// category (stacks containing a matching function; categories overlap).
func (s *session) cpuBreakdown(b *strings.Builder) {
	for _, r := range s.Results {
		for _, p := range r.Profiles {
			if p.Kind != "cpu" || len(p.Categories) == 0 {
				continue
			}
			leader := ""
			if p.Proc == r.Leader {
				leader = ", leader"
			}
			var pct float64
			if s.Config.ProfileSec > 0 {
				pct = 100 * p.SampledSec / float64(s.Config.ProfileSec)
			}
			fmt.Fprintf(b, "### CPU of %s (%s run %d%s): %.2f s sampled in %d s = %.0f%% of a core\n\n",
				p.Proc, r.Target, r.Run, leader, p.SampledSec, s.Config.ProfileSec, pct)
			b.WriteString("Share of CPU samples whose stack contains a matching function (categories overlap).\n\n")
			b.WriteString("| category | % of this process's CPU | pprof -focus | -ignore |\n|---|---:|---|---|\n")
			for _, c := range p.Categories {
				ign := ""
				if c.Ignore != "" {
					ign = "`" + mdEscape(c.Ignore) + "`"
				}
				fmt.Fprintf(b, "| %s | %.1f | `%s` | %s |\n", c.Name, c.Percent, mdEscape(c.Pattern), ign)
			}
			b.WriteString("\n")
		}
	}
}

// renderJSON merges session JSON files (one per workload) back into their
// sessions and re-writes every markdown file of those sessions in dir.
func renderJSON(dir string, files []string) error {
	sessions := map[string]*session{}
	var order []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var s session
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		key := s.Stamp + "/" + s.Config.Label
		if have, ok := sessions[key]; ok {
			// Every per-workload file carries the session's TPC-C runs.
			have.Results = append(have.Results, s.Results...)
			for k, v := range s.Versions {
				have.Versions[k] = v
			}
			continue
		}
		if s.Versions == nil {
			s.Versions = map[string]string{}
		}
		sessions[key] = &s
		order = append(order, key)
	}
	for _, key := range order {
		s := sessions[key]
		cfg := s.Config
		cfg.ResultsDir = dir
		if cfg.Baseline == "" && slices.Contains(cfg.Targets, "mariadb") {
			cfg.Baseline = "mariadb"
		}
		s.Config = cfg
		// Recompute percentiles from the raw histograms (the JSON does not
		// keep the buckets), so a fix in Percentile reaches old sessions.
		for i := range s.Results {
			r := &s.Results[i]
			if r.RawOutput == "" {
				continue
			}
			raw, err := os.ReadFile(filepath.Join(dir, r.RawOutput))
			if err != nil {
				logf("%s: %v (percentiles kept)", r.RawOutput, err)
				continue
			}
			if o := ParseOutput(measuredRun(string(raw))); HistogramCount(o.Histogram) > 0 {
				r.setPercentiles(o.Histogram)
				r.Histogram = o.Histogram
			}
		}
		// Keep the order the session measured in.
		sort.SliceStable(s.Results, func(i, j int) bool { return s.Results[i].Started.Before(s.Results[j].Started) })
		if _, err := os.Stat(filepath.Join(dir, "report.md")); err == nil {
			cfg.SessionReport = true
		}
		for _, wl := range s.workloads() {
			var threads []int
			for _, r := range s.Results {
				if r.Workload == wl && !containsInt(threads, r.Threads) {
					threads = append(threads, r.Threads)
				}
			}
			for _, t := range threads {
				s.plotWorkload(cfg, wl, t)
			}
		}
		if err := s.write(cfg); err != nil {
			return err
		}
		for _, f := range s.files(cfg) {
			logf("wrote %s", f)
		}
	}
	return nil
}
