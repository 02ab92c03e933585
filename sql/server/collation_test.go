package server_test

import "testing"

// TestCollationScripts runs testdata/collation: collations of columns,
// tables and databases (utf8mb4_general_ci, utf8mb4_unicode_ci,
// utf8mb4_0900_ai_ci and the binary ones) in comparisons, ORDER BY,
// GROUP BY, DISTINCT, unique and secondary indexes, COLLATE and the
// coercibility rules, SHOW and information_schema.
func TestCollationScripts(t *testing.T) { runScripts(t, "testdata/collation") }
