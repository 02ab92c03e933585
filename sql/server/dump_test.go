package server_test

import "testing"

// TestDumpScripts runs testdata/dump: the statements mysqldump and other
// dump tools send (LOCK TABLES, DISABLE KEYS, CHECKSUM TABLE, the
// information_schema tables and SHOW statements they read) and SHOW
// CREATE TABLE as they reload it.
func TestDumpScripts(t *testing.T) { runScripts(t, "testdata/dump") }
