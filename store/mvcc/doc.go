// Package mvcc is Percolator's multi-version storage on a store: the record
// formats of the three key spaces of kv/keys, readers with lock checks, and
// the write buffer that turns a command's effects into raft_cmdpb requests.
//
// # Layout
//
//	LOCK    enc(key)             -> Lock   (type, primary, start_ts, ttl, ...)
//	WRITE   enc(key) ^commit_ts  -> Write  (kind, start_ts, short value)
//	DEFAULT enc(key) ^start_ts   -> value longer than ShortValueMaxLen
//
// A transaction's prewrite puts a Lock (a short value inline, a long one in
// DEFAULT); commit replaces it with a Write record at commit_ts (moving the
// short value into it); a rollback deletes the lock and writes a Rollback
// record at commit_ts = start_ts, so a late prewrite of the same transaction
// fails. Rollback records are always kept ("protected"); when another
// transaction's commit record already occupies that position its
// OverlappedRollback flag carries the rollback instead.
//
// # Reads
//
// A read at ts sees the newest Put or Delete with commit_ts <= ts (Lock and
// Rollback records are skipped). Under snapshot isolation a Put/Delete lock
// with start_ts <= ts and min_commit_ts <= ts stops the read with a Locked
// KeyError unless the reader was told the transaction is resolved
// (ResolvedLocks: skip) or committed (CommittedLocks: read the lock's
// value). ts = MaxTS (latest) checks locks the same way. Read committed
// ignores locks.
//
// # Ownership and concurrency
//
// Readers work over a Snapshot (a *pebble.Snapshot for consistency across
// keys and key spaces), are not safe for concurrent use and must be
// closed. Values and records they return are copies owned by the caller
// unless a method says otherwise. Txn only collects writes; applying them
// (through raft, or ApplyWrites on a plain batch in tests) is the caller's.
// The package knows nothing of raft or regions. The engine must order keys
// with kv/keys.Comparer: point reads of one key (a lock, a key's write
// records, a long value) are SeekPrefixGE, which Pebble serves from the
// bloom filters and versions of the key's prefix as that Comparer splits
// it; scans are SeekGE.
//
// # Read views
//
// A store's requests read through a View (view.go): one Pebble iterator pins
// the DB's state and every further iterator is its clone, cheaper for short
// reads than a *pebble.Snapshot, which takes the DB mutex twice and runs the
// compaction picker when closed as the oldest snapshot; store/server falls
// back to a snapshot when a View cannot be opened. A point get takes its
// SnapshotReader from a pool (AcquireSnapshotReader, Release): the reader
// and its key buffers are not allocated per request.
package mvcc
