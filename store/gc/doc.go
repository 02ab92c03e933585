// Package gc is a store's MVCC garbage collector (TiKV's gc_worker in
// small): it learns the cluster's GC safe point from PD and deletes, in the
// regions this store leads, the versions no reader at or above the safe
// point can see.
//
// # What is deleted
//
// For each user key, looking at its WRITE records with commit_ts <= safe
// point, newest first: Lock and Rollback records are deleted until the first
// Put or Delete; a Put is kept (it is what a read at the safe point sees), a
// Delete is deleted (nothing is visible either way); every older record is
// deleted, and with it the DEFAULT value of each deleted Put. Records above
// the safe point and locks are never touched. A read at ts >= safe point
// therefore sees exactly what it saw before; a read below it may not, so
// such reads are refused (SafePoint, checked by kv/server after its engine
// snapshot is taken: KeyError.gc_too_early, MySQL 9006 on the SQL node).
//
// The deletes of one key go into one raft command, applied atomically; a
// key with more versions than fit in one command is deleted oldest first,
// so every intermediate state still shows readers at the safe point the
// newest record, and a Delete record is removed last.
//
// # Concurrency with transactions
//
// A batch of up to BatchKeys keys is found on a snapshot without latches,
// then the keys' latches (kv/txn's, shared with every write command) are
// taken, the region is read again linearizably (ReadIndex), the deletes are
// computed again on a fresh snapshot and proposed as plain raft_cmdpb
// deletes, and the latches are released once they applied. No command can
// therefore rewrite a record (a rollback setting OverlappedRollback on an
// old commit record) between GC's read and its delete. Batches are
// separated by BatchPause, so foreground latency pays for at most one small
// batch at a time.
//
// # Safe point
//
// The worker polls PD every PollInterval. A new safe point is published to
// readers at once (SafePoint) but used for deletion only DeleteDelay later:
// every store polls at the same interval, so by then every store in contact
// with PD refuses reads below it too, including a store that becomes leader
// of a region whose old versions this one deleted. Locks below the safe
// point were resolved by the SQL node's GC leader before it raised the safe
// point (kv/gcleader).
//
// # Ownership
//
// Worker.Run owns one goroutine; SafePoint is safe for concurrent use.
package gc
