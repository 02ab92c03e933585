// Package memory tracks the memory SQL statements hold on this SQL node and
// enforces two limits (TiDB's util/memory, at our scale).
//
// # Per statement: tidb_mem_quota_query
//
// Every session owns one Statement, reused by each statement it runs
// (Start ... End). Operators that keep rows (sort, hash join build, hash
// aggregation, materialised results) hold a Tracker on it and report what
// they keep with Consume or Grow; a Tracker batches its changes and adds
// them to the Statement (one atomic add) every trackBatch bytes, so the
// quota is enforced to within trackBatch per operator. Past the quota:
//
//   - an operator that can spill (Grow reports spill) writes what it holds
//     to disk (sql/executor/spill) and releases it, when the statement may
//     spill (tidb_enable_tmp_storage_on_oom, ON by default);
//   - otherwise the statement fails with ERROR 8175 (ErrQuota).
//
// # Per node: tidb_server_memory_limit
//
// Limiter watches the Go heap (runtime/metrics, no stop-the-world) every
// 100 ms. When it is over the limit it kills the running statement that
// tracks the most bytes: that statement's next Consume or Grow fails with
// ERROR 8176, and the next one is chosen only after it ended. The limit is
// also the runtime's soft memory limit (debug.SetMemoryLimit), so the
// collector works harder before anything is killed.
//
// Concurrency: a Statement's counters are atomics (the Limiter reads them
// from its own goroutine); Start and End belong to the session's goroutine.
// A Tracker belongs to one operator, on the statement's goroutine.
//
// # Defaults and metrics
//
// tidb_mem_quota_query defaults to 1 GiB; tidb_server_memory_limit (GLOBAL,
// this node) to 80% of the machine's or the cgroup's memory. Metrics:
// strata_sql_memory_bytes{scope}, strata_sql_statement_memory_peak_bytes,
// strata_sql_memory_cancels_total{reason}, and from sql/executor/spill
// strata_sql_spill_total and strata_sql_spill_bytes_total.
package memory
