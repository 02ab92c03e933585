package server_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/server"
)

// TestSlowQueryLog: statements that take the threshold or longer are
// written to the slow query file as JSON lines, through the text and the
// binary protocol, failed ones with their error code; faster ones are not.
// A statement slow on the store (its write's apply delayed) names the
// store's stage (raft_apply) as its slowest.
func TestSlowQueryLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slow.log")
	store := newTestStore(t)
	ts, _ := startServerWith(t, func(c *server.Config) {
		c.Store = store
		c.SlowQueryFile = path
		c.SlowThreshold = 100 * time.Millisecond
	})
	db := ts.open(t, "test", "")
	ctx := context.Background()
	_, err := db.Exec("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	require.NoError(t, err)
	_, err = db.Exec("INSERT INTO t VALUES (1, 1)")
	require.NoError(t, err)

	var one int
	require.NoError(t, db.QueryRow("SELECT 1").Scan(&one))
	require.NoError(t, db.QueryRow("SELECT SLEEP(0.2)").Scan(&one))
	require.NoError(t, db.QueryRow("SELECT SLEEP(?) + 1", 0.15).Scan(&one)) // prepared

	// A statement that fails after waiting: 1205 behind another's lock.
	holder, err := db.Conn(ctx)
	require.NoError(t, err)
	defer holder.Close()
	_, err = holder.ExecContext(ctx, "BEGIN")
	require.NoError(t, err)
	_, err = holder.ExecContext(ctx, "SELECT * FROM t WHERE id = 1 FOR UPDATE")
	require.NoError(t, err)
	waiter, err := db.Conn(ctx)
	require.NoError(t, err)
	defer waiter.Close()
	_, err = waiter.ExecContext(ctx, "SET innodb_lock_wait_timeout = 1")
	require.NoError(t, err)
	_, err = waiter.ExecContext(ctx, "UPDATE t SET v = 2 WHERE id = 1")
	require.EqualValues(t, 1205, mysqlCode(err))
	_, err = holder.ExecContext(ctx, "ROLLBACK")
	require.NoError(t, err)

	// A write whose apply takes 150 ms on the store.
	const applyDelay = 150 * time.Millisecond
	store.st.Engine().SetBeforeWrite(func() { time.Sleep(applyDelay) }) // the store-side delay under test
	_, err = db.Exec("UPDATE t SET v = v + 1 WHERE id = 1")
	store.st.Engine().SetBeforeWrite(nil)
	require.NoError(t, err)

	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var entries []server.SlowEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e server.SlowEntry
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e), sc.Text())
		entries = append(entries, e)
	}
	require.NoError(t, sc.Err())
	require.Len(t, entries, 4, "only the slow statements: %+v", entries)

	sleep := entries[0]
	require.Equal(t, "SELECT SLEEP(0.2)", sleep.Query)
	require.Equal(t, "Select", sleep.Type)
	require.False(t, sleep.Prepared)
	require.True(t, sleep.Succ)
	require.EqualValues(t, 1, sleep.Rows)
	require.GreaterOrEqual(t, sleep.QueryTime, 0.2)
	require.Equal(t, "test", sleep.DB)
	require.Equal(t, "root", sleep.User)
	require.Equal(t, "127.0.0.1", sleep.Host)
	require.NotZero(t, sleep.ConnID)
	require.Len(t, sleep.Digest, 64)

	prep := entries[1]
	require.Equal(t, "SELECT SLEEP(?) + 1", prep.Query)
	require.True(t, prep.Prepared)
	require.GreaterOrEqual(t, prep.QueryTime, 0.15)

	failed := entries[2]
	require.Equal(t, "UPDATE t SET v = 2 WHERE id = 1", failed.Query)
	require.Equal(t, "Update", failed.Type)
	require.False(t, failed.Succ)
	require.EqualValues(t, 1205, failed.ErrorCode)
	require.GreaterOrEqual(t, failed.QueryTime, 1.0)
	// The stage it waited in is named: lock_keys (the row lock), about
	// the whole 1 s; the sleeps spent no time locking.
	require.GreaterOrEqual(t, failed.Stages["lock_keys"], 0.9, "stages %v", failed.Stages)
	require.Greater(t, failed.Stages["parse"], 0.0)
	require.Greater(t, failed.Stages["compile"], 0.0)
	require.Zero(t, sleep.Stages["lock_keys"], "stages %v", sleep.Stages)

	applied := entries[3]
	require.Equal(t, "UPDATE t SET v = v + 1 WHERE id = 1", applied.Query)
	require.Equal(t, "raft_apply", applied.SlowestStage, "stages %v", applied.Stages)
	require.GreaterOrEqual(t, applied.Stages["raft_apply"], applyDelay.Seconds(), "stages %v", applied.Stages)
	require.GreaterOrEqual(t, applied.Stages["commit"], applied.Stages["raft_apply"], "the store's side lies within the commit")
	require.Greater(t, applied.Stages["store_process"], 0.0, "stages %v", applied.Stages)

	// information_schema.SLOW_QUERY reads the same entries back.
	rows := queryStrings(t, db, "SELECT User, Host, DB, Type, Prepared, Succ, Error_code, Result_rows, Query FROM information_schema.SLOW_QUERY ORDER BY Time")
	require.Equal(t, [][]string{
		{"root", "127.0.0.1", "test", "Select", "0", "1", "0", "1", "SELECT SLEEP(0.2)"},
		{"root", "127.0.0.1", "test", "Select", "1", "1", "0", "1", "SELECT SLEEP(?) + 1"},
		{"root", "127.0.0.1", "test", "Update", "0", "0", "1205", "0", "UPDATE t SET v = 2 WHERE id = 1"},
		{"root", "127.0.0.1", "test", "Update", "0", "1", "0", "1", "UPDATE t SET v = v + 1 WHERE id = 1"},
	}, rows)
	var slowest, locking float64
	require.NoError(t, db.QueryRow("SELECT MAX(Query_time), MAX(LockKeys_time) FROM information_schema.SLOW_QUERY WHERE Succ = 0").Scan(&slowest, &locking))
	require.GreaterOrEqual(t, slowest, 1.0)
	require.GreaterOrEqual(t, locking, 0.9)
	// The statements summary averages the stage over the digest's runs.
	var avgLock uint64
	require.NoError(t, db.QueryRow("SELECT AVG_LOCK_KEYS_TIME FROM information_schema.STATEMENTS_SUMMARY WHERE QUERY_SAMPLE_TEXT = 'UPDATE t SET v = 2 WHERE id = 1'").Scan(&avgLock))
	require.GreaterOrEqual(t, avgLock, uint64(900*time.Millisecond))
	// The store's side: its apply, processing and ReadIndex, in SLOW_QUERY
	// (seconds) and the summary (nanoseconds).
	var applyT, processT float64
	require.NoError(t, db.QueryRow("SELECT Apply_log_time, Process_time FROM information_schema.SLOW_QUERY WHERE Query = 'UPDATE t SET v = v + 1 WHERE id = 1'").Scan(&applyT, &processT))
	require.GreaterOrEqual(t, applyT, applyDelay.Seconds())
	require.Greater(t, processT, 0.0)
	var avgApply, avgProcess, avgReadIndex uint64
	require.NoError(t, db.QueryRow("SELECT AVG_APPLY_LOG_TIME, AVG_PROCESS_TIME, AVG_READ_INDEX_TIME FROM information_schema.STATEMENTS_SUMMARY WHERE QUERY_SAMPLE_TEXT = 'UPDATE t SET v = v + 1 WHERE id = 1'").Scan(&avgApply, &avgProcess, &avgReadIndex))
	require.GreaterOrEqual(t, avgApply, uint64(applyDelay))
	require.Positive(t, avgProcess)
	require.Positive(t, avgReadIndex)
	// Without PROCESS a user sees only its own.
	_, err = db.Exec("CREATE USER bob IDENTIFIED BY 'pw'")
	require.NoError(t, err)
	_, err = db.Exec("GRANT SELECT ON test.* TO bob")
	require.NoError(t, err)
	bob, err := sql.Open("mysql", ts.dsn("bob", "pw", "test", ""))
	require.NoError(t, err)
	defer bob.Close()
	require.Empty(t, queryStrings(t, bob, "SELECT Query FROM information_schema.SLOW_QUERY"))
}
