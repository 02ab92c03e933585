// Command raftwrite measures issue 7's closing figures on the real binaries
// (localcluster: 1 PD, 3 stores, 1 SQL node on free loopback ports):
//
//   - replicated write throughput and p50/p99/p999 latency of autocommit
//     single-row INSERTs and UPDATEs through the SQL node, with 1 and with
//     64 concurrent writers (every write is a raft proposal fsynced on a
//     quorum), plus the stores' raft-level view of the same writes
//     (propose_wait_seconds: from a write reaching the leader to its entry
//     applied, quantiles interpolated in the histogram's buckets);
//   - the size and time of a snapshot of one ~64 MiB region: one region is
//     filled (split size set high so it does not split), a fourth store is
//     started and PD's add-peer operator gives it a replica, which a
//     snapshot fills; generation, transfer and install are read from the
//     stores' strata_raftstore_snapshot_* metrics and logs, and the peak
//     RSS of the sending and receiving stores from /proc.
//
// Results go to bench/results/YYYY-MM-DD-HHMM-raftstore-figures.md.
//
//	make build && go run ./bench/raftwrite            # 60 s per run
//	go run ./bench/raftwrite --time 10s --snapshot-mib 8   # quick
package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/stratadb/strata/internal/promtext"
	"github.com/stratadb/strata/localcluster"
)

var (
	binDir      = flag.String("bin-dir", "bin", "directory with pd, storenode, sqlnode (make build)")
	runTime     = flag.Duration("time", 60*time.Second, "measured duration of each write run")
	warmup      = flag.Duration("warmup", 5*time.Second, "unmeasured warm-up before each write run")
	writersFlag = flag.String("writers", "1,64", "comma-separated concurrent writer counts")
	opsFlag     = flag.String("ops", "insert,update", "write statements to measure: insert, update")
	snapMiB     = flag.Int("snapshot-mib", 64, "user data in the snapshotted region, MiB (0: skip the snapshot figure)")
	storeFlags  = flag.String("store-flags", "", "extra storenode flags, space-separated (e.g. --snap-max-write-bytes-per-sec=20971520)")
	snapPad     = flag.String("snapshot-pad", "x", "padding of the snapshotted rows: x (one repeated letter, compresses ~10x in SSTs) or random (random letters, barely compresses)")
	outDir      = flag.String("out", "bench/results", "where the markdown report goes")
	keepData    = flag.Bool("keep-data", false, "keep the clusters' data dirs and logs")
	note        = flag.String("note", "", "a line written into the report")
)

