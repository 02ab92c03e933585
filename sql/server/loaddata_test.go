package server_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLoadDataLocal streams a file of 2500 rows (three INSERT batches)
// through LOAD DATA LOCAL INFILE, with CSV options and a NULL, then
// loads lines whose keys are taken under LOCAL, IGNORE and REPLACE.
func TestLoadDataLocal(t *testing.T) {
	ts := startServer(t)
	db := ts.open(t, "test", "allowAllFiles=true")
	_, err := db.Exec("CREATE TABLE ld (id INT PRIMARY KEY, name VARCHAR(20), n INT)")
	require.NoError(t, err)
	var b strings.Builder
	b.WriteString("id,name,n\r\n")
	for i := 1; i <= 2500; i++ {
		fmt.Fprintf(&b, "%d,\"n,%d\",%d\r\n", i, i, i*2)
	}
	b.WriteString("2501,\\N,\\N\r\n")
	path := filepath.Join(t.TempDir(), "ld.csv")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o600))
	res, err := db.Exec("LOAD DATA LOCAL INFILE '" + path + "' INTO TABLE ld FIELDS TERMINATED BY ',' ENCLOSED BY '\"' LINES TERMINATED BY '\\r\\n' IGNORE 1 LINES")
	require.NoError(t, err)
	n, err := res.RowsAffected()
	require.NoError(t, err)
	require.Equal(t, int64(2501), n)
	require.Equal(t, [][]string{{"2501", "5002.0000"}}, queryStrings(t, db, "SELECT COUNT(*), SUM(n) / 2500 * 2 FROM ld WHERE id <= 2500 OR name IS NULL"))
	require.Equal(t, [][]string{{"n,7", "14"}}, queryStrings(t, db, "SELECT name, n FROM ld WHERE id = 7"))

	// LOCAL implies IGNORE, as in MySQL: a line whose key is taken is
	// skipped with warning 1062, the others inserted.
	small := filepath.Join(t.TempDir(), "dup.csv")
	require.NoError(t, os.WriteFile(small, []byte("7,seven,70\n9000,new,1\n"), 0o600))
	conn, err := db.Conn(t.Context())
	require.NoError(t, err)
	defer conn.Close()
	for _, tc := range []struct {
		stmt     string
		affected int64
		warnings string
		row7     string
	}{
		{"LOAD DATA LOCAL INFILE '" + small + "' INTO TABLE ld FIELDS TERMINATED BY ','", 1, "1", "n,7 14"},
		{"LOAD DATA LOCAL INFILE '" + small + "' IGNORE INTO TABLE ld FIELDS TERMINATED BY ','", 0, "2", "n,7 14"},
		// REPLACE deletes the row a line meets and inserts the line: each
		// replaced row counts twice, as in MySQL.
		{"LOAD DATA LOCAL INFILE '" + small + "' REPLACE INTO TABLE ld FIELDS TERMINATED BY ','", 4, "0", "seven 70"},
	} {
		res, err := conn.ExecContext(t.Context(), tc.stmt)
		require.NoError(t, err, tc.stmt)
		n, err := res.RowsAffected()
		require.NoError(t, err)
		require.Equal(t, tc.affected, n, tc.stmt)
		var count string
		require.NoError(t, conn.QueryRowContext(t.Context(), "SELECT @@warning_count").Scan(&count))
		require.Equal(t, tc.warnings, count, tc.stmt)
		var name, v string
		require.NoError(t, conn.QueryRowContext(t.Context(), "SELECT name, n FROM ld WHERE id = 7").Scan(&name, &v))
		require.Equal(t, tc.row7, name+" "+v, tc.stmt)
	}
	var code, msg string
	var level string
	_, err = conn.ExecContext(t.Context(), "LOAD DATA LOCAL INFILE '"+small+"' INTO TABLE ld FIELDS TERMINATED BY ','")
	require.NoError(t, err)
	require.NoError(t, conn.QueryRowContext(t.Context(), "SHOW WARNINGS").Scan(&level, &code, &msg))
	require.Equal(t, "Warning 1062 Duplicate entry '7' for key 'ld.PRIMARY'", level+" "+code+" "+msg)
	require.Equal(t, [][]string{{"2502"}}, queryStrings(t, db, "SELECT COUNT(*) FROM ld"))
}
