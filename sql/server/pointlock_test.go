package server_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/server"
	"github.com/stratadb/strata/store/storetest"
)

// TestPessimisticPointWriteReadsOnlyThroughItsLock: an UPDATE, DELETE or
// SELECT ... FOR UPDATE of one row by its handle in a pessimistic
// transaction takes the row's latest value from its lock request, so it
// sends no read of the snapshot (one request less per statement, as
// TiDB's point get with lock); WHERE is still checked on that latest
// value. An optimistic transaction reads its snapshot as before. The
// statements are autocommit ones run pessimistically
// (--pessimistic-auto-commit), as every statement inside BEGIN is.
func TestPessimisticPointWriteReadsOnlyThroughItsLock(t *testing.T) {
	ts, _ := startServerWith(t, func(c *server.Config) { c.PessimisticAutoCommit = true })
	db := ts.open(t, "test", "")
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		"CREATE TABLE pl (id INT PRIMARY KEY, v INT, s VARCHAR(10), KEY sv (s))",
		"INSERT INTO pl VALUES (1, 0, 'a'), (2, 0, 'b'), (3, 0, 'c')",
	} {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	// Count the requests of the table's keys (background readers of the
	// catalog and privileges send others): faults that answer nothing
	// themselves, so the store serves each request.
	st, match := ts.store.st, touchesTable(ts.store.tableID(t, "test", "pl"))
	count := func(method string) func() int {
		f := &storetest.Fault{Method: method, Match: match}
		t.Cleanup(st.Inject(f))
		return func() int { return st.Hits(f) }
	}
	gets, batchGets, lockReqs := count("KvGet"), count("KvBatchGet"), count("KvPessimisticLock")
	reads := func() int { return gets() + batchGets() }
	locks := lockReqs

	r0, l0 := reads(), locks()
	for range 10 {
		_, err := db.Exec("UPDATE pl SET v = v + 1, s = 'x' WHERE id = 1")
		require.NoError(t, err)
	}
	res, err := db.Exec("UPDATE pl SET v = 100 WHERE id = 2 AND v = 999") // the latest value fails WHERE
	require.NoError(t, err)
	n, err := res.RowsAffected()
	require.NoError(t, err)
	require.Zero(t, n)
	res, err = db.Exec("DELETE FROM pl WHERE id = 3")
	require.NoError(t, err)
	n, err = res.RowsAffected()
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	_, err = db.Exec("UPDATE pl SET v = 5 WHERE id = 42") // no such row: its key is still locked
	require.NoError(t, err)

	tx, err := db.Begin()
	require.NoError(t, err)
	var v int
	require.NoError(t, tx.QueryRow("SELECT v FROM pl WHERE id = 1 FOR UPDATE").Scan(&v))
	require.Equal(t, 10, v)
	require.NoError(t, tx.Commit())
	require.Equal(t, r0, reads(), "no snapshot read beside the lock")
	// One lock request per statement, and one more for the index keys of
	// the statements that change an indexed row (the first UPDATE, the
	// DELETE): the row of id 42 is locked although it does not exist.
	require.Equal(t, l0+16, locks())

	var s string
	require.NoError(t, db.QueryRow("SELECT v, s FROM pl WHERE id = 1").Scan(&v, &s))
	require.Equal(t, 10, v)
	require.Equal(t, "x", s)
	var cnt int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM pl WHERE s = 'x'").Scan(&cnt)) // the index followed
	require.Equal(t, 1, cnt)

	// Optimistic: the snapshot is read, no lock is taken.
	r1, l1 := reads(), locks()
	for _, q := range []string{"BEGIN OPTIMISTIC", "UPDATE pl SET v = v + 1 WHERE id = 1", "COMMIT"} {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	require.Greater(t, reads(), r1)
	require.Equal(t, l1, locks())
	require.NoError(t, db.QueryRow("SELECT v FROM pl WHERE id = 1").Scan(&v))
	require.Equal(t, 11, v)
}
