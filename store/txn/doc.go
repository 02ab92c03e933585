// Package txn evaluates Percolator transaction commands on a store, as
// TiKV's storage layer does: reads with lock checks (Get, BatchGet, Scan,
// ScanLock) and the write commands Prewrite (optimistic and pessimistic,
// async commit, 1PC), Commit, BatchRollback, Cleanup, CheckTxnStatus,
// CheckSecondaryLocks, ResolveLock, TxnHeartBeat, PessimisticLock and
// PessimisticRollback. Request and response types are
// kvrpcpb's; store/server's handlers call Storage directly.
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
// The concurrency manager (store/concurrency) keeps the store's max read
// timestamp. Async-commit and 1PC prewrites lock their keys in it, set
// min_commit_ts above max_ts (and start_ts, for_update_ts, the request's
// min_commit_ts), and keep the in-memory locks until their write applied:
// a read at ts >= min_commit_ts waits and then sees the lock or the 1PC
// commit; a read that came earlier is below every commit_ts the transaction
// can get. After this store gains a leadership max_ts is first raised to a
// fresh PD timestamp (SyncMaxTS), and such writes are proposed only at the
// leader generation that sync covered.
//
// # Leader reads
//
// A read (Get, BatchGet, Scan, ScanLock; store/server's coprocessor, index
// lookups and the leader's half of a follower read likewise) loads the
// peer's leader term (Engine.LeaderTerm), passes ReadIndex, raises max_ts
// and waits for the in-flight writes it must see, takes its engine
// snapshot, and only then checks that the peer still leads in that same
// term (ReadCheck). Invariant: the snapshot is read only if the leadership
// the ReadIndex confirmed lasted, unbroken, until after the snapshot was
// taken. The wait can last up to the request's deadline and can end
// because the region left this peer: a 1PC or async-commit write is
// answered undetermined, and its in-memory lock released, when its peer
// installs a snapshot (the region's ranges are cleared before the ingest),
// is destroyed (its data deleted), or has the write's entry overwritten by
// another leader's and not decided in time, and that write may still
// commit at its commit_ts through another peer. Every such answer comes
// after the peer stopped leading (raftstore's LeaderTerm is 0 or another
// term by then), so the read that the release let go fails with NotLeader
// (a replica read whose peer left: RegionNotFound), which the client
// retries at the region's leader, instead of reading deleted data or
// missing a write a later read at the same timestamp sees. Checking only
// at the ReadIndex, before the wait, is not enough; TiKV's order
// (max_ts and in-memory locks first, then lease check and snapshot
// together) is the other way to get the same guarantee. The released
// write also leaves the resolved-ts minimum (store/concurrency ResolveTS):
// harmless, since a store computes resolved ts only for regions it leads
// under a lease, which in a later term it holds only after applying an
// entry of that term, so after the write's entry was decided and, if
// committed, applied. Metric: strata_txn_reads_refused_total{reason}.
// GetLocal is Get in the same order for a caller that must not wait (a
// stream's receiving goroutine): a lease read (LocalReader.ReadLocal,
// which also gives the leader term of the lease, so the term is not
// loaded apart) instead of the ReadIndex, concurrency.TryReadKey instead
// of the wait. If either would wait it returns where it stopped
// (PendingGet) and the caller finishes it where waiting is allowed
// (PendingGet.Finish): after a failed lease check straight to the
// engine's queue (LocalReader.ReadIndexQueued: the lease is not checked
// again on the caller's side), after a blocked TryReadKey by waiting for
// the write (ReadKey; the read is already recorded) and then reading
// under the same ReadCheck of the lease's term. A get under no valid
// lease is never served on the caller's goroutine, and a lock it meets is
// returned (Locked) exactly as Get returns it: each get passes one lease
// (or ReadIndex) check and one concurrency-manager check.
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
// close a cycle in the Detector's wait-for graph. A transaction that takes
// a key's lock while others are queued for it (one that came in between
// a release and the woken waiter's retry) makes them evaluate again, so
// each waits for, and the graph has its edge to, the key's current holder
// (strata_txn_lock_wait_rechecks_total); an edge left pointing at the
// previous holder would hide a deadlock until a wait timed out. When this
// store stops leading a region (LeaderChanged), the region's waiters
// evaluate again at once and get NotLeader: the release they wait for will
// be served by the new leader and would never wake them here
// (strata_txn_lock_waiters_moved_total).
//
// # In-memory pessimistic locks
//
// With Config.InMemoryPessimisticLock (TiKV's in-memory pessimistic
// locks) a PessimisticLock on a region's leader puts its locks into that
// region's table in memory (memlocks.go) instead of proposing them: no raft
// round. Every TxnReader of a command sees the table over the lock key
// space (mvcc.LockOverlay), so the transaction's prewrite, other lockers,
// CheckTxnStatus, ResolveLock and ScanLock find them; snapshot reads ignore
// pessimistic locks anyway. A command's other lock writes remove the key
// from the table before they are proposed, and a pessimistic rollback of a
// memory-only lock writes nothing. The table is dropped whenever the
// region's leadership here changes (raftstore's TxnHooks.LeaderChanged)
// and emptied when the region's epoch version moves on. Before a planned
// leader transfer or a split, raftstore calls Handover: the locks are
// proposed as lock records ahead of the transfer or split (the transferee
// has every entry before it campaigns, the split applies after them), and
// new locks of the region go through raft until the table is replaced. A
// crash loses the table: the transaction's pessimistic prewrite then
// amends the missing lock only if no other lock is on the key and nothing
// was committed since start_ts (not for_update_ts: the request's is the
// transaction's latest, and the key may have been read and locked by an
// earlier statement at a smaller one), else fails with a retryable error
// (PessimisticLockNotFound; MySQL 1213 at COMMIT), so isolation never
// depends on the lock having survived. Metrics:
// strata_txn_memory_pessimistic_locks, pessimistic_lock_writes_total
// {where}, memory_locks_flushed_total{outcome},
// memory_locks_dropped_total{reason}, prewrite_amended_locks_total.
//
// # Concurrency and errors
//
// Storage is safe for concurrent use; commands run on the caller's
// goroutine. Responses carry region errors (retry elsewhere) and key errors
// (kvrpcpb.KeyError); a returned error means the command did not run or,
// for a write, that its outcome is unknown.
//
// # Execution details
//
// Get, BatchGet, Scan, Prewrite, Commit and PessimisticLock answer with
// their side of the request (kvrpcpb.ExecDetails, execdetails.go): a
// read's ReadIndex, concurrency-manager and Pebble times and the versions
// it returned (ReadTimer), a write's latch wait, ReadIndex, evaluation
// and the raft stages Engine.Write reports, and a pessimistic lock's wait
// for another transaction. One allocation per response holds them all.
package txn
