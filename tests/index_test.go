package tests

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAddIndexUnderWrites: a table with rows gets a non-unique and a unique
// index (CREATE INDEX, ALTER TABLE ADD UNIQUE) while clients on two SQL
// nodes run INSERT / UPDATE (of the indexed columns) / DELETE without
// pause. The schema changes succeed, the writers see no error other than a
// duplicate primary key of a random INSERT or a retryable lock error, and
// ADMIN CHECK TABLE then finds every row with its entries and no entry
// without its row.
func TestAddIndexUnderWrites(t *testing.T) {
	c := startCluster(t, clusterOpts{sqlNodes: 2})
	admin := openDB(t, c, 0, "")
	mustExec(t, admin, "CREATE DATABASE ix")
	mustExec(t, admin, "CREATE TABLE ix.t (id INT PRIMARY KEY, k INT NOT NULL, u INT, pad VARCHAR(20))")
	const rows = 600
	insertRows(t, admin, "ix.t", rows, func(i int) string { return fmt.Sprintf("(%d, %d, %d, 'p%d')", i, i%37, i, i) })

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var ok atomic.Int64
	errs := make(chan error, 16)
	for w := range 4 {
		db := openDB(t, c, w%2, "ix")
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for ctx.Err() == nil {
				id := r.IntN(rows * 2)
				var q string
				switch r.IntN(4) {
				case 0:
					q = fmt.Sprintf("INSERT INTO t VALUES (%d, %d, %d, 'w')", id, r.IntN(50), id)
				case 1:
					q = fmt.Sprintf("DELETE FROM t WHERE id = %d", id)
				default:
					q = fmt.Sprintf("UPDATE t SET k = %d, pad = 'u%d' WHERE id = %d", r.IntN(50), w, id)
				}
				_, err := db.ExecContext(ctx, q)
				switch code := mysqlErrCode(err); {
				case err == nil:
					ok.Add(1)
				case ctx.Err() != nil:
					return
				case code == 1062 && strings.Contains(err.Error(), "PRIMARY"), code == 1213, code == 1205:
				default:
					errs <- fmt.Errorf("%s: %w", q, err)
					return
				}
			}
		}()
	}
	waitWrites(t, &ok, errs, 50)
	before := ok.Load()
	mustExec(t, admin, "CREATE INDEX k_1 ON ix.t (k)")
	mustExec(t, admin, "ALTER TABLE ix.t ADD UNIQUE INDEX u_1 (u)")
	during := ok.Load() - before
	waitWrites(t, &ok, errs, 50)
	cancel()
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	require.Greater(t, during, int64(100), "writes ran while the indexes were added")
	t.Logf("%d writes while adding the indexes", during)

	mustExec(t, admin, "ADMIN CHECK TABLE ix.t")
	mustExec(t, admin, "ADMIN CHECK INDEX ix.t k_1")
	var n int
	require.NoError(t, admin.QueryRow("SELECT COUNT(*) FROM ix.t").Scan(&n))
	require.Positive(t, n)
	// The unique index is enforced on both SQL nodes.
	var id int
	require.NoError(t, admin.QueryRow("SELECT id FROM ix.t LIMIT 1").Scan(&id))
	for i := range 2 {
		_, err := openDB(t, c, i, "ix").Exec(fmt.Sprintf("INSERT INTO t VALUES (%d, 0, %d, 'dup')", rows*3+i, id))
		requireMySQLError(t, err, 1062)
		require.Contains(t, err.Error(), fmt.Sprintf("Duplicate entry '%d' for key 't.u_1'", id))
	}
}

// waitWrites waits until the writers counted by ok have made n more
// writes, failing the test on the first error they send on errs or when
// they make none for 30 s.
func waitWrites(t *testing.T, ok *atomic.Int64, errs <-chan error, n int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for start := ok.Load(); ok.Load() < start+n; {
		require.True(t, time.Now().Before(deadline), "writers stalled")
		select {
		case err := <-errs:
			t.Fatal(err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// insertRows inserts rows 0..n-1 of table, row(i) giving each one's
// VALUES tuple, 100 rows a statement.
func insertRows(t *testing.T, db *sql.DB, table string, n int, row func(i int) string) {
	t.Helper()
	for lo := 0; lo < n; lo += 100 {
		var vals []string
		for i := lo; i < min(lo+100, n); i++ {
			vals = append(vals, row(i))
		}
		mustExec(t, db, "INSERT INTO "+table+" VALUES "+strings.Join(vals, ", "))
	}
}
