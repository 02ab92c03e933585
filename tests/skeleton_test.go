package tests

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
)

// TestWalkingSkeleton drives the whole path (MySQL protocol → SQL node → PD
// TSO and routing → Raft on three stores → Pebble) and proves that
// acknowledged rows survive a store crash, a restart, and kill -9 of every
// process.
func TestWalkingSkeleton(t *testing.T) {
	c := startCluster(t, clusterOpts{})
	db := openDB(t, c, 0, "")

	mustExec(t, db, "CREATE DATABASE d")
	mustExec(t, db, "CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(20))")

	// 1,000 rows: 900 in multi-row statements, 100 one by one.
	next := 0
	insertRows := func(n, perStmt int) {
		for n > 0 {
			k := min(n, perStmt)
			vals := make([]string, k)
			for j := range vals {
				vals[j] = fmt.Sprintf("(%d,'v%d')", next, next)
				next++
			}
			mustExec(t, db, "INSERT INTO d.t VALUES "+strings.Join(vals, ","))
			n -= k
		}
	}
	insertRows(900, 100)
	insertRows(100, 1)
	checkRows(t, db, next)

	// Duplicate primary key: MySQL error 1062, nothing written.
	_, err := db.Exec("INSERT INTO d.t VALUES (5,'dup')")
	requireMySQLError(t, err, 1062)
	var v string
	require.NoError(t, db.QueryRow("SELECT v FROM d.t WHERE id = 5").Scan(&v))
	require.Equal(t, "v5", v)

	// A store crashes: writes and reads go on with the other two.
	require.NoError(t, c.Stores[0].Kill())
	insertRows(100, 10)
	checkRows(t, db, next)

	// It comes back and catches up; then another store crashes, so the
	// restarted one must be part of every quorum from now on.
	require.NoError(t, c.Stores[0].Start())
	insertRows(50, 10)
	require.NoError(t, c.Stores[1].Kill())
	insertRows(50, 10)
	checkRows(t, db, next)
	require.NoError(t, c.Stores[1].Start())

	// kill -9 of every process, then a restart: every acknowledged row is
	// there, and the restarted SQL node finds the table in the catalog.
	c.Kill()
	require.NoError(t, c.Start())
	waitReady(t, c)
	db2 := openDB(t, c, 0, "d")
	checkRows(t, db2, next)
	mustExec(t, db2, fmt.Sprintf("INSERT INTO t VALUES (%d,'v%d')", next, next))
	checkRows(t, db2, next+1)
}

// checkRows asserts that d.t holds exactly ids 0..n-1 with their values,
// through COUNT(*), point selects and a full scan.
func checkRows(t *testing.T, db *sql.DB, n int) {
	t.Helper()
	var count int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM d.t").Scan(&count))
	require.Equal(t, n, count)

	for _, id := range []int{0, n / 2, n - 1} {
		var v string
		require.NoError(t, db.QueryRow(fmt.Sprintf("SELECT v FROM d.t WHERE id = %d", id)).Scan(&v), "id %d", id)
		require.Equal(t, fmt.Sprintf("v%d", id), v)
	}

	rows, err := db.Query("SELECT id, v FROM d.t")
	require.NoError(t, err)
	defer rows.Close()
	seen := make([]bool, n)
	for rows.Next() {
		var id int
		var v string
		require.NoError(t, rows.Scan(&id, &v))
		require.Equal(t, fmt.Sprintf("v%d", id), v)
		require.True(t, id >= 0 && id < n && !seen[id], "unexpected or repeated id %d", id)
		seen[id] = true
	}
	require.NoError(t, rows.Err())
	for id, ok := range seen {
		require.True(t, ok, "id %d missing from the scan", id)
	}
}

func mustExec(t testing.TB, db *sql.DB, q string) {
	t.Helper()
	start := time.Now()
	_, err := db.Exec(q)
	require.NoError(t, err, "%.80s (after %s)", q, time.Since(start))
}

func requireMySQLError(t *testing.T, err error, code uint16) {
	t.Helper()
	var me *mysql.MySQLError
	require.True(t, errors.As(err, &me), "want MySQL error %d, got %v", code, err)
	require.Equal(t, code, me.Number, me.Message)
}
