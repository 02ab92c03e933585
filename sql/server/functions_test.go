package server_test

import "testing"

// TestFunctionScripts runs testdata/functions: the functions applications
// and ORMs send (hashes, encodings, FORMAT, CONVERT_TZ, regular
// expressions, RAND / UUID, GROUP_CONCAT, COUNT(DISTINCT a, b), HAVING on
// select-list aliases, ROW_COUNT / FOUND_ROWS / LAST_INSERT_ID) through the
// whole SQL layer, with MySQL 8.0's results.
func TestFunctionScripts(t *testing.T) { runScripts(t, "testdata/functions") }
