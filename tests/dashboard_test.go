package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/localcluster"
	"github.com/stratadb/strata/sql/server"
)

// slowUpdate is the statement forceSlowRequest makes slow.
const slowUpdate = "UPDATE slowt SET v = 10 WHERE id = 1"

// slowApply is the statement forceSlowApply makes slow.
const slowApply = "UPDATE slowt SET v = v + 1 WHERE id = 1"

// startObservedCluster starts a cluster whose SQL node writes its slow
// query log (300 ms threshold) to a file, its stores started with
// storeEnv; it returns the file's path and the node's /dashboard URL.
func startObservedCluster(t *testing.T, storeEnv ...string) (*localcluster.Cluster, string, string) {
	t.Helper()
	slowLog := filepath.Join(t.TempDir(), "slow.log")
	c := startCluster(t, clusterOpts{sqlArgs: []string{"--slow-query-file", slowLog, "--slow-threshold", "300ms"}, storeEnv: storeEnv})
	return c, slowLog, "http://" + c.SQL[0].Flag("--status-addr") + "/dashboard"
}

// forceSlowRequest runs slowUpdate behind a row lock that another
// transaction holds for 500 ms after the UPDATE is seen waiting.
func forceSlowRequest(t *testing.T, c *localcluster.Cluster) {
	t.Helper()
	db := openDB(t, c, 0, "test")
	ctx := context.Background()
	mustExec(t, db, "CREATE TABLE slowt (id INT PRIMARY KEY, v INT)")
	mustExec(t, db, "INSERT INTO slowt VALUES (1, 1)")
	holder, err := db.Conn(ctx)
	require.NoError(t, err)
	defer holder.Close()
	_, err = holder.ExecContext(ctx, "BEGIN")
	require.NoError(t, err)
	_, err = holder.ExecContext(ctx, "SELECT v FROM slowt WHERE id = 1 FOR UPDATE")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := db.Exec(slowUpdate)
		done <- err
	}()
	require.Eventually(t, func() bool {
		var n int
		return db.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO = ?", slowUpdate).Scan(&n) == nil && n == 1
	}, 10*time.Second, 5*time.Millisecond, "the UPDATE waits behind the lock")
	time.Sleep(500 * time.Millisecond) // the lock is held: the delay under test
	_, err = holder.ExecContext(ctx, "COMMIT")
	require.NoError(t, err)
	require.NoError(t, <-done)
}

// applyDelay is how long forceSlowApply holds every apply round: under the
// election timeout of startCluster's stores (10 ticks of 50 ms), above the
// slow log's threshold.
const applyDelay = 350 * time.Millisecond

// forceSlowApply runs slowApply while the raft-apply failpoint of every
// store (STRATA_FAILPOINTS raft-apply=delay:<delayFile>) holds each apply
// round for applyDelay.
func forceSlowApply(t *testing.T, c *localcluster.Cluster, delayFile string) {
	t.Helper()
	db := openDB(t, c, 0, "test")
	require.NoError(t, os.WriteFile(delayFile, []byte(applyDelay.String()), 0o644))
	_, err := db.Exec(slowApply)
	require.NoError(t, os.Remove(delayFile))
	require.NoError(t, err)
}

// readSlowLog returns the slow log file's last entry for query.
func readSlowLog(t *testing.T, path, query string) *server.SlowEntry {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var entry *server.SlowEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e server.SlowEntry
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e), sc.Text())
		if e.Query == query {
			entry = &e
		}
	}
	require.NoError(t, sc.Err())
	require.NotNil(t, entry, "the slow log has %q", query)
	return entry
}

