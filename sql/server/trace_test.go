package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/server"
	"github.com/stratadb/strata/sql/trace"
)

// TestTraceSampling: TRACE answers a span tree in TiDB's row format; a
// statement held ~500 ms behind another transaction's row lock is slow:
// its slow log entry names lock_keys as its slowest stage and carries its
// kept trace (the pessimistic_lock RPC that waited), the statements
// summary shows the lock wait, and /dashboard (HTML and JSON) shows it
// with the stage named.
func TestTraceSampling(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slow.log")
	ts, srv := startServerWith(t, func(c *server.Config) {
		c.SlowQueryFile = path
		c.SlowThreshold = 300 * time.Millisecond
	})
	db := ts.open(t, "test", "")
	ctx := context.Background()
	_, err := db.Exec("CREATE TABLE tr (id INT PRIMARY KEY, v INT)")
	require.NoError(t, err)
	_, err = db.Exec("INSERT INTO tr VALUES (1, 1), (2, 2)")
	require.NoError(t, err)

	// TRACE: the statement's root, its stages and the RPC it sent.
	rows := queryStrings(t, db, "TRACE SELECT v FROM tr WHERE id = 1")
	require.NotEmpty(t, rows)
	require.Equal(t, "Select", rows[0][0])
	var ops []string
	for _, r := range rows {
		require.Len(t, r, 3)
		_, err := time.Parse("15:04:05.000000", r[1])
		require.NoError(t, err, "startTS %q", r[1])
		_, err = time.ParseDuration(r[2])
		require.NoError(t, err, "duration %q", r[2])
		ops = append(ops, r[0])
	}
	joined := strings.Join(ops, "\n")
	require.Regexp(t, `(?m)^  ├─compile$`, joined)
	require.Regexp(t, `(?m)^ +├─rpc\.get region=\d+ store=\d+$`, joined)
	// The store's side of the get, nested under its RPC (one level deeper).
	requireChild(t, ops, `rpc.get region=`, "store_process")
	rows = queryStrings(t, db, "TRACE FORMAT='row' UPDATE tr SET v = v + 1 WHERE id = 2")
	t.Logf("TRACE UPDATE:\n%s", rowsOps(rows))
	require.Regexp(t, `(?m)├─commit$`, rowsOps(rows))
	require.Regexp(t, `(?m)^ {4,}├─rpc\.(prewrite|commit) region=\d+ store=\d+`, rowsOps(rows), "an RPC inside commit")
	ops = ops[:0]
	for _, r := range rows {
		ops = append(ops, r[0])
	}
	requireChild(t, ops, "rpc.prewrite region=", "raft_apply")
	var v int
	require.NoError(t, db.QueryRow("SELECT v FROM tr WHERE id = 2").Scan(&v))
	require.Equal(t, 3, v, "TRACE ran the UPDATE")
	_, err = db.Exec("TRACE FORMAT='json' SELECT 1")
	require.EqualValues(t, 1235, mysqlCode(err))

	// The forced slow statement: a row lock held 500 ms by another
	// transaction.
	holder, err := db.Conn(ctx)
	require.NoError(t, err)
	defer holder.Close()
	_, err = holder.ExecContext(ctx, "BEGIN")
	require.NoError(t, err)
	_, err = holder.ExecContext(ctx, "SELECT * FROM tr WHERE id = 1 FOR UPDATE")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := db.Exec("UPDATE tr SET v = 10 WHERE id = 1")
		done <- err
	}()
	require.Eventually(t, func() bool {
		var n int
		return db.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'UPDATE tr SET v = 10%'").Scan(&n) == nil && n == 1
	}, 10*time.Second, 5*time.Millisecond, "the UPDATE waits behind the lock")
	time.Sleep(500 * time.Millisecond) // the lock is held: this is the delay under test
	_, err = holder.ExecContext(ctx, "COMMIT")
	require.NoError(t, err)
	require.NoError(t, <-done)

	entries, err := srv.SlowQueries()
	require.NoError(t, err)
	var slow *server.SlowEntry
	for i := range entries {
		if entries[i].Query == "UPDATE tr SET v = 10 WHERE id = 1" {
			slow = &entries[i]
		}
	}
	require.NotNil(t, slow, "the slow log has the UPDATE: %+v", entries)
	require.GreaterOrEqual(t, slow.QueryTime, 0.5)
	require.Equal(t, "lock_keys", slow.SlowestStage, "stages %v", slow.Stages)
	require.GreaterOrEqual(t, slow.Stages["lock_keys"], 0.45)
	require.NotNil(t, slow.Trace, "the entry carries the kept trace")
	require.Equal(t, "slow_log", slow.Trace.Reason)
	require.Equal(t, "lock_keys", slow.Trace.Slowest)
	var lockRPC *trace.Span
	for i, s := range slow.Trace.Spans {
		if s.RPC && s.Name == "pessimistic_lock" && (lockRPC == nil || s.DurNS > lockRPC.DurNS) {
			lockRPC = &slow.Trace.Spans[i]
		}
	}
	require.NotNil(t, lockRPC, "spans %+v", slow.Trace.Spans)
	require.GreaterOrEqual(t, time.Duration(lockRPC.DurNS), 400*time.Millisecond)
	require.NotZero(t, lockRPC.Region)
	require.NotZero(t, lockRPC.Store)

	var avgLock uint64
	require.NoError(t, db.QueryRow(`SELECT AVG_LOCK_KEYS_TIME FROM information_schema.STATEMENTS_SUMMARY
		WHERE DIGEST_TEXT = 'update `+"`tr`"+` set `+"`v`"+` = ? where `+"`id`"+` = ?'`).Scan(&avgLock))
	require.GreaterOrEqual(t, avgLock, uint64(200*time.Millisecond), "one of the two executions waited 500 ms")

	hs := httptest.NewServer(srv.DashboardHandler())
	defer hs.Close()
	page := httpGet(t, hs.URL+"/dashboard")
	require.Contains(t, page, "UPDATE tr SET v = 10 WHERE id = 1")
	require.Regexp(t, `class="slowest stage-name">lock_keys<`, page)
	require.Regexp(t, `wf-row slowest"><div class="wf-label"[^>]*>lock_keys<`, page, "the waterfall marks the slowest stage")
	require.Contains(t, page, "rpc.pessimistic_lock region=")
	require.Contains(t, page, `id="hist-lock_keys"`)
	require.Contains(t, page, `<polyline points=`)

	var api []server.SlowEntry
	require.NoError(t, json.Unmarshal([]byte(httpGet(t, hs.URL+"/dashboard/api/slow")), &api))
	require.NotEmpty(t, api)
	require.Equal(t, "UPDATE tr SET v = 10 WHERE id = 1", api[0].Query)
	require.Equal(t, "lock_keys", api[0].SlowestStage)
}

