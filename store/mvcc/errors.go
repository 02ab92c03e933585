package mvcc

import (
	"fmt"

	"github.com/stratadb/strata/proto/kvrpcpb"
)

// KeyError is a transactional error about one key; it crosses the wire as
// Err. Commands return it (wrapped or not) for conditions the client acts on:
// a lock to resolve, a write conflict, an existing key.
type KeyError struct {
	Err *kvrpcpb.KeyError
}

func (e *KeyError) Error() string {
	k := e.Err
	switch {
	case k.Locked != nil:
		return fmt.Sprintf("key %q is locked by txn %d (primary %q)", k.Locked.Key, k.Locked.LockVersion, k.Locked.PrimaryLock)
	case k.Conflict != nil:
		return fmt.Sprintf("write conflict on %q: txn %d vs txn %d committed at %d (%s)", k.Conflict.Key, k.Conflict.StartTs, k.Conflict.ConflictTs, k.Conflict.ConflictCommitTs, k.Conflict.Reason)
	case k.AlreadyExist != nil:
		return fmt.Sprintf("key %q already exists", k.AlreadyExist.Key)
	case k.TxnNotFound != nil:
		return fmt.Sprintf("txn %d not found (primary %q)", k.TxnNotFound.StartTs, k.TxnNotFound.PrimaryKey)
	case k.CommitTsExpired != nil:
		return fmt.Sprintf("commit ts %d of txn %d below min_commit_ts %d on %q", k.CommitTsExpired.AttemptedCommitTs, k.CommitTsExpired.StartTs, k.CommitTsExpired.MinCommitTs, k.CommitTsExpired.Key)
	case k.TxnLockNotFound != nil:
		return fmt.Sprintf("txn lock of %q not found", k.TxnLockNotFound.Key)
	case k.Deadlock != nil:
		return fmt.Sprintf("deadlock waiting for txn %d on %q", k.Deadlock.LockTs, k.Deadlock.LockKey)
	case k.LockWaitTimeout != nil:
		return fmt.Sprintf("lock wait timeout on %q held by txn %d", k.LockWaitTimeout.Key, k.LockWaitTimeout.LockTs)
	case k.Abort != "":
		return k.Abort
	case k.Retryable != "":
		return k.Retryable
	}
	return "key error"
}

// ErrLocked is the error of a read or write that met l on key.
func ErrLocked(key []byte, l *Lock) *KeyError {
	return &KeyError{Err: &kvrpcpb.KeyError{Locked: l.Info(key)}}
}
