package server_test

import "testing"

// TestGeneratedScripts runs testdata/generated: generated columns
// (VIRTUAL and STORED) through DDL, every write path, reads on the SQL
// node and pushed down, indexes on them and ADMIN CHECK TABLE.
func TestGeneratedScripts(t *testing.T) { runScripts(t, "testdata/generated") }
