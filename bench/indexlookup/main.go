// Command indexlookup measures index lookup pushdown: on a fresh local
// cluster it loads an sbtest-like table (id PK, k with index k_1, c, pad),
// splits it into 8 row regions and 8 index regions, optionally makes it a
// PD affinity group (every region led from one store), and then runs the
// same index-lookup workloads with strata_index_lookup_pushdown ON and OFF
// in alternating phases of one run: sysbench's select_random_points (k IN
// ten random values) and `SELECT c FROM sbtest1 WHERE k BETWEEN ? AND ?`.
// It writes QPS, average / p50 / p99 latency and the local share of the
// lookups (strata_distsql_index_lookup_rows_total) to
// bench/results/YYYY-MM-DD-HHMM-index-lookup-pushdown.md.
//
//	make build && go run ./bench/indexlookup --time 20s --rounds 2
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/stratadb/strata/internal/promtext"
	"github.com/stratadb/strata/localcluster"
)

var (
	binDir   = flag.String("bin-dir", "bin", "directory with pd, storenode and sqlnode")
	stores   = flag.Int("stores", 3, "store nodes")
	rows     = flag.Int("rows", 100000, "rows in sbtest1 (k is uniform in [1, rows])")
	threads  = flag.Int("threads", 8, "client connections per phase")
	phase    = flag.Duration("time", 20*time.Second, "length of each measured phase")
	warmup   = flag.Duration("warmup", 5*time.Second, "unmeasured warm-up before the phases")
	rounds   = flag.Int("rounds", 2, "rounds; each runs every workload with pushdown on and off (order alternating)")
	rangeLen = flag.Int("range", 100, "width of the k BETWEEN range")
	affinity = flag.Bool("affinity", true, "make sbtest1 a PD affinity group (its regions led from one store)")
	outDir   = flag.String("out", "bench/results", "where the markdown report goes")
	note     = flag.String("note", "", "added to the report")
)

type workload struct {
	name string
	gen  func(rng *rand.Rand) (string, []any)
}

func main() {
	flag.Parse()
	log.SetFlags(log.Ltime)
	bin, err := filepath.Abs(*binDir)
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "strata-indexlookup-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	c, err := localcluster.New(localcluster.Config{BinDir: bin, DataDir: dir, Stores: *stores, SQLNodes: 1, FreePorts: true})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Stop(15 * time.Second)
	if err := c.Start(); err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	err = c.WaitReady(ctx, 0)
	cancel()
	if err != nil {
		log.Fatal(err)
	}
	if err := run(c); err != nil {
		c.Stop(15 * time.Second)
		log.Fatal(err)
	}
}

func open(c *localcluster.Cluster, params string) (*sql.DB, error) {
	db, err := sql.Open("mysql", c.DSN(0, "sbtest")+params)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(*threads)
	db.SetMaxIdleConns(*threads)
	return db, nil
}

