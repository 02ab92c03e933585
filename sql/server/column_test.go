package server_test

import "testing"

// TestColumnScripts runs testdata/column: online column DDL (ADD / DROP /
// RENAME / CHANGE / MODIFY COLUMN, SET / DROP DEFAULT, RENAME TABLE) with
// MySQL's errors, rows written before a change read back after it, SHOW
// CREATE TABLE, information_schema.COLUMNS and ADMIN SHOW DDL JOBS.
func TestColumnScripts(t *testing.T) {
	runScripts(t, "testdata/column")
}
