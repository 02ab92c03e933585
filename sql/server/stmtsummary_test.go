package server_test

import (
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStatementsSummary: statements are aggregated by schema and digest
// (the same normalized text whatever its literals or parameters, through
// either protocol), with
// their executions, errors and rows; only PROCESS holders read it.
func TestStatementsSummary(t *testing.T) {
	ts := startServer(t)
	db := ts.open(t, "test", "")
	_, err := db.Exec("CREATE TABLE ss (id INT PRIMARY KEY, v INT)")
	require.NoError(t, err)
	for i := range 3 {
		_, err = db.Exec("INSERT INTO ss VALUES (?, ?)", i, i) // prepared
		require.NoError(t, err)
	}
	_, err = db.Exec("INSERT INTO ss VALUES (1, 1)")
	require.Error(t, err) // a duplicate: counted as an error
	var n int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM ss WHERE id > 0").Scan(&n))
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM ss WHERE id > 1").Scan(&n))

	rows := queryStrings(t, db, `SELECT STMT_TYPE, SCHEMA_NAME, DIGEST_TEXT, EXEC_COUNT, SUM_ERRORS, SUM_RESULT_ROWS, PREPARED
		FROM information_schema.STATEMENTS_SUMMARY WHERE DIGEST_TEXT LIKE '%ss%' ORDER BY DIGEST_TEXT, PREPARED`)
	require.Equal(t, [][]string{
		{"CreateTable", "test", "create table `ss` ( `id` int primary key , `v` int )", "1", "0", "0", "0"},
		// Prepared or not, one digest (PREPARED: the first execution's).
		{"Insert", "test", "insert into `ss` values ( ... )", "4", "1", "3", "1"},
		{"Select", "test", "select count ( ? ) from `ss` where `id` > ?", "2", "0", "2", "0"},
	}, rows)
	var sum, maxL, p99 uint64
	require.NoError(t, db.QueryRow(`SELECT SUM_LATENCY, MAX_LATENCY, P99_LATENCY FROM information_schema.STATEMENTS_SUMMARY
		WHERE DIGEST_TEXT LIKE 'select count%' AND SCHEMA_NAME = 'test'`).Scan(&sum, &maxL, &p99))
	require.Greater(t, sum, uint64(0))
	require.GreaterOrEqual(t, sum, maxL)
	require.LessOrEqual(t, p99, maxL)
	require.Empty(t, queryStrings(t, db, "SELECT * FROM information_schema.STATEMENTS_SUMMARY_HISTORY"), "no window has ended")

	_, err = db.Exec("CREATE USER carol IDENTIFIED BY 'pw'")
	require.NoError(t, err)
	_, err = db.Exec("GRANT SELECT ON test.* TO carol")
	require.NoError(t, err)
	carol, err := sql.Open("mysql", ts.dsn("carol", "pw", "test", ""))
	require.NoError(t, err)
	defer carol.Close()
	require.Empty(t, queryStrings(t, carol, "SELECT DIGEST FROM information_schema.STATEMENTS_SUMMARY"), "without PROCESS")
}
