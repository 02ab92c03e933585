package server_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGeneratedScripts runs testdata/generated: generated columns
// (VIRTUAL and STORED) through DDL, every write path, reads on the SQL
// node and pushed down, indexes on them and ADMIN CHECK TABLE.
func TestGeneratedScripts(t *testing.T) { runScripts(t, "testdata/generated") }

// TestLoadDataGenerated: LOAD DATA computes generated columns as INSERT
// does, and refuses a value for one that is not the computed one (3105).
func TestLoadDataGenerated(t *testing.T) {
	ts := startServer(t)
	db := ts.open(t, "test", "allowAllFiles=true")
	_, err := db.Exec("CREATE TABLE lg (id INT PRIMARY KEY, n INT, sq INT AS (n * n) STORED, neg INT AS (-n) VIRTUAL, KEY (neg))")
	require.NoError(t, err)
	dir := t.TempDir()
	base := filepath.Join(dir, "base.tsv")
	require.NoError(t, os.WriteFile(base, []byte("1\t2\n2\t3\n3\t\\N\n"), 0o600))
	_, err = db.Exec("LOAD DATA LOCAL INFILE '" + base + "' INTO TABLE lg (id, n)")
	require.NoError(t, err)
	require.Equal(t, [][]string{{"1", "2", "4", "-2"}, {"2", "3", "9", "-3"}, {"3", "NULL", "NULL", "NULL"}}, queryStrings(t, db, "SELECT * FROM lg ORDER BY id"))
	require.Equal(t, [][]string{{"2"}}, queryStrings(t, db, "SELECT id FROM lg WHERE neg = -3"))

	all := filepath.Join(dir, "all.tsv")
	require.NoError(t, os.WriteFile(all, []byte("4\t5\t25\t-5\n5\t6\t7\t-6\n"), 0o600))
	_, err = db.Exec("LOAD DATA LOCAL INFILE '" + all + "' INTO TABLE lg")
	require.Equal(t, uint16(3105), mysqlCode(err), "%v", err)
	require.Equal(t, [][]string{{"3"}}, queryStrings(t, db, "SELECT COUNT(*) FROM lg"))
	_, err = db.Exec("ADMIN CHECK TABLE lg")
	require.NoError(t, err)
}
