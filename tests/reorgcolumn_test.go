package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSQLNodeKilledDuringModifyColumn: the DDL owner is killed -9 in the
// middle of the row rewrite of MODIFY COLUMN INT -> VARCHAR on an indexed
// column (a failpoint holds it after its first batch), while the other
// SQL node updates rows (its writes carry the converted value and the
// index copy's entries). The other node takes the owner lease over,
// resumes the rewrite from the persisted checkpoint (ROW_COUNT ends at
// exactly the table's rows) and swaps the column in: ADMIN CHECK TABLE
// passes and every row reads converted, also through the index.
func TestSQLNodeKilledDuringModifyColumn(t *testing.T) {
	c := startCluster(t, clusterOpts{sqlNodes: 2})
	setup := openDB(t, c, 1, "")
	mustExec(t, setup, "CREATE DATABASE kr")
	mustExec(t, setup, "CREATE TABLE kr.t (id INT PRIMARY KEY, c INT NOT NULL, KEY kc (c))")
	const rows = 2000 // several backfill batches of 256
	for lo := 0; lo < rows; lo += 500 {
		var vals []string
		for id := lo; id < lo+500; id++ {
			vals = append(vals, fmt.Sprintf("(%d, %d)", id, id%97))
		}
		mustExec(t, setup, "INSERT INTO kr.t VALUES "+strings.Join(vals, ","))
	}

	victim := restartWithFailpoint(t, c, 0, "ddl-backfill-batch")
	makeDDLOwner(t, c, 0)
	other := openDB(t, c, 1, "")

	alterErr := alterPausedInBackfill(t, c, victim, "ALTER TABLE kr.t MODIFY c VARCHAR(10) NOT NULL")
	job, ok := ddlJobOf(t, other, "modify column", "t")
	require.True(t, ok, "the job is listed on the other node")
	t.Logf("paused: %+v", job)
	require.Equal(t, "write reorganization", job.schema)
	require.Equal(t, "running", job.state)
	require.Greater(t, job.rows, int64(0), "a batch committed before the pause")
	require.Less(t, job.rows, int64(rows))
	// DML while the owner hangs: rows both behind and ahead of the
	// checkpoint change, with the changing column written by this node.
	for id := 0; id < rows; id += 37 {
		mustExec(t, other, fmt.Sprintf("UPDATE kr.t SET c = c + 1000 WHERE id = %d", id))
	}
	require.NoError(t, c.SQL[0].Kill())
	killed := time.Now()
	requireConnLost(t, alterErr)

	require.Eventually(t, func() bool {
		j, ok := ddlJobOf(t, other, "modify column", "t")
		job = j
		return ok && j.state == "synced"
	}, 120*time.Second, 200*time.Millisecond, "the other node finishes the job")
	t.Logf("the other node finished the job %v after the kill: %+v", time.Since(killed), job)
	require.Equal(t, "public", job.schema)
	require.Equal(t, int64(rows), job.rows, "the rewrite resumed from its checkpoint: every row rewritten once")

	mustExec(t, other, "ADMIN CHECK TABLE kr.t")
	require.Equal(t, [][]string{{"varchar(10)", "NO"}}, queryRows(t, other,
		"SELECT COLUMN_TYPE, IS_NULLABLE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'kr' AND TABLE_NAME = 't' AND COLUMN_NAME = 'c'"))
	require.Equal(t, [][]string{{"0", "1000"}, {"37", "1037"}, {"38", "38"}}, queryRows(t, other,
		"SELECT id, c FROM kr.t WHERE id IN (0, 37, 38) ORDER BY id"))
	for _, v := range []string{"1005", "5", "96"} {
		q := "SELECT id FROM kr.t %s INDEX (kc) WHERE c = '" + v + "' ORDER BY id"
		got := queryRows(t, other, fmt.Sprintf(q, "FORCE"))
		require.NotEmpty(t, got, v)
		require.Equal(t, queryRows(t, other, fmt.Sprintf(q, "IGNORE")), got, v)
	}
	// The column is a string column from now on, and indexed as one.
	mustExec(t, other, "INSERT INTO kr.t VALUES (100000, 'abc')")
	require.Equal(t, [][]string{{"100000"}}, queryRows(t, other, "SELECT id FROM kr.t FORCE INDEX (kc) WHERE c = 'abc'"))
	mustExec(t, other, "ADMIN CHECK TABLE kr.t")
}
