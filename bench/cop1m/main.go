// Command cop1m measures coprocessor pushdown on a large table (issue 11):
// it starts a fresh local cluster (1 PD, --stores stores, 1 SQL node) from
// the binaries of `make build`, loads sbtest1 with `sysbench oltp_common
// prepare --table_size=--rows` (timed), splits it into --regions regions
// with SPLIT TABLE, and runs each query with strata_allow_pushdown on and
// off. Per run it records the wall time, a checksum of the result, the
// coprocessor RPCs the SQL node sent (strata_kvclient_rpc_duration_seconds
// count), the SQL node's peak RSS (VmHWM, reset with clear_refs before the
// query) and its peak Go heap in use (/metrics sampled every 20 ms), and
// the EXPLAIN of the pushed-down plan. The report goes to
// bench/results/<stamp>-cop-1m.md.
//
//	make build
//	go run ./bench/cop1m --rows 1000000 --regions 16
package main

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/stratadb/strata/internal/promtext"
	"github.com/stratadb/strata/localcluster"
)

var queries = []string{
	"SELECT COUNT(*), SUM(k) FROM sbtest1",
	"SELECT COUNT(*), SUM(k) FROM sbtest1 WHERE pad LIKE '%x%'",
	"SELECT id, c FROM sbtest1 ORDER BY c LIMIT 10",
	"SELECT k % 16, COUNT(*), SUM(id), MIN(c) FROM sbtest1 GROUP BY k % 16",
	"SELECT id, k FROM sbtest1 WHERE pad LIKE '%12345%'",
	"SELECT id, k FROM sbtest1",
}

func main() {
	binDir := flag.String("bin-dir", "bin", "directory with pd, storenode, sqlnode")
	results := flag.String("results", "bench/results", "where the report goes")
	rows := flag.Int("rows", 1000000, "rows in sbtest1")
	regions := flag.Int("regions", 16, "regions to split sbtest1 into")
	stores := flag.Int("stores", 3, "stores")
	note := flag.String("note", "", "added to the report")
	keep := flag.Bool("keep-data", false, "keep the cluster's data dir")
	flag.StringVar(&loadWith, "load", "loaddata", "how sbtest1 is filled: loaddata (LOAD DATA LOCAL of sysbench-like CSV chunks, 2 loaders) or sysbench (sysbench prepare)")
	flag.Parse()
	if err := run(*binDir, *results, *rows, *regions, *stores, *note, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "cop1m:", err)
		os.Exit(1)
	}
}

var loadWith string

// loadChunk is the rows one LOAD DATA statement (one transaction) carries.
const loadChunk = 20000

// loadData creates sbtest1 as sysbench does and fills it with rows shaped
// as sysbench's (k uniform in 1..rows, c and pad groups of 11 random
// digits) through LOAD DATA LOCAL INFILE, loadChunk rows per statement, two
// statements at a time.
func loadData(dsn, dir string, rows int) error {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE sbtest1 (id INTEGER NOT NULL AUTO_INCREMENT, k INTEGER DEFAULT '0' NOT NULL, " +
		"c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id))"); err != nil {
		return err
	}
	logf("loading %d rows with LOAD DATA LOCAL, %d rows per statement", rows, loadChunk)
	next := make(chan int)
	errs := make(chan error, 2)
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 11))
			path := filepath.Join(dir, fmt.Sprintf("load-%d.csv", w))
			for lo := range next {
				var b strings.Builder
				for id := lo; id < min(lo+loadChunk, rows+1); id++ {
					fmt.Fprintf(&b, "%d,%d,%s,%s\n", id, 1+rng.IntN(rows), digits(rng, 10), digits(rng, 5))
				}
				err := os.WriteFile(path, []byte(b.String()), 0o600)
				if err == nil {
					_, err = db.Exec("LOAD DATA LOCAL INFILE '" + path + "' INTO TABLE sbtest1 FIELDS TERMINATED BY ','")
				}
				if err != nil {
					errs <- fmt.Errorf("load rows from %d: %w", lo, err)
					for range next { // let the producer finish
					}
					return
				}
			}
			_ = os.Remove(path)
		})
	}
	go func() {
		defer close(next)
		for lo := 1; lo <= rows; lo += loadChunk {
			next <- lo
			if lo/loadChunk%10 == 0 {
				logf("  %d rows sent", lo-1)
			}
		}
	}()
	wg.Wait()
	close(errs)
	return <-errs
}