func run(c *localcluster.Cluster) error {
	root, err := sql.Open("mysql", c.DSN(0, ""))
	if err != nil {
		return err
	}
	defer root.Close()
	if _, err := root.Exec("CREATE DATABASE sbtest"); err != nil {
		return err
	}
	on, err := open(c, "&strata_index_lookup_pushdown=1")
	if err != nil {
		return err
	}
	defer on.Close()
	off, err := open(c, "&strata_index_lookup_pushdown=0")
	if err != nil {
		return err
	}
	defer off.Close()
	log.Printf("loading %d rows", *rows)
	if err := load(on); err != nil {
		return err
	}
	tid, err := tableID(on)
	if err != nil {
		return err
	}
	if *affinity {
		if err := c.PDAPI("POST", "affinity-groups", map[string]any{"table_ids": []int64{tid}}, nil); err != nil {
			return err
		}
		if err := waitCoLed(c, tid); err != nil {
			return err
		}
	}
	wls := []workload{
		{"select_random_points (k IN 10 values)", func(rng *rand.Rand) (string, []any) {
			args := make([]any, 10)
			for i := range args {
				args[i] = 1 + rng.IntN(*rows)
			}
			return "SELECT id, k, c, pad FROM sbtest1 WHERE k IN (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", args
		}},
		{fmt.Sprintf("SELECT c ... WHERE k BETWEEN ? AND ?+%d", *rangeLen-1), func(rng *rand.Rand) (string, []any) {
			lo := 1 + rng.IntN(*rows)
			return "SELECT c FROM sbtest1 WHERE k BETWEEN ? AND ?", []any{lo, lo + *rangeLen - 1}
		}},
	}
	log.Printf("warm-up %v", *warmup)
	for _, wl := range wls {
		measure(on, wl, *warmup/4)
		measure(off, wl, *warmup/4)
	}
	type key struct {
		wl int
		on bool
	}
	results := map[key]*phaseResult{}
	for r := range *rounds {
		for w, wl := range wls {
			modes := []bool{true, false}
			if r%2 == 1 {
				modes = []bool{false, true}
			}
			for _, m := range modes {
				db := off
				if m {
					db = on
				}
				l0, r0 := lookupMetrics(c)
				res := measure(db, wl, *phase)
				l1, r1 := lookupMetrics(c)
				res.local, res.remote = l1-l0, r1-r0
				log.Printf("round %d %s pushdown=%v: %.0f qps, p99 %.2f ms, errors %d, lookups local %.0f remote %.0f",
					r+1, wl.name, m, res.qps(), ms(res.pct(0.99)), res.errors, res.local, res.remote)
				k := key{w, m}
				if prev := results[k]; prev != nil {
					prev.merge(res)
				} else {
					results[k] = res
				}
			}
		}
	}

	now := time.Now().UTC()
	var sb strings.Builder
	fmt.Fprintf(&sb, "# Index lookup pushdown: on vs off (%s)\n\n", now.Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&sb, "`go run ./bench/indexlookup %s`\n\n", strings.Join(os.Args[1:], " "))
	fmt.Fprintf(&sb, "- cluster: 1 PD, %d stores, 1 SQL node (localcluster, loopback), %d cores (GOMAXPROCS), shared machine\n", *stores, runtime.GOMAXPROCS(0))
	fmt.Fprintf(&sb, "- sbtest1: %d rows, k uniform in [1, %d], split into 8 row regions and 8 index regions; affinity group: %v\n", *rows, *rows, *affinity)
	fmt.Fprintf(&sb, "- %d threads, %d rounds of %v per workload and mode, on/off order alternating per round, %v warm-up\n", *threads, *rounds, *phase, *warmup)
	fmt.Fprintf(&sb, "- off = strata_index_lookup_pushdown=0 (index scan RPC, then a BatchGet RPC per chunk); on = the rows come back with the index scan where the index region's store leads the row's region\n")
	if *note != "" {
		fmt.Fprintf(&sb, "- %s\n", *note)
	}
	sb.WriteString("\n| workload | pushdown | queries | QPS | avg ms | p50 ms | p99 ms | errors | lookups local |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for w, wl := range wls {
		for _, m := range []bool{true, false} {
			r := results[key{w, m}]
			loc := "–"
			if r.local+r.remote > 0 {
				loc = fmt.Sprintf("%.1f %%", 100*r.local/(r.local+r.remote))
			}
			mode := "off"
			if m {
				mode = "on"
			}
			fmt.Fprintf(&sb, "| %s | %s | %d | %.0f | %.2f | %.2f | %.2f | %d | %s |\n", wl.name, mode, len(r.lat), r.qps(), ms(r.avg()), ms(r.pct(0.5)), ms(r.pct(0.99)), r.errors, loc)
		}
	}
	for w, wl := range wls {
		a, b := results[key{w, true}], results[key{w, false}]
		fmt.Fprintf(&sb, "\n%s: QPS on/off %.2fx, p99 on/off %.2fx", wl.name, a.qps()/b.qps(), float64(a.pct(0.99))/float64(b.pct(0.99)))
	}
	sb.WriteString("\n")
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		return err
	}
	name := filepath.Join(*outDir, now.Format("2006-01-02-1504")+"-index-lookup-pushdown.md")
	if err := os.WriteFile(name, []byte(sb.String()), 0o644); err != nil {
		return err
	}
	fmt.Print(sb.String())
	log.Printf("wrote %s", name)
	return nil
}

