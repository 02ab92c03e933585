package server_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/store/storetest"
)

// TestAutocommitUpdateRPCs: an autocommit single-row UPDATE in the default
// pessimistic mode runs optimistic (pessimistic-auto-commit = false): one
// 1PC prewrite, no pessimistic lock and no commit request.
func TestAutocommitUpdateRPCs(t *testing.T) {
	ts := startServer(t)
	db := ts.open(t, "test", "")
	db.SetMaxOpenConns(1)
	_, err := db.Exec("CREATE TABLE c (id INT PRIMARY KEY, n INT)")
	require.NoError(t, err)
	_, err = db.Exec("INSERT INTO c VALUES (1, 0)")
	require.NoError(t, err)
	touches := touchesTable(ts.store.tableID(t, "test", "c"))
	methods := []string{"KvPessimisticLock", "KvPrewrite", "KvCommit"}
	counts := make([]atomic.Int64, len(methods))
	for i, m := range methods {
		// Match counts and never matches: the requests run normally.
		remove := ts.store.st.Inject(&storetest.Fault{Method: m, Match: func(req proto.Message) bool {
			if touches(req) {
				counts[i].Add(1)
			}
			return false
		}})
		defer remove()
	}
	const n = 10
	for range n {
		_, err = db.Exec("UPDATE c SET n = n + 1 WHERE id = 1")
		require.NoError(t, err)
	}
	got := map[string]int64{}
	for i, m := range methods {
		got[m] = counts[i].Load()
	}
	t.Logf("requests for %d autocommit UPDATEs: %v", n, got)
	require.Zero(t, got["KvPessimisticLock"])
	require.Equal(t, int64(n), got["KvPrewrite"], "one 1PC prewrite each")
	require.Zero(t, got["KvCommit"])
	require.Equal(t, [][]string{{"10"}}, queryStrings(t, db, "SELECT n FROM c WHERE id = 1"))
}

// TestAutocommitBehindPessimisticTxn: an autocommit UPDATE of a row an
// explicit pessimistic transaction has locked waits for it (or conflicts
// and is run again at a new timestamp) and applies on top of its write;
// the explicit transaction's statement is never run again.
func TestAutocommitBehindPessimisticTxn(t *testing.T) {
	ts := startServer(t)
	a := ts.open(t, "test", "")
	a.SetMaxOpenConns(1)
	b := ts.open(t, "test", "")
	_, err := a.Exec("CREATE TABLE c (id INT PRIMARY KEY, n INT)")
	require.NoError(t, err)
	_, err = a.Exec("INSERT INTO c VALUES (1, 0)")
	require.NoError(t, err)
	retriesBefore := counter(t, "strata_sql_statement_retries_total")
	for _, q := range []string{"BEGIN PESSIMISTIC", "UPDATE c SET n = n + 10 WHERE id = 1"} {
		_, err := a.Exec(q)
		require.NoError(t, err, q)
	}
	done := make(chan error, 1)
	go func() {
		_, err := b.Exec("UPDATE c SET n = n + 1 WHERE id = 1")
		done <- err
	}()
	_, err = a.Exec("COMMIT")
	require.NoError(t, err)
	require.NoError(t, <-done)
	require.Equal(t, [][]string{{"11"}}, queryStrings(t, a, "SELECT n FROM c WHERE id = 1"))
	t.Logf("statement retries: %v", counter(t, "strata_sql_statement_retries_total")-retriesBefore)
}

// BenchmarkAutocommitUpdate: single-row autocommit UPDATEs by primary key
// (sysbench oltp_update_non_index) from one connection over the
// in-process store.
func BenchmarkAutocommitUpdate(b *testing.B) {
	ts := startServer(b)
	db := ts.open(b, "test", "")
	db.SetMaxOpenConns(1)
	_, err := db.Exec("CREATE TABLE sbtest (id INT PRIMARY KEY, k INT NOT NULL)")
	require.NoError(b, err)
	for i := 1; i <= 100; i++ {
		_, err := db.Exec(fmt.Sprintf("INSERT INTO sbtest VALUES (%d, 0)", i))
		require.NoError(b, err)
	}
	stmt, err := db.Prepare("UPDATE sbtest SET k = k + 1 WHERE id = ?")
	require.NoError(b, err)
	defer stmt.Close()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := stmt.Exec(i%100 + 1); err != nil {
			b.Fatal(err)
		}
	}
}
