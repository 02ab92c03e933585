package server_test

import (
	"context"
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/server"
)

// autocommitOutcomes reads strata_sql_autocommit_optimistic_total by
// outcome.
func autocommitOutcomes(t *testing.T) map[string]float64 {
	return labeledCounters(t, "strata_sql_autocommit_optimistic_total")
}

func outcomeDelta(before, after map[string]float64) map[string]float64 {
	d := map[string]float64{}
	for k, v := range after {
		if v-before[k] != 0 {
			d[k] = v - before[k]
		}
	}
	return d
}

// TestAutocommitOptimisticFirst: in pessimistic mode an autocommit write
// commits on its optimistic attempt when nothing is in its way, falls back
// to a pessimistic run (and waits for the lock) when a transaction holds
// its row, loses no update on a hot row, and runs pessimistically only
// with --pessimistic-auto-commit.
func TestAutocommitOptimisticFirst(t *testing.T) {
	ts := startServer(t)
	db := ts.open(t, "test", "")
	_, err := db.Exec("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	require.NoError(t, err)
	_, err = db.Exec("INSERT INTO t VALUES (1, 0), (2, 0), (3, 0)")
	require.NoError(t, err)

	before := autocommitOutcomes(t)
	for i := 0; i < 10; i++ {
		_, err := db.Exec("UPDATE t SET v = v + 1 WHERE id = 3")
		require.NoError(t, err)
	}
	require.Equal(t, map[string]float64{"committed": 10}, outcomeDelta(before, autocommitOutcomes(t)))

	// A transaction holds row 2: the autocommit UPDATE falls back and
	// waits for it, then applies on top of its write.
	holder, err := db.Conn(context.Background())
	require.NoError(t, err)
	defer holder.Close()
	_, err = holder.ExecContext(context.Background(), "BEGIN")
	require.NoError(t, err)
	_, err = holder.ExecContext(context.Background(), "UPDATE t SET v = 10 WHERE id = 2")
	require.NoError(t, err)
	before = autocommitOutcomes(t)
	done := make(chan error, 1)
	go func() {
		_, err := db.Exec("UPDATE t SET v = v + 1 WHERE id = 2")
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for ts.store.st.LockWaiters() != 1 {
		require.True(t, time.Now().Before(deadline), "the autocommit UPDATE never queued for the lock")
		time.Sleep(time.Millisecond)
	}
	require.Equal(t, map[string]float64{"fallback": 1}, outcomeDelta(before, autocommitOutcomes(t)))
	_, err = holder.ExecContext(context.Background(), "COMMIT")
	require.NoError(t, err)
	require.NoError(t, <-done)
	require.Equal(t, [][]string{{"11"}}, queryStrings(t, db, "SELECT v FROM t WHERE id = 2"))

	// A hot row: every increment lands once, whichever attempt commits it.
	const workers, each = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			for i := 0; i < each; i++ {
				if _, err := db.Exec("UPDATE t SET v = v + 1 WHERE id = 1"); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, [][]string{{"100"}}, queryStrings(t, db, "SELECT v FROM t WHERE id = 1"))
}

// TestPessimisticAutoCommit: with the option on, an autocommit write never
// runs optimistically.
func TestPessimisticAutoCommit(t *testing.T) {
	ts, _ := startServerWith(t, func(c *server.Config) { c.PessimisticAutoCommit = true })
	db := ts.open(t, "test", "")
	mustExecAll(t, db, "CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 0)")
	before := autocommitOutcomes(t)
	mustExecAll(t, db, "UPDATE t SET v = 1 WHERE id = 1", "DELETE FROM t WHERE id = 1", "INSERT INTO t VALUES (2, 2)")
	require.Empty(t, outcomeDelta(before, autocommitOutcomes(t)))
}

func mustExecAll(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		_, err := db.Exec(s)
		require.NoError(t, err, s)
	}
}
