// Package deleterange is the queue of key ranges that dropped schema
// objects left behind (TiDB's mysql.gc_delete_range and
// gc_delete_range_done): DROP TABLE, TRUNCATE TABLE, DROP DATABASE, DROP
// INDEX and a rolled-back ADD INDEX make their old keys unreachable in one
// catalog write, and record here the ranges that held them, in the same
// transaction that finishes the DDL job (sql/ddl). So a range is recorded
// exactly when the schema change commits: never lost if the DDL owner dies
// after it, never recorded by a step that did not commit (a retried step
// rewrites the same keys).
//
// # Keys
//
// A pending range is the meta key 'm' GCDeleteRange enc(job id) enc(element
// id) (the element is the dropped table's or index's id) and a JSON Range;
// a deleted one moves to 'm' GCDeleteRangeDone with the same suffix, with
// DoneMs set, in one transaction (MarkDone), so a range is either pending
// or done.
//
// # Who deletes, and when
//
// The SQL node's GC leader (sql/gcleader), after each GC round, reads the
// pending ranges at the new GC safe point (Pending): a range visible there
// was recorded by a transaction that committed at or below the safe point,
// so no read the stores still serve (at or above it) sees the dropped
// object's keys; a transaction that began before the drop and still reads
// them holds the safe point below its start (gcleader's MinStartTS), and so
// the deletion back. It deletes each range through the stores
// (kvclient.DeleteRange: a raft command per region, then a compaction on
// every replica) and then marks it done. A leader that dies in between
// leaves the range pending; the next round deletes it again, which is
// harmless.
//
// Concurrency: the functions are safe for concurrent use; two GC leaders
// marking the same range done conflict and one of them fails and retries
// in its next round.
package deleterange
