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
// through LOAD DATA LOCAL INFILE, with CSV options and a NULL.
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

	// A failing row stops the load with its error; the connection stays usable.
	_, err = db.Exec("LOAD DATA LOCAL INFILE '" + path + "' INTO TABLE ld FIELDS TERMINATED BY ',' ENCLOSED BY '\"' LINES TERMINATED BY '\\r\\n' IGNORE 1 LINES")
	require.Equal(t, uint16(1062), mysqlCode(err), "%v", err)
	require.Equal(t, [][]string{{"2501"}}, queryStrings(t, db, "SELECT COUNT(*) FROM ld"))
}
