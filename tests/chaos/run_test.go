package chaos

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/localcluster"
	"github.com/stratadb/strata/tests/chaos/checker"
)

// opTimeout bounds one operation; past it the client gives up and records
// the outcome as unknown (the SQL node may still commit it).
const opTimeout = 15 * time.Second

// recoveryTail is how long the clients go on after the last fault healed
// (the end of each run's duration). Every fault must see an operation
// succeed within maxRecovery of its heal.
const (
	recoveryTail = 8 * time.Second
	maxRecovery  = 15 * time.Second
)

// workload is what clients run and how the history is checked.
type workload interface {
	// setup creates the workload's tables through db (no fault yet).
	setup(ctx context.Context, db *sql.DB) error
	// next picks process p's next operation.
	next(rng *rand.Rand, p int) (f string, v any)
	// run executes it and returns its completion: OK with its result,
	// Fail when it certainly took no effect, Info when unknown.
	run(ctx context.Context, db *sql.DB, f string, v any) (checker.Type, any, error)
	// final returns the operations to run once the cluster has healed and
	// the clients stopped (a set's final read), or nil.
	final() []finalOp
	// check checks the whole history.
	check(h []checker.Op) (*checker.Result, error)
	// splitKeys names the workload's table and integer primary keys to
	// split it at, inside the keys it uses now.
	splitKeys(rng *rand.Rand) (table string, keys []int)
}

type finalOp struct {
	f string
	v any
}

// config is one chaos run.
type config struct {
	workload workload
	nemesis  nemesis
	clients  int
	duration time.Duration // clients run this long: faults, then recoveryTail
	seed     uint64
	// lab runs every process in a network namespace of its own
	// (partition, loss and bandwidth nemeses need it).
	lab bool
}

// run is one chaos run in progress: its cluster, history and timeline.
type run struct {
	t   *testing.T
	cfg config
	c   *localcluster.Cluster
	dbs []*sql.DB // one pool per SQL node
	lab *netlab   // with cfg.lab; member i is Procs()[i]
	// raftDelay[i] is store i's raft-send delay file (see startRun).
	raftDelay []string
	start     time.Time

	mu       sync.Mutex
	hist     []checker.Op
	timeline []fault
}

// fault is one nemesis action: from its start until it healed.
type fault struct {
	what        string
	start, heal time.Duration // since the run began; heal 0 while active
}

// startRun starts a cluster of 1 PD, 3 stores and 2 SQL nodes on free
// loopback ports and opens a pool to each SQL node.
func startRun(t *testing.T, cfg config) *run {
	t.Helper()
	lc := localcluster.Config{
		BinDir: binDir, DataDir: t.TempDir(), PDs: 3, Stores: 3, SQLNodes: 2, FreePorts: true,
		// Fast ticks keep failover short, as in the cluster tests.
		StoreArgs: []string{"--raft-tick", "50ms", "--heartbeat-interval", "200ms"},
		SQLArgs:   []string{"--run-auto-analyze=false"},
	}
	var lab *netlab
	if cfg.lab {
		lab = newNetlab(t, lc.PDs+lc.Stores+lc.SQLNodes)
		lc.Hosts, lc.Wrap = lab.ips, lab.wrap
	}
	c, err := localcluster.New(lc)
	require.NoError(t, err)
	// Each store delays its raft sends by what its file says, while the
	// file exists (failpoint raft-send; the network family's delays).
	var raftDelay []string
	for i, p := range c.Stores {
		f := filepath.Join(t.TempDir(), fmt.Sprintf("raft-delay-%d", i+1))
		p.Env = append(p.Env, "STRATA_FAILPOINTS=raft-send=delay:"+f)
		raftDelay = append(raftDelay, f)
	}
	t.Cleanup(func() {
		c.Kill()
		if t.Failed() {
			t.Logf("process logs:\n%s", c.Logs(8<<10))
		}
	})
	require.NoError(t, c.Start())
	r := &run{t: t, cfg: cfg, c: c, lab: lab, raftDelay: raftDelay}
	r.waitReady()
	for i := range c.SQL {
		db, err := sql.Open("mysql", c.DSN(i, "test"))
		require.NoError(t, err)
		db.SetMaxOpenConns(cfg.clients + 4)
		db.SetMaxIdleConns(cfg.clients + 4)
		t.Cleanup(func() { db.Close() })
		r.dbs = append(r.dbs, db)
	}
	return r
}

