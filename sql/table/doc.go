// Package table is the one place that writes a row: AddRecords,
// UpdateRecords and RemoveRecords build the row key, the row value and
// every secondary index entry of a table and buffer them in a kv.Txn.
// INSERT, UPDATE, DELETE, the index backfill and ADMIN CHECK all derive
// index entries through IndexEntry, so the entries a query reads are the
// ones DML wrote.
//
// # Invariants
//
//   - Every row of a table has exactly one entry in each of its indexes
//     whose state is write-only or public, and no index has an entry
//     without its row (ADMIN CHECK TABLE verifies both). The clustered
//     PRIMARY KEY of a common-handle table (model.TableInfo.CommonHandle)
//     has no entries: the row key is made of its values
//     (TableInfo.HandleOf), so two rows with one key collide on the row
//     key (1062 naming the values written), and an UPDATE that changes
//     them moves the row; the other indexes' entries carry the common
//     handle.
//   - Entries follow the index's schema state (catalog.SchemaState):
//     delete-only indexes get their entries deleted but none written;
//     write-only and public ones are fully maintained.
//   - Columns an ADD or DROP COLUMN is moving through its states
//     (catalog.TableInfo.NonPublic) are written as their state says: a
//     write-only one gets its FillDatum on INSERT and keeps its value on
//     UPDATE, whose rows must be read through TableInfo.ForWrite (an
//     UPDATE through a table without them is refused, never a silent
//     loss); a delete-only one is not written.
//   - While a MODIFY COLUMN rewrites rows (model.ChangeInfo), every row
//     written carries its changing column, computed from the old column
//     by ConvertChanging (a value it refuses fails the write once the
//     column is write only), and index entries are computed over
//     ForWrite's layout, so the changing copies of indexes get theirs;
//     the entries deleted are computed the same way from the row as read.
//     ConvError is the MySQL error for a value a column refuses, shared by
//     INSERT, UPDATE and the rewrite. A change between TIMESTAMP (UTC)
//     and another type converts in the ALTER's time zone
//     (ChangeInfo.TimeZone, sql/expr WriteDatum).
//   - A unique index with no NULL in the entry's values holds one key per
//     value tuple; a second row with the same values is ERROR 1062
//     "Duplicate entry '<vals>' for key '<table>.<index>'". Values of a
//     column of a non-binary collation are equal when the collation says
//     so: the entry holds the sort key (model.IndexDatum), so 'a@x.com'
//     collides with 'A@x.com' under utf8mb4_general_ci, and the error
//     names the values the Writer wrote. A prefix key part holds the
//     value's first characters (model.IndexColumnDatum: cut, then the
//     sort key), so a UNIQUE prefix is unique over the prefixes and the
//     error names the prefix, as MySQL does.
//   - Generated columns: rows passed in hold their computed values (the
//     executor fills them); a VIRTUAL one is left out of the row value
//     (model.TableInfo.EncodeRow) but its index entries hold the value,
//     and an old row read through DecodeRow has it recomputed, so the
//     entries UpdateRecords deletes are the ones written.
//
// # Locking
//
// In pessimistic mode every key a statement writes is locked before it is
// written, in one LockKeys call per statement: the row keys inserted and
// every index key inserted or deleted. The values read at the lock's
// for_update_ts (merged with the transaction's own writes) decide
// uniqueness, so a duplicate is reported at statement time, as in MySQL.
// TiDB leaves non-unique index keys unlocked (SkipPessimisticCheck); our
// transaction client prewrites unlocked keys of a pessimistic transaction
// with an optimistic conflict check, so locking them is what keeps two
// updates of one row that serialize on its row lock from failing with a
// write conflict on the index key. In optimistic mode nothing is locked and
// unique keys are written with Insert, checked at prewrite.
//
// # Concurrency and ownership
//
// A Writer belongs to one statement of one session. Row slices passed in
// are read, not retained; keys and values are copied by the Txn.
package table
