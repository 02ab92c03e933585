// Package txn is the client side of Strata's distributed transactions
// (Percolator, as TiKV's client-go): a Txn buffers writes in a memdb, reads
// a snapshot merged with its own writes, takes pessimistic locks, and
// commits with 1PC, async commit or two-phase commit across regions. It
// implements kv.Txn; Client.Begin starts one.
//
// # Reads
//
// Reads see the transaction's buffer over the snapshot at start_ts (or, in
// READ-COMMITTED, a fresh ts per statement). A read that meets another
// transaction's lock asks the LockResolver: finished transactions' locks are
// committed or rolled back (by key for small transactions, region-wide for
// large ones; outcomes cached; one status check per transaction in flight);
// a live transaction whose min_commit_ts is above the reader's snapshot is
// read through (Context.resolved_locks); otherwise the reader backs off and
// retries until the lock's TTL expires.
//
// # Commit
//
// Mutations are grouped by region (committer.run, over
// kvclient.GroupSorted: the one place a commit splits its keys by region;
// every write of a SQL node, catalog and DDL included, commits here). With
// one region and OnePC allowed, a
// single Prewrite(try_one_pc) commits. Otherwise every region is prewritten
// in parallel. With async commit (and at most Config.AsyncCommitMaxKeys
// keys) the primary's lock lists the secondaries, each prewrite returns a
// min_commit_ts, and the transaction is committed at their maximum as soon
// as every prewrite succeeded: the caller is answered then, the locks are
// committed in the background. Otherwise (2PC) a commit_ts from the oracle
// commits the primary (the commit point), then the secondaries in the
// background. A transaction has exactly one commit_ts in every region.
//
// A store that declines 1PC or async commit falls back to 2PC. A commit of
// the primary whose answer is lost is kv.ErrUndetermined, never a
// rollback; so is a lost async-commit prewrite unless the primary's
// rollback then succeeds. A lost 2PC prewrite is sent again (it is
// idempotent and commits nothing). A lost 1PC prewrite is settled at the
// primary's current leader (Cleanup at current_ts 0): committed there, the
// commit succeeds; not, the primary is rolled back there, which fences the
// lost request, and the commit fails with kv.ErrCommitLost (1213; an
// autocommit statement runs again); if that fails too, it is
// undetermined.
//
// # Pessimistic locks
//
// LockKeys locks at a fresh for_update_ts; the first key a transaction
// locks is its primary and is locked before the others. The store waits
// for conflicting locks in slices below the RPC timeout, up to the
// caller's wait timeout (kv.ErrLockWaitTimeout); NOWAIT fails at once
// (*kv.LockConflictError); a deadlock is *kv.DeadlockError; a commit after
// for_update_ts (WriteConflict PessimisticRetry) locks again at a newer
// for_update_ts. A transaction holding locks sends TxnHeartBeat to its
// primary every HeartbeatInterval so its TTL (LockTTL past its age) never
// lapses while it lives.
//
// A LockKeys call marks its keys locked only once all are; one that fails
// (lock wait timeout, deadlock, NOWAIT, a cancelled context, any error)
// releases every key it may have locked, the primary it chose included,
// at the newest for_update_ts it sent, before it returns (in the
// background only when the store itself failed), and the transaction
// chooses a new primary at its next lock. Rollback releases every lock,
// and keys whose release after a failed round did not land, at the newest
// for_update_ts any lock request carried: one request per region, the
// regions in parallel, not cut short by a cancelled context. A failed
// commit rolls back its prewrite locks (or, before any prewrite, its
// pessimistic locks) before it returns the error. A lock left behind
// (release failed) lives until its TTL.
//
// # Staging
//
// StmtBegin/StmtCommit/StmtRollback and savepoints are memdb checkpoints; a
// rolled-back statement keeps the pessimistic locks of its successful lock
// rounds (they are released at commit or rollback).
//
// # Concurrency and ownership
//
// A Client is safe for concurrent use; a Txn is used by one goroutine at a
// time. Keys and values passed in are copied; returned values belong to the
// caller.
//
// # Metrics
//
// strata_txn_transactions_total{mode,outcome},
// strata_txn_commit_phase_seconds{phase}, strata_txn_lock_resolves_total{result},
// strata_txn_lock_releases_total{cause,outcome}.
package txn
