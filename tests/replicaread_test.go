package tests

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/localcluster"
)

const (
	followerReads = `strata_raftstore_reads_total{path="follower_read_index"}`
	staleReads    = `strata_raftstore_reads_total{path="stale"}`
)

// readsOn sums a reads_total series over the stores other than store
// leader (0: over all stores).
func readsOn(t *testing.T, c *localcluster.Cluster, series string, leader uint64) float64 {
	t.Helper()
	var skip *localcluster.Proc
	if leader != 0 {
		skip = storeProc(t, c, leader)
	}
	var n float64
	for _, p := range c.Stores {
		if p == skip {
			continue
		}
		if v := metric(t, p, series); v > 0 {
			n += v
		}
	}
	return n
}

// TestFollowerRead: with tidb_replica_read = 'follower', point gets and
// coprocessor reads are served by followers (their reads_total counts
// them), and every read sees every write acknowledged before it started,
// under concurrent writes (linearizable: the follower waits for the
// leader's read index).
func TestFollowerRead(t *testing.T) {
	c := startCluster(t, clusterOpts{})
	db := openDB(t, c, 0, "")
	mustExec(t, db, "CREATE DATABASE fr")
	mustExec(t, db, "CREATE TABLE fr.t (id INT PRIMARY KEY, v INT)")
	mustExec(t, db, "INSERT INTO fr.t VALUES (1, 0), (2, 0), (3, 0)")
	leader, err := leaderStoreOf(db, "fr.t")
	require.NoError(t, err)
	before := readsOn(t, c, followerReads, leader)

	var acked atomic.Int64 // the highest v acknowledged for id 1 (and the sum of id 2 and 3)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		w := openDB(t, c, 0, "")
		for i := int64(1); ctx.Err() == nil; i++ {
			if _, err := w.ExecContext(ctx, "UPDATE fr.t SET v = ? WHERE id = 1", i); err != nil {
				if ctx.Err() == nil {
					t.Errorf("write %d: %v", i, err)
				}
				return
			}
			acked.Store(i)
		}
	})
	conn, err := db.Conn(context.Background())
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(context.Background(), "SET tidb_replica_read = 'follower'")
	require.NoError(t, err)
	deadline := time.Now().Add(4 * time.Second)
	for reads := 0; time.Now().Before(deadline) || reads < 50; reads++ {
		want := acked.Load()
		var v int64
		require.NoError(t, conn.QueryRowContext(context.Background(), "SELECT v FROM fr.t WHERE id = 1").Scan(&v))
		require.GreaterOrEqual(t, v, want, "point get on a follower missed an acknowledged write")
		want = acked.Load()
		require.NoError(t, conn.QueryRowContext(context.Background(), "SELECT SUM(v) FROM fr.t").Scan(&v))
		require.GreaterOrEqual(t, v, want, "coprocessor read on a follower missed an acknowledged write")
	}
	cancel()
	wg.Wait()
	require.Greater(t, readsOn(t, c, followerReads, leader), before, "no read was served by a follower")

	// A locking read stays on the leader and still works.
	tx, err := db.Begin()
	require.NoError(t, err)
	var v int64
	require.NoError(t, tx.QueryRow("SELECT v FROM fr.t WHERE id = 2 FOR UPDATE").Scan(&v))
	require.NoError(t, tx.Rollback())

	_, err = conn.ExecContext(context.Background(), "SET tidb_replica_read = 'nearest'")
	requireMySQLError(t, err, 1231)
}

