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
// such reads are refused (SafePoint, checked by store/server after its engine
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
// then the keys' latches (store/txn's, shared with every write command) are
// taken, the region is read again linearizably (ReadIndex), the deletes are
// computed again on a fresh snapshot and proposed as plain raft_cmdpb
// deletes carrying the safe point (see below), and the latches are released once they applied. No command can
// therefore rewrite a record (a rollback setting OverlappedRollback on an
// old commit record) between GC's read and its delete. Batches are
// separated by BatchPause, so foreground latency pays for at most one small
// batch at a time.
//
// # Safe point
//
// Readers check the safe point the store knows (Store.SafePoint,
// raftstore's GCSafePoint), which rises two ways. The worker polls PD
// every PollInterval and raises it at once; it deletes under a safe point
// only DeleteDelay after polling it, so stores in contact with PD mostly
// know it before any version goes. A store that is not (partitioned from
// PD, a PD failover) does not depend on that timing: every GC delete
// command carries the safe point it deletes under
// (RaftCmdRequest.gc_safe_point), and every replica applying it raises its
// store's known safe point in the same apply pass, before the batch with
// the deletes is committed to Pebble. A read takes its engine snapshot and
// only then checks (store/server's gcChecked), so a snapshot that shows a
// deletion is checked against a safe point at least the one it was made
// under: follower, stale and leader reads there (also once the store
// becomes leader) are refused, not answered from collected data. A region
// snapshot carries the sender's known safe point, taken after the engine
// snapshot it is cut from, and the receiver raises its own in the install
// batch, before the files are ingested. The raised value is persisted in
// the same batch as the deletes (or the install), so a restarted store
// refuses the same reads before its first poll. Wire compatibility: a
// store built before the field ignores it (and keeps the old, timing-based
// guarantee); it refuses a snapshot description carrying a safe point as
// corrupt, so the snapshot is retried until that store is upgraded. Locks
// below the safe point were resolved by the SQL node's GC leader before it
// raised the safe point (sql/gcleader).
//
// # Ownership
//
// Worker.Run owns one goroutine; SafePoint is safe for concurrent use.
//
// # Defaults
//
// BatchKeys is 256 keys, BatchPause 5 ms, DeleteDelay two PollIntervals
// (worker.go). KvGet, KvBatchGet, KvScan and Coprocessor requests are the
// reads refused below the safe point.
package gc