// digits is n groups of 11 random digits joined by '-' (sysbench's c / pad).
func digits(rng *rand.Rand, n int) string {
	b := make([]byte, 0, 12*n)
	for g := range n {
		if g > 0 {
			b = append(b, '-')
		}
		for range 11 {
			b = append(b, byte('0'+rng.IntN(10)))
		}
	}
	return string(b)
}

type result struct {
	q, mode       string
	dur           time.Duration
	sum           string
	nrows         int
	rpcs          float64
	timeouts      float64 // RPC attempts that timed out (and were retried)
	peakRSS, heap int64   // KiB, bytes
	err           error
}

func run(binDir, results string, rows, regions, stores int, note string, keep bool) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "strata-cop1m-")
	if err != nil {
		return err
	}
	if !keep {
		defer os.RemoveAll(dir)
	}
	c, err := localcluster.New(localcluster.Config{BinDir: binDir, DataDir: dir, Stores: stores, SQLNodes: 1, FreePorts: true})
	if err != nil {
		return err
	}
	if err := c.Start(); err != nil {
		return err
	}
	defer c.Stop(15 * time.Second)
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := c.WaitReady(wctx, 0); err != nil {
		return err
	}
	root, err := sql.Open("mysql", c.DSN(0, ""))
	if err != nil {
		return err
	}
	defer root.Close()
	if _, err := root.Exec("CREATE DATABASE sbtest"); err != nil {
		return err
	}
	host, port, _ := strings.Cut(c.SQLAddrs[0], ":")
	loadStart := time.Now()
	if loadWith == "sysbench" {
		logf("loading %d rows with sysbench prepare", rows)
		cmd := exec.Command("sysbench", "oltp_read_only", "--mysql-host="+host, "--mysql-port="+port, "--mysql-user=root",
			"--mysql-db=sbtest", "--tables=1", "--table_size="+strconv.Itoa(rows), "--create_secondary=off", "--db-ps-mode=disable", "prepare")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("sysbench prepare: %v: %s", err, out)
		}
	} else if err := loadData(c.DSN(0, "sbtest")+"&allowAllFiles=true", dir, rows); err != nil {
		return err
	}
	load := time.Since(loadStart)
	logf("loaded in %s", load)
	splitStart := time.Now()
	var total int
	var ratio float64
	if err := root.QueryRow(fmt.Sprintf("SPLIT TABLE sbtest.sbtest1 BETWEEN (0) AND (%d) REGIONS %d", rows+1, regions)).Scan(&total, &ratio); err != nil {
		return fmt.Errorf("split: %w", err)
	}
	split := time.Since(splitStart)
	logf("split into %d more regions in %s", total, split)

	sqlProc := c.SQL[0]
	status := statusAddr(sqlProc.Args)
	dsn := func(on int) string { return c.DSN(0, "sbtest") + fmt.Sprintf("&strata_allow_pushdown=%d", on) }
	dbs := map[string]*sql.DB{}
	for mode, on := range map[string]int{"on": 1, "off": 0} {
		db, err := sql.Open("mysql", dsn(on))
		if err != nil {
			return err
		}
		db.SetMaxOpenConns(1)
		defer db.Close()
		dbs[mode] = db
	}
	var res []result
	explains := map[string]string{}
	stamp := time.Now().UTC().Format("2006-01-02-1504")
	for _, q := range queries {
		explains[q] = explain(dbs["on"], q)
		for _, mode := range []string{"on", "off", "on"} { // the first "on" warms the caches
			r := measure(dbs[mode], sqlProc.Pid(), status, q)
			r.mode = mode
			logf("%-4s %8s rows=%d rpcs=%.0f timeouts=%.0f peakRSS=%dMiB heap=%dMiB %s %v", mode, r.dur.Round(time.Millisecond), r.nrows, r.rpcs, r.timeouts, r.peakRSS>>10, r.heap>>20, q, r.err)
			res = append(res, r)
		}
		res = append(res[:len(res)-3], res[len(res)-2:]...) // drop the warm-up
		// The report so far, rewritten after each query: a run that dies
		// (OOM killer, a loaded machine) leaves what it measured.
		if err := report(results, stamp, rows, regions, stores, total, load, split, note, res, explains, sqlProc.Pid()); err != nil {
			return err
		}
	}
	return nil
}

