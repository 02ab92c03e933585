package server_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConstraintScripts runs testdata/constraint: CHECK constraints
// through CREATE / ALTER TABLE (jobs, validation of existing rows), every
// write path (INSERT, REPLACE, ON DUPLICATE KEY UPDATE, UPDATE, multi-
// table UPDATE, IGNORE, LOAD DATA) and their metadata.
func TestConstraintScripts(t *testing.T) { runScripts(t, "testdata/constraint") }

// TestLoadDataCheck: LOAD DATA checks each row as INSERT does; LOCAL
// implies IGNORE, as in MySQL, so a violating line is skipped with
// warning 3819 and the others load (NULL passes).
func TestLoadDataCheck(t *testing.T) {
	ts := startServer(t)
	db := ts.open(t, "test", "allowAllFiles=true")
	_, err := db.Exec("CREATE TABLE lc (id INT PRIMARY KEY, n INT CHECK (n >= 0))")
	require.NoError(t, err)
	bad := filepath.Join(t.TempDir(), "bad.tsv")
	require.NoError(t, os.WriteFile(bad, []byte("1\t2\n2\t-3\n3\t\\N\n"), 0o600))
	conn, err := db.Conn(t.Context())
	require.NoError(t, err)
	defer conn.Close()
	res, err := conn.ExecContext(t.Context(), "LOAD DATA LOCAL INFILE '"+bad+"' INTO TABLE lc")
	require.NoError(t, err)
	n, err := res.RowsAffected()
	require.NoError(t, err)
	require.Equal(t, int64(2), n)
	var level, code, msg string
	require.NoError(t, conn.QueryRowContext(t.Context(), "SHOW WARNINGS").Scan(&level, &code, &msg))
	require.Equal(t, "Warning 3819 Check constraint 'lc_chk_1' is violated.", level+" "+code+" "+msg)
	require.Equal(t, [][]string{{"1", "2"}, {"3", "NULL"}}, queryStrings(t, db, "SELECT * FROM lc ORDER BY id"))
}