// waitReady waits until every SQL node serves and sees database test
// (the SQL nodes create it at start; a node may answer before it has).
func (r *run) waitReady() {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for i := range r.c.SQL {
		require.NoError(r.t, r.c.WaitReady(ctx, i))
		db, err := sql.Open("mysql", r.c.DSN(i, ""))
		require.NoError(r.t, err)
		require.Eventually(r.t, func() bool {
			var n int
			err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'test'").Scan(&n)
			return err == nil && n == 1
		}, 90*time.Second, 50*time.Millisecond, "SQL node %d never saw database test", i+1)
		db.Close()
	}
}

func (r *run) now() int64 { return int64(time.Since(r.start)) }

func (r *run) record(o checker.Op) {
	r.mu.Lock()
	o.Index, o.Time = len(r.hist), r.now()
	r.hist = append(r.hist, o)
	r.mu.Unlock()
}

func (r *run) faultStarted(what string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.timeline = append(r.timeline, fault{what: what, start: time.Since(r.start)})
	r.t.Logf("%7.2fs nemesis: %s", time.Since(r.start).Seconds(), what)
	return len(r.timeline) - 1
}

func (r *run) faultHealed(i int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.timeline[i].heal = time.Since(r.start)
	r.t.Logf("%7.2fs nemesis: healed %s", time.Since(r.start).Seconds(), r.timeline[i].what)
}

// execute records one operation of process p through SQL node node and
// returns its completion type.
func (r *run) execute(ctx context.Context, p, node int, f string, v any) checker.Type {
	r.record(checker.Op{Process: p, Type: checker.Invoke, F: f, Value: v})
	octx, cancel := context.WithTimeout(ctx, opTimeout)
	typ, out, err := r.cfg.workload.run(octx, r.dbs[node], f, v)
	cancel()
	c := checker.Op{Process: p, Type: typ, F: f, Value: out}
	if err != nil {
		c.Error = err.Error()
	}
	r.record(c)
	return typ
}

// Run drives the workload with cfg.clients clients and the nemesis for
// cfg.duration, heals everything, lets the cluster recover, runs the final
// operations and checks the history. It returns the report.
func (r *run) Run() *report {
	ctx := context.Background()
	setupCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	require.NoError(r.t, r.cfg.workload.setup(setupCtx, r.dbs[0]))
	cancel()

	// The nemesis injects faults until recoveryTail before the end and
	// heals the last one; the clients go on for recoveryTail after that,
	// so that every fault shows how soon the cluster served again.
	r.start = time.Now()
	loadDone := make(chan struct{})
	var wg sync.WaitGroup
	for p := range r.cfg.clients {
		rng := rand.New(rand.NewPCG(r.cfg.seed, uint64(p)+1))
		wg.Go(func() {
			for {
				select {
				case <-loadDone:
					return
				default:
				}
				f, v := r.cfg.workload.next(rng, p)
				if r.execute(ctx, p, p%len(r.dbs), f, v) != checker.OK {
					// A client's retry pause: a refused connection
					// fails at once, and a history of millions of
					// such failures checks nothing more.
					time.Sleep(time.Duration(20+rng.IntN(30)) * time.Millisecond)
				}
			}
		})
	}
	nctx, stop := context.WithTimeout(ctx, max(r.cfg.duration-recoveryTail, time.Second))
	r.cfg.nemesis.run(nctx, r, rand.New(rand.NewPCG(r.cfg.seed, 0)))
	stop()
	time.Sleep(recoveryTail) // load keeps running: this is the measurement window
	close(loadDone)
	wg.Wait()

	// Every fault is healed: the cluster must serve again.
	r.waitReady()
	for i, op := range r.cfg.workload.final() {
		r.execute(ctx, r.cfg.clients+i, 0, op.f, op.v)
	}
	res, err := r.cfg.workload.check(r.hist)
	require.NoError(r.t, err)
	return r.report(res)
}

