package server_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRowAliasProtocols: INSERT ... AS alias ON DUPLICATE KEY UPDATE
// (sql/session rowalias.go) in a multi-statement text, whose earlier
// statement creates the table, and through COM_STMT_PREPARE with ?
// markers; the statement summary keeps the text as sent. The forms and
// errors are in testdata/index/rowalias.
func TestRowAliasProtocols(t *testing.T) {
	ts := startServer(t)
	multi := ts.open(t, "test", "multiStatements=true")
	multi.SetMaxOpenConns(1)
	_, err := multi.Exec("CREATE TABLE ra (id INT PRIMARY KEY, v INT, w INT); " +
		"INSERT INTO ra VALUES (1, 1, 1) AS new ON DUPLICATE KEY UPDATE v = new.v; " +
		"INSERT INTO ra VALUES (1, 5, 5) AS new(i, x, y) ON DUPLICATE KEY UPDATE v = ra.v + x, w = new.i")
	require.NoError(t, err)
	require.Equal(t, [][]string{{"1", "6", "1"}}, queryStrings(t, multi, "SELECT id, v, w FROM ra"))

	// A syntax error after a row alias statement is reported where it is,
	// and nothing of the text runs.
	_, err = multi.Exec("INSERT INTO ra VALUES (2, 2, 2) AS new ON DUPLICATE KEY UPDATE v = new.v; SELEC 1")
	require.Equal(t, uint16(1064), mysqlCode(err))
	require.Contains(t, err.Error(), `near "SELEC 1"`)
	// An error resolving one statement's alias stops the batch there.
	_, err = multi.Exec("INSERT INTO ra VALUES (2, 2, 2) AS new ON DUPLICATE KEY UPDATE v = new.v; " +
		"INSERT INTO ra VALUES (3, 3, 3) AS ra ON DUPLICATE KEY UPDATE v = 0; " +
		"INSERT INTO ra VALUES (4, 4, 4)")
	require.Equal(t, uint16(1066), mysqlCode(err))
	require.Equal(t, [][]string{{"1"}, {"2"}}, queryStrings(t, multi, "SELECT id FROM ra ORDER BY id"))

	// COM_STMT_PREPARE: resolved once, at prepare; executed with markers.
	db := ts.open(t, "test", "")
	st, err := db.Prepare("INSERT INTO ra (id, v) VALUES (?, ?) AS new ON DUPLICATE KEY UPDATE v = ra.v + new.v")
	require.NoError(t, err)
	for range 2 {
		_, err = st.Exec(1, 10)
		require.NoError(t, err)
	}
	require.NoError(t, st.Close())
	_, err = db.Exec("INSERT INTO ra SET id = ?, w = ? AS n(a, b) ON DUPLICATE KEY UPDATE w = b * 2", 2, 21)
	require.NoError(t, err)
	require.Equal(t, [][]string{{"1", "26", "1"}, {"2", "2", "42"}}, queryStrings(t, db, "SELECT id, v, w FROM ra ORDER BY id"))
	_, err = db.Prepare("INSERT INTO ra VALUES (?, ?, ?) AS x(a, b) ON DUPLICATE KEY UPDATE v = a")
	require.Equal(t, uint16(1353), mysqlCode(err))

	// The text as sent, not as parsed, in the statement summary.
	var text string
	require.NoError(t, db.QueryRow("SELECT QUERY_SAMPLE_TEXT FROM information_schema.STATEMENTS_SUMMARY WHERE QUERY_SAMPLE_TEXT LIKE '%AS new(i, x, y)%'").Scan(&text))
	require.Equal(t, "INSERT INTO ra VALUES (1, 5, 5) AS new(i, x, y) ON DUPLICATE KEY UPDATE v = ra.v + x, w = new.i", strings.TrimSpace(text))
}
