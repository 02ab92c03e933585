package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLargeTransaction: one statement writing 100,000 rows commits (2PC in
// chunks over the regions), and one whose buffer passes the SQL node's
// txn-total-size-limit fails with ERROR 8004 and changes nothing.
func TestLargeTransaction(t *testing.T) {
	c := startCluster(t, clusterOpts{})
	sqlNode := c.SQL[0]
	require.NoError(t, sqlNode.Kill())
	sqlNode.Args = append(sqlNode.Args, "--txn-total-size-limit", fmt.Sprint(24<<20))
	require.NoError(t, sqlNode.Start())
	waitReady(t, c)
	db := openDB(t, c, 0, "")
	mustExec(t, db, "CREATE DATABASE big")
	mustExec(t, db, "CREATE TABLE big.t (id INT PRIMARY KEY, pad VARCHAR(400))")
	mustExec(t, db, "SPLIT TABLE big.t BETWEEN (0) AND (100000) REGIONS 4")

	const rows = 100_000
	var sb strings.Builder
	sb.WriteString("INSERT INTO big.t VALUES ")
	for i := range rows {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, "(%d,'p')", i)
	}
	begin := time.Now()
	res, err := db.ExecContext(context.Background(), sb.String())
	require.NoError(t, err)
	n, err := res.RowsAffected()
	require.NoError(t, err)
	require.EqualValues(t, rows, n)
	t.Logf("INSERT of %d rows (%d bytes of SQL) took %v", rows, sb.Len(), time.Since(begin))
	var count int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM big.t").Scan(&count))
	require.Equal(t, rows, count)

	// 100,000 rows of ~330 bytes: past the 24 MiB limit.
	_, err = db.Exec("UPDATE big.t SET pad = CONCAT(pad, '" + strings.Repeat("x", 320) + "')")
	requireMySQLError(t, err, 8004)
	require.Contains(t, err.Error(), "txn-total-size-limit")
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM big.t WHERE pad = 'p'").Scan(&count))
	require.Equal(t, rows, count, "the refused UPDATE changed nothing")
}
