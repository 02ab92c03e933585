package main

// The Go driver: an alternative load generator for two sysbench workloads,
// oltp_point_select and oltp_update_non_index, that records the latency of
// every event in an HDR histogram (github.com/HdrHistogram/hdrhistogram-go,
// 3 significant digits: ≤ 0.1 % relative error, against sysbench's 1.8 %
// wide buckets). It runs as a child process of the driver (this same binary
// started with --go-client as its first argument, so its CPU is accounted
// like sysbench's), takes sysbench's command-line options, sends the same
// prepared statements over go-sql-driver/mysql on one connection per thread,
// and prints its report in sysbench's text format so that ParseOutput, the
// raw files, the progress lines, the JSON, the reports and the plots work
// unchanged. The data is created by `sysbench prepare`.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/go-sql-driver/mysql"
)

// goClientFlag, as the first argument, runs the binary as the Go driver's
// load generator instead of the benchmark driver.
const goClientFlag = "--go-client"

// goDriverScripts are the sysbench scripts the Go driver implements.
var goDriverScripts = []string{"oltp_point_select", "oltp_update_non_index"}

// driverOf tells which load generator a workload spec asks for
// ("oltp_point_select:driver=go") and returns the spec's sysbench options
// without the driver option.
func driverOf(opts []string) (driver string, rest []string) {
	driver = "sysbench"
	for _, o := range opts {
		if v, ok := strings.CutPrefix(o, "--driver="); ok {
			driver = v
			continue
		}
		rest = append(rest, o)
	}
	return driver, rest
}

// histLowestUs..histHighestUs is the range of the HDR histograms, in µs:
// 1 µs to 10 min (longer events are recorded as 10 min).
const (
	histLowestUs  = 1
	histHighestUs = 600_000_000
	histSigFigs   = 3
)

func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(histLowestUs, histHighestUs, histSigFigs)
}

// recordUs records one latency, clamped to the histogram's range.
func recordUs(h *hdrhistogram.Histogram, d time.Duration) {
	us := max(histLowestUs, min(histHighestUs, int64(math.Ceil(float64(d)/float64(time.Microsecond)))))
	_ = h.RecordValue(us)
}

// histBuckets turns an HDR histogram (µs) into the driver's buckets (ms):
// one per non-empty HDR bucket, valued at its highest equivalent value, as
// HdrHistogram's own percentiles are.
func histBuckets(h *hdrhistogram.Histogram) []Bucket {
	var out []Bucket
	for _, b := range h.Distribution() {
		if b.Count > 0 {
			out = append(out, Bucket{Ms: float64(b.To) / 1000, Count: b.Count})
		}
	}
	return out
}

// sbRandSpecial is sysbench 1.0's default distribution (--rand-type=special,
// --rand-spec-iter=12 --rand-spec-pct=1 --rand-spec-res=75, as in its
// sb_rand_special): one uniform draw u over [0, 1) picks the branch; a
// quarter of the draws are the mean of 12 uniform draws over [a, b]
// (bell-shaped), the other 75 % land in the 1 % of values in the middle of
// the range, placed by u.
func sbRandSpecial(r *rand.Rand, a, b uint32) uint32 {
	if a >= b {
		return a
	}
	const iter, pct, res = 12, 1.0, 75.0
	t := float64(b - a)
	u := r.Float64()
	if u*t*(100/(100-res)) < t {
		var sum float64
		for range iter {
			sum += r.Float64()
		}
		return a + uint32(sum*t/iter)
	}
	d := t * pct / 100
	return a + uint32(u*(d+1)+t/2-t*pct/200)
}

// cValue is sysbench's get_c_value(): ten groups of 11 random digits
// separated by '-'.
func cValue(r *rand.Rand) string {
	b := make([]byte, 0, 119)
	for g := range 10 {
		if g > 0 {
			b = append(b, '-')
		}
		for range 11 {
			b = append(b, byte('0'+r.IntN(10)))
		}
	}
	return string(b)
}