// TestSlowRequestObserved (issue 29's acceptance): a statement held 500 ms
// behind another transaction's row lock appears in the slow query log
// file with its trace and lock_keys named as its slowest stage, in
// information_schema.SLOW_QUERY and STATEMENTS_SUMMARY with the lock wait,
// and on the SQL node's /dashboard (HTML and JSON) with the stage named.
// A statement whose write the stores applied slowly (a failpoint delay in
// apply) appears the same way with the store's stage named: raft_apply,
// nested in its trace under the RPC.
func TestSlowRequestObserved(t *testing.T) {
	delayFile := filepath.Join(t.TempDir(), "apply-delay")
	c, slowLog, dash := startObservedCluster(t, "STRATA_FAILPOINTS=raft-apply=delay:"+delayFile)
	forceSlowRequest(t, c)
	forceSlowApply(t, c, delayFile)
	db := openDB(t, c, 0, "test")

	// The slow log file.
	entry := readSlowLog(t, slowLog, slowUpdate)
	require.GreaterOrEqual(t, entry.QueryTime, 0.5)
	require.Equal(t, "lock_keys", entry.SlowestStage, "stages %v", entry.Stages)
	require.GreaterOrEqual(t, entry.Stages["lock_keys"], 0.45)
	require.NotNil(t, entry.Trace)
	require.Equal(t, "lock_keys", entry.Trace.Slowest)
	waited := false
	for _, s := range entry.Trace.Spans {
		if s.RPC && s.Name == "pessimistic_lock" && time.Duration(s.DurNS) >= 400*time.Millisecond {
			require.NotZero(t, s.Region)
			require.NotZero(t, s.Store)
			waited = true
		}
	}
	require.True(t, waited, "the trace has the pessimistic_lock RPC that waited: %+v", entry.Trace.Spans)

	applied := readSlowLog(t, slowLog, slowApply)
	require.GreaterOrEqual(t, applied.QueryTime, applyDelay.Seconds())
	require.Equal(t, "raft_apply", applied.SlowestStage, "stages %v", applied.Stages)
	require.GreaterOrEqual(t, applied.Stages["raft_apply"], 0.9*applyDelay.Seconds(), "stages %v", applied.Stages)
	require.NotNil(t, applied.Trace)
	require.Equal(t, "raft_apply", applied.Trace.Slowest)
	var rpcEnd int64 = -1
	nested := false
	for _, s := range applied.Trace.Spans {
		if s.RPC && (s.Name == "prewrite" || s.Name == "commit") {
			rpcEnd = max(rpcEnd, s.StartNS+s.DurNS)
		}
		if s.Name == "raft_apply" && time.Duration(s.DurNS) >= applyDelay*9/10 {
			require.LessOrEqual(t, s.StartNS+s.DurNS, rpcEnd, "raft_apply lies inside its RPC: %+v", applied.Trace.Spans)
			nested = true
		}
	}
	require.True(t, nested, "the trace has the delayed apply: %+v", applied.Trace.Spans)

	// information_schema.
	var qt, lockT float64
	require.NoError(t, db.QueryRow("SELECT Query_time, LockKeys_time FROM information_schema.SLOW_QUERY WHERE Query = ?", slowUpdate).Scan(&qt, &lockT))
	require.GreaterOrEqual(t, qt, 0.5)
	require.GreaterOrEqual(t, lockT, 0.45)
	var execs, avgLock, maxLat uint64
	require.NoError(t, db.QueryRow("SELECT EXEC_COUNT, AVG_LOCK_KEYS_TIME, MAX_LATENCY FROM information_schema.STATEMENTS_SUMMARY WHERE QUERY_SAMPLE_TEXT = ?", slowUpdate).Scan(&execs, &avgLock, &maxLat))
	require.EqualValues(t, 1, execs)
	require.GreaterOrEqual(t, avgLock, uint64(450*time.Millisecond))
	require.GreaterOrEqual(t, maxLat, uint64(500*time.Millisecond))
	var applyT, processT float64
	require.NoError(t, db.QueryRow("SELECT Apply_log_time, Process_time FROM information_schema.SLOW_QUERY WHERE Query = ?", slowApply).Scan(&applyT, &processT))
	require.GreaterOrEqual(t, applyT, 0.9*applyDelay.Seconds())
	require.Greater(t, processT, 0.0)
	var avgApply, avgProcess uint64
	require.NoError(t, db.QueryRow("SELECT AVG_APPLY_LOG_TIME, AVG_PROCESS_TIME FROM information_schema.STATEMENTS_SUMMARY WHERE QUERY_SAMPLE_TEXT = ?", slowApply).Scan(&avgApply, &avgProcess))
	require.GreaterOrEqual(t, avgApply, uint64(applyDelay*9/10))
	require.Positive(t, avgProcess)

	// /dashboard: the slow query with its stage named, the digest on top.
	page := httpBody(t, dash)
	require.Contains(t, page, slowUpdate)
	require.Regexp(t, `class="slowest stage-name">lock_keys<`, page)
	require.Contains(t, page, "rpc.pessimistic_lock region=")
	var stmts []struct {
		DigestText string
		Slowest    string
	}
	require.NoError(t, json.Unmarshal([]byte(httpBody(t, dash+"/api/statements")), &stmts))
	found, foundApply := false, false
	for _, s := range stmts {
		switch s.DigestText {
		case "update `slowt` set `v` = ? where `id` = ?":
			require.Equal(t, "lock_keys", s.Slowest)
			found = true
		case "update `slowt` set `v` = `v` + ? where `id` = ?":
			require.Equal(t, "raft_apply", s.Slowest)
			foundApply = true
		}
	}
	require.True(t, found, "the digest is among the top statements: %+v", stmts)
	require.True(t, foundApply, "the slow apply's digest is among the top statements: %+v", stmts)
}

func httpBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", url, b)
	return string(b)
}
