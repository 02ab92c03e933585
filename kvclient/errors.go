package kvclient

import (
	"errors"
	"fmt"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/proto/kvrpcpb"
)

var (
	// ErrRegionUnavailable is returned (wrapped, with the region id and the
	// last error) when the backoff budget of a call is spent on region
	// errors, unreachable stores or PD failures.
	ErrRegionUnavailable = errors.New("kvclient: region unavailable")
	// ErrUndetermined is returned (wrapped) when a write failed in a way that
	// leaves its outcome unknown: it may or may not have been applied.
	ErrUndetermined = errors.New("kvclient: write outcome undetermined")

	// ErrAborted is returned (wrapped, with the store's reason) for a
	// KeyError the store marked unretryable.
	ErrAborted = errors.New("kvclient: aborted by store")
	// ErrCoprocessor is returned (wrapped) when a store fails a coprocessor
	// request (other_error) or returns data that does not decode.
	ErrCoprocessor = errors.New("kvclient: coprocessor")
	// ErrClosed is returned by calls on a closed Client.
	ErrClosed = errors.New("kvclient: client closed")
)

// AlreadyExistError is returned when an Insert mutation hits a key that has a
// live version.
type AlreadyExistError struct {
	Key []byte
}

func (e *AlreadyExistError) Error() string {
	return fmt.Sprintf("kvclient: key %q already exists", e.Key)
}

// WriteConflictError is returned when a key was committed by another
// transaction after StartTS (at ConflictTS).
type WriteConflictError struct {
	StartTS, ConflictTS uint64
	Key                 []byte
}

func (e *WriteConflictError) Error() string {
	return fmt.Sprintf("kvclient: write conflict on key %q: start_ts %d, committed at %d",
		e.Key, e.StartTS, e.ConflictTS)
}

// LockedError is returned (wrapped) when a read met a lock its caller must
// resolve (kvclient/txn's LockResolver) before reading again.
type LockedError struct{ Lock *kvrpcpb.LockInfo }

func (e *LockedError) Error() string {
	return fmt.Sprintf("kvclient: key %q locked by txn %d", e.Lock.GetKey(), e.Lock.GetLockVersion())
}

// keyError converts a store KeyError to a client error.
func keyError(ke *kvrpcpb.KeyError) error {
	switch {
	case ke.GetLocked() != nil:
		return &LockedError{Lock: ke.Locked}
	case ke.GetAlreadyExist() != nil:
		return &AlreadyExistError{Key: ke.AlreadyExist.GetKey()}
	case ke.GetConflict() != nil:
		c := ke.Conflict
		return &WriteConflictError{StartTS: c.GetStartTs(), ConflictTS: c.GetConflictCommitTs(), Key: c.GetKey()}
	case ke.GetGcTooEarly() != nil: // 9006 for the client (sql/errno)
		return fmt.Errorf("%w: %w", ErrAborted, &kv.GCTooEarlyError{StartTS: ke.GcTooEarly.GetStartTs(), SafePoint: ke.GcTooEarly.GetSafePoint()})
	case ke.GetAbort() != "":
		return fmt.Errorf("%w: %s", ErrAborted, ke.Abort)
	default:
		return fmt.Errorf("%w: unknown key error %v", ErrAborted, ke)
	}
}

// CopExprError is a MySQL error a store's coprocessor raised evaluating a
// pushed-down expression (coprocessorpb.SelectResponse.error): 1690 for an
// overflow and the like. It implements sql/errno.Coded, so the client gets
// the code and message the SQL node would have raised evaluating the
// expression itself; Error() also names the region.
type CopExprError struct {
	RegionID uint64
	Code     uint16
	Msg      string
}

func (e *CopExprError) Error() string {
	return fmt.Sprintf("%v: region %d: ERROR %d: %s", ErrCoprocessor, e.RegionID, e.Code, e.Msg)
}

// MySQLError implements sql/errno.Coded.
func (e *CopExprError) MySQLError() (uint16, string) { return e.Code, e.Msg }