// goClientOpts are the sysbench options the Go driver understands; the
// others (--db-driver, --create_secondary, --histogram, ...) are accepted
// and ignored.
type goClientOpts struct {
	script           string
	host, user, db   string
	port             int
	tables, size     int
	threads, timeSec int
	reportInterval   int
	percentile       float64
	ignore           []uint16
	ignoreAll        bool
	histogram        bool // --histogram=on: print the histogram
}

func parseGoClientArgs(args []string) (goClientOpts, error) {
	o := goClientOpts{host: "127.0.0.1", port: 3306, user: "root", db: "sbtest", tables: 1, size: 10000,
		threads: 1, timeSec: 10, percentile: 95}
	var bad error
	for _, a := range args {
		k, v, hasV := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") {
			if a != "run" && o.script == "" {
				o.script = a
			}
			continue
		}
		atoi := func() int {
			n, err := strconv.Atoi(v)
			if err != nil || !hasV {
				bad = fmt.Errorf("bad option %s", a)
			}
			return n
		}
		switch k {
		case "mysql-host":
			o.host = v
		case "mysql-port":
			o.port = atoi()
		case "mysql-user":
			o.user = v
		case "mysql-db":
			o.db = v
		case "tables":
			o.tables = atoi()
		case "table-size", "table_size":
			o.size = atoi()
		case "threads":
			o.threads = atoi()
		case "time":
			o.timeSec = atoi()
		case "report-interval":
			o.reportInterval = atoi()
		case "histogram":
			o.histogram = v == "on"
		case "percentile":
			o.percentile = float64(atoi())
		case "mysql-ignore-errors":
			for _, e := range strings.Split(v, ",") {
				if e == "all" {
					o.ignoreAll = true
					continue
				}
				n, err := strconv.ParseUint(e, 10, 16)
				if err != nil {
					return o, fmt.Errorf("--mysql-ignore-errors: bad error code %q", e)
				}
				o.ignore = append(o.ignore, uint16(n))
			}
		}
	}
	if bad != nil {
		return o, bad
	}
	if !slices.Contains(goDriverScripts, o.script) {
		return o, fmt.Errorf("the Go driver runs only %v, not %q", goDriverScripts, o.script)
	}
	if o.threads < 1 || o.tables < 1 || o.size < 1 || o.timeSec < 1 {
		return o, fmt.Errorf("threads, tables, table size and time must be positive")
	}
	return o, nil
}

// goThread is one client thread's counters and histograms.
type goThread struct {
	mu        sync.Mutex
	all, intv *hdrhistogram.Histogram
	events    int64
	ignored   int64
	minNs     int64
	maxNs     int64
	sumNs     int64
	intEv     int64
	intIgn    int64
}

func (t *goThread) record(d time.Duration, ignored int64) {
	t.mu.Lock()
	recordUs(t.all, d)
	recordUs(t.intv, d)
	t.events++
	t.intEv++
	t.ignored += ignored
	t.intIgn += ignored
	ns := int64(d)
	if t.events == 1 || ns < t.minNs {
		t.minNs = ns
	}
	t.maxNs = max(t.maxNs, ns)
	t.sumNs += ns
	t.mu.Unlock()
}

