// Package executor plans and runs DML against a sql.Storage: SELECT (point
// get on the row handle, full table scan through the coprocessor, COUNT(*)
// pushed down as a coprocessor aggregation), INSERT, UPDATE and DELETE.
//
// Every statement runs in the transaction its TxnSource (the session)
// hands over: reads and writes go through sql.Txn only; the executor never
// fetches a timestamp or commits. Point reads use Txn.Get; range reads go to
// the coprocessor at the transaction's start_ts, or through Txn.Scan when
// the transaction has buffered writes in the range (the coprocessor cannot
// see them) or reads a fresh snapshot per statement (READ-COMMITTED).
// INSERT buffers Txn.Insert (a duplicate key is ERROR 1062, found when the
// key is locked or at commit). In pessimistic mode UPDATE, DELETE, INSERT
// and SELECT ... FOR UPDATE / LOCK IN SHARE MODE lock their rows at
// statement time (LockKeys at a fresh for_update_ts) and UPDATE / DELETE /
// FOR UPDATE work on the latest committed values the lock returns, with
// WHERE evaluated again on them; in optimistic mode they read the snapshot
// and conflicts are found at commit.
//
// Filtering, sorting, grouping, aggregation (other than COUNT(*) without a
// WHERE) and projection run on the SQL node. Executor is safe for
// concurrent use; per-statement state lives on the caller's stack.
package executor
