// Package ddl runs schema changes as jobs, so that a DDL survives the SQL
// node that issued it (TiDB's DDL owner and job queue, F1's online schema
// change).
//
// # Jobs
//
// A DDL statement becomes a Job that its session persists in the job queue
// ('m' DDLJob{id}, ids from PD so they increase) and then waits for in the
// job history ('m' DDLHistory{id}), polling with backoff. Every change of
// a job is one transaction; a step that changes the schema commits the
// catalog rows, the schema version and diff (package catalog) and the
// job's new state together, so a job's state always says which schema
// state is published.
//
// # Owner
//
// One SQL node at a time is the DDL owner: it holds a lease row ('m'
// DDLOwner: node id, address, expiry in PD's clock) that it renews every
// third of its TTL. A node takes the lease when it is absent or expired at
// its transaction's start timestamp; a stopping owner deletes it. The
// owner runs the oldest queued job, one step at a time, and every step's
// transaction rewrites the lease row as a fence: it commits only if the
// row was still this node's at its start and no other node wrote it since
// (a takeover would make it conflict), so a deposed owner never commits a
// step. A new owner resumes the job where the last committed step left it,
// first waiting until every node loaded that step's schema version.
//
// # ADD INDEX
//
// none -> delete only -> write only -> write reorganization -> public, each
// state a schema version that every live node loads before the next
// (catalog.WaitVersion, which goes on after two leases without a node
// still behind: a transaction of that node that commits after the window
// its schema check vouched for is checked again at its commit_ts, see
// sql/catalog's doc, so it never commits across two steps). In write
// reorganization the rows are indexed in
// batches of BackfillBatch, each one transaction that also writes the
// checkpoint (the next row key) into the job; a new owner resumes there.
// ADMIN CANCEL DDL JOBS marks the job cancelling (a batch running then
// conflicts on the job's key, and a step whose owner read the job before
// the cancel committed sees it at its start ts and reads the job again);
// the owner removes the index again (rollback done) and the session gets
// ERROR 8214. An ADD COLUMN is cancelled the same way until it is public. A duplicate found by a UNIQUE
// index's backfill rolls back the same way with ERROR 1062.
//
// DROP INDEX goes write only, then gone. CREATE/DROP DATABASE, ALTER
// DATABASE ... CHARACTER SET / COLLATE (modify schema charset and collate:
// catalog.UpdateDB), CREATE/DROP TABLE and TRUNCATE TABLE are one step;
// they go through the queue so all schema changes are serialized.
//
// # Column changes
//
// ADD COLUMN (all the ADD COLUMN clauses of one ALTER are one job) goes
// none -> delete only -> write only -> public, each a compatible schema
// version. The keys an ADD COLUMN declares (a column's UNIQUE, the
// constraints of ADD COLUMN (...)) become ADD INDEX jobs right after it
// (sql/executor splitColumnKeys): a duplicate then fails the index, not the
// column, which stays. It is instant: no row is rewritten; each new column carries
// its origin default (its default at the ALTER, the ALTER's time for
// DEFAULT CURRENT_TIMESTAMP, MySQL's implicit value for NOT NULL without
// DEFAULT), which rows that lack it decode to, on the SQL nodes and in
// the stores' pushed-down scans alike (model.TableInfo.DecodeRow); a
// later SET DEFAULT changes new rows only. While a column is not public it
// is in TableInfo.NonPublic, invisible to queries; a write-only one is
// written by INSERT (catalog.ColumnInfo.FillDatum) and carried over by
// UPDATE, which reads rows through TableInfo.ForWrite, so a node one
// version behind never drops a value a newer node wrote (the same holds
// for a column being dropped, for the nodes that still show it).
//
// DROP COLUMN: when single-column indexes cover the column they go write
// only first (MySQL drops them with the column; a multi-column index or
// the PRIMARY KEY is refused with 1235: MySQL would shorten the index,
// a rebuild); then the indexes are removed and the column goes write
// only (a column the table was created with gets an origin default, the
// value a node still showing it reads in rows inserted without it), then
// delete only, then gone. An index never refers to a non-public column.
// The values stay in the rows under a column id never reused
// (TableInfo.MaxColumnID).
//
// RENAME COLUMN, ALTER COLUMN SET / DROP DEFAULT and CHANGE / MODIFY
// COLUMN changes that the stored rows decode unchanged under (a rename,
// NULL allowed, a wider integer or VARCHAR, a move with FIRST / AFTER)
// are one compatible step; other type changes rewrite every row (below).
// NOT NULL on a nullable column and a narrower
// integer or VARCHAR go none -> write only (DML refuses what the new type
// refuses: ColumnInfo.Pending) -> write reorganization (a version of its
// own, so no transaction that could still write such a value can commit)
// -> the rows are checked at a fresh snapshot: public, or the refusal
// undone and MySQL's error for the first row that does not fit (1138,
// 1264, 1265). RENAME TABLE (also to another
// database) is one step that moves the catalog entry and keeps the id.
//
// # MODIFY COLUMN that rewrites rows
//
// A type change the stored values do not decode unchanged under (INT <->
// VARCHAR, DATETIME <-> VARCHAR, a DECIMAL precision, a signedness,
// VARCHAR -> CHAR, a BINARY length, the collation of an indexed column;
// NeedsRewrite) is TiDB's modify column with reorg (reorgcolumn.go): a
// hidden changing column of the new type (model.ChangeInfo, named
// _Col$_<name>_0) and a changing copy of every index over the column
// (_Idx$_<index>_0, IndexInfo.ChangingOf) go delete only -> write only
// (every node's table.Writer stores the old value converted and the
// copies' entries with every write) -> write reorganization, whose
// backfill (reorgRows, ADD INDEX's batches and checkpoint) rewrites every
// row with its converted value and copy entries -> public: one
// incompatible version (catalog.ReplaceTable: a transaction that began
// before it fails at COMMIT with 8028, as it would write the old column
// the new schema no longer maintains) in which the changing column takes
// the old one's name and place (or CHANGE's name and FIRST / AFTER
// position) and the copies the old indexes' names and places; the old
// indexes' ranges are queued for deletion. Values convert as INSERT
// converts them (table.ConvertChanging over sql/types): in strict mode the
// first row that does not fit ends the job with MySQL's error for it
// (1264, 1265, 1366, 1292, 1138; 1062 when converted values collide in a
// unique copy) and the job rolls back (the changing column and copies
// removed in one version, the copies' ranges queued); outside strict mode
// (the ALTER's sql_mode, Job.Lenient) values are adjusted and the
// statement gets the warnings (Job.Warnings, up to 64). A change between
// TIMESTAMP (stored as UTC) and another type converts in the ALTER's
// time zone when it is not UTC (Job.TimeZone, model.ChangeInfo.TimeZone),
// as MySQL's ALTER does; a TIMESTAMP's literal DEFAULT is read in the
// DDL session's zone and stored as UTC. A DML statement
// that writes a value the new type refuses while the job runs fails with
// that error. A column of the PRIMARY KEY is 8200, as in TiDB, and so is
// a binary string made text; JSON on either side is 1235. A node still a
// version behind the swap reads rows written after it with the old
// column's origin default until it loads the swap (at most the schema
// lease window); it cannot write them (8028).
//
// # Table info
//
// BuildTableInfo turns a CREATE TABLE statement into the catalog's
// TableInfo (columns, defaults, the PRIMARY KEY as row handle or
// NONCLUSTERED index, indexes, AUTO_INCREMENT) and NewIndexInfo validates
// an index definition against a table, with MySQL's errors; NewColumns,
// CheckDropColumn, ModifyColumn and AlterDefault do the same for column
// changes; all are pure (tableinfo.go, column.go). sql/executor allocates the ids and submits the job.
//
// Concurrency: a DDL is safe for concurrent use; Run is one goroutine that
// both campaigns and runs jobs.
//
// # Generated columns
//
// `col type [GENERATED ALWAYS] AS (expr) [VIRTUAL | STORED]` (generated.go)
// keeps the expression as the TiDB parser restores it (qualifiers naming
// the table dropped, so RENAME TABLE leaves it valid), whether it is
// stored, and the columns it reads (model.GeneratedInfo), with MySQL 8's
// errors: 1054 for an unknown column, 3107 for a generated column defined
// after it, 3109 for the AUTO_INCREMENT column, 3763 for a function whose
// value is not a function of the row (RAND, NOW, UUID, ...), 3102 for
// subqueries and variables, 3103 for a VIRTUAL PRIMARY KEY, 3106 for a
// default. ALTER TABLE follows TiDB: ADD COLUMN ... VIRTUAL is an
// ordinary (instant) ADD COLUMN job, since no row holds the value; ADD
// ... STORED is 3106 (MySQL rebuilds the table); DROP or RENAME of a
// column a generated column reads is 3108, a type change of one 3106;
// CHANGE / MODIFY keeps a generated column generated with its storage,
// and only a VIRTUAL one outside every index may change its expression
// (CheckGeneratedChange). An index on a generated column is an ordinary
// index: its backfill decodes rows, which computes virtual values. A
// FOREIGN KEY may not use a VIRTUAL column (3733) nor set a STORED one
// (3104).
//
// # Foreign keys
//
// A FOREIGN KEY of CREATE TABLE is validated by NewFKInfo and AddFK
// (foreignkey.go: MySQL's 1239, 1826, 1830, SET DEFAULT refused as
// InnoDB does), named <table>_ibfk_<n> when unnamed, and given an index on
// its columns when no index starts with them (named after the FK, or
// after its first column); CheckFKParent checks the parent (3734, 3780,
// 1822). The FK is part of the child's TableInfo, so it is created with
// the table in one step; such a CREATE TABLE returns once every node
// loaded it (needsSync), so no node deletes a parent row without looking
// for the new table's rows.
//
// ALTER TABLE ADD FOREIGN KEY is an ADD INDEX job first when the child
// lacks an index on the FK's columns (dropped again when the FK fails),
// then an ADD FOREIGN KEY job: none -> write only (the FK is in the
// child's TableInfo and every node's DML keeps it once it loaded the
// version) -> the existing rows are checked at one fresh snapshot (with
// foreign_key_checks on; the parent's keys are held in memory) -> public,
// or the FK removed again (rollback done) with 1452. DROP FOREIGN KEY is
// one step; the index stays, as in MySQL. RENAME TABLE of a parent
// rewrites its children's FKs in the same version (renamedParent), and
// renaming an FK's own column renames it in the FK (replaceColumn).
//
// # Table options and data affinity
//
// ALTER TABLE ... COMMENT = / AFFINITY = / [DEFAULT] CHARACTER SET /
// COLLATE is one step (alter table options; the collation is the one
// columns added later get). ALTER TABLE ... CONVERT TO CHARACTER SET
// also changes every text column (ConvertColumn: a TEXT type widens to
// hold as many characters, as MySQL): the executor runs one modify column
// job per column (a rewrite when the column is indexed) and then the
// table options job, having checked every column first. AFFINITY = 'table' makes the table a data affinity group in PD
// (affinity.go): the finish step of CREATE TABLE (which then waits for its
// version like a FOREIGN KEY table), ALTER, TRUNCATE (the group moves to
// the new id), DROP TABLE and DROP DATABASE tells PD before the job
// reaches the history, and a PD error retries the step. The owner also
// reconciles PD's groups with the catalog when it takes the lease and
// every 5 minutes.
//
// # CHECK constraints
//
// `[CONSTRAINT [name]] CHECK (expr) [[NOT] ENFORCED]` of a column or the
// table (constraint.go) is validated by NewCheck with MySQL 8's errors:
// 3812 not a truth value, 3813 a column constraint reading another
// column, 3814 / 3815 a disallowed function / subquery, 3816 a variable,
// 3818 the AUTO_INCREMENT column, 3820 an unknown column (1054 in ALTER),
// 3822 a duplicate name, 3823 a column a FOREIGN KEY's action writes,
// 1059 a name over 64 characters. Unnamed ones are <table>_chk_<n>,
// numbered in the order they appear in CREATE TABLE (the statement's text
// says how column and table elements interleave: elementKinds), one above
// the largest such name in ALTER. The table keeps them ordered by name,
// as MySQL's dictionary (SHOW CREATE TABLE, evaluation). ADD CHECK of an
// enforced constraint and ALTER CHECK ... ENFORCED are none -> write only
// (the constraint is in the table, every node's DML enforces it once it
// loaded the version) -> write reorganization (a version of its own, as
// MODIFY COLUMN's, so no transaction that began before DML enforced it
// can still commit) -> the rows are checked at a fresh snapshot ->
// public, or the change undone (rollback done) with 3819; a NOT ENFORCED
// ADD, ALTER ... NOT ENFORCED and DROP are one step. DROP COLUMN drops
// the constraints that read only that column and refuses (3959) one that
// reads it and another (MySQL 8.0.19+); RENAME / CHANGE of a column a
// constraint reads is 3959.
//
// # Space of dropped objects
//
// The step that makes keys unreachable records their ranges (package
// deleterange) in its own transaction, from Job.dropped: DROP TABLE (the
// table's id as the step finds it; none for a view), TRUNCATE TABLE (the
// old id), DROP DATABASE (every table it holds), DROP INDEX and a rolled-back
// ADD INDEX (the index). A step that fails records nothing; a retried one
// rewrites the same keys. The SQL node's GC leader deletes them once the GC
// safe point passed the step's commit (sql/gcleader). Values of a dropped
// column stay in the rows.
//
// # Timings, ADMIN and keys
//
// The owner lease lasts 30 schema leases, at least 3 s (Config.OwnerTTL);
// each renewal writes the meta region and so wakes it from hibernation. The
// owner looks at the queue every tenth of a lease while jobs run and every
// lease after 30 s without one. A backfill batch (BackfillBatch, 256 rows)
// also conflict-checks the row keys it read, so a batch racing a DML on its
// rows fails at prewrite and is retried on a new snapshot; a unique entry
// DML already wrote for the same handle is kept. Entries of a dropped index
// stay under an index id that is never reused until the GC leader deletes
// them (below). ADMIN
// SHOW DDL JOBS lists queued and recent jobs with TiDB's columns, ADMIN SHOW
// DDL the owner; ADMIN CANCEL DDL JOBS answers 8224 for an unknown job, 8225
// for one that ended and 8226 for one too far along (sql/executor/admin.go
// runs them, and ADMIN CHECK TABLE / INDEX: at one snapshot, 8223 for an
// entry without its row or with another handle, 8003 for a row without its
// entry). RENAME TABLE is an incompatible version: a transaction that wrote
// the table fails with 8028. A PRIMARY KEY is CLUSTERED (the row handle) or
// NONCLUSTERED (a unique index named PRIMARY over the hidden _tidb_rowid
// handle) as its keyword says, else as tidb_enable_clustered_index says
// (clustered.go: ON, TiDB 8.5's default, clusters every key; INT_ONLY a
// single integer column; OFF none). A clustered single integer column is
// an int handle (PKIsHandle); any other clustered key is a common handle
// (CommonHandle: the rows are keyed by its encoded values, sql/model
// handle.go), except a key with a prefix part, stored NONCLUSTERED with
// warning 1105. Tables created before common handles existed keep their
// NONCLUSTERED layout. The choice is kept in the TableInfo and never
// changes: dropping
// a clustered key, or ADD PRIMARY KEY ... CLUSTERED, is TiDB's 8200;
// dropping a NONCLUSTERED one, or adding one, is 1235. The key's columns
// are NOT NULL (1171 when declared NULL); expression indexes are 1235
// (tableinfo.go). A key part may be a prefix (`v(10)`,
// model.IndexColumn.Length) of a string column only (1089), no longer than
// the column (1089; as long as a CHAR / VARCHAR / (VAR)BINARY column it is
// the whole column, as MySQL records it) and of at most 3072 bytes (1071);
// a BLOB / TEXT key part needs one (1170). CHANGE / MODIFY COLUMN refits
// them (refitKeyPart): a prefix at least as long as the new CHAR /
// VARCHAR, or of a column no longer a string, is the whole column, as
// MySQL 8 records it. Metrics: strata_ddl_jobs_total,
// job_duration_seconds, step_duration_seconds, owner, and for backfills
// (by job type: add index, modify column) backfill_rows_total,
// backfill_batch_seconds and
// backfill_duration_seconds. Tests: tests/ddl_test.go (an owner killed mid-backfill)
// and tests/column_test.go (column DDL under writers on two SQL nodes).
package ddl