// goClientMain runs the Go driver with sysbench's arguments and writes a
// sysbench-format report to w. It returns the process exit status.
func goClientMain(args []string, w io.Writer) int {
	o, err := parseGoClientArgs(args)
	if err != nil {
		fmt.Fprintf(w, "FATAL: go driver: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := goClientRun(ctx, o, w); err != nil {
		fmt.Fprintf(w, "FATAL: go driver: %v\n", err)
		return 1
	}
	return 0
}

func goClientRun(ctx context.Context, o goClientOpts, w io.Writer) error {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.DBName = o.user, "tcp", fmt.Sprintf("%s:%d", o.host, o.port), o.db
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(o.threads)
	db.SetMaxIdleConns(o.threads)

	query := "SELECT c FROM sbtest%d WHERE id=?"
	write := o.script == "oltp_update_non_index"
	if write {
		query = "UPDATE sbtest%d SET c=? WHERE id=?"
	}
	fmt.Fprintf(w, "Go driver (bench/sysbench, hdrhistogram-go, go-sql-driver/mysql prepared statements): %s\n", o.script)
	fmt.Fprintf(w, "Running the test with following options:\nNumber of threads: %d\n\nThreads started!\n\n", o.threads)

	// Connect and prepare on every thread before the clock starts.
	threads := make([]*goThread, o.threads)
	type conn struct {
		c     *sql.Conn
		stmts []*sql.Stmt
	}
	conns := make([]conn, o.threads)
	defer func() {
		for _, c := range conns {
			for _, s := range c.stmts {
				if s != nil {
					s.Close()
				}
			}
			if c.c != nil {
				c.c.Close()
			}
		}
	}()
	for i := range threads {
		threads[i] = &goThread{all: newHist(), intv: newHist()}
		c, err := db.Conn(ctx)
		if err != nil {
			return fmt.Errorf("connect: %w", err)
		}
		conns[i].c = c
		for tn := 1; tn <= o.tables; tn++ {
			s, err := c.PrepareContext(ctx, fmt.Sprintf(query, tn))
			if err != nil {
				return fmt.Errorf("prepare %q: %w", fmt.Sprintf(query, tn), err)
			}
			conns[i].stmts = append(conns[i].stmts, s)
		}
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	deadline := start.Add(time.Duration(o.timeSec) * time.Second)
	var fatal atomic.Pointer[string]
	var wg sync.WaitGroup
	for i := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			th, stmts := threads[i], conns[i].stmts
			r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i)))
			for runCtx.Err() == nil && time.Now().Before(deadline) {
				tn := r.IntN(len(stmts))
				s := stmts[tn]
				id := sbRandSpecial(r, 1, uint32(o.size))
				t0 := time.Now()
				var ignored int64
				for {
					var err error
					if write {
						_, err = s.ExecContext(runCtx, cValue(r), id)
					} else {
						var c string
						err = s.QueryRowContext(runCtx, id).Scan(&c)
						if errors.Is(err, sql.ErrNoRows) {
							err = nil
						}
					}
					if err == nil {
						break
					}
					if runCtx.Err() != nil {
						return
					}
					var me *mysql.MySQLError
					if errors.As(err, &me) && (o.ignoreAll || slices.Contains(o.ignore, me.Number)) {
						ignored++ // sysbench restarts the event
						continue
					}
					msg := fmt.Sprintf("statement returned error for query '%s' (id %d): %v", fmt.Sprintf(query, tn+1), id, err)
					fatal.CompareAndSwap(nil, &msg)
					cancel()
					return
				}
				th.record(time.Since(t0), ignored)
			}
		}()
	}

	// Interval lines, as sysbench's --report-interval prints them.
	done := make(chan struct{})
	var repWG sync.WaitGroup
	if o.reportInterval > 0 {
		repWG.Add(1)
		go func() {
			defer repWG.Done()
			tick := time.NewTicker(time.Duration(o.reportInterval) * time.Second)
			defer tick.Stop()
			last := start
			for {
				select {
				case <-done:
					return
				case now := <-tick.C:
					h := newHist()
					var ev, ign int64
					for _, th := range threads {
						th.mu.Lock()
						h.Merge(th.intv)
						th.intv.Reset()
						ev += th.intEv
						ign += th.intIgn
						th.intEv, th.intIgn = 0, 0
						th.mu.Unlock()
					}
					sec := now.Sub(last).Seconds()
					last = now
					rate := float64(ev) / sec
					r, wr := rate, 0.0
					if write {
						r, wr = 0, rate
					}
					p := 0.0
					if ev > 0 {
						p = float64(h.ValueAtQuantile(o.percentile)) / 1000
					}
					fmt.Fprint(w, intervalLine(int(math.Round(now.Sub(start).Seconds())), o.threads, r, wr, o.percentile, p, float64(ign)/sec))
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	close(done)
	repWG.Wait()
	if m := fatal.Load(); m != nil {
		return errors.New(*m)
	}
	if err := ctx.Err(); err != nil {
		return err
	}

	all := newHist()
	var events, ignored, sumNs int64
	minNs, maxNs := int64(math.MaxInt64), int64(0)
	for _, th := range threads {
		all.Merge(th.all)
		events += th.events
		ignored += th.ignored
		sumNs += th.sumNs
		if th.events > 0 {
			minNs = min(minNs, th.minNs)
		}
		maxNs = max(maxNs, th.maxNs)
	}
	if events == 0 {
		minNs = 0
	}
	writeSysbenchReport(w, report{
		write: write, events: events, ignored: ignored, elapsed: elapsed,
		minMs: float64(minNs) / 1e6, maxMs: float64(maxNs) / 1e6, sumMs: float64(sumNs) / 1e6,
		percentile: o.percentile, buckets: histBuckets(all), threads: o.threads, histogram: o.histogram,
	})
	return nil
}

// intervalLine is one --report-interval line as sysbench prints it.
func intervalLine(atSec, threads int, reads, writes, pct, pctMs, errRate float64) string {
	rate := reads + writes
	return fmt.Sprintf("[ %ds ] thds: %d tps: %.2f qps: %.2f (r/w/o: %.2f/%.2f/0.00) lat (ms,%g%%): %.2f err/s: %.2f reconn/s: 0.00\n",
		atSec, threads, rate, rate, reads, writes, pct, pctMs, errRate)
}

// report is what writeSysbenchReport prints.
type report struct {
	write               bool
	events, ignored     int64
	elapsed             float64
	minMs, maxMs, sumMs float64
	percentile          float64
	buckets             []Bucket
	threads             int
	histogram           bool // print the buckets (sysbench's --histogram=on)
}

// writeSysbenchReport prints the Go driver's figures in sysbench 1.0's
// layout (histogram, SQL statistics, general statistics, latency), which
// ParseOutput reads.
func writeSysbenchReport(w io.Writer, r report) {
	if r.histogram {
		fmt.Fprintf(w, "Latency histogram (values are in milliseconds)\n       value  ------------- distribution ------------- count\n")
		var most int64
		for _, b := range r.buckets {
			most = max(most, b.Count)
		}
		for _, b := range r.buckets {
			stars := int(40 * b.Count / max(1, most))
			fmt.Fprintf(w, "%12.3f |%-40s %d\n", b.Ms, strings.Repeat("*", stars), b.Count)
		}
	}
	reads, writes := r.events, int64(0)
	if r.write {
		reads, writes = 0, r.events
	}
	per := func(n int64) float64 {
		if r.elapsed <= 0 {
			return 0
		}
		return float64(n) / r.elapsed
	}
	avg, pct := 0.0, 0.0
	if r.events > 0 {
		avg = r.sumMs / float64(r.events)
		pct = Percentile(r.buckets, r.percentile/100)
	}
	fmt.Fprintf(w, " \nSQL statistics:\n    queries performed:\n        read:                            %d\n        write:                           %d\n        other:                           0\n        total:                           %d\n",
		reads, writes, r.events)
	fmt.Fprintf(w, "    transactions:                        %d  (%.2f per sec.)\n", r.events, per(r.events))
	fmt.Fprintf(w, "    queries:                             %d  (%.2f per sec.)\n", r.events, per(r.events))
	fmt.Fprintf(w, "    ignored errors:                      %d  (%.2f per sec.)\n", r.ignored, per(r.ignored))
	fmt.Fprintf(w, "    reconnects:                          0  (0.00 per sec.)\n\n")
	fmt.Fprintf(w, "General statistics:\n    total time:                          %.4fs\n    total number of events:              %d\n\n", r.elapsed, r.events)
	fmt.Fprintf(w, "Latency (ms):\n         min:                                 %.3f\n         avg:                                 %.3f\n         max:                                 %.3f\n",
		r.minMs, avg, r.maxMs)
	fmt.Fprintf(w, "         %gth percentile:                     %.3f\n         sum:                                 %.3f\n\n", r.percentile, pct, r.sumMs)
	fmt.Fprintf(w, "Threads fairness:\n    events (avg/stddev):           %.4f/0.00\n", float64(r.events)/float64(max(1, r.threads)))
}
