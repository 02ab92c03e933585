package pd

import (
	"errors"
	"fmt"
)

var (
	// ErrNotLeader: this member is not (or no longer) the PD leader.
	ErrNotLeader = errors.New("pd: not leader")
	// ErrBadConfig: invalid Config.
	ErrBadConfig = errors.New("pd: bad config")
	// ErrInvalidArgument: a request is malformed.
	ErrInvalidArgument = errors.New("pd: invalid argument")
	// ErrStoreTombstone: the store was removed and may not come back.
	ErrStoreTombstone = errors.New("pd: store is tombstone")
	// ErrStorageFormat: a store's binary cannot read the storage format
	// another store of the cluster holds.
	ErrStorageFormat = errors.New("pd: store cannot read the cluster's storage format")

	// errTxnCond: an etcd transaction's non-fence condition failed.
	errTxnCond = errors.New("pd: txn condition failed")
)

var (
	errNotBootstrapped = errors.New("pd: cluster not bootstrapped")
	errRegionNotFound  = errors.New("pd: region not found")
	errLeaseExpired    = fmt.Errorf("%w: leader lease expired", ErrNotLeader)
)

func errStoreNotFound(id uint64) error { return fmt.Errorf("pd: store %d not found", id) }
