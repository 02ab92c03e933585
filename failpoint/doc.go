// Package failpoint lets cluster tests stop a process at a named point, as
// TiDB's failpoints do, to prove what happens when it dies or stalls
// exactly there (e.g. a SQL node killed between prewrite and commit, a
// commit stalled across schema changes), and skew a process's wall clock.
//
// Hit, Eval and Now are plain in normal builds (Hit does nothing, Eval
// finds nothing, Handler is nil). In builds with the tag
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
//   - any other action is a github.com/pingcap/failpoint term, evaluated
//     by that package: "panic", "sleep(100)", "return(1)" (Eval returns
//     the value), "25%panic", "3*return(true)", "pause" excepted (ours,
//     above). The status server of every process serves pingcap's HTTP
//     API under /debug/fail/ (Handler): PUT /debug/fail/<name> with a term
//     sets a point at run time (localcluster.Proc.SetFailpoint), DELETE
//     clears it, GET lists.
//
// Points in the product: txn-before-prewrite, txn-after-prewrite,
// txn-after-primary-commit (kvclient/txn), ddl-backfill-batch (sql/ddl),
// raft-send (each raft message batch a store sends), raft-before-fsync and
// raft-after-fsync (around the raft log's synced write), raft-apply (an
// apply round, before its batch commits), raft-split-apply,
// snapshot-before-ingest, snapshot-before-install-done and
// consistency-hash (a replica's hash of a region, off the loop) (raftstore).
//
// STRATA_CLOCK_SKEW (a Go duration, "-1h") shifts what Now returns;
// STRATA_CLOCK_STROBE ("<jump>/<period>", e.g. "5s/200ms") makes it jump
// forward by jump and back again every period.
package failpoint
