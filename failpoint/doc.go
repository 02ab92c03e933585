// Package failpoint lets cluster tests stop a process at a named point, as
// TiDB's failpoints do, to prove what happens when it dies exactly there
// (e.g. a SQL node killed between prewrite and commit).
//
// Hit is a no-op in normal builds. In builds with the tag "failpoints"
// (tests/ builds its binaries so), the environment variable
// STRATA_FAILPOINTS, a comma-separated list of name=pause, makes Hit(name)
// log "failpoint <name>: pausing" to stderr and block forever; the test
// then kills the process.
package failpoint
