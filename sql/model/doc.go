// Package model is the schema model: DBInfo, TableInfo (columns, indexes,
// views, foreign keys, CHECK constraints: constraint.go), ColumnInfo, IndexInfo, FKInfo and the F1 schema
// states of an index being built. Both sides use it: the SQL node's catalog persists and caches it
// (sql/catalog), and the stores' coprocessor decodes rows by the TableInfo
// a request carries (store/coprocessor), so it depends on nothing but the
// shared codec and evaluator (sql/types, sql/tablecodec, sql/expr) and the
// TiDB parser (for generated columns' expressions).
//
// While a MODIFY COLUMN rewrites rows, the table holds a hidden changing
// column (ColumnInfo.Changing) and changing copies of the column's indexes
// (IndexInfo.ChangingOf), which refer to it by name and resolve to its
// offset in ForWrite's table only (changing.go).
//
// Rows are keyed by their handle (handle.go): an integer PRIMARY KEY's
// value (PKIsHandle), the encoded values of any other clustered key (a
// common handle: CommonHandle, whose PRIMARY index has no entries and
// whose key columns an index entry gives back where HandleRestores), or
// a hidden _tidb_rowid. DecodeRow and SetIndexRow put the handle in a
// row's last slot (Handle.Datum).
//
// A TableInfo is immutable once published (Clone before changing it);
// Init computes its derived fields after decoding, among them the
// compiled expressions of its generated columns (generated.go), parsed
// from their text in dependency order, and of its enforced CHECK
// constraints (constraint.go: ViolatedCheck evaluates them on a row).
//
// # Virtual generated columns
//
// A VIRTUAL column is not in the row value; DecodeRow computes it from
// the decoded row. Evaluating on decode rather than on the SQL node alone
// is the choice that keeps one path for every reader: the stores'
// coprocessor decodes rows with the TableInfo a request carries, so a
// Selection, TopN, Projection or aggregate over a virtual column is pushed
// down and evaluated there with the same sql/expr code, and a point get,
// an index lookup, ADMIN CHECK, ANALYZE, CHECKSUM TABLE and the index
// backfill see the same values; no plan has to avoid the column. A value
// that does not fit the column type is stored adjusted on read (as
// outside strict mode), and one that fails to evaluate reads as NULL: a
// read never fails on it (writes, which compute the same expression with
// the statement's strictness, refuse such rows in strict mode).
package model
