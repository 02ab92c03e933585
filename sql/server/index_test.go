package server_test

import (
	"testing"
)

// TestIndexScripts runs testdata/index: secondary indexes kept by every
// DML path, unique checks, online CREATE/DROP INDEX with backfill, ADMIN
// CHECK, SHOW INDEX / SHOW CREATE TABLE.
func TestIndexScripts(t *testing.T) {
	runScripts(t, "testdata/index")
}
