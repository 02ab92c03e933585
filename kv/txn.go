package kv

import "context"

// The transaction contract between the SQL layer and KV (issue 6). The
// session owns one Txn per transaction (explicit or autocommit); executors
// read and write only through it and never fetch timestamps or commit
// themselves. kvclient/txn implements it; only its committer talks to
// stores.

// IsolationLevel of a transaction.
type IsolationLevel int

const (
	RepeatableRead IsolationLevel = iota // snapshot isolation (default)
	ReadCommitted                        // each statement reads a fresh snapshot
)

// TxnOptions are fixed when a transaction begins.
type TxnOptions struct {
	// Pessimistic: DML locks keys at statement time (TiDB's default mode);
	// otherwise conflicts are found at commit (BEGIN OPTIMISTIC).
	Pessimistic bool
	Isolation   IsolationLevel
	ReadOnly    bool
	// StartTS, when not 0, reads at that snapshot (AS OF TIMESTAMP); the
	// transaction must be read-only.
	StartTS uint64
	// StaleRead: StartTS is an AS OF TIMESTAMP in the past; reads may be
	// served by any replica whose safe ts covers it.
	StaleRead bool
	// AsyncCommit and OnePC allow those commit protocols
	// (tidb_enable_async_commit, tidb_enable_1pc).
	AsyncCommit bool
	OnePC       bool
	// FailOnLock: an optimistic transaction whose prewrite meets another
	// transaction's lock fails at once with ErrWriteLocked, leaving the
	// lock alone, instead of resolving it or waiting for its owner. An
	// autocommit statement's optimistic first attempt sets it: it then
	// runs again pessimistically and waits in the store's lock-wait queue
	// (deadlock detection, innodb_lock_wait_timeout) like any lock.
	FailOnLock bool
}

// LockOptions control a pessimistic lock (UPDATE, DELETE, SELECT ... FOR
// UPDATE / LOCK IN SHARE MODE).
type LockOptions struct {
	// NoWait: fail at once with *LockConflictError (FOR UPDATE NOWAIT,
	// MySQL 3572) instead of waiting.
	NoWait bool
	// WaitTimeout bounds the wait for a conflicting lock
	// (innodb_lock_wait_timeout); past it the lock fails with
	// ErrLockWaitTimeout (1205). 0 means the store's default.
	WaitTimeoutMs int64
	// ReturnValues: the values read at for_update_ts, one per key (nil
	// when absent), are returned by LockKeys.
	ReturnValues bool
}

// CommitGuard is what the schema allows a commit: the transaction may
// commit at any commit_ts up to MaxCommitTS without more ado; above it (a
// commit that stalled, or a store that had to pick a later timestamp)
// Check is asked, with the commit_ts chosen, before the commit point, and
// an error it returns aborts the commit. A 1PC or async-commit prewrite
// carries MaxCommitTS as its max_commit_ts, so that a store never commits
// one above it (it falls back to two-phase commit, which asks Check).
type CommitGuard struct {
	MaxCommitTS uint64
	Check       func(ctx context.Context, commitTS uint64) error
}

// Allows reports whether a commit at commitTS needs no Check.
func (g CommitGuard) Allows(commitTS uint64) bool {
	return g.Check == nil || commitTS <= g.MaxCommitTS
}

// KvPair is one key and its value.
type KvPair struct {
	Key, Value []byte
}

// Txn is one transaction. Reads see the transaction's own writes merged
// over its snapshot (start_ts, or a fresh one per statement in
// READ-COMMITTED). A Txn is used by one session at a time.
type Txn interface {
	StartTS() uint64
	// ForUpdateTS is the timestamp pessimistic locks of the current
	// statement read at (the latest committed values).
	ForUpdateTS() uint64
	Get(ctx context.Context, key []byte) (value []byte, found bool, err error)
	// BatchGet returns the found keys' values, keyed by string(key).
	BatchGet(ctx context.Context, keys [][]byte) (map[string][]byte, error)
	// Scan returns up to limit (0: all) pairs of [start, end) in key order,
	// descending when reverse.
	Scan(ctx context.Context, start, end []byte, limit int, reverse bool) ([]KvPair, error)
	// Set, Delete and Insert buffer a write. Insert asserts that the key has
	// no live value: checked when the key is locked (pessimistic) or at
	// prewrite (optimistic), failing with *KeyExistsError.
	Set(key, value []byte) error
	Delete(key []byte) error
	Insert(key, value []byte) error
	// LockKeys takes pessimistic locks on keys at a fresh for_update_ts
	// (pessimistic mode; a no-op in optimistic mode apart from marking the
	// keys to be checked at commit). Errors: ErrLockWaitTimeout,
	// *DeadlockError, *LockConflictError (NoWait).
	LockKeys(ctx context.Context, opts LockOptions, keys ...[]byte) (values [][]byte, err error)
	// Dirty reports whether the transaction has buffered writes in
	// [start, end); executors that read through the coprocessor merge the
	// buffer instead when it does.
	Dirty(start, end []byte) bool

	// Statement staging: a failed statement rolls back only its own writes.
	StmtBegin()
	StmtCommit()
	StmtRollback()
	// Savepoints (SAVEPOINT / ROLLBACK TO / RELEASE SAVEPOINT).
	Savepoint(name string)
	RollbackToSavepoint(name string) error
	ReleaseSavepoint(name string) error

	// SetCommitGuard bounds the commit_ts of the next Commit (see
	// CommitGuard); the zero guard bounds nothing.
	SetCommitGuard(g CommitGuard)
	// Commit makes the writes durable at one commit_ts on every region.
	// Errors: *WriteConflictError (optimistic), *KeyExistsError,
	// ErrUndetermined (sent, outcome unknown: never reported as a
	// rollback), ErrRegionUnavailable, and whatever the guard's Check
	// returned (nothing was committed then).
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
}
