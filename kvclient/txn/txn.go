package txn

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/kvclient/txn/memdb"
)

// Txn is one transaction; it implements kv.Txn. A Txn is used by one
// session (goroutine) at a time; its heartbeat runs on its own goroutine
// and touches only the fields under hbMu and aliveUntil.
type Txn struct {
	c    *Client
	opts kv.TxnOptions

	startTS     uint64
	forUpdateTS uint64
	// readTS is the snapshot reads use: startTS, or in READ-COMMITTED a
	// fresh ts per statement (fetched at the statement's first read).
	readTS  uint64
	rcStale bool
	mem     *memdb.MemDB
	stmtCP  int // memdb checkpoint of the running statement, -1 if none
	saves   []savepoint
	primary []byte // first pessimistically locked key, or chosen at commit
	locked  int    // keys holding pessimistic locks
	// lockTS is the newest for_update_ts any lock request carried (a
	// failed round's included): no lock of the transaction has a newer.
	lockTS uint64
	// maybeLocked: keys of failed lock rounds whose release did not (or
	// may not yet have) landed; Rollback releases them with the rest.
	maybeLocked [][]byte
	// aliveUntil (unix ms) is when the locks' TTL runs out as last
	// renewed by a lock round or heartbeat (0: no lock yet).
	aliveUntil atomic.Int64
	finished   bool
	began      time.Time
	guard      kv.CommitGuard

	// skip: transactions whose locks this transaction's reads may read
	// through (resolved, or committing after readTS). Reset with readTS.
	skip []uint64

	hbMu   sync.Mutex
	hbStop chan struct{}
	hbDone chan struct{}
}

type savepoint struct {
	name string
	cp   int
}

var _ kv.Txn = (*Txn)(nil)

// StartTS is the transaction's start timestamp.
func (t *Txn) StartTS() uint64 { return t.startTS }

// lockTTL is the TTL (ms) the transaction's locks are written or renewed
// with: LockTTL past the transaction's age, measured on this node's
// monotonic clock. A TTL counts from the physical part of start_ts (PD's
// clock), so the age must not be taken as this node's wall clock minus
// that physical part: with PD's timestamps ahead of this node's clock the
// difference is negative, and as a uint64 it made a heartbeat keep a dead
// transaction's locks for ever.
func (t *Txn) lockTTL() uint64 {
	return uint64(t.c.cfg.LockTTL.Milliseconds()) + uint64(time.Since(t.began).Milliseconds())
}

// ForUpdateTS is the timestamp the latest pessimistic locks read at.
func (t *Txn) ForUpdateTS() uint64 { return t.forUpdateTS }

// SetCommitGuard bounds the next Commit's commit_ts. See kv.Txn.
func (t *Txn) SetCommitGuard(g kv.CommitGuard) { t.guard = g }

// Size is the bytes buffered in the transaction.
func (t *Txn) Size() int { return t.mem.Size() }

// snapshotTS returns the ts reads of the current statement use.
func (t *Txn) snapshotTS(ctx context.Context) (uint64, error) {
	if t.rcStale {
		ts, err := t.c.oracle.GetTS(ctx)
		if err != nil {
			return 0, fmt.Errorf("kvclient/txn: statement snapshot: %w", mapErr(err))
		}
		t.readTS, t.rcStale, t.skip = ts, false, t.skip[:0]
	}
	return t.readTS, nil
}

func (t *Txn) checkWrite() error {
	if t.finished {
		return ErrFinished
	}
	if t.opts.ReadOnly {
		return ErrReadOnly
	}
	return nil
}

func (t *Txn) checkSize() error {
	if t.mem.Size() > t.c.cfg.MaxTxnSize {
		return &kv.TxnTooLargeError{Size: t.mem.Size(), Limit: t.c.cfg.MaxTxnSize}
	}
	return nil
}

// Set buffers a Put. key and value are copied.
func (t *Txn) Set(key, value []byte) error {
	if err := t.checkWrite(); err != nil {
		return err
	}
	t.mem.Set(key, value)
	return t.checkSize()
}

// Delete buffers a Del. key is copied.
func (t *Txn) Delete(key []byte) error {
	if err := t.checkWrite(); err != nil {
		return err
	}
	t.mem.Delete(key)
	return t.checkSize()
}

// Insert buffers a Put asserting the key has no live value: a key with a
// value buffered in this transaction fails at once with *kv.KeyExistsError;
// otherwise the store checks at prewrite.
func (t *Txn) Insert(key, value []byte) error {
	if err := t.checkWrite(); err != nil {
		return err
	}
	if e, ok := t.mem.Get(key); ok && e.HasValue() && !e.Deleted() {
		return &kv.KeyExistsError{Key: slices.Clone(key)}
	}
	t.mem.Insert(key, value)
	return t.checkSize()
}

// Dirty reports whether the transaction buffered a write (not just a lock)
// in [start, end).
func (t *Txn) Dirty(start, end []byte) bool {
	for _, e := range t.mem.Iter(start, end, false) {
		if e.HasValue() {
			return true
		}
	}
	return false
}

// StmtBegin starts a statement: its writes can be undone alone. In
// READ-COMMITTED the statement reads a fresh snapshot.
func (t *Txn) StmtBegin() {
	if t.stmtCP >= 0 {
		t.mem.Release(t.stmtCP)
	}
	t.stmtCP = t.mem.Checkpoint()
	if t.opts.Isolation == kv.ReadCommitted && t.opts.StartTS == 0 {
		t.rcStale = true
	}
}

// StmtCommit keeps the statement's writes.
func (t *Txn) StmtCommit() {
	if t.stmtCP >= 0 {
		t.mem.Release(t.stmtCP)
		t.stmtCP = -1
	}
}

// StmtRollback undoes the statement's writes. Pessimistic locks it took
// stay held until the transaction ends.
func (t *Txn) StmtRollback() {
	if t.stmtCP >= 0 {
		t.mem.RevertTo(t.stmtCP)
		t.mem.Release(t.stmtCP)
		t.stmtCP = -1
	}
}

// Savepoint marks the buffer; a savepoint of the same name is replaced.
func (t *Txn) Savepoint(name string) {
	if i := t.findSave(name); i >= 0 {
		t.mem.Release(t.saves[i].cp)
		t.saves = slices.Delete(t.saves, i, i+1)
	}
	t.saves = append(t.saves, savepoint{name: name, cp: t.mem.Checkpoint()})
}

// RollbackToSavepoint undoes the writes made after the savepoint, which
// stays; savepoints set after it are removed.
func (t *Txn) RollbackToSavepoint(name string) error {
	i := t.findSave(name)
	if i < 0 {
		return fmt.Errorf("%w: %s", ErrNoSavepoint, name)
	}
	t.mem.RevertTo(t.saves[i].cp)
	for _, s := range t.saves[i+1:] {
		t.mem.Release(s.cp)
	}
	t.saves = t.saves[:i+1]
	return nil
}

// ReleaseSavepoint removes the savepoint and those set after it.
func (t *Txn) ReleaseSavepoint(name string) error {
	i := t.findSave(name)
	if i < 0 {
		return fmt.Errorf("%w: %s", ErrNoSavepoint, name)
	}
	for _, s := range t.saves[i:] {
		t.mem.Release(s.cp)
	}
	t.saves = t.saves[:i]
	return nil
}

func (t *Txn) findSave(name string) int {
	for i := len(t.saves) - 1; i >= 0; i-- {
		if equalFoldASCII(t.saves[i].name, name) {
			return i
		}
	}
	return -1
}

// equalFoldASCII: savepoint names are case-insensitive identifiers.
func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
