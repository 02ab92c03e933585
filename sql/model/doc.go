// Package model is the schema model: DBInfo, TableInfo (columns, indexes,
// views, foreign keys), ColumnInfo, IndexInfo, FKInfo and the F1 schema
// states of an index being built. Both sides use it: the SQL node's catalog persists and caches it
// (sql/catalog), and the stores' coprocessor decodes rows by the TableInfo
// a request carries (store/coprocessor), so it depends on nothing but the
// shared codec and evaluator (sql/types, sql/tablecodec, sql/expr).
//
// A TableInfo is immutable once published (Clone before changing it);
// Init computes its derived fields after decoding.
package model
