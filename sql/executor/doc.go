// Package executor runs statements for a session, one file per statement
// family as in TiDB's pkg/executor: SELECT and set operations (select.go,
// cte.go, window.go), INSERT / UPDATE / DELETE (write.go, upsert.go),
// EXPLAIN (explain.go), schema changes (ddl.go: databases, tables,
// indexes; view.go: views; submitted to the DDL job queue, package ddl),
// SHOW about the schema and cluster (show.go), SPLIT TABLE and SHOW TABLE
// REGIONS (split.go), ADMIN CHECK / SHOW DDL / CANCEL DDL JOBS (admin.go),
// ANALYZE TABLE and SHOW STATS_* (analyze.go), LOAD DATA (loaddata.go) and
// the account statements with SHOW GRANTS (grant.go).
// An Executor reads the node's shared state from its sql/domain.Domain
// (catalog, DDL, statistics, id allocators, information_schema, wired into
// its planner by New); everything per session comes in per call: expr.Env
// for evaluation, TxnSource for the transaction, StmtEnv for who runs the
// statement and what they may see. The session (sql/session) keeps the
// statements about itself (SET, USE, SHOW VARIABLES / STATUS / WARNINGS /
// PROCESSLIST, KILL, transactions).
//
// SELECT and the reads of UPDATE and DELETE run the
// physical plan sql/planner chose as a tree of operators (Open / Next /
// Close) passing chunks of up to 256 rows on the caller's goroutine:
// readers (point and batch point gets, table ranges paged through the
// coprocessor, index readers and index lookups paged through Txn.Scan),
// Selection, HashAgg, HashJoin / IndexJoin, Union, Sort / TopN, Limit,
// Projection, Distinct and SelectLock; window functions (window.go),
// recursive CTEs and INTERSECT / EXCEPT (cte.go) compute their rows whole. Rows a chunk holds are valid until its producer's next
// Next; operators that keep rows (sorts, aggregation, locking) copy them.
// Projection over a point get by handle, the latency-critical point
// select, runs without operators.
//
// Every DML statement runs in the transaction its TxnSource (the session)
// hands over: reads and writes go through kv.Txn only; the executor never
// fetches a timestamp or commits it. (DDL runs in the job queue's own
// transactions, ADMIN CHECK in a read-only one of its own, LOAD DATA as
// INSERTs the session runs.) Point reads use Txn.Get; range reads go to
// the coprocessor at the transaction's start_ts, or through Txn.Scan when
// the transaction has buffered writes in the range (the coprocessor cannot
// see them) or reads a fresh snapshot per statement (READ-COMMITTED).
// INSERT buffers Txn.Insert (a duplicate key is ERROR 1062, found when the
// key is locked or at commit); REPLACE and INSERT ... ON DUPLICATE KEY
// UPDATE first read (and in pessimistic mode lock) the rows a new row
// collides with on its primary or unique keys (upsert.go). In pessimistic mode UPDATE, DELETE, INSERT
// and SELECT ... FOR UPDATE / LOCK IN SHARE MODE lock their rows at
// statement time (LockKeys at a fresh for_update_ts) and UPDATE / DELETE /
// FOR UPDATE work on the latest committed values the lock returns, with
// WHERE evaluated again on them; in optimistic mode they read the snapshot
// and conflicts are found at commit.
//
// What the planner pushed down (conditions, partial aggregates, TopN,
// index lookups) runs on the stores (store/coprocessor); the rest of
// filtering, sorting, grouping, aggregation, joins, windows and projection
// runs here; sorts, hash aggregation and hash joins spill to disk past the
// statement's memory quota (package spill, tidb_enable_tmp_storage_on_oom).
// A group's DISTINCT set and GROUP_CONCAT ... ORDER BY rows are not
// counted against the quota (GROUP_CONCAT without ORDER BY stops growing
// at group_concat_max_len).
// Executor is safe for
// concurrent use; per-statement state lives in the statement's operators.
package executor