// TestStaleRead: SELECT ... AS OF TIMESTAMP returns the value as of that
// time after an update, served by a follower once its safe ts passed it;
// START TRANSACTION READ ONLY AS OF TIMESTAMP reads the same; a future
// time and a write with AS OF are refused. TIDB_PARSE_TSO names the time
// by its TSO, and tidb_snapshot reads the whole session at it.
func TestStaleRead(t *testing.T) {
	c := startCluster(t, clusterOpts{})
	db := openDB(t, c, 0, "")
	mustExec(t, db, "CREATE DATABASE sr")
	mustExec(t, db, "CREATE TABLE sr.t (id INT PRIMARY KEY, v INT)")
	mustExec(t, db, "INSERT INTO sr.t VALUES (1, 1), (2, 10)")
	var t0 string
	require.NoError(t, db.QueryRow("SELECT NOW(3)").Scan(&t0))
	waitClockPast(t, db, t0)
	mustExec(t, db, "UPDATE sr.t SET v = 2 WHERE id = 1")
	leader, err := leaderStoreOf(db, "sr.t")
	require.NoError(t, err)
	before := readsOn(t, c, staleReads, leader)

	q := "SELECT v FROM sr.t AS OF TIMESTAMP '" + t0 + "' WHERE id = 1"
	deadline := time.Now().Add(20 * time.Second)
	for {
		var v int64
		require.NoError(t, db.QueryRow(q).Scan(&v))
		require.EqualValues(t, 1, v, "stale read returned a value written after its timestamp")
		var sum int64
		require.NoError(t, db.QueryRow("SELECT SUM(v) FROM sr.t AS OF TIMESTAMP '"+t0+"'").Scan(&sum))
		require.EqualValues(t, 11, sum)
		if readsOn(t, c, staleReads, leader) > before {
			break
		}
		require.True(t, time.Now().Before(deadline), "no stale read served by a follower")
		time.Sleep(50 * time.Millisecond)
	}
	var v int64
	require.NoError(t, db.QueryRow("SELECT v FROM sr.t WHERE id = 1").Scan(&v))
	require.EqualValues(t, 2, v)

	conn, err := db.Conn(context.Background())
	require.NoError(t, err)
	defer conn.Close()
	bg := context.Background()
	_, err = conn.ExecContext(bg, "START TRANSACTION READ ONLY AS OF TIMESTAMP '"+t0+"'")
	require.NoError(t, err)
	require.NoError(t, conn.QueryRowContext(bg, "SELECT v FROM sr.t WHERE id = 1").Scan(&v))
	require.EqualValues(t, 1, v)
	_, err = conn.ExecContext(bg, "UPDATE sr.t SET v = 3 WHERE id = 1")
	require.Error(t, err, "a stale read-only transaction refuses writes")
	_, err = conn.ExecContext(bg, "COMMIT")
	require.NoError(t, err)

	_, err = db.Exec("SELECT v FROM sr.t AS OF TIMESTAMP '2999-01-01 00:00:00' WHERE id = 1")
	requireMySQLError(t, err, 8135)
	_, err = db.Exec("UPDATE sr.t AS OF TIMESTAMP '" + t0 + "' SET v = 5 WHERE id = 1")
	require.Error(t, err)
	_, err = db.Exec("SELECT v FROM sr.t AS OF TIMESTAMP '" + t0 + "' WHERE id = 1 FOR UPDATE")
	requireMySQLError(t, err, 8135)

	// The same snapshot named by its TSO (the SQL node runs in this
	// process's time zone).
	at, err := time.ParseInLocation("2006-01-02 15:04:05.000", t0, time.Local)
	require.NoError(t, err)
	tso := fmt.Sprint(uint64(at.UnixMilli()) << 18)
	require.NoError(t, db.QueryRow("SELECT v FROM sr.t AS OF TIMESTAMP TIDB_PARSE_TSO("+tso+") WHERE id = 1").Scan(&v))
	require.EqualValues(t, 1, v)

	// Prepared (binary protocol): the clause is found once, at prepare,
	// and its time bound at each execution.
	ps, err := db.Prepare("SELECT v FROM sr.t AS OF TIMESTAMP ? WHERE id = ?")
	require.NoError(t, err)
	for range 2 {
		require.NoError(t, ps.QueryRow(t0, 1).Scan(&v))
		require.EqualValues(t, 1, v)
	}
	require.NoError(t, ps.Close())
	_, err = db.Exec("UPDATE sr.t AS OF TIMESTAMP ? SET v = 5 WHERE id = ?", t0, 1)
	require.Error(t, err, "a prepared write with AS OF is refused")

	// tidb_snapshot: every read of the session at that time, by datetime
	// or TSO, until it is cleared; writes and locking reads refused.
	for _, snapshot := range []string{t0, tso} {
		_, err = conn.ExecContext(bg, "SET @@tidb_snapshot = '"+snapshot+"'")
		require.NoError(t, err)
		require.NoError(t, conn.QueryRowContext(bg, "SELECT v FROM sr.t WHERE id = 1").Scan(&v))
		require.EqualValues(t, 1, v, "tidb_snapshot %s: point get", snapshot)
		var sum int64
		require.NoError(t, conn.QueryRowContext(bg, "SELECT SUM(v) FROM sr.t").Scan(&sum))
		require.EqualValues(t, 11, sum, "tidb_snapshot %s: scan", snapshot)
		_, err = conn.ExecContext(bg, "BEGIN")
		require.NoError(t, err)
		require.NoError(t, conn.QueryRowContext(bg, "SELECT v FROM sr.t WHERE id = 1").Scan(&v))
		require.EqualValues(t, 1, v, "tidb_snapshot %s: in a transaction", snapshot)
		_, err = conn.ExecContext(bg, "SET @@tidb_snapshot = ''")
		requireMySQLError(t, err, 1568)
		_, err = conn.ExecContext(bg, "COMMIT")
		require.NoError(t, err)
		_, err = conn.ExecContext(bg, "UPDATE sr.t SET v = 3 WHERE id = 1")
		requireMySQLError(t, err, 1105)
		_, err = conn.ExecContext(bg, "SELECT v FROM sr.t WHERE id = 1 FOR UPDATE")
		requireMySQLError(t, err, 1105)
		_, err = conn.ExecContext(bg, "CREATE TABLE sr.u (id INT)")
		requireMySQLError(t, err, 1105)
	}
	var text string
	require.NoError(t, conn.QueryRowContext(bg, "SELECT @@tidb_snapshot").Scan(&text))
	require.Equal(t, tso, text)
	for _, bad := range []string{"2999-01-01 00:00:00", "yesterday"} {
		_, err = conn.ExecContext(bg, "SET @@tidb_snapshot = '"+bad+"'")
		requireMySQLError(t, err, 1231)
	}
	_, err = conn.ExecContext(bg, "SET GLOBAL tidb_snapshot = '"+tso+"'")
	requireMySQLError(t, err, 1228)
	_, err = conn.ExecContext(bg, "SET @@tidb_snapshot = ''")
	require.NoError(t, err)
	require.NoError(t, conn.QueryRowContext(bg, "SELECT v FROM sr.t WHERE id = 1").Scan(&v))
	require.EqualValues(t, 2, v)
	_, err = conn.ExecContext(bg, "UPDATE sr.t SET v = 3 WHERE id = 1")
	require.NoError(t, err)
}

// waitClockPast polls until the SQL node's NOW(3) is past t.
func waitClockPast(t *testing.T, db *sql.DB, t0 string) {
	t.Helper()
	for {
		var now string
		require.NoError(t, db.QueryRow("SELECT NOW(3)").Scan(&now))
		if now > t0 {
			return
		}
	}
}
