package server_test

import (
	"testing"
	"time"

	"github.com/stratadb/strata/sql/session"
)

// TestIndexScripts runs testdata/index: secondary indexes kept by every
// DML path, unique checks, online CREATE/DROP INDEX with backfill, ADMIN
// CHECK, SHOW INDEX / SHOW CREATE TABLE.
func TestIndexScripts(t *testing.T) {
	old := session.SchemaChangeWait
	session.SchemaChangeWait = 10 * time.Millisecond // one SQL node: no other cache to wait for
	defer func() { session.SchemaChangeWait = old }()
	runScripts(t, "testdata/index")
}