func measure(db *sql.DB, pid int, status, q string) result {
	r := result{q: q}
	// 5 resets the peak RSS (VmHWM) to the current RSS.
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0o200)
	before := metric(status, "strata_kvclient_rpc_duration_seconds_count", `type="coprocessor"`)
	timeoutsBefore := metric(status, "strata_kvclient_backoff_total", `reason="rpc_timeout"`)
	var peakHeap atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			if h := int64(metric(status, "go_memstats_heap_inuse_bytes", "")); h > peakHeap.Load() {
				peakHeap.Store(h)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	})
	start := time.Now()
	h := sha256.New()
	rows, err := db.Query(q)
	if err == nil {
		cols, _ := rows.Columns()
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err = rows.Scan(ptrs...); err != nil {
				break
			}
			for _, v := range vals {
				h.Write(v)
				h.Write([]byte{0})
			}
			r.nrows++
		}
		if err == nil {
			err = rows.Err()
		}
		rows.Close()
	}
	r.dur = time.Since(start)
	close(stop)
	wg.Wait()
	r.err = err
	r.sum = fmt.Sprintf("%x", h.Sum(nil))[:12]
	r.rpcs = metric(status, "strata_kvclient_rpc_duration_seconds_count", `type="coprocessor"`) - before
	r.timeouts = metric(status, "strata_kvclient_backoff_total", `reason="rpc_timeout"`) - timeoutsBefore
	r.peakRSS = localcluster.StatusKB(pid, "VmHWM")
	r.heap = peakHeap.Load()
	return r
}

func explain(db *sql.DB, q string) string {
	rows, err := db.Query("EXPLAIN FORMAT='brief' " + q)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id, est, task, obj, info sql.NullString
		if rows.Scan(&id, &est, &task, &obj, &info) == nil {
			fmt.Fprintf(&b, "%s | %s | %s | %s | %s\n", id.String, est.String, task.String, obj.String, info.String)
		}
	}
	return b.String()
}

// metric sums the samples of name whose labels include match (`k="v"`, or
// "" for all); -1 if /metrics cannot be read.
func metric(status, name, match string) float64 {
	mfs, err := promtext.Fetch(context.Background(), status)
	if err != nil {
		return -1
	}
	var labels map[string]string
	if k, v, ok := strings.Cut(match, "="); ok {
		labels = map[string]string{k: strings.Trim(v, `"`)}
	}
	return mfs.Sum(name, labels)
}

func statusAddr(args []string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--status-addr="); ok {
			return v
		}
		if a == "--status-addr" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func report(dir, stamp string, rows, regions, stores, split int, load, splitDur time.Duration, note string, res []result, explains map[string]string, pid int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Coprocessor pushdown on %d rows (bench/cop1m)\n\n", rows)
	fmt.Fprintf(&b, "1 PD, %d stores, 1 SQL node on loopback (2 shared cores). sbtest1 (sysbench's schema and value shapes, no secondary index) loaded with %d rows by "+loadWith+" in %s (%.0f rows/s); `SPLIT TABLE ... REGIONS %d` added %d regions in %s.\n\n",
		stores, rows, load.Round(time.Second), float64(rows)/load.Seconds(), regions, split, splitDur.Round(time.Millisecond))
	b.WriteString("Per query, pushdown on (`strata_allow_pushdown=1`) and off, after one unmeasured run with pushdown on. cop RPCs: coprocessor RPCs the SQL node sent for the statement (a store-batched RPC counts once); timeouts: RPC attempts that timed out and were retried. Peak RSS: the SQL node's VmHWM, reset before the query (clear_refs); peak heap: go_memstats_heap_inuse_bytes sampled every 20 ms. Same checksum = same rows in the same order.\n\n")
	if note != "" {
		b.WriteString(note + "\n\n")
	}
	b.WriteString("| query | pushdown | time | rows | checksum | cop RPCs | timeouts | SQL peak RSS MiB | SQL peak heap MiB |\n|---|---|---:|---:|---|---:|---:|---:|---:|\n")
	for _, r := range res {
		sum := r.sum
		if r.err != nil {
			sum = "ERROR " + r.err.Error()
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %d | %s | %.0f | %.0f | %.1f | %.1f |\n", r.q, r.mode, r.dur.Round(time.Millisecond), r.nrows, sum, r.rpcs, r.timeouts, float64(r.peakRSS)/1024, float64(r.heap)/(1<<20))
	}
	b.WriteString("\n## Plans with pushdown on\n\n")
	for _, q := range queries {
		if e, ok := explains[q]; ok {
			fmt.Fprintf(&b, "`%s`\n\n```\n%s```\n\n", q, e)
		}
	}
	path := filepath.Join(dir, stamp+"-cop-1m.md")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return err
	}
	logf("wrote %s", path)
	return nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}
