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

// TestLoadDataCheck: LOAD DATA checks each row as INSERT does: a
// violation fails the statement with 3819 and loads nothing; NULL passes.
// (The parser makes LOCAL mean IGNORE, as MySQL does, but Strata's LOAD
// DATA keeps INSERT's errors either way: loaddata.go.)
func TestLoadDataCheck(t *testing.T) {
	ts := startServer(t)
	db := ts.open(t, "test", "allowAllFiles=true")
	_, err := db.Exec("CREATE TABLE lc (id INT PRIMARY KEY, n INT CHECK (n >= 0))")
	require.NoError(t, err)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.tsv")
	require.NoError(t, os.WriteFile(bad, []byte("1\t2\n2\t-3\n3\t\\N\n"), 0o600))
	_, err = db.Exec("LOAD DATA LOCAL INFILE '" + bad + "' INTO TABLE lc")
	require.Equal(t, uint16(3819), mysqlCode(err), "%v", err)
	require.Equal(t, [][]string{{"0"}}, queryStrings(t, db, "SELECT COUNT(*) FROM lc"))
	good := filepath.Join(dir, "good.tsv")
	require.NoError(t, os.WriteFile(good, []byte("1\t2\n3\t\\N\n"), 0o600))
	_, err = db.Exec("LOAD DATA LOCAL INFILE '" + good + "' INTO TABLE lc")
	require.NoError(t, err)
	require.Equal(t, [][]string{{"1", "2"}, {"3", "NULL"}}, queryStrings(t, db, "SELECT * FROM lc ORDER BY id"))
}
