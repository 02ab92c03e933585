// Command sysbench measures Strata with sysbench: for each workload it starts
// a fresh local cluster (package localcluster, binaries from ./bin, free
// loopback ports, a temp data dir), runs `sysbench <workload> prepare`, an
// unmeasured warm-up, and the measured `run` with --histogram, computes
// p50/p95/p99/p999 from the histogram, accounts CPU and heap allocations per
// query for every server process, and writes JSON and markdown under
// bench/results/. With --targets strata,mariadb it runs the same workloads
// against a private mariadbd (started on a free port, stopped by PID)
// interleaved with Strata, and reports Strata/MariaDB ratios.
//
//	make build
//	go run ./bench/sysbench --workload oltp_point_select --threads 8 --time 60 --table-size 10000
//
// A workload may carry extra sysbench options after colons, e.g.
// oltp_read_only:skip_trx=on (passed as --skip_trx=on).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/stratadb/strata/localcluster"
)

type config struct {
	Workloads    []string `json:"workloads"`
	Targets      []string `json:"targets"`
	Threads      int      `json:"threads"`                 // the first of ThreadCounts
	ThreadCounts []int    `json:"thread_counts,omitempty"` // every --threads value, each measured
	TimeSec      int      `json:"time_s"`
	WarmupSec    int      `json:"warmup_s"`
	TableSize    int      `json:"table_size"`
	Tables       int      `json:"tables"`
	Runs         int      `json:"runs"`
	Stores       int      `json:"stores"`
	ProfileSec   int      `json:"profile_s"`
	BinDir       string   `json:"bin_dir"`
	BaseBinDir   string   `json:"base_bin_dir,omitempty"`
	// GoMaxProcs and BaseGoMaxProcs: localcluster.Config.GoMaxProcs of
	// the strata targets and of strata-base.
	GoMaxProcs     int      `json:"gomaxprocs,omitempty"`
	BaseGoMaxProcs int      `json:"base_gomaxprocs,omitempty"`
	Baseline       string   `json:"baseline,omitempty"`
	ResultsDir     string   `json:"-"`
	Sysbench       string   `json:"-"`
	Mariadbd       string   `json:"-"`
	KeepData       bool     `json:"-"`
	Label          string   `json:"label,omitempty"`
	Note           string   `json:"note,omitempty"`
	ExtraArgs      []string `json:"extra_sysbench_args,omitempty"`
	StoreArgs      []string `json:"store_args,omitempty"`
	// KillStoreAt, when positive, kills -9 the store leading the most
	// regions this many seconds into each measured run on a Strata target
	// (the failover tail; the next run gets a fresh cluster).
	KillStoreAt int `json:"kill_store_at_s,omitempty"`
	// DDLAt, when positive, runs DDL in order this many seconds into each
	// measured run on a Strata target, then ADMIN CHECK TABLE (online
	// schema change under load; the result's Fault says how it went).
	DDLAt          int           `json:"ddl_at_s,omitempty"`
	DDL            []string      `json:"ddl,omitempty"`
	PrepareTimeout time.Duration `json:"-"`
	Probe          bool          `json:"-"`
	SessionReport  bool          `json:"-"`
	// ReportInterval is sysbench's --report-interval of the measured run
	// (per-second lines: the time series plots).
	ReportInterval int `json:"report_interval_s"`
	// Progress prints a progress line every this many seconds of a run.
	Progress int  `json:"-"`
	Plots    bool `json:"-"`
	// FailOnError makes the driver exit 1 if any run (sysbench or TPC-C)
	// did not finish cleanly.
	FailOnError bool       `json:"-"`
	TPCC        tpccConfig `json:"tpcc,omitzero"`
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == goClientFlag {
		os.Exit(goClientMain(os.Args[2:], os.Stdout))
	}
	var cfg config
	var workloads, targets, extra, storeArgs, threads, sessionDir, tpccTargets string
	var render, planOnly bool
	var drivers string
	flag.StringVar(&workloads, "workload", "oltp_point_select", "comma-separated sysbench workloads; options after colons (oltp_read_only:skip_trx=on)")
	flag.StringVar(&targets, "targets", "strata", "comma-separated: strata (--bin-dir), strata-base (--base-bin-dir: another build to compare with), strata-notrace (--bin-dir with trace sampling off: --baseline strata-notrace measures its cost), mariadb")
	flag.StringVar(&cfg.BaseBinDir, "base-bin-dir", "", "binaries of the strata-base target (e.g. a build of the previous commit)")
	flag.StringVar(&cfg.Baseline, "baseline", "", "target the ratios are computed against (default: mariadb if measured, else strata-base)")
	flag.StringVar(&threads, "threads", "8", "sysbench --threads; a comma-separated list measures each (1,8)")
	flag.StringVar(&sessionDir, "session-dir", "", "write everything of this session into this directory (created; default: --results); also writes report.md there")
	flag.StringVar(&drivers, "driver", "sysbench", "load generator of the workloads: sysbench, go (the Go driver with HDR histograms: oltp_point_select and oltp_update_non_index only), or sysbench,go (both; go only where it applies). A workload can also name its own: oltp_point_select:driver=go")
	flag.IntVar(&cfg.ReportInterval, "report-interval", 1, "sysbench --report-interval of the measured run (seconds)")
	flag.IntVar(&cfg.Progress, "progress", 5, "print a progress line every N seconds of a measured run (0: none)")
	flag.BoolVar(&cfg.Plots, "plots", true, "draw PNG plots (latency percentiles, per-second throughput and p99) under plots/")
	flag.BoolVar(&planOnly, "plan", false, "print the planned duration of the session and exit")
	flag.BoolVar(&cfg.FailOnError, "fail-on-error", false, "exit 1 if any sysbench or go-tpc run failed")
	flag.IntVar(&cfg.TPCC.TimeSec, "tpcc-time", 0, "after the sysbench workloads, run go-tpc TPC-C for this many seconds on each TPC-C target (0: no TPC-C)")
	flag.IntVar(&cfg.TPCC.Warehouses, "tpcc-warehouses", 1, "go-tpc --warehouses")
	flag.IntVar(&cfg.TPCC.Threads, "tpcc-threads", 4, "go-tpc -T for the run")
	flag.StringVar(&tpccTargets, "tpcc-targets", "", "targets for TPC-C (default: --targets)")
	flag.StringVar(&cfg.TPCC.GoTPC, "go-tpc", "bin/tools/go-tpc", "go-tpc binary (make installs v1.0.7 there)")
	flag.IntVar(&cfg.TimeSec, "time", 60, "measured seconds per run")
	flag.IntVar(&cfg.WarmupSec, "warmup", 10, "unmeasured sysbench run before each measured run (seconds, 0 = none)")
	flag.IntVar(&cfg.TableSize, "table-size", 10000, "sysbench --table-size")
	flag.IntVar(&cfg.Tables, "tables", 1, "sysbench --tables")
	flag.IntVar(&cfg.Runs, "runs", 1, "repetitions of every workload on every target (interleaved)")
	flag.IntVar(&cfg.Stores, "stores", 3, "Strata store nodes")
	flag.IntVar(&cfg.ProfileSec, "profile", 0, "if > 0, take CPU and allocation profiles of this many seconds from the SQL node and every store during run 1 of each workload (that run is marked profiled)")
	flag.StringVar(&cfg.BinDir, "bin-dir", "bin", "directory with pd, storenode, sqlnode (from `make build`)")
	flag.StringVar(&cfg.ResultsDir, "results", "bench/results", "where JSON, markdown, raw outputs and profiles go")
	flag.StringVar(&cfg.Sysbench, "sysbench", "sysbench", "sysbench binary")
	flag.StringVar(&cfg.Mariadbd, "mariadbd", "/usr/sbin/mariadbd", "mariadbd binary for --targets mariadb")
	flag.BoolVar(&cfg.KeepData, "keep-data", false, "keep each Strata cluster's temp dir (data and logs)")
	flag.StringVar(&cfg.Label, "label", "", "added to result file names")
	flag.StringVar(&cfg.Note, "note", "", "free text recorded in the results")
	flag.StringVar(&extra, "sysbench-args", "", "extra sysbench options for every command, space-separated")
	flag.StringVar(&storeArgs, "store-args", "", "extra storenode flags, space-separated")
	flag.IntVar(&cfg.GoMaxProcs, "gomaxprocs", 0, "GOMAXPROCS of each Strata process: 0 is Go's default (every core), -1 shares the cores among the cluster's processes (at least one each), N sets it")
	flag.IntVar(&cfg.BaseGoMaxProcs, "base-gomaxprocs", 0, "--gomaxprocs of the strata-base target (an A/B of the setting: --base-bin-dir bin --gomaxprocs -1)")
	flag.IntVar(&cfg.DDLAt, "ddl-at", 0, "run the --ddl statements (then ADMIN CHECK TABLE on every sysbench table) this many seconds into each measured run on Strata targets (0: none)")
	flag.Func("ddl", "a DDL statement for --ddl-at, in database sbtest (repeat the flag for several, run in order)", func(v string) error {
		cfg.DDL = append(cfg.DDL, v)
		return nil
	})
	flag.IntVar(&cfg.KillStoreAt, "kill-store-at", 0, "kill -9 the store leading the most regions this many seconds into each measured run on Strata targets (0: no fault)")
	flag.BoolVar(&render, "render", false, "re-write the markdown of the session JSON files given as arguments (after a report format change)")
	flag.BoolVar(&cfg.Probe, "probe", false, "instead of benchmarking, send every statement shape sysbench uses once to each target and write which ones fail")
	flag.Parse()
	wls, err := expandDrivers(splitList(workloads), splitList(drivers))
	if err != nil {
		log.Fatal(err)
	}
	cfg.Workloads = wls
	cfg.Targets = splitList(targets)
	for _, t := range splitList(threads) {
		n, err := strconv.Atoi(t)
		if err != nil || n < 1 {
			log.Fatalf("--threads: bad thread count %q", t)
		}
		cfg.ThreadCounts = append(cfg.ThreadCounts, n)
	}
	if len(cfg.ThreadCounts) == 0 {
		log.Fatal("--threads: no thread count")
	}
	cfg.Threads = cfg.ThreadCounts[0]
	if cfg.TPCC.TimeSec > 0 {
		cfg.TPCC.Targets = splitList(tpccTargets)
		if len(cfg.TPCC.Targets) == 0 {
			cfg.TPCC.Targets = cfg.Targets
		}
		if _, err := os.Stat(cfg.TPCC.GoTPC); err != nil {
			log.Fatalf("go-tpc not found at %s (make installs it: GOBIN=bin/tools go install github.com/pingcap/go-tpc/cmd/go-tpc@v1.0.7): %v", cfg.TPCC.GoTPC, err)
		}
	}
	if sessionDir != "" {
		cfg.ResultsDir = sessionDir
		cfg.SessionReport = true
	}
	cfg.ExtraArgs = strings.Fields(extra)
	cfg.StoreArgs = strings.Fields(storeArgs)
	cfg.PrepareTimeout = 10 * time.Minute
	if cfg.ProfileSec > 0 && cfg.ProfileSec > cfg.TimeSec-2 {
		log.Fatalf("--profile %d must be at most --time minus 2", cfg.ProfileSec)
	}
	if planOnly {
		fmt.Println(planned(cfg))
		return
	}
	if render {
		if err := renderJSON(cfg.ResultsDir, flag.Args()); err != nil {
			log.Fatal(err)
		}
		return
	}
	if _, err := exec.LookPath(cfg.Sysbench); err != nil {
		log.Fatalf("sysbench not found (apt-get install -y sysbench, or `make bench-sysbench`): %v", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		log.Fatal(err)
	}
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func run(ctx context.Context, cfg config) error {
	if err := os.MkdirAll(filepath.Join(cfg.ResultsDir, "raw"), 0o755); err != nil {
		return err
	}
	var tgts []target
	for _, name := range cfg.Targets {
		switch name {
		case "strata", "strata-base", "strata-notrace":
			src := cfg.BinDir
			if name == "strata-base" {
				if src = cfg.BaseBinDir; src == "" {
					return fmt.Errorf("target strata-base needs --base-bin-dir")
				}
			}
			// Snapshot the binaries: ./bin is shared, and a `make build`
			// by someone else mid-session must not change what is measured.
			binDir, err := localcluster.SnapshotBins(src, "strata-sysbench-bin-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(binDir)
			st := &strataTarget{name: name, binDir: binDir, stores: cfg.Stores, keepData: cfg.KeepData, storeArgs: cfg.StoreArgs,
				goMaxProcs: cfg.GoMaxProcs, log: logf}
			if name == "strata-base" {
				st.goMaxProcs = cfg.BaseGoMaxProcs
			}
			if name == "strata-notrace" { // the A/B of trace sampling's cost
				st.sqlArgs = []string{"--enable-trace=false"}
			}
			tgts = append(tgts, st)
		case "mariadb":
			tgts = append(tgts, &mariadbTarget{mariadbd: cfg.Mariadbd, log: logf})
		default:
			return fmt.Errorf("%w: %q", errNoTarget, name)
		}
	}
	defer func() {
		for _, t := range tgts {
			t.Close()
		}
	}()

	if cfg.Baseline == "" {
		for _, b := range []string{"mariadb", "strata-base"} {
			if slices.Contains(cfg.Targets, b) {
				cfg.Baseline = b
				break
			}
		}
	}
	sess := newSession(cfg)
	if cfg.Probe {
		return probe(ctx, cfg, sess, tgts)
	}
	logf("session %s: workloads %v, targets %v, %d run(s), threads %v, %ds (+%ds warm-up), table size %d, results in %s",
		sess.Stamp, cfg.Workloads, cfg.Targets, cfg.Runs, cfg.ThreadCounts, cfg.TimeSec, cfg.WarmupSec, cfg.TableSize, cfg.ResultsDir)
	plan := planned(cfg)
	logf("planned: %s", plan)
	sess.Planned = plan.Total.Round(time.Second).String()
	total := len(cfg.Workloads) * len(cfg.ThreadCounts) * cfg.Runs * len(tgts)
	n := 0
	for _, wl := range cfg.Workloads {
		for _, threads := range cfg.ThreadCounts {
			for r := 1; r <= cfg.Runs; r++ {
				for _, t := range tgts {
					if ctx.Err() != nil {
						break
					}
					n++
					logf("[%d/%d, %s elapsed] %s %s threads=%d run %d", n, total, time.Since(sess.Started).Round(time.Second), wl, t.Name(), threads, r)
					res := runOne(ctx, cfg, sess, t, wl, threads, r)
					sess.Results = append(sess.Results, res)
					logf("%s %s threads=%d run %d: %s", t.Name(), wl, threads, r, res.oneLine())
					if err := sess.write(cfg); err != nil {
						return err
					}
				}
			}
			if cfg.Plots {
				sess.plotWorkload(cfg, wl, threads)
			}
		}
	}
	if cfg.TPCC.TimeSec > 0 {
		for _, t := range tgts {
			if ctx.Err() != nil || !slices.Contains(cfg.TPCC.Targets, t.Name()) {
				continue
			}
			logf("[%s elapsed] TPC-C on %s: %d warehouse(s), %d threads, %ds", time.Since(sess.Started).Round(time.Second), t.Name(), cfg.TPCC.Warehouses, cfg.TPCC.Threads, cfg.TPCC.TimeSec)
			res := runTPCC(ctx, cfg, sess, t)
			sess.TPCC = append(sess.TPCC, res)
			logf("TPC-C %s: %s", t.Name(), res.oneLine())
			if err := sess.write(cfg); err != nil {
				return err
			}
		}
	}
	for _, t := range tgts {
		sess.Versions[t.Name()] = t.Version()
	}
	sess.Elapsed = time.Since(sess.Started).Round(time.Second).String()
	if err := sess.write(cfg); err != nil {
		return err
	}
	for _, f := range sess.files(cfg) {
		logf("wrote %s", f)
	}
	printSummary(os.Stdout, sess)
	logf("session took %s (planned %s)", sess.Elapsed, sess.Planned)
	if err := ctx.Err(); err != nil {
		return err
	}
	if cfg.FailOnError {
		if bad := sess.failures(); len(bad) > 0 {
			return fmt.Errorf("%d run(s) failed:\n  %s", len(bad), strings.Join(bad, "\n  "))
		}
	}
	return nil
}

// expandDrivers gives every workload the load generators of --driver:
// "oltp_point_select" with drivers sysbench,go becomes "oltp_point_select"
// and "oltp_point_select:driver=go". Workloads that name a driver are kept
// as they are; go is skipped for the scripts it does not implement unless
// it is the only driver, which is an error.
func expandDrivers(workloads, drivers []string) ([]string, error) {
	if len(drivers) == 0 {
		drivers = []string{"sysbench"}
	}
	var out []string
	for _, wl := range workloads {
		script, opts := workloadSpec(wl)
		if d, _ := driverOf(opts); slices.ContainsFunc(opts, func(o string) bool { return strings.HasPrefix(o, "--driver=") }) {
			if d != "sysbench" && d != "go" {
				return nil, fmt.Errorf("%s: unknown driver %q (sysbench, go)", wl, d)
			}
			if d == "go" && !slices.Contains(goDriverScripts, script) {
				return nil, fmt.Errorf("%s: the Go driver runs only %v", wl, goDriverScripts)
			}
			out = append(out, wl)
			continue
		}
		for _, d := range drivers {
			switch {
			case d == "sysbench":
				out = append(out, wl)
			case d == "go" && slices.Contains(goDriverScripts, script):
				out = append(out, wl+":driver=go")
			case d == "go" && len(drivers) == 1:
				return nil, fmt.Errorf("--driver go: the Go driver runs only %v, not %s", goDriverScripts, script)
			case d != "go":
				return nil, fmt.Errorf("--driver: unknown driver %q (sysbench, go)", d)
			}
		}
	}
	return out, nil
}

// workloadSpec splits "oltp_read_only:skip_trx=on" into the script name and
// sysbench options.
func workloadSpec(wl string) (script string, opts []string) {
	parts := strings.Split(wl, ":")
	for _, o := range parts[1:] {
		opts = append(opts, "--"+o)
	}
	return parts[0], opts
}

// runOne prepares a fresh database on t, warms up, and measures one run.
func runOne(ctx context.Context, cfg config, sess *session, t target, wl string, threads, runNo int) Result {
	script, opts := workloadSpec(wl)
	driver, opts := driverOf(opts)
	res := Result{Target: t.Name(), Workload: wl, Run: runNo, Threads: threads, TimeSec: cfg.TimeSec,
		TableSize: cfg.TableSize, Started: time.Now().UTC(), Driver: driver}
	// The warm-up and the measured run use the workload's driver; prepare
	// is always sysbench's. The Go driver is this binary with --go-client.
	runBin, runPre := cfg.Sysbench, []string{}
	if driver == "go" {
		exe, err := os.Executable()
		if err != nil {
			res.Status, res.Error = "setup_failed", err.Error()
			return res
		}
		runBin, runPre = exe, []string{goClientFlag}
	}
	defer t.Teardown()
	if err := t.Setup(ctx); err != nil {
		res.Status, res.Error = "setup_failed", err.Error()
		return res
	}
	common := []string{script,
		"--db-driver=mysql", "--mysql-host=127.0.0.1", fmt.Sprintf("--mysql-port=%d", t.Port()),
		"--mysql-user=root", "--mysql-db=sbtest",
		fmt.Sprintf("--tables=%d", cfg.Tables), fmt.Sprintf("--table-size=%d", cfg.TableSize)}
	common = append(common, opts...)
	common = append(common, cfg.ExtraArgs...)
	stem := fmt.Sprintf("%s-%s-t%d-%s-run%d", sess.Stamp, safe(wl), threads, t.Name(), runNo)
	rawPath := filepath.Join(cfg.ResultsDir, "raw", stem+".txt")
	raw, err := os.Create(rawPath)
	if err != nil {
		res.Status, res.Error = "setup_failed", err.Error()
		return res
	}
	defer raw.Close()
	res.RawOutput = filepath.Join("raw", stem+".txt")

	// prepare
	prep := append(append([]string{}, common...), fmt.Sprintf("--threads=%d", threads), "prepare")
	t0 := time.Now()
	out, err := runSysbench(ctx, cfg.Sysbench, prep, cfg.PrepareTimeout, raw)
	res.PrepareSec = time.Since(t0).Seconds()
	if err != nil {
		res.Status, res.Error = "prepare_failed", failure(out, err)
		return res
	}

	// warm-up
	if cfg.WarmupSec > 0 {
		wu := append(append(slices.Clone(runPre), common...), fmt.Sprintf("--threads=%d", threads),
			fmt.Sprintf("--time=%d", cfg.WarmupSec), "run")
		out, err := runSysbench(ctx, runBin, wu, time.Duration(cfg.WarmupSec+120)*time.Second, raw)
		if err != nil {
			res.Status, res.Error = "run_failed", failure(out, err)
			return res
		}
	}

	// measured run
	args := append(append(slices.Clone(runPre), common...), fmt.Sprintf("--threads=%d", threads),
		fmt.Sprintf("--time=%d", cfg.TimeSec), "--histogram=on", "--percentile=99", fmt.Sprintf("--report-interval=%d", max(1, cfg.ReportInterval)), "run")
	res.Command = runBin + " " + strings.Join(args, " ")
	procs := t.Procs()
	before := make([]sample, len(procs))
	for i, p := range procs {
		before[i] = takeSample(ctx, p)
	}
	busy0, total0 := machineCPUBusy()
	res.LoadAvgBefore = loadAvg()
	var profDone chan []Profile
	if cfg.ProfileSec > 0 && runNo == 1 && len(procs) > 0 && procs[0].Status != "" {
		res.Profiled = true
		profDone = make(chan []Profile, 1)
		go func() {
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
			}
			profDone <- captureProfiles(ctx, procs, cfg.ProfileSec, cfg.ResultsDir, stem)
		}()
	}
	start := time.Now()
	var sink io.Writer = raw
	if cfg.Progress > 0 {
		sink = io.MultiWriter(raw, &progressWriter{label: fmt.Sprintf("  %s %s t=%d", wl, t.Name(), threads), every: cfg.Progress, total: cfg.TimeSec})
	}
	fault := startFault(ctx, cfg, t)
	out, cpu, err := runClient(ctx, runBin, args, time.Duration(cfg.TimeSec+120)*time.Second, sink)
	wall := time.Since(start).Seconds()
	res.Fault = fault()
	busy1, total1 := machineCPUBusy()
	res.LoadAvgAfter = loadAvg()
	if profDone != nil {
		res.Profiles = <-profDone
	}
	o := ParseOutput(out)
	res.fill(o)
	res.SysbenchCPUSec = cpu
	if err != nil || len(o.Fatal) > 0 || o.Events == 0 {
		res.Status, res.Error = "run_failed", failure(out, err)
		if o.Events == 0 {
			return res
		}
	} else {
		res.Status = "ok"
	}
	queries := float64(o.Queries)
	var ours float64
	for i, p := range procs {
		after := takeSample(ctx, p)
		if after.cpuSec == 0 { // killed (--kill-store-at): its CPU since is unknown
			after.cpuSec = before[i].cpuSec
		}
		st := procStats(p, before[i], after, queries, wall)
		ours += st.CPUSec
		res.Procs = append(res.Procs, st)
	}
	ours += cpu
	if total1 > total0 {
		elapsed := (total1 - total0) / float64(runtime.NumCPU()) // wall seconds as /proc/stat saw them
		res.MachineBusyCores = (busy1 - busy0) / elapsed
		res.OursCores = ours / elapsed
		res.OtherCores = max(0, res.MachineBusyCores-res.OursCores)
	}
	res.Leader = leaderOf(res.Procs)
	return res
}

// leaderOf names the store that served the reads or writes (only the leader
// does: it has the ReadIndex or propose samples).
func leaderOf(ps []ProcStats) string {
	best, bestN := "", 0.0
	for _, p := range ps {
		if p.Role != "store" {
			continue
		}
		if n := p.ReadIndexCount + p.ProposeCount; n > bestN {
			best, bestN = p.Name, n
		}
	}
	return best
}

func safe(s string) string {
	r := strings.NewReplacer(":", "+", "=", "-", "/", "_", " ", "_")
	return r.Replace(s)
}