// TestTraceKeep: with the keep threshold at 0, a warm digest keeps the
// traces of its executions slower than its running p95 only (a few of
// them, not all); strata_enable_trace = OFF records none.
func TestTraceKeep(t *testing.T) {
	ts, srv := startServerWith(t, func(*server.Config) {})
	db := ts.open(t, "test", "")
	db.SetMaxOpenConns(1)
	_, err := db.Exec("CREATE TABLE tk (id INT PRIMARY KEY, v INT)")
	require.NoError(t, err)
	_, err = db.Exec("INSERT INTO tk VALUES (1, 1)")
	require.NoError(t, err)
	_, err = db.Exec("SET GLOBAL strata_trace_keep_threshold = 0")
	require.NoError(t, err)
	defer db.Exec("SET GLOBAL strata_trace_keep_threshold = 100")
	var ms int
	require.NoError(t, db.QueryRow("SELECT @@global.strata_trace_keep_threshold").Scan(&ms))
	require.Zero(t, ms)
	_, err = db.Exec("SET strata_trace_keep_threshold = 0")
	require.EqualValues(t, 1229, mysqlCode(err), "GLOBAL only")
	_, err = db.Exec("SET GLOBAL strata_trace_keep_threshold = -1")
	require.EqualValues(t, 1231, mysqlCode(err))

	hs := httptest.NewServer(srv.DashboardHandler())
	defer hs.Close()
	kept := func() int {
		var traces []trace.Trace
		require.NoError(t, json.Unmarshal([]byte(httpGet(t, hs.URL+"/dashboard/api/traces")), &traces))
		n := 0
		for _, tr := range traces {
			if strings.HasPrefix(tr.Query, "SELECT v FROM tk") {
				require.Equal(t, "p95", tr.Reason)
				require.Greater(t, tr.Duration, tr.P95)
				n++
			}
		}
		return n
	}
	const runs = 200
	var v int
	for range runs {
		require.NoError(t, db.QueryRow("SELECT v FROM tk WHERE id = 1").Scan(&v))
	}
	n := kept()
	require.Greater(t, n, 0, "some executions are slower than the p95")
	require.Less(t, n, runs/2, "most are not kept")

	_, err = db.Exec("SET GLOBAL strata_enable_trace = OFF")
	require.NoError(t, err)
	defer db.Exec("SET GLOBAL strata_enable_trace = ON")
	// Tracing is read when a command starts.
	for range runs {
		require.NoError(t, db.QueryRow("SELECT v FROM tk WHERE id = 1").Scan(&v))
	}
	require.Equal(t, n, kept(), "nothing kept with tracing off")
}

func rowsOps(rows [][]string) string {
	var ops []string
	for _, r := range rows {
		ops = append(ops, r[0])
	}
	return strings.Join(ops, "\n")
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", url, b)
	return string(b)
}

// requireChild asserts that among TRACE's operations a span named child
// is nested directly under one whose label starts with parent.
func requireChild(t *testing.T, ops []string, parent, child string) {
	t.Helper()
	for i, op := range ops {
		label := strings.TrimLeft(op, " ")
		if !strings.HasPrefix(label, "├─"+parent) {
			continue
		}
		indent := len(op) - len(label)
		for _, next := range ops[i+1:] {
			nl := strings.TrimLeft(next, " ")
			in := len(next) - len(nl)
			if in <= indent {
				break // past parent's children
			}
			if in == indent+2 && nl == "├─"+child {
				return
			}
		}
	}
	require.Failf(t, "span not nested", "no %s directly under %s in:\n%s", child, parent, strings.Join(ops, "\n"))
}
