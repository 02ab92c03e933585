package server_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFunctionScripts runs testdata/functions: the functions applications
// and ORMs send (hashes, encodings, FORMAT, CONVERT_TZ, regular
// expressions, RAND / UUID, GROUP_CONCAT, COUNT(DISTINCT a, b), HAVING on
// select-list aliases, ROW_COUNT / FOUND_ROWS / LAST_INSERT_ID) through the
// whole SQL layer, with MySQL 8.0's results.
func TestFunctionScripts(t *testing.T) { runScripts(t, "testdata/functions") }

// TestFoundRowsPrepared: SQL_CALC_FOUND_ROWS and LAST_INSERT_ID(expr)
// through the binary protocol on one connection, as ORMs send them: the
// count survives into the next statement, and the OK packet of a
// statement calling LAST_INSERT_ID(expr) carries its value.
func TestFoundRowsPrepared(t *testing.T) {
	ts := startServer(t)
	db := ts.open(t, "test", "")
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(ctx, "CREATE TABLE p (id INT PRIMARY KEY)")
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, "INSERT INTO p VALUES (1), (2), (3), (4), (5)")
	require.NoError(t, err)
	for range 3 { // the plan cache must not change the answer
		rows, err := conn.QueryContext(ctx, "SELECT SQL_CALC_FOUND_ROWS id FROM p WHERE id > ? ORDER BY id LIMIT 2", 1)
		require.NoError(t, err)
		var ids []int
		for rows.Next() {
			var id int
			require.NoError(t, rows.Scan(&id))
			ids = append(ids, id)
		}
		require.NoError(t, rows.Close())
		require.Equal(t, []int{2, 3}, ids)
		var found int
		require.NoError(t, conn.QueryRowContext(ctx, "SELECT FOUND_ROWS()").Scan(&found))
		require.Equal(t, 4, found)
	}
	_, err = conn.ExecContext(ctx, "CREATE TABLE seq (id INT NOT NULL)")
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, "INSERT INTO seq VALUES (41)")
	require.NoError(t, err)
	res, err := conn.ExecContext(ctx, "UPDATE seq SET id = LAST_INSERT_ID(id + ?)", 1)
	require.NoError(t, err)
	id, err := res.LastInsertId()
	require.NoError(t, err)
	require.Equal(t, int64(42), id)
}

// TestForeignKeyScripts runs testdata/foreignkey: FOREIGN KEY DDL, the
// checks and cascades of DML, foreign_key_checks, SHOW CREATE TABLE and
// information_schema, with MySQL 8.0's outputs and errors.
func TestForeignKeyScripts(t *testing.T) { runScripts(t, "testdata/foreignkey") }
