// Package coprocessor runs pushed-down DAG requests (coprocessorpb.DAGRequest)
// on a store, over the key ranges of one region at a read timestamp.
//
// Supported chains (executors[0] is always the source):
//
//	(TableScan | IndexScan) → Selection? → (Limit | TopN)* → Projection? → Aggregation?
//	IndexScan → IndexLookUp → Limit*
//
// IndexScan (index.go) decodes each index entry into the same row layout
// (the index's columns at their offsets, the handle, NULL elsewhere), so
// the executors after it are the TableScan ones. IndexLookUp reads the row
// of each entry through a RowReader (store/server: the rows of regions this
// store leads, checked per batch of 512 entries), and answers, in index
// order, the index key, the row key and either the row or a remote marker
// for the SQL node to fetch.
//
// TableScan walks the MVCC versions visible at start_ts in ascending order
// (descending with desc, ranges visited last to first). With the table's
// schema (TableScan.table_info) each row is decoded by model.TableInfo's
// DecodeRow into the SQL node's row layout (a column added after the row
// was written decodes as its origin default; a VIRTUAL generated column,
// which no row value holds, is computed from the row there, so conditions,
// orderings and aggregates over it are evaluated here too), and Selection, TopN,
// Projection and the aggregate arguments are sql/expr trees rebuilt with
// expr.FromPB: the stores evaluate exactly the code the SQL node does (one
// implementation of MySQL semantics). Strings compare, sort and group
// under the collation the SQL node sends (a comparison's
// Expr.collation, a column's FieldType.collate; sql/collate), so a
// utf8mb4_general_ci column filters and groups here as there. An
// IndexScan of an index on such a column decodes the collation's sort
// keys, not the values: the SQL node never reads those values from it.
// Without a schema rows are opaque and only Limit and COUNT(*) apply.
//
// Output: the surviving rows (key and stored value, or the projected values
// encoded as a row with column ids 0..n-1); TopN's first limit rows in
// order; or one row of partial aggregate states (COUNT → count, SUM → an
// exact DECIMAL sum for exact arguments, a DOUBLE otherwise, MIN/MAX → the
// value, AVG → count and sum) for the SQL node to merge.
//
// Bounds: paging_size stops a row-producing chain after that many rows and
// returns resume_key; page_ms and page_scan_rows stop any chain but the
// legacy COUNT and Limit chains after that much execution time (checked
// every 64 rows) or that many rows scanned, and answer the part scanned
// (rows, top rows, partial aggregate states) with resume_key, which the
// client merges as it merges regions; max_scan_rows (DefaultMaxScanRows when 0) fails a
// request that scans more; a Limiter admits a fixed number of requests per
// store at once (store/server takes a slot only for coprocessor requests, so
// point gets and writes are never queued behind scans).
//
// Execute is stateless and safe for concurrent use; it reads through the
// Scanner it is given (an mvcc.SnapshotReader at start_ts, with Percolator
// lock checks: a lock met ends the request with *mvcc.KeyError for the
// client to resolve) and owns nothing after it returns. The caller is
// responsible for having checked that every range lies in the region and for
// the read being linearizable (raftstore ReadIndex).
package coprocessor
