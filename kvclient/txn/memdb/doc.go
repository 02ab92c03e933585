// Package memdb is a transaction's write buffer: the keys it wrote or
// locked, in key order, with statement staging and savepoints.
//
// Each key has one Entry: the operation to prewrite (Put, Del, Insert,
// CheckNotExists, or Lock for a key that is only locked) and Flags (Locked:
// this transaction holds the store's pessimistic lock on the key).
//
// # Staging
//
// Checkpoint returns a handle; every change after it is recorded in an undo
// log until the handle is released, and RevertTo(handle) undoes them (a
// failed statement rolls back only its own writes; ROLLBACK TO SAVEPOINT).
// Handles nest: a revert undoes every change newer than the handle,
// including those of checkpoints taken after it. Locked flags survive a
// revert: the lock is held in the store whatever the buffer says, and must
// be released at commit or rollback.
//
// # Invariants and ownership
//
// Keys and values passed in are copied; slices returned by Get and the
// iterators alias the buffer and must not be modified, and stay valid until
// the key is written again. A MemDB is not safe for concurrent use.
package memdb
