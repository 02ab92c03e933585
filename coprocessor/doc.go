// Package coprocessor runs pushed-down DAG requests (coprocessorpb.DAGRequest)
// on a store, over the key ranges of one region at a read timestamp.
//
// Supported chains (executors[0] is always the source):
//
//	TableScan [-> Limit] [-> Aggregation(Count...)]
//
// TableScan walks the MVCC versions visible at start_ts in ascending order
// (descending with desc, ranges visited last to first); Limit stops the scan
// early (it is pushed into the scan, so no extra rows are read); Aggregation
// without GROUP BY produces one int64 per aggregate function as a partial
// result for the SQL node to merge. Row values are opaque to the store.
//
// Execute is stateless and safe for concurrent use; it reads through the
// Scanner it is given (an mvcc.SnapshotReader at start_ts, with Percolator
// lock checks) and owns nothing after it returns. The caller is
// responsible for having checked that every range lies in the region and for
// the read being linearizable (raftstore ReadIndex).
package coprocessor
