// Package executor plans and runs DML against a sql.Storage: SELECT (point
// get on the row handle, full table scan through the coprocessor, COUNT(*)
// pushed down as a coprocessor aggregation), INSERT, UPDATE and DELETE.
//
// Every statement runs as its own transaction (autocommit): reads happen at
// one fresh start_ts from PD; writes are buffered as mutations and committed
// once with a second, later commit_ts. INSERT uses Insert mutations so a
// duplicate primary key fails atomically in the KV layer (ERROR 1062);
// UPDATE/DELETE commit with their read start_ts, so a row changed by someone
// else since the read fails the whole statement with a write conflict instead
// of losing an update. Nothing is retried silently.
//
// Filtering, sorting, grouping, aggregation (other than COUNT(*) without a
// WHERE) and projection run on the SQL node. Executor is safe for
// concurrent use; per-statement state lives on the caller's stack.
package executor
