// Command regions10k measures a store's cost of many idle regions (issue
// 7): it starts a fresh local cluster (1 PD, 3 stores, 1 SQL node) from
// the binaries of `make build`, creates two tables with the same rows, one
// left in a single region and one split into --regions regions with SPLIT
// TABLE, waits until the cluster settles, samples each store process's CPU
// (/proc/PID/stat) over --idle seconds of idleness, pauses PD's schedulers
// (no leader moves while measuring), reads every row of both tables once
// (the SQL node's region cache then holds every region), and runs point
// selects (--threads clients, prepared statements, random ids) against the
// two tables in alternating --slice slices, --time seconds each, so both
// see the same load on a shared host. It writes p50/p99/QPS of both
// tables with the read paths, wakes and region errors behind them, the
// idle CPU and the stores' hibernation figures to
// bench/results/<stamp>-regions10k.md, and (with --profile) a CPU profile
// of one store while idle. Per table it also reports what a point select
// cost the processes (CPU, run-queue wait and context switches per query,
// from /proc/PID/task/*/schedstat). With --control a third table, t3,
// holds the same rows in 3 regions led by the 3 stores, one each: reads
// fan out over the stores as tn's do but without many regions, so tn
// against t3 is the cost of the region count and t3 against t1 the cost
// of the fan-out. Then (--colocated, the default) every tn leader moves to
// the store leading t1's region and t1 and tn are measured again: with the
// reads of both tables going to one store, as with one region, tn against
// t1 is the cost of the region count alone. With --profile-reads N every store and the SQL node are
// CPU-profiled during N more seconds of point selects per table.
//
//	make build
//	go run ./bench/regions10k --regions 10000 --idle 60 --time 60
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/stratadb/strata/internal/promtext"
	"github.com/stratadb/strata/localcluster"
)

type config struct {
	binDir, results   string
	regions, rows     int
	idle, runSec      int
	warmup            int
	threads           int
	settleMax         time.Duration
	profile, keepData bool
	storeArgs         string
	leaderLimit       int
	slice             time.Duration
	pauseSchedulers   bool
	control           bool
	colocated         bool
	profileReads      int
}