// classify turns a statement's error into the completion type: MySQL
// errors after which nothing was committed, and a refused connection (the
// statement was never sent), are Fail; anything else (a lost connection, a
// timeout, 8110 undetermined, an unknown error) is Info. Every Info write
// stays open to the end of the history and doubles the register checker's
// search space, so a statement that certainly never left the client must
// not be one.
// committed reports whether the failing statement could have committed
// anything (a COMMIT, or an autocommit write); if not, every error is Fail.
func classify(err error, committed bool) checker.Type {
	if !committed {
		return checker.Fail
	}
	if oe := (*net.OpError)(nil); errors.As(err, &oe) && oe.Op == "dial" {
		return checker.Fail
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1062, // duplicate key
			1205, // lock wait timeout (the statement rolled back)
			1213, // deadlock: the transaction rolled back
			3572, // NOWAIT
			8004, // transaction too large
			8027, // schema lease expired
			8028, // schema changed
			9006, // GC too early
			9007: // write conflict
			return checker.Fail
		}
	}
	return checker.Info
}

// inTxn runs body between BEGIN (BEGIN OPTIMISTIC when optimistic) and
// COMMIT on one connection of db. An error before COMMIT rolls back: Fail.
func inTxn(ctx context.Context, db *sql.DB, optimistic bool, body func(conn *sql.Conn) error) (checker.Type, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return checker.Fail, err
	}
	defer conn.Close()
	begin := "BEGIN"
	if optimistic {
		begin = "BEGIN OPTIMISTIC"
	}
	if _, err := conn.ExecContext(ctx, begin); err != nil {
		return checker.Fail, err
	}
	if err := body(conn); err != nil {
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = conn.ExecContext(rctx, "ROLLBACK")
		cancel()
		return checker.Fail, err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return classify(err, true), err
	}
	return checker.OK, nil
}

// report is one run's summary.
type report struct {
	name, nemesis string
	seed          uint64
	duration      time.Duration
	result        *checker.Result
	hist          []checker.Op
	procs         []*localcluster.Proc // whose logs the report keeps
	byF           map[string][3]int    // ok, fail, info per operation
	timeline      []fault
	windows       []window
	inFault       latencies
	outFault      latencies
}

// window is one fault's availability: the share of operations invoked
// while it lasted that completed OK, and how long after it healed the
// first operation invoked after the heal succeeded.
type window struct {
	fault            fault
	invoked, ok      int
	firstOKAfterHeal time.Duration // -1: none
}

type latencies struct{ p50, p99 time.Duration }

