package txn

import (
	"errors"
	"fmt"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/kvclient"
	"github.com/stratadb/strata/proto/kvrpcpb"
)

var (
	// ErrTxnAborted: the store aborted the transaction (its locks were
	// rolled back by another transaction's lock resolution, or the store
	// refused the command); nothing of it was committed.
	ErrTxnAborted = errors.New("kvclient/txn: transaction aborted")
	// ErrFinished: the transaction was already committed or rolled back.
	ErrFinished = errors.New("kvclient/txn: transaction already finished")
	// ErrReadOnly: a write in a read-only transaction.
	ErrReadOnly = errors.New("kvclient/txn: transaction is read-only")
	// ErrGCTooEarly: the snapshot is below the GC safe point; versions it
	// would see may be gone (TiDB's 9006).
	ErrGCTooEarly = errors.New("kvclient/txn: snapshot is older than the GC safe point")
	// ErrNoSavepoint: ROLLBACK TO / RELEASE of an unknown savepoint.
	ErrNoSavepoint = errors.New("kvclient/txn: savepoint does not exist")
)

// keyError converts a store KeyError (not Locked, which callers resolve)
// into the sql package's error types.
func keyError(ke *kvrpcpb.KeyError, startTS uint64) error {
	switch {
	case ke.AlreadyExist != nil:
		return &kv.KeyExistsError{Key: ke.AlreadyExist.Key}
	case ke.Conflict != nil:
		c := ke.Conflict
		return &kv.WriteConflictError{StartTS: startTS, ConflictStartTS: c.ConflictTs,
			ConflictCommitTS: c.ConflictCommitTs, Key: c.Key}
	case ke.Deadlock != nil:
		return &kv.DeadlockError{Key: ke.Deadlock.LockKey}
	case ke.LockWaitTimeout != nil:
		return fmt.Errorf("%w: key %x locked by txn %d", kv.ErrLockWaitTimeout, ke.LockWaitTimeout.Key, ke.LockWaitTimeout.LockTs)
	case ke.TxnLockNotFound != nil:
		return fmt.Errorf("%w: lock of key %x not found (rolled back by another transaction)", ErrTxnAborted, ke.TxnLockNotFound.Key)
	case ke.TxnNotFound != nil:
		return fmt.Errorf("%w: txn %d not found", ErrTxnAborted, ke.TxnNotFound.StartTs)
	case ke.GcTooEarly != nil: // before Abort: the store sets both
		return fmt.Errorf("%w: %w", ErrGCTooEarly, &kv.GCTooEarlyError{StartTS: ke.GcTooEarly.StartTs, SafePoint: ke.GcTooEarly.SafePoint})
	case ke.Abort != "":
		return fmt.Errorf("%w: %s", ErrTxnAborted, ke.Abort)
	case ke.Retryable != "":
		// The store's only retryable key error: a pessimistic lock lost
		// with a failed leader, and the key taken since.
		return fmt.Errorf("%w: %w: %s", ErrTxnAborted, kv.ErrPessimisticLockLost, ke.Retryable)
	case ke.CommitTsExpired != nil:
		return fmt.Errorf("%w: commit ts %d expired (min %d)", ErrTxnAborted, ke.CommitTsExpired.AttemptedCommitTs, ke.CommitTsExpired.MinCommitTs)
	case ke.Locked != nil:
		return fmt.Errorf("kvclient/txn: key %x locked by txn %d", ke.Locked.Key, ke.Locked.LockVersion)
	}
	return fmt.Errorf("%w: unknown key error %v", ErrTxnAborted, ke)
}

// mapErr converts a kvclient or PD client error into the sql package's
// errors: the one translation between the KV client and the SQL layer, for
// the transaction client and Storage. Sentinels wrap both errors, so
// errors.Is works for either.
func mapErr(err error) error {
	var ae *kvclient.AlreadyExistError
	var wc *kvclient.WriteConflictError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kv.ErrUndetermined), errors.Is(err, kv.ErrRegionUnavailable):
		return err
	case errors.As(err, &ae):
		return &kv.KeyExistsError{Key: ae.Key}
	case errors.As(err, &wc):
		return &kv.WriteConflictError{StartTS: wc.StartTS, ConflictCommitTS: wc.ConflictTS, Key: wc.Key}
	case errors.Is(err, kvclient.ErrUndetermined):
		return fmt.Errorf("%w: %w", kv.ErrUndetermined, err)
	case errors.Is(err, kvclient.ErrRegionUnavailable):
		return fmt.Errorf("%w: %w", kv.ErrRegionUnavailable, err)
	}
	return err
}

func isUndetermined(err error) bool {
	return errors.Is(err, kvclient.ErrUndetermined) || errors.Is(err, kv.ErrUndetermined)
}
