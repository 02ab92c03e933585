package tests

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSchemaVersionAcrossNodes: SQL nodes share one schema version. A
// TRUNCATE on node 0 returns only once node 1 writes under the table's new
// id (before schema versions node 1 kept its cached definition for up to
// 5 s and its rows went to the dead id: lost); a transaction on node 1
// that wrote the table before a schema change of it fails at COMMIT with
// 8028 and writes nothing; an autocommit statement is not affected.
func TestSchemaVersionAcrossNodes(t *testing.T) {
	c := startCluster(t, clusterOpts{sqlNodes: 2})
	a, b := openDB(t, c, 0, ""), openDB(t, c, 1, "")
	mustExec(t, a, "CREATE DATABASE sv")
	mustExec(t, a, "CREATE TABLE sv.t (id INT PRIMARY KEY, v INT)")
	mustExec(t, b, "INSERT INTO sv.t VALUES (1, 1)") // node 1 caches sv.t

	begin := time.Now()
	mustExec(t, a, "TRUNCATE TABLE sv.t")
	t.Logf("TRUNCATE took %v", time.Since(begin))
	mustExec(t, b, "INSERT INTO sv.t VALUES (2, 2)")
	var ids []int
	rows, err := a.Query("SELECT id FROM sv.t ORDER BY id")
	require.NoError(t, err)
	for rows.Next() {
		var id int
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []int{2}, ids, "node 1's insert after TRUNCATE returned is in the new table")

	ctx := context.Background()
	tx, err := b.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.Exec("INSERT INTO sv.t VALUES (3, 3)")
	require.NoError(t, err)
	mustExec(t, a, "ALTER TABLE sv.t ADD INDEX v_1 (v)")
	requireMySQLError(t, tx.Commit(), 8028)
	var n int
	require.NoError(t, a.QueryRow("SELECT COUNT(*) FROM sv.t WHERE id = 3").Scan(&n))
	require.Zero(t, n, "the refused transaction wrote nothing")
	// Node 1 now writes with the index: ADMIN CHECK finds its entry.
	mustExec(t, b, "INSERT INTO sv.t VALUES (4, 4)")
	mustExec(t, a, "ADMIN CHECK TABLE sv.t")
}