func main() {
	var cfg config
	flag.StringVar(&cfg.binDir, "bin-dir", "bin", "directory with pd, storenode, sqlnode")
	flag.StringVar(&cfg.results, "results", "bench/results", "where the report goes")
	flag.IntVar(&cfg.regions, "regions", 10000, "regions of the split table")
	flag.IntVar(&cfg.rows, "rows", 100000, "rows in each table")
	flag.IntVar(&cfg.idle, "idle", 60, "seconds of idle CPU sampling")
	flag.IntVar(&cfg.runSec, "time", 60, "seconds of point selects per table")
	flag.IntVar(&cfg.warmup, "warmup", 15, "unmeasured seconds of point selects per table first (fills the SQL node's region cache)")
	flag.IntVar(&cfg.threads, "threads", 8, "point-select clients")
	flag.DurationVar(&cfg.settleMax, "settle", 4*time.Minute, "longest wait for the cluster to settle after the split")
	flag.BoolVar(&cfg.profile, "profile", true, "take a 20 s CPU profile of store1 after the idle sample")
	flag.BoolVar(&cfg.keepData, "keep-data", false, "keep the cluster's data dir and logs")
	flag.StringVar(&cfg.storeArgs, "store-args", "", "extra store flags, space separated")
	flag.IntVar(&cfg.leaderLimit, "leader-schedule-limit", 0, "PD's leader-schedule-limit while settling (0: PD's default, and the run does not wait for balanced leaders; the split leaves the new leaders where the split region's was)")
	flag.DurationVar(&cfg.slice, "slice", 5*time.Second, "the two tables are measured in alternating slices of this length (--time seconds each in all)")
	flag.BoolVar(&cfg.pauseSchedulers, "pause-schedulers", true, "disable PD's schedulers once settled, so no leader moves during the measurement (the count of leader changes is reported either way)")
	flag.BoolVar(&cfg.control, "control", false, "also measure t3, the same rows in 3 regions led by the 3 stores (one each): the cost of fanning reads out over the stores without many regions")
	flag.BoolVar(&cfg.colocated, "colocated", true, "after the measurement with balanced leaders, move every tn leader to t1's leader store and measure t1 and tn again: the region count's cost with the same leader placement as one region")
	flag.IntVar(&cfg.profileReads, "profile-reads", 0, "after the measurement, one more slice of this many seconds per table with CPU profiles of every store and the SQL node (0: none), under bench/results/profiles")
	flag.Parse()
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "regions10k:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}

type report struct {
	b strings.Builder
}

func (r *report) printf(format string, args ...any) {
	fmt.Fprintf(&r.b, format, args...)
	logf(strings.TrimRight(format, "\n"), args...)
}

func run(cfg config) error {
	stamp := time.Now().UTC().Format("2006-01-02-1504")
	bins, err := localcluster.SnapshotBins(cfg.binDir, "strata-regions10k-bin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(bins)
	data, err := os.MkdirTemp("", "strata-regions10k-")
	if err != nil {
		return err
	}
	if !cfg.keepData {
		defer os.RemoveAll(data)
	} else {
		logf("data and logs in %s", data)
	}
	var storeArgs []string
	if cfg.storeArgs != "" {
		storeArgs = strings.Fields(cfg.storeArgs)
	}
	c, err := localcluster.New(localcluster.Config{BinDir: bins, DataDir: data, Stores: 3, SQLNodes: 1, FreePorts: true, StoreArgs: storeArgs})
	if err != nil {
		return err
	}
	if err := c.Start(); err != nil {
		return err
	}
	defer c.Stop(15 * time.Second)
	ctx := context.Background()
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := c.WaitReady(wctx, 0); err != nil {
		return err
	}
	db, err := sql.Open("mysql", c.DSN(0, ""))
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(cfg.threads + 2)
	db.SetMaxIdleConns(cfg.threads + 2)

	var rep report
	rep.printf("# %d regions on 3 stores: idle CPU and point-select latency\n\n", cfg.regions)
	rep.printf("`go run ./bench/regions10k --regions %d --rows %d --idle %d --time %d --warmup %d --threads %d --leader-schedule-limit %d --control=%v --profile-reads %d` (store args %q), %s UTC, %d CPUs, load average at start %s\n\n",
		cfg.regions, cfg.rows, cfg.idle, cfg.runSec, cfg.warmup, cfg.threads, cfg.leaderLimit, cfg.control, cfg.profileReads, cfg.storeArgs, stamp, numCPU(), loadAvg())

	for _, q := range []string{
		"CREATE DATABASE b",
		"CREATE TABLE b.t1 (id BIGINT PRIMARY KEY, k INT NOT NULL, c CHAR(120) NOT NULL, pad CHAR(60) NOT NULL)",
		"CREATE TABLE b.tn (id BIGINT PRIMARY KEY, k INT NOT NULL, c CHAR(120) NOT NULL, pad CHAR(60) NOT NULL)",
		"CREATE TABLE b.t3 (id BIGINT PRIMARY KEY, k INT NOT NULL, c CHAR(120) NOT NULL, pad CHAR(60) NOT NULL)",
	} {
		if _, err := db.Exec(q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	start := time.Now()
	loadTables := []string{"t1", "tn"}
	if cfg.control {
		loadTables = append(loadTables, "t3")
	}
	for _, t := range loadTables {
		if err := load(db, t, cfg.rows); err != nil {
			return err
		}
	}
	rep.printf("- loaded %d rows into each table in %v\n", cfg.rows, time.Since(start).Round(time.Millisecond))

	// Split tn: at most 1000 regions per statement (TiDB's limit); 500 keep
	// each statement's apply within the client's 5 s RPC timeout here.
	start = time.Now()
	per, splitRetries := 500, 0
	for i := 0; i < cfg.regions; i += per {
		n := min(per, cfg.regions-i)
		lo, hi := int64(i)*int64(cfg.rows)*idStep/int64(cfg.regions), int64(i+n)*int64(cfg.rows)*idStep/int64(cfg.regions)
		q := fmt.Sprintf("SPLIT TABLE b.tn BETWEEN (%d) AND (%d) REGIONS %d", lo, hi, n)
		t0 := time.Now()
		// A split answered "undetermined" (the client's RPC timed out
		// while the store applied it) is run again: splitting at existing
		// boundaries is a no-op.
		for try := 1; ; try++ {
			_, err := db.Exec(q)
			if err == nil {
				break
			}
			if try == 3 {
				return fmt.Errorf("%s: %w", q, err)
			}
			splitRetries++
			logf("%s: %v (retrying)", q, err)
		}
		logf("%s: %v", q, time.Since(t0).Round(time.Millisecond))
	}
	splitTook := time.Since(start)
	rep.printf("- split tn into %d regions in %v (%d statements of %d regions, %d retried after an undetermined answer)\n",
		cfg.regions, splitTook.Round(time.Millisecond), (cfg.regions+per-1)/per, per, splitRetries)
	if cfg.control {
		q := fmt.Sprintf("SPLIT TABLE b.t3 BETWEEN (0) AND (%d) REGIONS 3", int64(cfg.rows)*idStep)
		if _, err := db.Exec(q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}

	if cfg.leaderLimit > 0 {
		if err := c.PDAPI(http.MethodPost, "config", map[string]int{"leader-schedule-limit": cfg.leaderLimit}, nil); err != nil {
			return fmt.Errorf("PD config: %w", err)
		}
	}
	stores := c.Stores
	statusOf := func(i int) string { return storeStatus(stores[i].Args) }
	// Settle: PD balanced the leaders (the split left them on one store)
	// and every store's hibernated peer count stopped moving and covers
	// most of its peers (or --settle passes).
	start = time.Now()
	var last, lastLeaders []float64
	stable := 0
	for time.Since(start) < cfg.settleMax {
		time.Sleep(5 * time.Second)
		var cur, leaders []float64
		for i := range stores {
			m, _ := scrape(statusOf(i))
			cur = append(cur, m["strata_raftstore_hibernated_peers"], m[`strata_raftstore_regions{type="peers"}`])
			leaders = append(leaders, m[`strata_raftstore_regions{type="leaders"}`])
		}
		logf("settling: hibernated/peers per store %v, leaders %v", cur, leaders)
		balanced := true
		for _, l := range leaders {
			balanced = balanced && (cfg.leaderLimit == 0 || l >= 0.9*float64(cfg.regions)/3)
		}
		if slices.Equal(cur, last) {
			stable++
		} else {
			stable = 0
		}
		last, lastLeaders = cur, leaders
		done := stable >= 2 && balanced
		for i := 0; i+1 < len(cur); i += 2 {
			done = done && cur[i+1] >= float64(cfg.regions) && cur[i] >= 0.99*cur[i+1]
		}
		if done {
			break
		}
	}
	rep.printf("- settled after %v (hibernated/peers per store: %v; leaders per store: %v)\n\n", time.Since(start).Round(time.Second), last, lastLeaders)

	// Leader changes during the measurements come from PD's schedulers
	// (balance, hot region) or from elections; with --pause-schedulers the
	// schedulers are off from here on, so only elections remain, and the
	// idle figure is of a cluster with nothing to do (no leader still
	// being balanced when the settle ended before that).
	if cfg.pauseSchedulers {
		var names []string
		if err := c.PDAPI("GET", "schedulers", nil, &names); err != nil {
			return err
		}
		for _, n := range names {
			if err := c.PDAPI("DELETE", "schedulers/"+n, nil, nil); err != nil {
				return err
			}
		}
		rep.printf("PD's schedulers paused for the measurement: %v\n\n", names)
	}
	// Idle CPU of every process.
	procs := append(slices.Clone(c.PDs), append(slices.Clone(stores), c.SQL...)...)
	before := make([]float64, len(procs))
	for i, p := range procs {
		before[i] = procCPU(p.Pid())
	}
	t0 := time.Now()
	metricsBefore := make([]map[string]float64, len(stores))
	for i := range stores {
		metricsBefore[i], _ = scrape(statusOf(i))
	}
	time.Sleep(time.Duration(cfg.idle) * time.Second)
	el := time.Since(t0).Seconds()
	rep.printf("## Idle (%d s, no client)\n\n| process | CPU %% of one core | raft msgs sent/s | loop iterations/s | hibernated peers | peers |\n|---|---|---|---|---|---|\n", cfg.idle)
	for i, p := range procs {
		cpu := (procCPU(p.Pid()) - before[i]) / el * 100
		extra := "| | | |"
		if j := i - 1; j >= 0 && j < len(stores) {
			m, _ := scrape(statusOf(j))
			mb := metricsBefore[j]
			extra = fmt.Sprintf("| %.0f | %.1f | %.0f | %.0f |",
				(m["strata_raftstore_raft_messages_sent_total"]-mb["strata_raftstore_raft_messages_sent_total"])/el,
				(m["strata_raftstore_loop_iteration_seconds_count"]-mb["strata_raftstore_loop_iteration_seconds_count"])/el,
				m["strata_raftstore_hibernated_peers"], m[`strata_raftstore_regions{type="peers"}`])
		}
		rep.printf("| %s | %.2f %s\n", p.Name, cpu, extra)
	}
	rep.printf("\n")
	if cfg.profile {
		dst := filepath.Join(cfg.results, stamp+"-regions10k-idle-store1.pprof")
		if err := fetchProfile(statusOf(0), 20, dst); err != nil {
			logf("profile: %v", err)
		} else if top, err := pprofTop(dst); err == nil {
			rep.printf("CPU profile of store1 idle (20 s, `%s`), top by cumulative:\n\n```\n%s```\n\n", filepath.Base(dst), top)
		}
	}

	tables := []benchTable{{"t1", 1}, {"tn", cfg.regions}}
	if cfg.control {
		placed, err := placeControlLeaders(c, db)
		if err != nil {
			return err
		}
		rep.printf("Control table t3: its regions' leaders on stores %v (one per store, PD operators)\n\n", placed)
		tables = append(tables, benchTable{"t3", 3})
	}
	rep.printf("## Point selects (%d threads, prepared `SELECT c FROM t WHERE id = ?`, random id; %d s per table in alternating %v slices after a warm-up that read every row once and %d s of random reads per table)\n\n",
		cfg.threads, cfg.runSec, cfg.slice, cfg.warmup)
	rep.printf("### Leaders balanced by PD (tn's about a third on each store)\n\n")
	p99, err := measureReads(c, db, cfg, tables, &rep)
	if err != nil {
		return err
	}
	rep.printf("\np99 ratio (%d regions / 1 region): %.2f\n", cfg.regions, p99[1]/p99[0])
	if cfg.control {
		rep.printf("p99 ratio (3 regions, one leader per store / 1 region): %.2f\np99 ratio (%d regions / 3 regions): %.2f\n", p99[2]/p99[0], cfg.regions, p99[1]/p99[2])
	}
	if cfg.colocated {
		// The same two tables with every tn leader moved to t1's leader
		// store: both tables' reads then go to one store, as with one
		// region, and the ratio is the cost of the region count alone.
		store, moved, took, err := colocateLeaders(c, db)
		if err != nil {
			return err
		}
		rep.printf("\n### tn's leaders on t1's leader store (store %d; %d leaders moved by PD operators in %v)\n\n", store, moved, took.Round(time.Second))
		p99, err := measureReads(c, db, cfg, tables[:2], &rep)
		if err != nil {
			return err
		}
		rep.printf("\np99 ratio (%d regions / 1 region, leaders on one store): %.2f\n", cfg.regions, p99[1]/p99[0])
	}
	if cfg.profileReads > 0 {
		if err := profileReads(c, db, cfg, stamp, tables, &rep); err != nil {
			logf("profiles: %v", err)
		}
	}
	if err := os.MkdirAll(cfg.results, 0o755); err != nil {
		return err
	}
	out := filepath.Join(cfg.results, stamp+"-regions10k.md")
	if err := os.WriteFile(out, []byte(rep.b.String()), 0o644); err != nil {
		return err
	}
	logf("wrote %s", out)
	return nil
}

// measureReads warms the SQL node's region cache for tables (every row
// once, then --warmup seconds of random reads each), runs point selects on
// them in alternating slices, --time seconds each, and adds their latency,
// read paths and cost per query to rep. It returns each table's p99 in ms.
func measureReads(c *localcluster.Cluster, db *sql.DB, cfg config, tables []benchTable, rep *report) ([]float64, error) {
	stores := c.Stores
	statusOf := func(i int) string { return storeStatus(stores[i].Args) }
	// Warm-up: every row once, so the SQL node's region cache holds every
	// region (a miss is a PD round trip, which is not what is measured),
	// then --warmup seconds of random reads per table.
	for _, t := range tables {
		t0 := time.Now()
		if err := readAll(db, "b."+t.name, cfg.rows, cfg.threads); err != nil {
			return nil, err
		}
		if _, err := pointSelects(db, "b."+t.name, cfg.rows, cfg.threads, time.Duration(cfg.warmup)*time.Second); err != nil {
			return nil, err
		}
		logf("warmed %s in %v", t.name, time.Since(t0).Round(time.Millisecond))
	}
	rep.printf("load average before: %s\n\n", loadAvg())
	n := len(tables)
	res := make([]selectResult, n)
	sqlDiff, storeDiff := make([]map[string]float64, n), make([]map[string]float64, n)
	cost := make([]map[string]localcluster.SchedStat, n) // by process group
	for i := range tables {
		sqlDiff[i], storeDiff[i], cost[i] = map[string]float64{}, map[string]float64{}, map[string]localcluster.SchedStat{}
	}
	sqlStatus := storeStatus(c.SQL[0].Args)
	scrapeStores := func() map[string]float64 {
		sum := map[string]float64{}
		for i := range stores {
			m, _ := scrape(statusOf(i))
			for k, v := range m {
				sum[k] += v
			}
		}
		return sum
	}
	groups := processGroups(c)
	nSlices := max(1, int(time.Duration(cfg.runSec)*time.Second/cfg.slice))
	for k := 0; k < n*nSlices; k++ {
		// Round r runs the tables in an order rotated by r (t1, tn, tn,
		// t1, t1, tn, ... for two): no table always goes first.
		r, j := k/n, k%n
		i := (j + r) % n
		t := tables[i]
		mb, sb, cb := must(scrape(sqlStatus)), scrapeStores(), groups.read()
		rs, err := pointSelects(db, "b."+t.name, cfg.rows, cfg.threads, cfg.slice)
		if err != nil {
			return nil, err
		}
		ca, ma, sa := groups.read(), must(scrape(sqlStatus)), scrapeStores()
		for g, v := range ca {
			d := v.Sub(cb[g])
			acc := cost[i][g]
			cost[i][g] = localcluster.SchedStat{OnCPU: acc.OnCPU + d.OnCPU, RunQueueWait: acc.RunQueueWait + d.RunQueueWait, Timeslices: acc.Timeslices + d.Timeslices}
		}
		addDiff(sqlDiff[i], mb, ma)
		addDiff(storeDiff[i], sb, sa)
		res[i].lat = append(res[i].lat, rs.lat...)
		res[i].errors += rs.errors
	}
	rep.printf("| table | regions | QPS | p50 ms | p99 ms | p999 ms | errors | mean ms: SQL node's get RPC, store's kv_get | SQL node: region cache misses, region errors, backoffs | stores: reads by path, wakes, mean loop read wait ms, leader changes |\n|---|---|---|---|---|---|---|---|---|---|\n")
	p99 := make([]float64, n)
	for i, t := range tables {
		slices.Sort(res[i].lat)
		res[i].qps = float64(len(res[i].lat)) / (float64(nSlices) * cfg.slice.Seconds())
		p99[i] = res[i].pct(0.99)
		sd := storeDiff[i]
		wait := 0.0
		if n := sd["strata_raftstore_read_index_wait_seconds_count"]; n > 0 {
			wait = sd["strata_raftstore_read_index_wait_seconds_sum"] / n * 1000
		}
		rep.printf("| %s | %d | %.0f | %.3f | %.3f | %.3f | %d | %.3f, %.3f | %s | %s, %.3f, %.0f |\n", t.name, t.regions, res[i].qps, res[i].pct(0.5), p99[i], res[i].pct(0.999), res[i].errors,
			meanMs(sqlDiff[i], "strata_kvclient_rpc_duration_seconds", `type="get"`), meanMs(sd, "strata_store_rpc_seconds", `method="kv_get"`),
			listDiff(sqlDiff[i], `strata_kvclient_region_cache_lookups_total{result="miss"}`, "strata_kvclient_region_errors_total", "strata_kvclient_backoff_total"),
			listDiff(sd, "strata_raftstore_reads_total", "strata_raftstore_wakes_total"), wait, sd["strata_raftstore_leader_changes_total"])
	}
	rep.printf("\nCost per point select, from the processes' threads' /proc schedstat over the same slices (CPU: time on a CPU; wait: time runnable but queued for a CPU; switches: times a thread was put on a CPU), in µs per query (switches per query):\n\n")
	rep.printf("| table | stores CPU | stores wait | stores switches | SQL node CPU | SQL node wait | SQL node switches | bench client CPU | bench client wait | PD CPU |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for i, t := range tables {
		q := float64(len(res[i].lat))
		us := func(d time.Duration) float64 { return float64(d.Microseconds()) / max(q, 1) }
		st, sq, cl, pd := cost[i]["stores"], cost[i]["sql"], cost[i]["client"], cost[i]["pd"]
		rep.printf("| %s | %.1f | %.1f | %.2f | %.1f | %.1f | %.2f | %.1f | %.1f | %.1f |\n", t.name,
			us(st.OnCPU), us(st.RunQueueWait), float64(st.Timeslices)/max(q, 1),
			us(sq.OnCPU), us(sq.RunQueueWait), float64(sq.Timeslices)/max(q, 1),
			us(cl.OnCPU), us(cl.RunQueueWait), us(pd.OnCPU))
	}
	rep.printf("\nBatchCommands messages per point select (requests share a message when they queue behind a Send): SQL node to stores, and stores' answers:\n\n| table | messages sent by the SQL node | requests per message | answer messages sent by the stores | answers per message |\n|---|---|---|---|---|\n")
	for i, t := range tables {
		q := max(float64(len(res[i].lat)), 1)
		sd, qd := storeDiff[i], sqlDiff[i]
		sent, reqs := qd["strata_kvclient_batch_commands_size_count"], qd["strata_kvclient_batch_commands_size_sum"]
		ans, answers := sd[`strata_store_batch_commands_size_count{dir="send"}`], sd[`strata_store_batch_commands_size_sum{dir="send"}`]
		rep.printf("| %s | %.2f | %.2f | %.2f | %.2f |\n", t.name, sent/q, reqs/max(sent, 1), ans/q, answers/max(ans, 1))
	}
	rep.printf("\nload average after: %s\n", loadAvg())
	return p99, nil
}

type benchTable struct {
	name    string
	regions int
}

// procGroups are the processes whose scheduler accounting is reported, by
// group: "stores", "sql", "pd" and "client" (this process).
type procGroups map[string][]int

func processGroups(c *localcluster.Cluster) procGroups {
	g := procGroups{"pd": {c.PDs[0].Pid()}, "client": {os.Getpid()}}
	for _, s := range c.Stores {
		g["stores"] = append(g["stores"], s.Pid())
	}
	for _, s := range c.SQL {
		g["sql"] = append(g["sql"], s.Pid())
	}
	return g
}

func (g procGroups) read() map[string]localcluster.SchedStat {
	out := map[string]localcluster.SchedStat{}
	for name, pids := range g {
		var sum localcluster.SchedStat
		for _, pid := range pids {
			s := localcluster.ReadSchedStat(pid)
			sum.OnCPU += s.OnCPU
			sum.RunQueueWait += s.RunQueueWait
			sum.Timeslices += s.Timeslices
		}
		out[name] = sum
	}
	return out
}

// placeControlLeaders moves the leaders of t3's regions (in key order) to
// the stores in turn, so its three row-holding regions are led by three
// different stores, and waits until they are. It returns the leader store
// of each region. Run it with PD's schedulers paused.
func placeControlLeaders(c *localcluster.Cluster, db *sql.DB) ([]uint64, error) {
	var st struct {
		Stores []struct {
			Store struct {
				ID uint64 `json:"id"`
			} `json:"store"`
		} `json:"stores"`
	}
	if err := c.PDAPI("GET", "stores", nil, &st); err != nil {
		return nil, err
	}
	var ids []uint64
	for _, s := range st.Stores {
		ids = append(ids, s.Store.ID)
	}
	slices.Sort(ids)
	if len(ids) == 0 {
		return nil, fmt.Errorf("PD lists no stores")
	}
	leaders, _, err := moveLeaders(c, db, "b.t3", func(i int) uint64 { return ids[i%len(ids)] }, 3*time.Minute)
	return leaders, err
}

// colocateLeaders moves the leader of every tn region to the store leading
// t1's region and returns that store, how many leaders moved and how long
// it took.
func colocateLeaders(c *localcluster.Cluster, db *sql.DB) (store uint64, moved int, took time.Duration, err error) {
	_, l1, err := tableRegions(db, "b.t1")
	if err != nil {
		return 0, 0, 0, err
	}
	if len(l1) != 1 || l1[0] == 0 {
		return 0, 0, 0, fmt.Errorf("t1 has leaders %v, want one region with a leader", l1)
	}
	store = l1[0]
	start := time.Now()
	_, moved, err = moveLeaders(c, db, "b.tn", func(int) uint64 { return store }, 10*time.Minute)
	return store, moved, time.Since(start), err
}

// moveLeaders moves the leader of table's i-th region (in key order) to
// store to(i) with PD transfer-leader operators, sent again each round
// until every leader is there or limit passes. It returns the leaders'
// stores and how many were elsewhere at first. Run it with PD's
// schedulers paused.
func moveLeaders(c *localcluster.Cluster, db *sql.DB, table string, to func(i int) uint64, limit time.Duration) (leaders []uint64, moved int, err error) {
	deadline := time.Now().Add(limit)
	for round := 0; ; round++ {
		regions, leaders, err := tableRegions(db, table)
		if err != nil {
			return nil, 0, err
		}
		away := 0
		for i, r := range regions {
			if leaders[i] != to(i) {
				away++
				_ = c.PDAPI("POST", "operators", map[string]any{"name": "transfer-leader", "region_id": r, "to_store_id": to(i)}, nil)
			}
		}
		if round == 0 {
			moved = away
		}
		logf("placing %s's leaders: %d of %d elsewhere", table, away, len(regions))
		if away == 0 {
			return leaders, moved, nil
		}
		if time.Now().After(deadline) {
			return nil, 0, fmt.Errorf("%d of %s's %d leaders not placed in %v", away, table, len(regions), limit)
		}
		// Thousands of operators take seconds; a round re-sends every
		// missing one.
		if len(regions) > 100 {
			time.Sleep(5 * time.Second)
		} else {
			time.Sleep(time.Second)
		}
	}
}

// tableRegions lists table's regions in key order (SHOW TABLE ...
// REGIONS) with their leader stores.
func tableRegions(db *sql.DB, table string) (ids, leaders []uint64, err error) {
	rows, err := db.Query("SHOW TABLE " + table + " REGIONS")
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, nil, err
	}
	idCol, leaderCol := slices.Index(cols, "REGION_ID"), slices.Index(cols, "LEADER_STORE_ID")
	if idCol < 0 || leaderCol < 0 {
		return nil, nil, fmt.Errorf("SHOW TABLE REGIONS columns %v", cols)
	}
	dest := make([]any, len(cols))
	for i := range dest {
		dest[i] = new(sql.RawBytes)
	}
	col := func(i int) uint64 {
		v, _ := strconv.ParseUint(string(*dest[i].(*sql.RawBytes)), 10, 64)
		return v
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, nil, err
		}
		id, l := col(idCol), col(leaderCol)
		ids, leaders = append(ids, id), append(leaders, l)
	}
	return ids, leaders, rows.Err()
}

// profileReads runs one more slice of --profile-reads seconds per table
// while taking CPU profiles of every store and the SQL node, saves them
// under <results>/profiles and adds the merged stores' top functions to
// the report.
func profileReads(c *localcluster.Cluster, db *sql.DB, cfg config, stamp string, tables []benchTable, rep *report) error {
	dir := filepath.Join(cfg.results, "profiles")
	procs := append(slices.Clone(c.Stores), c.SQL...)
	rep.printf("\n## CPU profiles (%d s of point selects per table after the measurement, every store and the SQL node)\n\n", cfg.profileReads)
	for _, t := range tables {
		var wg sync.WaitGroup
		files := make([]string, len(procs))
		errs := make([]error, len(procs))
		for i, p := range procs {
			files[i] = filepath.Join(dir, fmt.Sprintf("%s-regions10k-%s-%s.cpu.pb.gz", stamp, t.name, p.Name))
			wg.Go(func() { errs[i] = fetchProfile(storeStatus(p.Args), cfg.profileReads, files[i]) })
		}
		time.Sleep(200 * time.Millisecond) // the profiles have started
		r, err := pointSelects(db, "b."+t.name, cfg.rows, cfg.threads, time.Duration(cfg.profileReads)*time.Second)
		wg.Wait()
		if err != nil {
			return err
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
		storeFiles := files[:len(c.Stores)]
		top, err := pprofTopOf("-top", storeFiles...)
		if err != nil {
			return err
		}
		txt := filepath.Join(dir, fmt.Sprintf("%s-regions10k-%s-stores.cpu.top.txt", stamp, t.name))
		if err := os.WriteFile(txt, []byte(top), 0o644); err != nil {
			return err
		}
		rep.printf("- %s: %d queries; profiles %s-regions10k-%s-{store1,store2,store3,sql1}.cpu.pb.gz, stores merged: %s\n",
			t.name, len(r.lat), stamp, t.name, filepath.Base(txt))
	}
	return nil
}

// idStep spaces the rows' ids: SPLIT TABLE wants regions at least 1000
// handles wide (TiDB's minimum step), and every region should hold rows.
const idStep = 1000

// load inserts n rows with ids 0, idStep, 2*idStep, ... into table t, 500
// per statement.
func load(db *sql.DB, t string, n int) error {
	rng := rand.New(rand.NewPCG(1, 2)) // the same rows in both tables
	for i := 0; i < n; i += 500 {
		var b strings.Builder
		fmt.Fprintf(&b, "INSERT INTO b.%s VALUES ", t)
		for j := i; j < min(i+500, n); j++ {
			if j > i {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "(%d,%d,'%0120d','%060d')", j*idStep, rng.IntN(n), rng.Uint64(), rng.Uint64())
		}
		if _, err := db.Exec(b.String()); err != nil {
			return fmt.Errorf("load %s: %w", t, err)
		}
	}
	return nil
}

type selectResult struct {
	lat    []time.Duration // sorted
	qps    float64
	errors int
}

func (r selectResult) pct(q float64) float64 {
	if len(r.lat) == 0 {
		return 0
	}
	return float64(r.lat[min(len(r.lat)-1, int(q*float64(len(r.lat))))].Microseconds()) / 1000
}

func pointSelects(db *sql.DB, table string, rows, threads int, d time.Duration) (selectResult, error) {
	var mu sync.Mutex
	var res selectResult
	var wg sync.WaitGroup
	deadline := time.Now().Add(d)
	var firstErr error
	for w := range threads {
		wg.Go(func() {
			stmt, err := db.Prepare("SELECT c FROM " + table + " WHERE id = ?")
			if err != nil {
				mu.Lock()
				firstErr = err
				mu.Unlock()
				return
			}
			defer stmt.Close()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			lat := make([]time.Duration, 0, 1<<16)
			errs := 0
			var c string
			for time.Now().Before(deadline) {
				t0 := time.Now()
				if err := stmt.QueryRow(rng.IntN(rows) * idStep).Scan(&c); err != nil {
					errs++
					continue
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			res.lat = append(res.lat, lat...)
			res.errors += errs
			mu.Unlock()
		})
	}
	wg.Wait()
	if firstErr != nil {
		return res, firstErr
	}
	slices.Sort(res.lat)
	res.qps = float64(len(res.lat)) / d.Seconds()
	return res, nil
}

// addDiff adds the growth of every series from mb to ma to into.
func addDiff(into, mb, ma map[string]float64) {
	for k, v := range ma {
		if d := v - mb[k]; d != 0 {
			into[k] += d
		}
	}
}

// listDiff lists the series in d (growths) whose name (or name and
// labels) starts with one of names.
func listDiff(d map[string]float64, names ...string) string {
	var out []string
	for k, v := range d {
		for _, n := range names {
			if v > 0 && (k == n || strings.HasPrefix(k, n+"{")) {
				k = strings.TrimPrefix(strings.TrimPrefix(k, "strata_kvclient_"), "strata_raftstore_")
				out = append(out, fmt.Sprintf("%s %.0f", k, v))
			}
		}
	}
	slices.Sort(out)
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// meanMs is the mean in ms of histogram name's series whose labels
// contain label, from their _sum and _count growths in d.
func meanMs(d map[string]float64, name, label string) float64 {
	var sum, n float64
	for k, v := range d {
		switch {
		case strings.HasPrefix(k, name+"_sum{") && strings.Contains(k, label):
			sum += v
		case strings.HasPrefix(k, name+"_count{") && strings.Contains(k, label):
			n += v
		}
	}
	if n == 0 {
		return 0
	}
	return sum / n * 1000
}

func must(m map[string]float64, _ error) map[string]float64 { return m }

// readAll reads every row of table once (ids split over threads).
func readAll(db *sql.DB, table string, rows, threads int) error {
	var wg sync.WaitGroup
	errs := make(chan error, threads)
	for w := range threads {
		wg.Go(func() {
			var c string
			for id := w; id < rows; id += threads {
				if err := db.QueryRow("SELECT c FROM "+table+" WHERE id = ?", id*idStep).Scan(&c); err != nil {
					errs <- fmt.Errorf("warm %s: %w", table, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// storeStatus finds a store's --status-addr in its flags.
func storeStatus(args []string) string {
	for i, a := range args {
		if a == "--status-addr" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// scrape reads every series of /metrics by name and labels as exposed
// (`name{k="v"}`; histograms: their _sum and _count only).
func scrape(hostport string) (map[string]float64, error) {
	mfs, err := promtext.Fetch(context.Background(), hostport)
	if err != nil {
		return nil, err
	}
	return mfs.Series(false), nil
}

// procCPU is the user+system CPU seconds of pid (0 if unreadable).
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func numCPU() int {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "processor\t:")
}

func fetchProfile(status string, seconds int, dst string) error {
	cl := &http.Client{Timeout: time.Duration(seconds+30) * time.Second}
	resp, err := cl.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", status, seconds))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profile: %s", resp.Status)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func pprofTop(src string) (string, error) {
	out, err := exec.Command("go", "tool", "pprof", "-top", "-cum", "-nodecount=25", src).Output()
	if err != nil {
		return "", err
	}
	lines := strings.Split(string(out), "\n")
	return strings.Join(lines[:min(len(lines), 32)], "\n"), nil
}

// pprofTopOf is `go tool pprof <mode> -nodecount=60` of the merged
// profiles srcs.
func pprofTopOf(mode string, srcs ...string) (string, error) {
	out, err := exec.Command("go", append([]string{"tool", "pprof", mode, "-nodecount=60"}, srcs...)...).Output()
	return string(out), err
}
