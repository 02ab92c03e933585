package txn

import (
	"errors"
	"fmt"

	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/store/mvcc"
)

// Errors of the package (not key errors).
var (
	// ErrInvalidRequest: the request cannot be evaluated as sent.
	ErrInvalidRequest = errors.New("txn: invalid request")
)

func keyErr(e *kvrpcpb.KeyError) *mvcc.KeyError { return &mvcc.KeyError{Err: e} }

func errWriteConflict(startTS uint64, key, primary []byte, w *mvcc.Write, commitTS uint64, reason kvrpcpb.WriteConflict_Reason) *mvcc.KeyError {
	return keyErr(&kvrpcpb.KeyError{Conflict: &kvrpcpb.WriteConflict{
		StartTs: startTS, ConflictTs: w.StartTS, ConflictCommitTs: commitTS,
		Key: key, Primary: primary, Reason: reason,
	}})
}

func errAlreadyExist(key []byte) *mvcc.KeyError {
	return keyErr(&kvrpcpb.KeyError{AlreadyExist: &kvrpcpb.AlreadyExist{Key: key}})
}

func errTxnLockNotFound(key []byte) *mvcc.KeyError {
	return keyErr(&kvrpcpb.KeyError{TxnLockNotFound: &kvrpcpb.TxnLockNotFound{Key: key}})
}

func errTxnNotFound(startTS uint64, primary []byte) *mvcc.KeyError {
	return keyErr(&kvrpcpb.KeyError{TxnNotFound: &kvrpcpb.TxnNotFound{StartTs: startTS, PrimaryKey: primary}})
}

func errCommitTSExpired(startTS, commitTS, minCommitTS uint64, key []byte) *mvcc.KeyError {
	return keyErr(&kvrpcpb.KeyError{CommitTsExpired: &kvrpcpb.CommitTsExpired{
		StartTs: startTS, AttemptedCommitTs: commitTS, Key: key, MinCommitTs: minCommitTS,
	}})
}

func errPessimisticLockNotFound(startTS uint64, key []byte) *mvcc.KeyError {
	return keyErr(&kvrpcpb.KeyError{Retryable: fmt.Sprintf("pessimistic lock of txn %d on %q not found", startTS, key)})
}

func errAbort(format string, args ...any) *mvcc.KeyError {
	return keyErr(&kvrpcpb.KeyError{Abort: fmt.Sprintf(format, args...)})
}

// toKeyError returns the wire form of err if it is a key error.
func toKeyError(err error) (*kvrpcpb.KeyError, bool) {
	if err == nil {
		return nil, false // errors.As would move ke to the heap for nothing
	}
	var ke *mvcc.KeyError
	if errors.As(err, &ke) {
		return ke.Err, true
	}
	return nil, false
}
