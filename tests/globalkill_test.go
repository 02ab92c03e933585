package tests

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/internal/promtext"
)

// TestGlobalKill: two SQL nodes, A and B. A connection on A appears in
// information_schema.CLUSTER_PROCESSLIST queried on B under A's status
// address; KILL QUERY from B ends its SLEEP (which returns 1, as MySQL's
// SLEEP does when it is all the statement does) and its lock wait (1317);
// KILL from B closes it; an id no node holds is 1094; and once A is
// killed, CLUSTER_PROCESSLIST on B answers at once with a warning naming A.
func TestGlobalKill(t *testing.T) {
	c := startCluster(t, clusterOpts{sqlNodes: 2})
	ctx := context.Background()
	aStatus := c.SQL[0].Flag("--status-addr")
	onB := openDB(t, c, 1, "test")
	onB.SetMaxOpenConns(2)
	victim, err := openDB(t, c, 0, "test").Conn(ctx) // one connection on A, never replaced
	require.NoError(t, err)
	t.Cleanup(func() { _ = victim.Close() })
	var aID, bID uint64
	require.NoError(t, victim.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&aID))
	require.NoError(t, onB.QueryRow("SELECT CONNECTION_ID()").Scan(&bID))
	require.NotZero(t, aID>>21, "connection ids carry a server id")
	require.NotEqual(t, aID>>21, bID>>21, "each node has its own server id")
	id := strconv.FormatUint(aID, 10)

	// listed on B while it runs
	waitRunning := func(info string) {
		t.Helper()
		require.Eventually(t, func() bool {
			rows, err := onB.Query("SELECT INSTANCE, ID, INFO FROM information_schema.CLUSTER_PROCESSLIST")
			require.NoError(t, err)
			defer rows.Close()
			for rows.Next() {
				var inst, rid string
				var q sql.NullString
				require.NoError(t, rows.Scan(&inst, &rid, &q))
				if rid == id && q.String == info {
					require.Equal(t, aStatus, inst)
					return true
				}
			}
			require.NoError(t, rows.Err())
			return false
		}, 20*time.Second, 50*time.Millisecond, "A's %q in CLUSTER_PROCESSLIST on B", info)
	}

	slept := make(chan error, 1)
	start := time.Now()
	go func() {
		var v int
		err := victim.QueryRowContext(ctx, "SELECT SLEEP(30)").Scan(&v)
		if err == nil && v != 1 {
			err = errors.New("SLEEP returned " + strconv.Itoa(v) + ", not 1")
		}
		slept <- err
	}()
	waitRunning("SELECT SLEEP(30)")
	_, err = onB.Exec("KILL QUERY " + id)
	require.NoError(t, err)
	select {
	case err := <-slept:
		require.NoError(t, err)
		require.Less(t, time.Since(start), 20*time.Second)
	case <-time.After(20 * time.Second):
		t.Fatal("KILL QUERY from B did not end the SLEEP on A")
	}

	// A statement of A waiting for a row lock B holds: 1317.
	_, err = onB.Exec("CREATE TABLE gk (id INT PRIMARY KEY, v INT)")
	require.NoError(t, err)
	_, err = onB.Exec("INSERT INTO gk VALUES (1, 0)")
	require.NoError(t, err)
	tx, err := onB.Begin()
	require.NoError(t, err)
	_, err = tx.Exec("UPDATE gk SET v = 1 WHERE id = 1")
	require.NoError(t, err)
	waited := make(chan error, 1)
	go func() {
		_, err := victim.ExecContext(ctx, "UPDATE gk SET v = 2 WHERE id = 1")
		waited <- err
	}()
	waitRunning("UPDATE gk SET v = 2 WHERE id = 1")
	_, err = onB.Exec("KILL QUERY " + id)
	require.NoError(t, err)
	select {
	case err := <-waited:
		var me *mysql.MySQLError
		require.ErrorAs(t, err, &me)
		require.Equal(t, uint16(1317), me.Number, "%v", err)
		require.Equal(t, "Query execution was interrupted", me.Message)
	case <-time.After(20 * time.Second):
		t.Fatal("KILL QUERY from B did not end A's lock wait")
	}
	require.NoError(t, tx.Rollback())
	var v int
	require.NoError(t, victim.QueryRowContext(ctx, "SELECT v FROM gk WHERE id = 1").Scan(&v), "KILL QUERY leaves the connection usable")
	require.Equal(t, 0, v)

	// KILL from B closes the connection on A.
	_, err = onB.Exec("KILL " + id)
	require.NoError(t, err)
	_, err = victim.ExecContext(ctx, "SELECT 1")
	require.Error(t, err, "A's connection is closed")

	// Ids no node holds: 1094.
	for _, unknown := range []uint64{aID + 2<<21, 1 << 40, aID | 1} {
		_, err = onB.Exec("KILL " + strconv.FormatUint(unknown, 10))
		var me *mysql.MySQLError
		require.ErrorAs(t, err, &me)
		require.Equal(t, uint16(1094), me.Number, "%d: %v", unknown, err)
		require.Equal(t, "Unknown thread id: "+strconv.FormatUint(unknown, 10), me.Message)
	}
	m, err := promtext.Fetch(ctx, c.SQL[1].Flag("--status-addr"))
	require.NoError(t, err)
	require.Equal(t, 3.0, m.Sum("strata_sql_kill_total", map[string]string{"scope": "remote", "outcome": "ok"}))

	// A dies; its lease still lists it, but B does not wait for it.
	require.NoError(t, c.SQL[0].Kill())
	start = time.Now()
	rows, err := onB.Query("SELECT ID FROM information_schema.CLUSTER_PROCESSLIST")
	require.NoError(t, err)
	n := 0
	for rows.Next() {
		n++
	}
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())
	require.Less(t, time.Since(start), 5*time.Second)
	require.GreaterOrEqual(t, n, 1, "B's own connections")
	var level, code, msg string
	conn, err := onB.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(ctx, "SELECT COUNT(*) FROM information_schema.CLUSTER_PROCESSLIST")
	require.NoError(t, err)
	require.NoError(t, conn.QueryRowContext(ctx, "SHOW WARNINGS").Scan(&level, &code, &msg))
	require.True(t, strings.Contains(msg, aStatus) && strings.Contains(msg, "did not answer"), msg)
}
