package tests

import (
	"errors"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
)

// TestConcurrentUpdatesNoLostUpdate: many clients increment one row at once
// through the real cluster. Autocommit UPDATEs run optimistic
// (pessimistic-auto-commit = false, as in TiDB): they conflict in the store
// and each is run again at a new timestamp, re-reading the row, up to a
// limit; one that still loses reaches the client as 9007 and was not
// applied. The counter ends at exactly the number of increments the
// clients saw succeed: no lost update.
func TestConcurrentUpdatesNoLostUpdate(t *testing.T) {
	c := startCluster(t, clusterOpts{})
	db := openDB(t, c, 0, "")
	mustExec(t, db, "CREATE DATABASE cnt")
	mustExec(t, db, "CREATE TABLE cnt.counter (id INT PRIMARY KEY, n BIGINT)")
	mustExec(t, db, "INSERT INTO cnt.counter VALUES (1, 0)")

	const workers, each = 8, 20
	type result struct {
		applied int
		err     error
	}
	results := make(chan result, workers)
	for range workers {
		go func() {
			var r result
			for range each {
				_, err := db.Exec("UPDATE cnt.counter SET n = n + 1 WHERE id = 1")
				var me *mysql.MySQLError
				switch {
				case err == nil:
					r.applied++
				case errors.As(err, &me) && me.Number == 9007:
				default:
					r.err = err
					results <- r
					return
				}
			}
			results <- r
		}()
	}
	applied := 0
	for range workers {
		r := <-results
		require.NoError(t, r.err)
		applied += r.applied
	}
	var n int
	require.NoError(t, db.QueryRow("SELECT n FROM cnt.counter WHERE id = 1").Scan(&n))
	require.Equal(t, applied, n, "every increment the clients saw succeed, and no other")
	t.Logf("%d of %d increments applied", applied, workers*each)
}