func load(db *sql.DB) error {
	if _, err := db.Exec("CREATE TABLE sbtest1 (id INT PRIMARY KEY, k INT NOT NULL DEFAULT 0, c CHAR(120) NOT NULL DEFAULT '', " +
		"pad CHAR(60) NOT NULL DEFAULT '', KEY k_1 (k))"); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('0' + rng.IntN(10))
		}
		return string(b)
	}
	const batch = 1000
	for lo := 1; lo <= *rows; lo += batch {
		var sb strings.Builder
		sb.WriteString("INSERT INTO sbtest1 VALUES ")
		for i := lo; i < lo+batch && i <= *rows; i++ {
			if i > lo {
				sb.WriteString(", ")
			}
			fmt.Fprintf(&sb, "(%d, %d, '%s', '%s')", i, 1+rng.IntN(*rows), digits(119), digits(59))
		}
		if _, err := db.Exec(sb.String()); err != nil {
			return err
		}
	}
	if _, err := db.Exec(fmt.Sprintf("SPLIT TABLE sbtest1 BETWEEN (0) AND (%d) REGIONS 8", *rows+1)); err != nil {
		return err
	}
	_, err := db.Exec(fmt.Sprintf("SPLIT TABLE sbtest1 INDEX k_1 BETWEEN (0) AND (%d) REGIONS 8", *rows+1))
	return err
}

type phaseResult struct {
	lat           []time.Duration
	elapsed       time.Duration
	errors        int
	local, remote float64
}

func (r *phaseResult) qps() float64 { return float64(len(r.lat)) / r.elapsed.Seconds() }
func (r *phaseResult) merge(o *phaseResult) {
	r.lat = append(r.lat, o.lat...)
	r.elapsed += o.elapsed
	r.errors += o.errors
	r.local += o.local
	r.remote += o.remote
}
func (r *phaseResult) pct(p float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	s := slices.Clone(r.lat)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}
func (r *phaseResult) avg() time.Duration {
	var t time.Duration
	for _, l := range r.lat {
		t += l
	}
	return t / time.Duration(max(1, len(r.lat)))
}
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// measure runs wl on db from *threads goroutines for d.
func measure(db *sql.DB, wl workload, d time.Duration) *phaseResult {
	var mu sync.Mutex
	res := &phaseResult{}
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for th := range *threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(th), uint64(start.UnixNano())))
			var lat []time.Duration
			errs := 0
			for time.Now().Before(deadline) {
				q, args := wl.gen(rng)
				t0 := time.Now()
				rs, err := db.Query(q, args...)
				if err == nil {
					for rs.Next() {
					}
					err = rs.Err()
					rs.Close()
				}
				if err != nil {
					errs++
					continue
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			res.lat = append(res.lat, lat...)
			res.errors += errs
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	return res
}

func tableID(db *sql.DB) (int64, error) {
	rs, err := db.Query("SHOW TABLE sbtest1 REGIONS")
	if err != nil {
		return 0, err
	}
	defer rs.Close()
	cols, err := rs.Columns()
	if err != nil {
		return 0, err
	}
	for rs.Next() {
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			return 0, err
		}
		var id int64
		if _, err := fmt.Sscanf(string(vals[1]), "t_%d_", &id); err == nil {
			return id, nil
		}
	}
	return 0, fmt.Errorf("no region names table sbtest1")
}

func waitCoLed(c *localcluster.Cluster, tid int64) error {
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		var g struct {
			Phase       string `json:"phase"`
			CoLed       bool   `json:"co_led"`
			RegionCount int    `json:"region_count"`
		}
		if err := c.PDAPI("GET", fmt.Sprintf("affinity-groups/%d", tid), nil, &g); err == nil && g.Phase == "stable" && g.CoLed && g.RegionCount > 0 {
			log.Printf("affinity group of table %d stable: %d regions co-led", tid, g.RegionCount)
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("affinity group of table %d not stable after 3 minutes", tid)
}

// lookupMetrics reads the SQL node's index lookup row counters.
func lookupMetrics(c *localcluster.Cluster) (local, remote float64) {
	var addr string
	for i, a := range c.SQL[0].Args {
		if a == "--status-addr" {
			addr = c.SQL[0].Args[i+1]
		}
	}
	mfs, err := promtext.Fetch(context.Background(), addr)
	if err != nil {
		return 0, 0
	}
	local = mfs.Sum("strata_distsql_index_lookup_rows_total", map[string]string{"path": "local"})
	remote = mfs.Sum("strata_distsql_index_lookup_rows_total", map[string]string{"path": "remote"})
	return local, remote
}
