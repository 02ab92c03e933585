package server_test

import (
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestJSONScripts runs testdata/json: the JSON column type (storage,
// errors, wire type, SHOW CREATE TABLE), the JSON functions, path
// language, casts, comparison and ordering, and the JSON aggregates, with
// MySQL 8.0's results.
func TestJSONScripts(t *testing.T) { runScripts(t, "testdata/json") }

// TestJSONWire: a JSON column and JSON function results are type 245
// (JSON) in result sets, and JSON text sent as a string parameter through
// the binary protocol (GORM's datatypes.JSON, Django's JSONField) is
// stored and read back as MySQL prints it.
func TestJSONWire(t *testing.T) {
	ts := startServer(t)
	db := ts.open(t, "test", "")
	_, err := db.Exec("CREATE TABLE jw (id INT PRIMARY KEY, doc JSON)")
	require.NoError(t, err)
	_, err = db.Exec("INSERT INTO jw VALUES (?, ?), (?, ?)", 1, `{"b": [1, 2], "a": "x"}`, 2, nil)
	require.NoError(t, err)
	_, err = db.Exec("INSERT INTO jw VALUES (?, ?)", 3, `{"a":`)
	require.ErrorContains(t, err, "Error 3140 (22032): Invalid JSON text")
	rows, err := db.Query("SELECT doc, doc->'$.a', doc->>'$.a', JSON_TYPE(doc) FROM jw WHERE id = ?", 1)
	require.NoError(t, err)
	cts, err := rows.ColumnTypes()
	require.NoError(t, err)
	require.Equal(t, "JSON", cts[0].DatabaseTypeName())
	require.Equal(t, "JSON", cts[1].DatabaseTypeName())
	require.True(t, rows.Next())
	var doc, a, unq, tp string
	require.NoError(t, rows.Scan(&doc, &a, &unq, &tp))
	require.NoError(t, rows.Close())
	require.Equal(t, []string{`{"a": "x", "b": [1, 2]}`, `"x"`, `x`, `OBJECT`}, []string{doc, a, unq, tp})
	var n int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM jw WHERE JSON_CONTAINS(doc, ?)", `{"b": [2]}`).Scan(&n))
	require.Equal(t, 1, n)
	var null sql.NullString
	require.NoError(t, db.QueryRow("SELECT doc FROM jw WHERE id = 2").Scan(&null))
	require.False(t, null.Valid)
}
