package server_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestForeignKeyConcurrentParentDelete: a child INSERT and a DELETE of its
// parent in two pessimistic transactions serialize on the parent's row:
// whichever locks it second waits for the first to commit and then sees
// its result (1451 for the DELETE after the child committed, 1452 for the
// INSERT after the parent's delete committed). Then workers that insert
// children and delete parents at once never leave a child whose parent
// is gone.
func TestForeignKeyConcurrentParentDelete(t *testing.T) {
	ts := startServer(t)
	db := ts.open(t, "test", "")
	for _, q := range []string{
		"CREATE TABLE fp (id INT PRIMARY KEY)",
		"CREATE TABLE fc (id INT PRIMARY KEY, pid INT, CONSTRAINT fk_fc FOREIGN KEY (pid) REFERENCES fp (id))",
		"INSERT INTO fp VALUES (1), (2)",
	} {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	ctx := context.Background()
	conn := func() *sql.Conn {
		c, err := db.Conn(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	a, b := conn(), conn()
	exec := func(c *sql.Conn, q string) error {
		_, err := c.ExecContext(ctx, q)
		return err
	}
	// behind runs held in a transaction of holder, then waiting on waiter,
	// which must wait for holder's lock; holder commits and waiting's
	// error is returned.
	behind := func(holder *sql.Conn, held string, waiter *sql.Conn, waiting string) error {
		require.NoError(t, exec(holder, "BEGIN"))
		require.NoError(t, exec(holder, held))
		done := make(chan error, 1)
		go func() { done <- exec(waiter, waiting) }()
		ts.waitLockWaiters(t, 1)
		require.NoError(t, exec(holder, "COMMIT"))
		return <-done
	}

	// The child first: the DELETE waits for its commit, then fails.
	require.EqualValues(t, 1451, mysqlCode(behind(a, "INSERT INTO fc VALUES (1, 1)", b, "DELETE FROM fp WHERE id = 1")))
	// The parent's delete first: the INSERT waits for its commit, then
	// finds no parent.
	require.EqualValues(t, 1452, mysqlCode(behind(b, "DELETE FROM fp WHERE id = 2", a, "INSERT INTO fc VALUES (2, 2)")))
	require.Equal(t, [][]string{{"1", "1"}}, queryStrings(t, db, "SELECT * FROM fc ORDER BY id"))
	require.Equal(t, [][]string{{"1"}}, queryStrings(t, db, "SELECT * FROM fp ORDER BY id"))

	// Both at once on many parents: every statement either succeeds or
	// fails with its FK error (or a lock error), and no child is left
	// without its parent.
	const parents = 30
	for i := 10; i < 10+parents; i++ {
		_, err := db.Exec(fmt.Sprintf("INSERT INTO fp VALUES (%d)", i))
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*parents)
	run := func(c *sql.Conn, q func(i int) string, allowed ...uint16) {
		defer wg.Done()
		for i := 10; i < 10+parents; i++ {
			err := exec(c, q(i))
			if err == nil {
				continue
			}
			code := mysqlCode(err)
			ok := code == 1205 || code == 1213 // lock wait timeout, deadlock
			for _, a := range allowed {
				ok = ok || code == a
			}
			if !ok {
				errs <- fmt.Errorf("%s: %w", q(i), err)
			}
		}
	}
	wg.Add(2)
	go run(a, func(i int) string { return fmt.Sprintf("INSERT INTO fc VALUES (%d, %d)", 100+i, i) }, 1452)
	go run(b, func(i int) string { return fmt.Sprintf("DELETE FROM fp WHERE id = %d", i) }, 1451)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	require.Equal(t, [][]string{{"0"}}, queryStrings(t, db,
		"SELECT COUNT(*) FROM fc LEFT JOIN fp ON fc.pid = fp.id WHERE fc.pid IS NOT NULL AND fp.id IS NULL"))
}