func main() {
	flag.Parse()
	log.SetFlags(log.Ltime)
	ctx := context.Background()
	var rep, body strings.Builder
	started, load := time.Now().UTC(), loadAvg()
	if *opsFlag != "" {
		if err := writeFigures(ctx, &body); err != nil {
			log.Fatalf("write figures: %v", err)
		}
	}
	if *snapMiB > 0 {
		if err := snapshotFigure(ctx, &body); err != nil {
			log.Fatalf("snapshot figure: %v", err)
		}
	}
	fmt.Fprintf(&rep, "# raftstore figures (issue 7), %s\n\n", started.Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&rep, "Measured by `go run ./bench/raftwrite %s` (tree at %s) on the binaries in %s, built at %s. ",
		strings.Join(os.Args[1:], " "), gitHead(), *binDir, buildHash)
	fmt.Fprintf(&rep, "Machine: %d cores shared with other work (load average at start %s, at the end %s), one host: every store fsyncs to the same disk.\n\n", numCPU(), load, loadAvg())
	if *note != "" {
		fmt.Fprintf(&rep, "%s\n\n", *note)
	}
	rep.WriteString(body.String())
	name := filepath.Join(*outDir, started.Format("2006-01-02-1504")+"-raftstore-figures.md")
	if err := os.WriteFile(name, []byte(rep.String()), 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Print(rep.String())
	log.Printf("wrote %s", name)
}

// cluster starts a fresh local cluster with stores stores, the last
// `late` of them not started.
func cluster(stores, late int, storeArgs ...string) (*localcluster.Cluster, func(), error) {
	dir, err := os.MkdirTemp("", "raftwrite-")
	if err != nil {
		return nil, nil, err
	}
	c, err := localcluster.New(localcluster.Config{
		BinDir: *binDir, DataDir: dir, Stores: stores, FreePorts: true, StoreArgs: append(storeArgs, strings.Fields(*storeFlags)...),
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	stop := func() {
		c.Stop(15 * time.Second)
		if *keepData {
			log.Printf("data and logs kept in %s", dir)
		} else {
			os.RemoveAll(dir)
		}
	}
	for _, p := range c.Procs() {
		if slices.Contains(c.Stores[stores-late:], p) {
			continue
		}
		if err := p.Start(); err != nil {
			stop()
			return nil, nil, err
		}
	}
	wctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.WaitReady(wctx, 0); err != nil {
		stop()
		return nil, nil, err
	}
	if buildHash == "?" {
		var st struct {
			GitHash string `json:"git_hash"`
		}
		if err := getJSON("http://"+storeStatusAddr(c.Stores[0])+"/status", &st); err == nil && st.GitHash != "" {
			buildHash = st.GitHash
		}
	}
	return c, stop, nil
}

// buildHash is the git hash the store binaries report on /status.
var buildHash = "?"

func storeStatusAddr(p *localcluster.Proc) string { return p.Flag("--status-addr") }

func getJSON(url string, out any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func openDB(c *localcluster.Cluster, db string, conns int) (*sql.DB, error) {
	d, err := sql.Open("mysql", c.DSN(0, db))
	if err != nil {
		return nil, err
	}
	d.SetMaxOpenConns(conns)
	d.SetMaxIdleConns(conns)
	return d, nil
}

// rowsPerWriter is how many rows each UPDATE writer owns (writers update
// disjoint rows: the figure is replication, not lock waits).
const rowsPerWriter = 200

func writeFigures(ctx context.Context, rep *strings.Builder) error {
	var writers []int
	for _, f := range strings.Split(*writersFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("bad --writers %q", *writersFlag)
		}
		writers = append(writers, n)
	}
	maxW := slices.Max(writers)
	c, stop, err := cluster(3, 0)
	if err != nil {
		return err
	}
	defer stop()
	admin, err := openDB(c, "", 1)
	if err != nil {
		return err
	}
	defer admin.Close()
	for _, q := range []string{
		"CREATE DATABASE bench",
		"CREATE TABLE bench.w (id BIGINT PRIMARY KEY, k BIGINT NOT NULL, pad VARCHAR(64) NOT NULL)",
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	db, err := openDB(c, "bench", maxW)
	if err != nil {
		return err
	}
	defer db.Close()
	// Rows for the UPDATE runs, maxW writers' worth, 100 per statement.
	for lo := 0; lo < maxW*rowsPerWriter; lo += 100 {
		var b strings.Builder
		b.WriteString("INSERT INTO w VALUES ")
		for i := lo; i < lo+100; i++ {
			if i > lo {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "(%d, 0, '%s')", i, pad(i))
		}
		if _, err := db.ExecContext(ctx, b.String()); err != nil {
			return fmt.Errorf("preload: %w", err)
		}
	}
	var nextID atomic.Int64
	nextID.Store(1 << 40)

	fmt.Fprintf(rep, "## Replicated writes\n\n")
	fmt.Fprintf(rep, "3 stores, 1 SQL node, one region (the table's rows, %d preloaded), default store settings (raft log fsynced before a write is acknowledged). "+
		"Each writer runs autocommit single-row statements back to back on its own connection for %v after %v of warm-up: "+
		"`INSERT INTO w VALUES (?, ?, ?)` with new ids, or `UPDATE w SET k = k + 1 WHERE id = ?` on rows of its own (no lock waits). "+
		"Latency is the client's, per statement (`database/sql` with go-sql-driver, text protocol). "+
		"Raft level: the stores' `strata_raftstore_propose_wait_seconds` over the run (from a write reaching the leader to its entry applied; "+
		"quantiles interpolated within the histogram's power-of-two buckets, so coarse), and fsyncs of the raft log per second with their mean width.\n\n",
		maxW*rowsPerWriter, *runTime, *warmup)
	fmt.Fprintf(rep, "| statement | writers | writes/s | p50 ms | p99 ms | p999 ms | max ms | errors | raft p50 ms | raft p99 ms | raft p999 ms | fsyncs/s (all stores) | entries per fsync | CPU (all processes, cores) |\n")
	fmt.Fprintf(rep, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, op := range strings.Split(*opsFlag, ",") {
		for _, n := range writers {
			r, err := writeRun(ctx, c, db, strings.TrimSpace(op), n, &nextID)
			if err != nil {
				return err
			}
			fmt.Fprintf(rep, "| %s | %d | %.0f | %.2f | %.2f | %.2f | %.2f | %d | %.2f | %.2f | %.2f | %.0f | %.2f | %.2f |\n",
				op, n, r.rate, ms(r.p50), ms(r.p99), ms(r.p999), ms(r.max), r.errs,
				r.raftP50*1000, r.raftP99*1000, r.raftP999*1000, r.fsyncRate, r.entriesPerFsync, r.cpuCores)
			log.Printf("%s x%d: %.0f writes/s p50 %.2f p99 %.2f p999 %.2f ms, %d errors (%s)", op, n, r.rate, ms(r.p50), ms(r.p99), ms(r.p999), r.errs, r.firstErr)
		}
	}
	fmt.Fprintf(rep, "\n")
	return nil
}

func pad(i int) string { return fmt.Sprintf("%064d", i)[:64] }

type writeResult struct {
	rate                       float64
	p50, p99, p999, max        time.Duration
	errs                       int
	firstErr                   string
	raftP50, raftP99, raftP999 float64
	fsyncRate, entriesPerFsync float64
	cpuCores                   float64
}

func writeRun(ctx context.Context, c *localcluster.Cluster, db *sql.DB, op string, n int, nextID *atomic.Int64) (writeResult, error) {
	var stmt string
	switch op {
	case "insert":
		stmt = "INSERT INTO w VALUES (?, ?, ?)"
	case "update":
		stmt = "UPDATE w SET k = k + 1 WHERE id = ?"
	default:
		return writeResult{}, fmt.Errorf("unknown op %q", op)
	}
	var measuring atomic.Bool
	stopAt := time.Now().Add(*warmup + *runTime)
	lat := make([][]time.Duration, n)
	errs := make([]int, n)
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := db.Conn(ctx)
			if err != nil {
				firstErr.CompareAndSwap(nil, err.Error())
				errs[w]++
				return
			}
			defer conn.Close()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for time.Now().Before(stopAt) {
				var args []any
				if op == "insert" {
					id := nextID.Add(1)
					args = []any{id, rng.Int64N(1000), pad(int(id))}
				} else {
					args = []any{w*rowsPerWriter + rng.IntN(rowsPerWriter)}
				}
				t0 := time.Now()
				_, err := conn.ExecContext(ctx, stmt, args...)
				d := time.Since(t0)
				if !measuring.Load() {
					continue
				}
				if err != nil {
					errs[w]++
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				lat[w] = append(lat[w], d)
			}
		}()
	}
	time.Sleep(*warmup) // the run's own clock: the warm-up is wall time by definition
	before := sampleAll(ctx, c)
	measuring.Store(true)
	start := time.Now()
	wg.Wait()
	elapsed := time.Since(start)
	after := sampleAll(ctx, c)

	var all []time.Duration
	r := writeResult{}
	for w := range n {
		all = append(all, lat[w]...)
		r.errs += errs[w]
	}
	if v := firstErr.Load(); v != nil {
		r.firstErr = v.(string)
	}
	if len(all) == 0 {
		return r, fmt.Errorf("%s x%d: no write succeeded (%s)", op, n, r.firstErr)
	}
	slices.Sort(all)
	q := func(p float64) time.Duration { return all[min(len(all)-1, int(math.Ceil(p*float64(len(all))))-1)] }
	r.rate = float64(len(all)) / elapsed.Seconds()
	r.p50, r.p99, r.p999, r.max = q(0.50), q(0.99), q(0.999), all[len(all)-1]
	prop := after.hist("strata_raftstore_propose_wait_seconds").minus(before.hist("strata_raftstore_propose_wait_seconds"))
	r.raftP50, r.raftP99, r.raftP999 = prop.quantile(0.5), prop.quantile(0.99), prop.quantile(0.999)
	fs := after.hist("strata_raftstore_raft_log_fsync_seconds").minus(before.hist("strata_raftstore_raft_log_fsync_seconds"))
	r.fsyncRate = fs.count / elapsed.Seconds()
	ent := after.hist("strata_raftstore_appended_entries_per_fsync").minus(before.hist("strata_raftstore_appended_entries_per_fsync"))
	if ent.count > 0 {
		r.entriesPerFsync = ent.sum / ent.count
	}
	r.cpuCores = (after.cpu - before.cpu) / elapsed.Seconds()
	return r, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// snapshotFigure fills one region with ~snapMiB of rows on 3 stores, then
// has PD add a replica on a fourth store, which a snapshot fills.
func snapshotFigure(ctx context.Context, rep *strings.Builder) error {
	c, stop, err := cluster(4, 1,
		// The split check runs (it computes the approximate size PD
		// reports) but never finds a region large enough to split.
		"--region-split-size", strconv.Itoa(1<<40), "--region-split-keys", strconv.Itoa(1<<40), "--split-check-interval", "2s")
	if err != nil {
		return err
	}
	defer stop()
	for _, s := range []string{"balance-region-scheduler", "balance-leader-scheduler"} {
		if err := pdAPI(c, "DELETE", "schedulers/"+s, nil, nil); err != nil {
			return err
		}
	}
	admin, err := openDB(c, "", 1)
	if err != nil {
		return err
	}
	for _, q := range []string{
		"CREATE DATABASE bench",
		"CREATE TABLE bench.big (id BIGINT PRIMARY KEY, pad VARCHAR(1024) NOT NULL)",
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	admin.Close()
	const rowBytes, perStmt, fillers = 1000, 100, 4
	rows := *snapMiB << 20 / rowBytes
	db, err := openDB(c, "bench", fillers)
	if err != nil {
		return err
	}
	defer db.Close()
	fillStart := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	var fillErr atomic.Value
	for range fillers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			filler := strings.Repeat("x", rowBytes-16)
			rng := rand.New(rand.NewPCG(rand.Uint64(), 0))
			for {
				lo := int(next.Add(perStmt)) - perStmt
				if lo >= rows || fillErr.Load() != nil {
					return
				}
				var b strings.Builder
				b.WriteString("INSERT INTO big VALUES ")
				for i := lo; i < min(lo+perStmt, rows); i++ {
					if i > lo {
						b.WriteString(",")
					}
					if *snapPad == "random" {
						filler = randomLetters(rng, rowBytes-16)
					}
					fmt.Fprintf(&b, "(%d, '%016d%s')", i, i, filler)
				}
				if _, err := db.ExecContext(ctx, b.String()); err != nil {
					fillErr.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if v := fillErr.Load(); v != nil {
		return fmt.Errorf("fill: %w", v.(error))
	}
	log.Printf("filled %d rows of %d bytes in %v", rows, rowBytes, time.Since(fillStart))

	var regions struct {
		Regions []struct {
			ID     uint64 `json:"id"`
			Leader *struct {
				StoreID uint64 `json:"store_id"`
			} `json:"leader"`
			Peers []struct {
				StoreID uint64 `json:"store_id"`
			} `json:"peers"`
		} `json:"regions"`
	}
	// One region holds everything (no split).
	if err := pdAPI(c, "GET", "regions", nil, &regions); err != nil {
		return err
	}
	if len(regions.Regions) != 1 || regions.Regions[0].Leader == nil {
		return fmt.Errorf("expected one led region, PD has %+v", regions.Regions)
	}
	region := regions.Regions[0]

	late := c.Stores[3]
	if err := late.Start(); err != nil {
		return err
	}
	stores, err := waitStores(c, 4)
	if err != nil {
		return err
	}
	procOf := func(storeID uint64) (*localcluster.Proc, string) {
		for _, st := range stores {
			if st.id == storeID {
				for _, p := range c.Stores {
					if slices.Contains(p.Args, st.addr) {
						return p, st.status
					}
				}
			}
		}
		return nil, ""
	}
	var newStore uint64
	for _, st := range stores {
		if !slices.ContainsFunc(region.Peers, func(p struct {
			StoreID uint64 `json:"store_id"`
		}) bool {
			return p.StoreID == st.id
		}) {
			newStore = st.id
		}
	}
	leaderProc, leaderStatus := procOf(region.Leader.StoreID)
	newProc, newStatus := procOf(newStore)
	if leaderProc == nil || newProc == nil {
		return fmt.Errorf("stores not found: leader %d new %d in %+v", region.Leader.StoreID, newStore, stores)
	}
	beforeL, beforeN := scrapeStore(ctx, leaderStatus), scrapeStore(ctx, newStatus)
	for _, p := range []*localcluster.Proc{leaderProc, newProc} {
		// 5 resets the peak RSS (VmHWM) to the current RSS.
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", p.Pid()), []byte("5"), 0o200); err != nil {
			log.Printf("reset peak RSS of %s: %v (peak is since start)", p.Name, err)
		}
	}
	rssL0, rssN0 := localcluster.StatusKB(leaderProc.Pid(), "VmRSS"), localcluster.StatusKB(newProc.Pid(), "VmRSS")
	opStart := time.Now()
	if err := pdAPI(c, "POST", "operators", map[string]any{"name": "add-peer", "region_id": region.ID, "store_id": newStore}, nil); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Minute)
	for pdAPI(c, "GET", fmt.Sprintf("operators/%d", region.ID), nil, nil) == nil { // exists: not finished
		if time.Now().After(deadline) {
			return fmt.Errorf("add-peer did not finish in 10 minutes")
		}
		time.Sleep(50 * time.Millisecond) // polling PD's API, not synchronising with the cluster
	}
	opTook := time.Since(opStart)
	var hist []struct {
		RegionID uint64 `json:"region_id"`
		Status   string `json:"status"`
		Desc     string `json:"desc"`
	}
	if err := pdAPI(c, "GET", "operators?history=1", nil, &hist); err != nil {
		return err
	}
	status := ""
	for _, h := range hist {
		if h.RegionID == region.ID && h.Desc == "admin-add-peer" {
			status = h.Status
		}
	}
	if status != "SUCCESS" {
		return fmt.Errorf("add-peer ended %q: %+v", status, hist)
	}
	afterL, afterN := scrapeStore(ctx, leaderStatus), scrapeStore(ctx, newStatus)
	peakL, peakN := localcluster.StatusKB(leaderProc.Pid(), "VmHWM"), localcluster.StatusKB(newProc.Pid(), "VmHWM")
	sent := grepLog(leaderProc.LogPath, "snapshot sent")
	appliedLine := grepLog(newProc.LogPath, "snapshot applied")

	gen := afterL.hist("strata_raftstore_snapshot_generate_seconds").minus(beforeL.hist("strata_raftstore_snapshot_generate_seconds"))
	send := afterL.hist("strata_raftstore_snapshot_send_seconds").minus(beforeL.hist("strata_raftstore_snapshot_send_seconds"))
	inst := afterN.hist("strata_raftstore_snapshot_install_seconds").minus(beforeN.hist("strata_raftstore_snapshot_install_seconds"))
	genBytes := afterL.counter(`strata_raftstore_snapshot_bytes_total{event="generated"}`) - beforeL.counter(`strata_raftstore_snapshot_bytes_total{event="generated"}`)
	sentBytes := afterL.counter(`strata_raftstore_snapshot_bytes_total{event="sent"}`) - beforeL.counter(`strata_raftstore_snapshot_bytes_total{event="sent"}`)
	recvBytes := afterN.counter(`strata_raftstore_snapshot_bytes_total{event="received"}`) - beforeN.counter(`strata_raftstore_snapshot_bytes_total{event="received"}`)
	applied := afterN.counter(`strata_raftstore_snapshots_total{event="applied"}`) - beforeN.counter(`strata_raftstore_snapshots_total{event="applied"}`)
	loopMax := afterN.hist("strata_raftstore_ready_loop_seconds").minus(beforeN.hist("strata_raftstore_ready_loop_seconds")).maxBound()
	iterMax := afterN.hist("strata_raftstore_loop_iteration_seconds").minus(beforeN.hist("strata_raftstore_loop_iteration_seconds")).maxBound()
	fsyncMax := afterN.hist("strata_raftstore_raft_log_fsync_seconds").minus(beforeN.hist("strata_raftstore_raft_log_fsync_seconds")).maxBound()
	// From the end of the send (leader's log) to the new store's "snapshot
	// applied" (after the synced commit): receive queueing, install and fsync.
	sentAt, appliedAt := logTime(sent), logTime(appliedLine)

	fmt.Fprintf(rep, "## Snapshot of a %d MiB region\n\n", *snapMiB)
	fmt.Fprintf(rep, "3 stores with `--region-split-size %d` (no split), one table filled with %d rows of %d bytes (%.1f MiB of row data, padding %q) by %d writers of %d-row INSERTs in %v. "+
		"Then a fourth store is started and PD's `add-peer` operator (POST /pd/api/v1/operators) adds a replica there: "+
		"the leader (store %d) generates a snapshot from a Pebble snapshot of the region, streams it on the Snapshot RPC, the new store (%d) installs it. "+
		"Times are the stores' histograms over this one snapshot (sum of the observations), sizes their byte counters, memory from /proc (peak RSS reset with clear_refs before the operator).\n\n",
		1<<40, rows, rowBytes, float64(rows*rowBytes)/(1<<20), *snapPad, fillers, perStmt, time.Since(fillStart).Round(time.Second),
		region.Leader.StoreID, newStore)
	fmt.Fprintf(rep, "| what | value |\n|---|---|\n")
	fmt.Fprintf(rep, "| snapshot data generated (leader) | %.1f MiB in %d snapshot(s) |\n", genBytes/(1<<20), int(gen.count))
	fmt.Fprintf(rep, "| sent / received | %.1f MiB / %.1f MiB |\n", sentBytes/(1<<20), recvBytes/(1<<20))
	fmt.Fprintf(rep, "| generate (snapshot_generate_seconds) | %.2f s |\n", gen.sum)
	fmt.Fprintf(rep, "| send (Snapshot RPC stream) | %.2f s (%.1f MiB/s) |\n", send.sum, sentBytes/(1<<20)/math.Max(send.sum, 1e-9))
	fmt.Fprintf(rep, "| install (snapshot_install_seconds: writing the data into the Ready's batch before snapshot ingestion; from that synced batch to the region marked normal after the ingest since) | %.2f s |\n", inst.sum)
	fmt.Fprintf(rep, "| snapshots applied on the new store | %.0f |\n", applied)
	if !sentAt.IsZero() && !appliedAt.IsZero() {
		fmt.Fprintf(rep, "| send finished → applied on the new store (logs: install + synced commit) | %.2f s |\n", appliedAt.Sub(sentAt).Seconds())
	}
	fmt.Fprintf(rep, "| new store's longest Ready loop iteration (with a Ready) / any loop iteration / raft fsync during the operator (histogram bucket bound) | ≤ %.3f s / ≤ %.3f s / ≤ %.3f s |\n", loopMax, iterMax, fsyncMax)
	fmt.Fprintf(rep, "| add-peer operator, POST to SUCCESS (learner added, snapshot, promoted) | %.2f s |\n", opTook.Seconds())
	fmt.Fprintf(rep, "| leader store RSS before → peak during | %s → %s |\n", mib(rssL0), mib(peakL))
	fmt.Fprintf(rep, "| new store RSS before → peak during | %s → %s |\n", mib(rssN0), mib(peakN))
	if sent != "" {
		fmt.Fprintf(rep, "\nLeader's log: `%s`\n", strings.TrimSpace(sent))
	}
	if appliedLine != "" {
		fmt.Fprintf(rep, "\nNew store's log: `%s`\n", strings.TrimSpace(appliedLine))
	}
	fmt.Fprintf(rep, "\n")
	log.Printf("snapshot: %.1f MiB generated in %.2fs, sent in %.2fs, installed in %.2fs; operator %v; RSS leader %s->%s new %s->%s",
		genBytes/(1<<20), gen.sum, send.sum, inst.sum, opTook, mib(rssL0), mib(peakL), mib(rssN0), mib(peakN))
	return nil
}

func randomLetters(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(rng.IntN(26))
	}
	return string(b)
}

func mib(kb int64) string {
	if kb < 0 {
		return "?"
	}
	return fmt.Sprintf("%.0f MiB", float64(kb)/1024)
}

// grepLog returns the last line of path containing s.
func grepLog(path, s string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var last string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			last = sc.Text()
		}
	}
	return last
}

type storeInfo struct {
	id           uint64
	addr, status string
}

func waitStores(c *localcluster.Cluster, n int) ([]storeInfo, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var resp struct {
			Stores []struct {
				Store struct {
					ID            uint64 `json:"id"`
					Address       string `json:"address"`
					StatusAddress string `json:"status_address"`
					StateName     string `json:"state_name"`
				} `json:"store"`
			} `json:"stores"`
		}
		if err := pdAPI(c, "GET", "stores", nil, &resp); err == nil {
			var up []storeInfo
			for _, s := range resp.Stores {
				if s.Store.StateName == "Up" {
					up = append(up, storeInfo{s.Store.ID, s.Store.Address, s.Store.StatusAddress})
				}
			}
			if len(up) >= n {
				return up, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("fewer than %d stores up after 2 minutes", n)
		}
		time.Sleep(200 * time.Millisecond) // polling PD's API
	}
}

func pdAPI(c *localcluster.Cluster, method, path string, body, out any) error {
	return c.PDAPI(method, path, body, out)
}

// metrics is one scrape: plain series by "name{labels}" (labels as
// exposed) and histograms by name, summed over their other labels.
type metrics struct {
	series map[string]float64
	hists  map[string]*hist
	cpu    float64 // CPU seconds of the scraped processes
}

type hist struct {
	les        []float64 // ascending upper bounds, +Inf last
	cum        []float64 // cumulative counts per bound
	sum, count float64
}

func (m metrics) counter(series string) float64 { return m.series[series] }

func (m metrics) hist(name string) *hist {
	if h := m.hists[name]; h != nil {
		return h
	}
	return &hist{}
}

func (h *hist) minus(o *hist) *hist {
	out := &hist{les: h.les, sum: h.sum - o.sum, count: h.count - o.count, cum: make([]float64, len(h.cum))}
	for i := range h.cum {
		out.cum[i] = h.cum[i]
		if i < len(o.cum) {
			out.cum[i] -= o.cum[i]
		}
	}
	return out
}

// maxBound is the upper bound of the highest bucket holding an
// observation (+Inf as such).
func (h *hist) maxBound() float64 {
	for i, c := range h.cum {
		if h.count > 0 && c >= h.count {
			return h.les[i]
		}
	}
	return math.NaN()
}

// logTime is the time= field of a slog text line (zero if absent).
func logTime(line string) time.Time {
	v, ok := strings.CutPrefix(line, "time=")
	if !ok {
		return time.Time{}
	}
	v, _, _ = strings.Cut(v, " ")
	t, _ := time.Parse(time.RFC3339Nano, v)
	return t
}

// quantile interpolates linearly within the bucket holding rank q.
func (h *hist) quantile(q float64) float64 {
	if h.count <= 0 || len(h.cum) == 0 {
		return math.NaN()
	}
	rank := q * h.count
	prevLe, prevCum := 0.0, 0.0
	for i, c := range h.cum {
		if c >= rank {
			le := h.les[i]
			if math.IsInf(le, 1) {
				return prevLe
			}
			if c == prevCum {
				return le
			}
			return prevLe + (le-prevLe)*(rank-prevCum)/(c-prevCum)
		}
		prevLe, prevCum = h.les[i], c
	}
	return prevLe
}

// sampleAll scrapes every store and sums their metrics; cpu is that of
// every process of the cluster.
func sampleAll(ctx context.Context, c *localcluster.Cluster) metrics {
	total := metrics{series: map[string]float64{}, hists: map[string]*hist{}}
	var resp struct {
		Stores []struct {
			Store struct {
				StatusAddress string `json:"status_address"`
			} `json:"store"`
		} `json:"stores"`
	}
	if err := pdAPI(c, "GET", "stores", nil, &resp); err != nil {
		log.Printf("stores: %v", err)
	}
	for _, s := range resp.Stores {
		m := scrapeStore(ctx, s.Store.StatusAddress)
		for k, v := range m.series {
			total.series[k] += v
		}
		for k, h := range m.hists {
			t := total.hists[k]
			if t == nil {
				t = &hist{les: h.les, cum: make([]float64, len(h.cum))}
				total.hists[k] = t
			}
			for i := range h.cum {
				if i < len(t.cum) {
					t.cum[i] += h.cum[i]
				}
			}
			t.sum += h.sum
			t.count += h.count
		}
	}
	for _, p := range c.Procs() {
		if p.Running() {
			total.cpu += p.CPUSeconds()
		}
	}
	return total
}

func scrapeStore(ctx context.Context, statusAddr string) metrics {
	m := metrics{series: map[string]float64{}, hists: map[string]*hist{}}
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+statusAddr+"/metrics", nil)
	if err != nil {
		return m
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Printf("scrape %s: %v", statusAddr, err)
		return m
	}
	defer resp.Body.Close()
	mfs, err := promtext.Parse(resp.Body)
	if err != nil {
		log.Printf("scrape %s: %v", statusAddr, err)
		return m
	}
	m.series = mfs.Series(true)
	for name, mf := range mfs {
		if h := mfs.Histogram(name); h != nil && mf != nil {
			m.hists[name] = &hist{les: h.Les, cum: h.Cum, sum: h.Sum, count: h.Count}
		}
	}
	return m
}

func numCPU() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return max(1, strings.Count(string(b), "processor\t:"))
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:3], " ")
}

func gitHead() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}
