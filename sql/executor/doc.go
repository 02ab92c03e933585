// Package executor runs statements for a session, one file per statement
// family as in TiDB's pkg/executor: SELECT and set operations (select.go,
// cte.go, window.go), INSERT / UPDATE / DELETE (write.go, upsert.go,
// multiwrite.go),
// EXPLAIN (explain.go), schema changes (ddl.go: databases, tables,
// indexes; view.go: views; submitted to the DDL job queue, package ddl;
// createselect.go: CREATE TABLE ... SELECT, the table created by a job,
// then filled by an INSERT ... SELECT the session runs and dropped again
// when that fails),
// SHOW about the schema and cluster (show.go), SPLIT TABLE and SHOW TABLE
// REGIONS (split.go), ADMIN CHECK / SHOW DDL / CANCEL DDL JOBS (admin.go),
// ANALYZE TABLE and SHOW STATS_* (analyze.go), LOAD DATA (loaddata.go),
// the account statements with SHOW GRANTS (grant.go), MySQL's CHECKSUM
// TABLE (checksum.go: a sum of per-row CRC-32s over the values, equal for
// equal rows in any cluster) and LOCK / UNLOCK TABLES (locktables.go:
// accepted with a warning, nothing is locked, as TiDB without table locks).
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
// recursive CTEs and INTERSECT / EXCEPT (cte.go) compute their rows
// whole. Rows a chunk holds are valid until its producer's next Next;
// operators that keep rows (sorts, aggregation, locking) copy them. A
// chunk's storage starts at 32 rows and doubles, unless its producer
// knows its count first (Chunk.reserve: a point get's one row, a batch
// point get's keys, a projection's input rows).
// Projection over a point get by handle, the latency-critical point
// select, runs without operators.
//
// Every DML statement runs in the transaction its TxnSource (the session)
// hands over: reads and writes go through kv.Txn only; the executor never
// fetches a timestamp or commits it. (DDL runs in the job queue's own
// transactions, ADMIN CHECK in a read-only one of its own, LOAD DATA as
// INSERTs (IGNORE / REPLACE as its keywords, or LOCAL, say) and CREATE
// TABLE ... SELECT as one INSERT ... SELECT the session runs.) Point reads use Txn.Get; range reads go to
// the coprocessor at the transaction's start_ts, or through Txn.Scan when
// the transaction has buffered writes in the range (the coprocessor cannot
// see them) or reads a fresh snapshot per statement (READ-COMMITTED).
// A value that does not fit its column fails the statement in strict
// mode (sql_mode's STRICT_TRANS_TABLES, the default; SQLMode reads the
// session's); outside it, and under INSERT / UPDATE IGNORE, it is stored
// adjusted (types.ConvertLenient: clipped to the range, cut to the length,
// a string's numeric prefix) with the error as a warning in
// Result.Warnings, and NULL for a NOT NULL column becomes 0 or the empty string except
// in a single-row INSERT (write.go, conv). Dates, ENUM, SET, BIT and YEAR
// keep the error. A zero date, or a zero month or day, that sql_mode's
// NO_ZERO_DATE / NO_ZERO_IN_DATE refuses is 1292 in strict mode, else
// warning 1264 (a zero month or day stored as the zero date;
// checkZeroDate). Under ALLOW_INVALID_DATES a DATE or DATETIME column
// stores a day its month lacks ('2004-02-31') as it is (invalidDate;
// not TIMESTAMP). A TIMESTAMP column takes any other value (VALUES, SET,
// INSERT ... SELECT, LOAD DATA, CURRENT_TIMESTAMP) in the session time
// zone and stores its UTC (expr.WriteValue, expr.WriteDatum, ColumnNow);
// a TIMESTAMP written to another column is its wall clock in the zone.
// SHOW CREATE TABLE and SHOW COLUMNS show a TIMESTAMP's literal DEFAULT
// (stored as UTC by DDL) in the session zone. INSERT IGNORE skips a row that collides on a primary or
// unique key, with warning 1062 (upsert.go); UPDATE IGNORE leaves a row
// whose new values another row holds as it is, with the same warning
// (updateConflict), its rows updated one by one so each sees the others.
// Generated columns are computed by every write from the row after its
// assignments (fillGenerated: in dependency order, converted like a value
// given, so strictness applies): INSERT, REPLACE, ON DUPLICATE KEY
// UPDATE, UPDATE, multi-table UPDATE, LOAD DATA (an INSERT) and a
// cascading foreign key. A value given for one is 3105 unless it is
// DEFAULT or, in INSERT, the value the column computes
// (checkGivenGenerated: MySQL 8 refuses that too, but MariaDB's mysqldump
// lists every column's value, and accepting the one value that changes
// nothing lets its dumps reload). STORED values go into the row value;
// VIRTUAL ones are computed by model.TableInfo.DecodeRow wherever a row
// is decoded, so reads need nothing here.
// CHECK constraints (check.go) are evaluated by the same writes on the
// row they write, after its generated columns (and ON UPDATE
// CURRENT_TIMESTAMP): FALSE is ERROR 3819, NULL passes; INSERT / UPDATE
// IGNORE skip the row with warning 3819 (an INSERT's new row is checked
// before ON DUPLICATE KEY UPDATE looks for its duplicate, and the updated
// row again, as MySQL). ALTER TABLE's CHECK clauses (ADD, DROP / ALTER
// CHECK or CONSTRAINT; DROP CONSTRAINT also drops a FOREIGN KEY or
// UNIQUE index of that name) are validated with the others
// (checkAlter) and submitted as jobs (package ddl); constraint names are
// unique per database (3822). A column's CHECK in ADD / CHANGE / MODIFY
// COLUMN becomes an ADD CHECK clause after it (splitColumnChecks), as
// the keys of ADD COLUMN do.
// INSERT buffers Txn.Insert (a duplicate key is ERROR 1062, found when the
// key is locked or at commit); REPLACE and INSERT ... ON DUPLICATE KEY
// UPDATE first read (and in pessimistic mode lock) the rows a new row
// collides with on its primary or unique keys (upsert.go); the UPDATE
// clause of INSERT ... SELECT also reads the SELECT's columns, by their
// table alias and name (selectedRows). In pessimistic mode UPDATE, DELETE, INSERT
// and SELECT ... FOR UPDATE / LOCK IN SHARE MODE lock their rows at
// statement time (LockKeys at a fresh for_update_ts) and UPDATE / DELETE /
// FOR UPDATE work on the latest committed values the lock returns, with
// WHERE evaluated again on them (a statement on one row by its handle
// sends only the lock request, no snapshot read before it: pointOnly); in
// optimistic mode they read the snapshot and conflicts are found at
// commit.
//
// Multi-table UPDATE and DELETE (multiwrite.go: UPDATE t1 JOIN t2 ... SET,
// UPDATE t1, t2 ... SET, DELETE t1, t2 FROM ..., DELETE FROM t1 USING ...)
// plan their FROM clause and WHERE as SELECT * through the planner's join
// planning and run the plan below its projection: each joined row holds
// every table's columns and hidden handle. In pessimistic mode the SELECT
// is SELECT ... FOR UPDATE OF <the target tables>, so the target rows are
// locked as they are read and joined with their latest committed values
// (re-checked against their own conditions); the tables only read are
// read from the snapshot and not locked, as in TiDB. Each target row is
// written once however many joined rows match it (NULL-extended rows of
// an outer join match nothing): UPDATE evaluates its assignments to a
// table on the first joined row that matches its row, left to right, then
// writes each table's changed rows through sql/table (a new primary key
// moves the row; 1062 on a collision); affected rows are the changed
// rows, "Rows matched" the distinct target rows. A table a self-join
// names twice is written once per row. ORDER BY and LIMIT are 1221, a
// derived table or view as a target 1288, a DELETE target not in FROM
// 1109, a primary key updated through two aliases of one table 1706.
//
// What the planner pushed down (conditions, partial aggregates, TopN,
// index lookups) runs on the stores (store/coprocessor); the rest of
// filtering, sorting, grouping, aggregation, joins, windows and projection
// runs here; sorts, hash aggregation and hash joins spill to disk past the
// statement's memory quota (package spill, tidb_enable_tmp_storage_on_oom).
// A group's DISTINCT set and GROUP_CONCAT ... ORDER BY rows are not
// counted against the quota (GROUP_CONCAT without ORDER BY stops growing
// at group_concat_max_len), nor are JSON_ARRAYAGG's and JSON_OBJECTAGG's
// values.
// Executor is safe for
// concurrent use; per-statement state lives in the statement's operators.
//
// # Foreign keys
//
// Every row INSERT, REPLACE, ON DUPLICATE KEY UPDATE, UPDATE and DELETE
// (single- and multi-table, and cascades) write goes through a rowWriter
// (foreignkey.go): after buffering the change it checks the foreign keys
// the row is the child of (1452 when no parent row holds the new values)
// and acts on those whose parent it is (1451 for RESTRICT / NO ACTION,
// else the children are deleted, updated or set to NULL through a writer
// one level deeper; past 15 levels 3008), unless foreign_key_checks=0.
// Keys with a NULL are not checked. Rows on the other side are found by
// the FK's index at the snapshot and, in pessimistic mode, at a fresh
// timestamp, then locked and re-read, so a child INSERT and a DELETE of
// its parent serialize on the parent's row key. The FKs that reference a
// table come from catalog.Referrers.
//
// # Range reads and the coprocessor
//
// Range reads go through the coprocessor in pages (readers.go): the first
// request asks for 256 rows (or the pushed-down limit), each next one for
// twice as many, up to 8192; a page is one request to one region
// (paging_size; the store returns its resume key), so a scan holds one page
// and no region is asked for rows it would discard. A page carries every
// range left in its region (up to as many ranges as the page has rows, at
// least 256), so a read of several ranges (an IN list of tuples, BETWEENs
// OR-ed together) costs a request per region and page, not per range; a
// descending index read pages the same way from the last range's end. A
// reader with a
// pushed-down LIMIT hands its chunk over at the end of a page instead of
// asking for the next page to fill it, so a LIMIT 1 whose first page is one row costs one request,
// not nine (1 + 2 + ... + 256 rows to fill a chunk). Backward table scans,
// ranges the transaction has written in, and READ-COMMITTED reads go through
// Txn.Scan instead, which merges the buffer. With index lookup pushdown
// (strata_index_lookup_pushdown; hints INDEX_LOOKUP_PUSHDOWN and
// NO_INDEX_LOOKUP_PUSHDOWN) the store reads the rows of the regions it leads
// and marks the others remote, in place; the executor fetches those with one
// BatchGet per chunk, so rows stay in index order and no answer depends on
// placement (strata_distsql_index_lookup_rows_total{path}). Partial
// aggregates come back per region and group, in first-scanned order, and the
// root HashAgg merges them by expr.AppendGroupKey in region order, so groups,
// their order and first-row values are those of the root path (a DOUBLE SUM
// or AVG may differ in the last digits). Aggregation, top-N and table-page
// requests carry a time budget (page_ms, 1 s, pushdown.go): a store that
// spends it answers the part it scanned with a resume key, and the rest of
// the region is asked for again, never retried whole.
// strata_distsql_rpcs_per_statement counts coprocessor RPCs per statement
// (kvclient/rpcstats). EXPLAIN ANALYZE shows the stores' execution summaries:
// cop_task on the reader, tikv_task on each pushed operator. An expression
// error on a store with a MySQL code (1690) reaches the client with that code
// (errno.Coded).
//
// # Other operators
//
// SelectLock under a LIMIT with nothing reordering below it locks rows as it
// reads them until LIMIT of them still satisfy WHERE at for_update_ts (a row
// deleted meanwhile is skipped, as InnoDB does). IndexJoin reads, per
// 256-row chunk of outer rows, one BatchGet of row keys (by handle, or by
// every column of a unique key: a clustered key's row keys, else the index
// entries and then the rows) or one batch of index point ranges for the
// chunk's distinct keys. A recursive CTE (cte.go) runs
// its recursive blocks round after round over the previous round's rows
// until a round adds none; round cte_max_recursion_depth + 1 is ERROR 3636.
// Window (window.go) materializes its input, finds partitions and peer
// groups, and extends an aggregate whose frame only grows at its end instead
// of recomputing it. WITH ROLLUP is the root HashAgg adding each row to its
// group and every prefix group, then sorting as MySQL returns them; it is
// never pushed down and does not spill. A result set is held until it is
// sent (not streamed) and counts toward the statement's memory, not its
// quota. Past the quota a sort writes sorted runs and merges them, 64 at a
// time (sortspill.go); a hash join becomes a grace hash join and a hash
// aggregation writes the rows of new groups to partitions (both 32 ways, up
// to 3 levels, joinspill.go, aggspill.go); Distinct, cross joins and a
// partition whose keys cannot be split fail with ERROR 8175.
//
// # Plan cache
//
// A prepared SELECT's plan, and the read plan of a prepared single-table
// UPDATE or DELETE (readForWrite through planScan: the rows it changes,
// by key, range or index, with ORDER BY ... LIMIT; its assignments are
// compiled at each execution), is cached per session (plancache.go,
// PlanCache over planner.CachedPlan), keyed by the current database, the
// session variables planning reads (PlanVars) and the parameters' kinds,
// and rebound to each execution's parameters (planner.Rebind); it is
// planned again when the key changed, a table it reads changed
// definition, a LIMIT or OFFSET parameter has another value, or the
// values give an access path another shape. A multi-table UPDATE or
// DELETE is planned at every execution. @@last_plan_from_cache and
// strata_sql_plan_cache_total{result=hit|miss|uncacheable} show it.
package executor
