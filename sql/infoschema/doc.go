// Package infoschema serves information_schema: read-only tables computed
// from the catalog (SCHEMATA, TABLES, COLUMNS, STATISTICS,
// KEY_COLUMN_USAGE, TABLE_CONSTRAINTS, REFERENTIAL_CONSTRAINTS,
// CHECK_CONSTRAINTS), the node's
// connections (PROCESSLIST) and every live SQL node's (CLUSTER_PROCESSLIST,
// gathered by sql/server from its peers), slow query log (SLOW_QUERY) and statement
// digests (STATEMENTS_SUMMARY[_HISTORY]), TiDB's columns where they apply,
// and fixed server facts (ENGINES, COLLATIONS,
// CHARACTER_SETS), with MySQL 8.0's column names and types. VIEWS lists
// the views and PARTITIONS has MySQL's one row per non-partitioned table;
// COLUMNS shows a TIMESTAMP's literal default (stored as UTC) in the
// session time zone when the Viewer is an expr.Env (the session);
// FILES, TRIGGERS, ROUTINES and EVENTS exist for the tools that read them
// (mysqldump) and are empty: Strata has no tablespaces or stored programs
// (files.go). Foreign keys
// appear in KEY_COLUMN_USAGE (with their REFERENCED_ columns),
// TABLE_CONSTRAINTS (FOREIGN KEY) and REFERENTIAL_CONSTRAINTS (rules
// NO ACTION when none was given, as MySQL 8.0 shows them). CHECK
// constraints are in CHECK_CONSTRAINTS and in TABLE_CONSTRAINTS (CHECK,
// ENFORCED YES or NO; checks.go).
//
// The planner reads them as MemTables (planner.SystemSchema): the rows are
// built when a statement opens the table, then filtered, sorted and limited
// by the ordinary operators. Rows a session may not see are left out: a
// database or table appears only when the session's account holds some
// privilege on it (as SHOW DATABASES / SHOW TABLES filter), and
// [CLUSTER_]PROCESSLIST and SLOW_QUERY show other users' connections and statements only with
// PROCESS, and the statements summary needs PROCESS. The session passed as
// the statement's expr.Env must implement Viewer.
//
// Schema is immutable after New and safe for concurrent use; each read
// takes a fresh catalog snapshot (ListDBs / ListTables), so it costs one
// catalog scan per database.
package infoschema
