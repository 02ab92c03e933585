package kv

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
)

// Storage is what the SQL layer needs from PD and the KV client.
//
// All methods are safe for concurrent use. Byte slices passed in are not
// retained after the call returns; slices returned belong to the caller.
// Errors: a Storage reports the outcomes the SQL layer must tell apart with
// the types and sentinels below (wrapped is fine; they are matched with
// errors.As / errors.Is). Any other error is reported to the client as an
// internal error. A done ctx yields an error wrapping ctx.Err().
type Storage interface {
	// GetTS returns a fresh timestamp, greater than every timestamp
	// returned before it anywhere in the cluster.
	GetTS(ctx context.Context) (uint64, error)
	// AllocID reserves count cluster-unique ids and returns the first;
	// the reserved ids are [first, first+count).
	AllocID(ctx context.Context, count uint32) (uint64, error)
	// Coprocessor runs dag over ranges at ts and returns one response per
	// region touched, in key order.
	Coprocessor(ctx context.Context, dag *coprocessorpb.DAGRequest, ranges []*kvrpcpb.KeyRange, ts uint64) ([]*coprocessorpb.SelectResponse, error)
	// Begin starts a transaction (see Txn) with a fresh start_ts, or
	// opts.StartTS when set.
	Begin(ctx context.Context, opts TxnOptions) (Txn, error)
}

// TxnTooLargeError: a transaction's write buffer passed the SQL node's
// limit (txn-total-size-limit; TiDB's 8004).
type TxnTooLargeError struct{ Size, Limit int }

func (e *TxnTooLargeError) Error() string {
	return fmt.Sprintf("sql: transaction too large: %d bytes buffered, limit %d", e.Size, e.Limit)
}

// KeyExistsError reports an Insert mutation on a key that has a live value.
type KeyExistsError struct{ Key []byte }

func (e *KeyExistsError) Error() string { return fmt.Sprintf("sql: key %x already exists", e.Key) }

// WriteConflictError reports that Key was committed by another transaction
// after StartTS.
type WriteConflictError struct {
	StartTS          uint64
	ConflictStartTS  uint64 // 0 when unknown
	ConflictCommitTS uint64
	Key              []byte
}

func (e *WriteConflictError) Error() string {
	return fmt.Sprintf("sql: write conflict on key %x: txn start_ts %d, conflicting commit_ts %d", e.Key, e.StartTS, e.ConflictCommitTS)
}

var (
	// ErrRegionUnavailable: the KV layer exhausted its retries finding a
	// leader for a region. Nothing was written.
	ErrRegionUnavailable = errors.New("sql: region unavailable")
	// ErrUndetermined: a commit was sent but its outcome is unknown (the
	// connection to the store broke after the request left).
	ErrUndetermined = errors.New("sql: commit result undetermined")
)

var (
	// ErrLockWaitTimeout: a pessimistic lock waited longer than
	// innodb_lock_wait_timeout (MySQL 1205).
	ErrLockWaitTimeout = errors.New("sql: lock wait timeout exceeded")
	// ErrPessimisticLockLost: at commit, a row lock of the pessimistic
	// transaction was gone (kept in a region leader's memory, lost when
	// that leader failed) and another transaction had written or locked
	// the row since; the transaction was rolled back and can be run again
	// (MySQL 1213, which clients retry).
	ErrPessimisticLockLost = errors.New("sql: pessimistic lock lost")
	// ErrPessimisticLockExpired is ErrPessimisticLockLost when the lock
	// was not renewed past its TTL (the transaction's client or SQL node
	// stalled) and another transaction resolved it: no leader failed.
	ErrPessimisticLockExpired = fmt.Errorf("%w: its TTL expired", ErrPessimisticLockLost)
	// ErrCommitLost: a one-phase commit's answer was lost with its store,
	// and the transaction's primary key, checked at the region's new
	// leader, was neither committed nor can be any more (it was rolled
	// back there): nothing was written, and the transaction can be run
	// again (MySQL 1213, which clients retry).
	ErrCommitLost = errors.New("sql: commit lost with its region's leader, transaction rolled back")
	// ErrWriteLocked: a FailOnLock transaction's prewrite met another
	// transaction's lock; it was rolled back and nothing was written.
	ErrWriteLocked = errors.New("sql: prewrite met another transaction's lock")
)

// DeadlockError: waiting for Key would close a cycle of lock waits; this
// transaction is the victim (MySQL 1213).
type DeadlockError struct{ Key []byte }

func (e *DeadlockError) Error() string {
	return fmt.Sprintf("sql: deadlock found when locking key %x", e.Key)
}

// GCSettings is implemented by a Storage that keeps the cluster's GC
// settings (tidb_gc_life_time, tidb_gc_run_interval; PD in production).
// SetGCConfig leaves a zero duration unchanged.
type GCSettings interface {
	GCConfig(ctx context.Context) (lifeTime, runInterval time.Duration, err error)
	SetGCConfig(ctx context.Context, lifeTime, runInterval time.Duration) error
}

// GCTooEarlyError: a read at StartTS is below the GC safe point: versions
// it would see may have been garbage collected (TiDB's ERROR 9006).
type GCTooEarlyError struct{ StartTS, SafePoint uint64 }

func (e *GCTooEarlyError) Error() string {
	return fmt.Sprintf("sql: GC life time is shorter than transaction duration, transaction starts at %d, GC safe point is %d", e.StartTS, e.SafePoint)
}

// LockConflictError: Key is locked by another transaction and the lock was
// asked not to wait (NOWAIT; MySQL 3572).
type LockConflictError struct{ Key []byte }

func (e *LockConflictError) Error() string {
	return fmt.Sprintf("sql: key %x is locked and NOWAIT was given", e.Key)
}
