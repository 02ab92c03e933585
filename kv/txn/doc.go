// Package txn evaluates Percolator transaction commands on a store, as
// TiKV's storage layer does: reads with lock checks (Get, BatchGet, Scan,
// ScanLock) and the write commands Prewrite (optimistic and pessimistic,
// async commit, 1PC), Commit, BatchRollback, Cleanup, CheckTxnStatus,
// CheckSecondaryLocks, ResolveLock, TxnHeartBeat, PessimisticLock,
// PessimisticRollback, and the legacy OnePC. Request and response types are
// kvrpcpb's; kv/server's handlers call Storage directly.
//
// # Write path
//
// A write command takes the latches of its keys (Latches: per-key slots
// taken in order, FIFO), waits for a linearizable view of its region
// (Engine.ReadIndex), evaluates over a snapshot with package mvcc (actions.go
// follows TiKV's actions), and hands the resulting raft_cmdpb writes to
// Engine.Write, which returns once they are applied. Latches are held from
// evaluation until then, so commands on one key see each other's effects in
// order; the transaction logic runs only here, and raft only replicates
// plain puts and deletes.
//
// # Timestamps
//
// The concurrency manager (kv/concurrency) keeps the store's max read
// timestamp. Async-commit and 1PC prewrites lock their keys in it, set
// min_commit_ts above max_ts (and start_ts, for_update_ts, the request's
// min_commit_ts), and keep the in-memory locks until their write applied:
// a read at ts >= min_commit_ts waits and then sees the lock or the 1PC
// commit; a read that came earlier is below every commit_ts the transaction
// can get. After this store gains a leadership max_ts is first raised to a
// fresh PD timestamp (SyncMaxTS), and such writes are proposed only at the
// leader generation that sync covered.
//
// # Pessimistic lock waiting
//
// A PessimisticLock meeting another transaction's lock queues on that key
// (registered before its latches are released, so the release is not
// missed) and is woken in arrival order when the lock is released by
// commit, rollback, pessimistic rollback, cleanup or lock resolution here;
// it then evaluates again. It gives up after wait_timeout
// (LockWaitTimeout), returns Locked when the holder's TTL ran out (the
// client resolves it), and fails at once with Deadlock when the wait would
// close a cycle in the Detector's wait-for graph.
//
// # Concurrency and errors
//
// Storage is safe for concurrent use; commands run on the caller's
// goroutine. Responses carry region errors (retry elsewhere) and key errors
// (kvrpcpb.KeyError); a returned error means the command did not run or,
// for a write, that its outcome is unknown.
package txn
