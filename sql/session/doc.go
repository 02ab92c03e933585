// Package session holds one client connection's state (current database,
// session and user variables, last insert id, the previous statement's
// ROW_COUNT() and FOUND_ROWS(), its warnings, the transaction, prepared
// statements, the user's privileges) and turns query text into results: it
// parses with the TiDB parser, dispatches each statement and maps every
// failure to a MySQL error (sql/errno). Only when that parser refuses a
// text does parseSQL try MySQL syntax it lacks: CHECKSUM TABLE
// (checksum.go) and MySQL 8.0.19's row alias, INSERT ... VALUES / SET ...
// AS alias [(col, ...)] ON DUPLICATE KEY UPDATE (rowalias.go: a tokenizer
// that respects quotes, comments and parentheses blanks the clause out,
// the parser reads the rest, the statement keeps its text as sent, and
// alias.col becomes VALUES(col) once the table's columns are known, when
// the statement runs or is prepared); strata_sql_parse_fallback_total
// counts them. Statements execute in sql/executor
// (DML, DDL, SHOW about the schema, SPLIT, ADMIN, ANALYZE, LOAD DATA,
// account statements); the session runs only those about itself:
// transactions, SET, USE, DO, SHOW VARIABLES / STATUS / WARNINGS /
// PROCESSLIST, KILL, PREPARE / EXECUTE / DEALLOCATE PREPARE, and SELECT SQL_CALC_FOUND_ROWS ... LIMIT (the
// whole result is computed and counted, then limited). SHOW WARNINGS /
// ERRORS list the last statement's warnings (executor.Result.Warnings) or
// its error; a statement that uses no table (SELECT without FROM, SET) and
// raises none keeps them, as MySQL's diagnostics area, so SELECT
// @@warning_count sees the statement before; the OK / EOF packet counts the
// statement's own (WarningCount). sql_mode (SQLMode, sqlmode.go) is checked
// by SET (1231 for an unknown mode), sets the parser's modes before every
// parse and tells the executor whether writes are strict. As expr.Warner
// (divzero.go) the session receives the conditions expressions raise
// while evaluating (division by zero, 1292 truncations): a warning of the
// statement, or its error in a strict INSERT / REPLACE / UPDATE (and, for
// truncations, DELETE) without IGNORE, as MySQL's strict mode. time_zone
// (SYSTEM, '+HH:MM' from -13:59 to +14:00, or an IANA name from Go's
// embedded tzdata: expr.ParseTimeZone; 1298 otherwise; SET GLOBAL for
// later sessions) is the session's zone (TimeZone): Now, the statement's
// start time shared by every clock function of the statement, is in it,
// and FROM_UNIXTIME / UNIX_TIMESTAMP(d) read it (sql/expr); a TIMESTAMP
// is stored as UTC and read and written in it (sql/expr timezone.go;
// the plan cache keys plans by it, executor.PlanVars). SET timestamp = N
// fixes Now at that instant until SET timestamp = DEFAULT (timestamp.go),
// as mysqlbinlog's output expects. It checks every
// statement's privileges at dispatch
// (privs.go) and passes itself to the executor as expr.Env,
// executor.TxnSource and executor.StmtEnv.
//
// # Transactions
//
// The session owns the current kv.Txn. BEGIN / START TRANSACTION (READ
// ONLY, WITH CONSISTENT SNAPSHOT, BEGIN OPTIMISTIC / PESSIMISTIC) and, with
// autocommit=0, the first statement open one; COMMIT, ROLLBACK, DDL (an
// implicit commit, as in MySQL), BEGIN inside a transaction, SET
// autocommit=1 and the connection's end close it. Every statement inside a
// transaction is staged (StmtBegin/StmtCommit/StmtRollback): a failed
// statement undoes only its own writes; a deadlock victim's whole
// transaction is rolled back, a lock wait timeout only the statement. A
// statement outside a transaction is its own transaction, begun on first
// read or write and committed when it succeeds; only such a statement is
// ever run again (retryStatement): in optimistic mode after a write
// conflict at commit, and in both modes when a request it sent before
// committing (a pessimistic lock) was lost with its store (ERROR 9002 when
// retries run out; never 8110, since nothing was committed). A statement
// inside an explicit transaction is never re-run. Options come from transaction_isolation (REPEATABLE-READ or
// READ-COMMITTED; SERIALIZABLE and READ-UNCOMMITTED are refused with 8048
// as in TiDB unless tidb_skip_isolation_level_check=1, and then run as
// REPEATABLE-READ), transaction_read_only, tidb_txn_mode (pessimistic by
// default), tidb_enable_async_commit, tidb_enable_1pc and
// innodb_lock_wait_timeout. SET GLOBAL of these applies to this SQL node's
// later sessions only (not persisted, not shared with other nodes).
// foreign_key_checks (ON; SET GLOBAL as above) turns the FOREIGN KEY
// checks and actions of DML and DDL on or off (sql/executor).
// tidb_enable_check_constraint (GLOBAL only, this node's, ON unlike
// TiDB's OFF: checkvars.go) OFF makes DDL ignore CHECK clauses with
// warning 1105, as TiDB does.
// strata_allow_pushdown (ON) lets the planner run selections, top-N and
// partial aggregates on the stores (sql/planner);
// strata_index_lookup_pushdown (ON) lets the stores read an IndexLookUp's
// rows in the index scan's request. tidb_enable_clustered_index (ON,
// OFF, INT_ONLY; 1 and 0 are ON and OFF; SESSION and GLOBAL) is how a new
// PRIMARY KEY without CLUSTERED / NONCLUSTERED is stored (sql/ddl).
//
// A Session belongs to one connection and is not safe for concurrent use.
// Everything it shares with other sessions (its sql/domain.Domain) is.
//
// # Statement retry and point reads
//
// In pessimistic mode an autocommit INSERT, UPDATE or DELETE first runs
// optimistically (autocommitWrite, retry.go; TiDB's default
// pessimistic-auto-commit = false): no lock round, and one 1PC prewrite
// when its keys are in one region. If that prewrite meets another
// transaction's lock (kv.TxnOptions.FailOnLock: it does not wait) or a newer
// commit, the attempt is rolled back and the statement runs again
// pessimistically, so that it queues for the lock with deadlock detection
// and innodb_lock_wait_timeout as any pessimistic statement; sqlnode
// --pessimistic-auto-commit turns the optimistic attempt off.
//
// retryStatement (retry.go) runs an autocommit INSERT, UPDATE or DELETE again
// from the start (a new start_ts, fresh reads), with backoff, at most 10
// times: in optimistic mode after a write conflict at commit (9007), in both
// modes when a request sent before committing was lost with its store, and
// when a table it wrote changed schema under it (8028). An autocommit point
// SELECT reads the newest committed version (the maximal timestamp: no TSO
// round trip; the store still checks locks and waits for in-flight writes of
// the key); inside a transaction reads are at its start_ts. A prepared
// SELECT, and the read of a prepared single-table UPDATE or DELETE, is
// planned once per session and statement while its key holds
// (executor.PlanCache: the current database, the planner's session
// variables executor.PlanVars, which the session reports through VarValue,
// and the parameters' kinds).
//
// # Prepared statements
//
// COM_STMT_PREPARE (Prepare, prepared.go) and SQL-level PREPARE name FROM
// 'text' | @var (sqlprepare.go) prepare a statement the same way: parsed
// once, privileges checked, its ? markers numbered, a SELECT's columns
// found. SQL-level statements are named (case-insensitive), a namespace
// apart from the binary protocol's ids; EXECUTE name USING @a, ... binds
// the user variables with their types (unset: NULL) and runs the statement
// through the binary protocol's path, so a repeated SELECT runs its
// cached plan (@@last_plan_from_cache), and as if sent directly: its
// privileges are checked again, it runs in the session's transaction (an
// autocommit write is retried as usual), and it sets ROW_COUNT() and
// LAST_INSERT_ID(). Re-PREPARE of a name deallocates the old statement
// first; DEALLOCATE PREPARE / DROP PREPARE forget one; COM_RESET_CONNECTION
// (a new Session) and the connection's end drop them all. Errors as MySQL:
// 1210 (wrong number of USING variables), 1243 (unknown name), 1295 (a
// statement MySQL cannot prepare: PREPARE / EXECUTE / DEALLOCATE, BEGIN,
// ROLLBACK, SAVEPOINT, USE, LOAD DATA, ...), 1064, 1065 (empty text), and
// 1461 past max_prepared_stmt_count (GLOBAL, default 16382; binary and
// SQL-level statements of a session together; this SQL node's, not
// persisted).
//
// # Replica and stale reads
//
// tidb_replica_read ('leader', 'follower', 'leader-and-follower'; the
// 'closest-*' values act like 'leader-and-follower') and AS OF TIMESTAMP
// (SELECT ... FROM t AS OF TIMESTAMP, START TRANSACTION READ ONLY AS OF
// TIMESTAMP; the datetime becomes a TSO timestamp of its milliseconds, and
// TIDB_PARSE_TSO(tso) names a TSO exactly) put a mode into the statement's
// context (kvclient/replicaread) for the reads of non-locking SELECTs only
// (staleread.go). A future time, or AS OF in a write or a locking read, is
// ERROR 8135.
//
// SET tidb_snapshot = '<TSO>' | '<datetime>' (session only, TiDB's
// history read) makes every read of the session a snapshot read at that
// timestamp, CHECKSUM TABLE included (how a backup is compared with its
// source at the backup's TSO), until it is set to ”; writes are ERROR
// 1105 meanwhile, as in TiDB. The schema is the current one.
package session
