// Package failpoint lets cluster tests stop a process at a named point, as
// TiDB's failpoints do, to prove what happens when it dies or stalls
// exactly there (e.g. a SQL node killed between prewrite and commit, a
// commit stalled across schema changes), and skew a process's wall clock.
//
// Hit and Now are plain in normal builds. In builds with the tag
// "failpoints" (tests/ builds its binaries so), the environment variable
// STRATA_FAILPOINTS is a comma-separated list of name=action:
//
//   - name=pause: Hit(name) logs "failpoint <name>: pausing" to stderr and
//     blocks forever; the test then kills the process.
//   - name=hold:<path>: while the file at path exists, Hit(name) logs
//     "failpoint <name>: holding while <path> exists" and blocks; it logs
//     "released" and returns once the test removes the file. The test
//     arms the point by creating the file and releases it by removing it.
//   - name=delay:<path>: Hit(name) sleeps for the Go duration written in
//     the file at path ("150ms") while the file exists: a test slows a
//     path (e.g. raft-send, every raft message batch a store sends) and
//     speeds it up again without restarting the process.
//
// STRATA_CLOCK_SKEW (a Go duration, "-1h") shifts what Now returns;
// STRATA_CLOCK_STROBE ("<jump>/<period>", e.g. "5s/200ms") makes it jump
// forward by jump and back again every period.
package failpoint
