// Package trace is the SQL node's tail-based trace sampling (issue 29).
//
// Every statement records its spans (stage intervals, KV RPCs and, inside
// each RPC's interval, the store's stages its response reported) into
// its connection's execdetails.Details, a buffer reused statement after
// statement. When the statement ends, its trace is kept only if it is
// worth reading: it took longer than the running p95 of its statement
// digest (a Quantile, a streaming estimate the statements summary keeps
// per digest under its own lock), or longer than KeepThreshold, or it
// went to the slow query log. Kept traces are copied out of the buffer
// into a bounded Ring (newest first, the oldest overwritten) and into the
// slow log entry; the others cost nothing more than the recording.
//
// Settings are this SQL node's (not persisted): SET GLOBAL
// strata_enable_trace = OFF stops recording (the A/B switch of the
// overhead measurement), SET GLOBAL strata_trace_keep_threshold = <ms>
// moves the threshold. Both are atomics read once per statement.
//
// Tree arranges a trace's spans by time containment for TRACE <stmt>
// (TiDB's row format: operation | startTS | duration) and the /dashboard
// waterfalls: the store's stages of an RPC land one level under it.
//
// Metrics: strata_sql_traces_total{outcome="kept"|"dropped"},
// strata_sql_trace_spans_total and strata_sql_trace_spans_overflow_total
// (spans past execdetails.MaxSpans).
package trace
