package tests

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConcurrentUpdatesNoLostUpdate: many clients increment one row at once
// through the real cluster. Autocommit UPDATEs are pessimistic by default:
// each locks the row and reads its latest committed value, the others wait
// for the lock instead of conflicting, so every statement succeeds and the
// counter ends at exactly the number of increments: no lost update.
func TestConcurrentUpdatesNoLostUpdate(t *testing.T) {
	c := startCluster(t, clusterOpts{})
	db := openDB(t, c, 0, "")
	mustExec(t, db, "CREATE DATABASE cnt")
	mustExec(t, db, "CREATE TABLE cnt.counter (id INT PRIMARY KEY, n BIGINT)")
	mustExec(t, db, "INSERT INTO cnt.counter VALUES (1, 0)")

	const workers, each = 8, 20
	errs := make(chan error, workers)
	for range workers {
		go func() {
			for range each {
				if _, err := db.Exec("UPDATE cnt.counter SET n = n + 1 WHERE id = 1"); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		require.NoError(t, <-errs)
	}
	var n int
	require.NoError(t, db.QueryRow("SELECT n FROM cnt.counter WHERE id = 1").Scan(&n))
	require.Equal(t, workers*each, n)
}