func percentiles(d []time.Duration) latencies {
	if len(d) == 0 {
		return latencies{}
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	at := func(q float64) time.Duration { return d[min(len(d)-1, int(q*float64(len(d))))] }
	return latencies{p50: at(0.50), p99: at(0.99)}
}

func (r *run) report(res *checker.Result) *report {
	rep := &report{nemesis: r.cfg.nemesis.name, seed: r.cfg.seed, duration: r.cfg.duration, result: res,
		hist: r.hist, procs: r.c.Procs(), byF: map[string][3]int{}, timeline: r.timeline}
	pairs, err := checker.Pairs(r.hist)
	require.NoError(r.t, err)
	var in, out []time.Duration
	for _, f := range r.timeline {
		rep.windows = append(rep.windows, window{fault: f, firstOKAfterHeal: -1})
	}
	for _, p := range pairs {
		n := rep.byF[p.Invoke.F]
		n[p.Complete.Type-1]++
		rep.byF[p.Invoke.F] = n
		at, lat := time.Duration(p.Invoke.Time), time.Duration(p.Complete.Time-p.Invoke.Time)
		during := false
		for i := range rep.windows {
			w := &rep.windows[i]
			if at >= w.fault.start && at < w.fault.heal {
				during = true
				w.invoked++
				if p.Complete.Type == checker.OK {
					w.ok++
				}
			}
			if at >= w.fault.heal && p.Complete.Type == checker.OK {
				if d := time.Duration(p.Complete.Time) - w.fault.heal; w.firstOKAfterHeal < 0 || d < w.firstOKAfterHeal {
					w.firstOKAfterHeal = d
				}
			}
		}
		if p.Complete.Type == checker.OK {
			if during {
				in = append(in, lat)
			} else {
				out = append(out, lat)
			}
		}
	}
	rep.inFault, rep.outFault = percentiles(in), percentiles(out)
	return rep
}

// markdown renders the report: counts, anomalies with their first
// excerpts, the fault timeline with availability, latencies.
func (rep *report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# chaos %s / %s\n\nseed %d, %v of load; verdict: **%s**\n\n", rep.name, rep.nemesis, rep.seed, rep.duration, rep.verdict())
	fmt.Fprintf(&b, "| operation | ok | fail | info |\n|---|---:|---:|---:|\n")
	fs := make([]string, 0, len(rep.byF))
	for f := range rep.byF {
		fs = append(fs, f)
	}
	sort.Strings(fs)
	for _, f := range fs {
		n := rep.byF[f]
		fmt.Fprintf(&b, "| %s | %d | %d | %d |\n", f, n[0], n[1], n[2])
	}
	fmt.Fprintf(&b, "\nlatency of ok operations: p50 %v / p99 %v outside faults, p50 %v / p99 %v during faults\n",
		rep.outFault.p50.Round(time.Millisecond), rep.outFault.p99.Round(time.Millisecond),
		rep.inFault.p50.Round(time.Millisecond), rep.inFault.p99.Round(time.Millisecond))
	fmt.Fprintf(&b, "\n| fault | from | healed | ops invoked | ok | first ok after heal |\n|---|---:|---:|---:|---:|---:|\n")
	for _, w := range rep.windows {
		first := "none"
		if w.firstOKAfterHeal >= 0 {
			first = w.firstOKAfterHeal.Round(time.Millisecond).String()
		}
		fmt.Fprintf(&b, "| %s | %.1fs | %.1fs | %d | %d | %s |\n", w.fault.what, w.fault.start.Seconds(), w.fault.heal.Seconds(), w.invoked, w.ok, first)
	}
	if len(rep.result.Anomalies) > 0 {
		fmt.Fprintf(&b, "\n## anomalies (%d)\n\n", len(rep.result.Anomalies))
		for i, a := range rep.result.Anomalies {
			if i == 10 {
				fmt.Fprintf(&b, "... %d more\n", len(rep.result.Anomalies)-i)
				break
			}
			fmt.Fprintf(&b, "```\n%s\n```\n", a)
		}
	}
	return b.String()
}

func (rep *report) verdict() string {
	if rep.result.Valid {
		return "valid"
	}
	return "INVALID: " + strings.Join(rep.result.Kinds(), ", ")
}

// summary is one row of the table of runs.
func (rep *report) summary() string {
	ok, fail, info := 0, 0, 0
	for _, n := range rep.byF {
		ok, fail, info = ok+n[0], fail+n[1], info+n[2]
	}
	inv, okIn := 0, 0
	var worstRecovery time.Duration
	for _, w := range rep.windows {
		inv, okIn = inv+w.invoked, okIn+w.ok
		worstRecovery = max(worstRecovery, w.firstOKAfterHeal)
	}
	avail := "-"
	if inv > 0 {
		avail = fmt.Sprintf("%.0f %%", 100*float64(okIn)/float64(inv))
	}
	return fmt.Sprintf("| %s | %s | %d | %d / %d / %d | %s | %d | %s | %v |", rep.name, rep.nemesis, rep.seed, ok, fail, info,
		rep.verdict(), len(rep.windows), avail, worstRecovery.Round(time.Millisecond))
}

const summaryHeader = "| workload | nemesis | seed | ok / fail / info | verdict | faults | ok during faults | worst first-ok after heal |\n|---|---|---:|---|---|---:|---:|---:|\n"

// writeReport logs the report and, when STRATA_CHAOS_REPORT_DIR is set,
// writes it there with a row in summary.md.
func writeReport(t *testing.T, rep *report) {
	t.Logf("\n%s", rep.markdown())
	dir := os.Getenv("STRATA_CHAOS_REPORT_DIR")
	if dir == "" {
		return
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	name := strings.NewReplacer("/", "-", " ", "-").Replace(rep.name + "-" + rep.nemesis)
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".md"), []byte(rep.markdown()), 0o644))
	var hist strings.Builder
	for _, o := range rep.hist {
		hist.WriteString(o.String() + "\n")
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".history.txt"), []byte(hist.String()), 0o644))
	logs := filepath.Join(dir, name+"-logs")
	require.NoError(t, os.MkdirAll(logs, 0o755))
	for _, p := range rep.procs {
		if data, err := os.ReadFile(p.LogPath); err == nil {
			require.NoError(t, os.WriteFile(filepath.Join(logs, p.Name+".log"), data, 0o644))
		}
	}
	sum := filepath.Join(dir, "summary.md")
	_, err := os.Stat(sum)
	f, ferr := os.OpenFile(sum, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(t, ferr)
	defer f.Close()
	if os.IsNotExist(err) {
		_, _ = f.WriteString(summaryHeader)
	}
	_, werr := f.WriteString(rep.summary() + "\n")
	require.NoError(t, werr)
}
