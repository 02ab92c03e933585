package mvcc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/cockroachdb/pebble/v2"

	"github.com/stratadb/strata/kv/codec"
	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/proto/raft_cmdpb"
)

// Snapshot is the part of a consistent Pebble view the readers need.
// *pebble.Snapshot, *pebble.DB and an indexed *pebble.Batch implement it;
// only a *pebble.Snapshot (or a batch) is consistent across calls.
type Snapshot interface {
	Get(key []byte) (value []byte, closer io.Closer, err error)
	NewIter(o *pebble.IterOptions) (*pebble.Iterator, error)
}

// TxnReader is the low-level reader Percolator commands evaluate with: locks,
// write records and values of single keys over one Snapshot. It is not safe
// for concurrent use; Close releases its iterators. Returned records and
// values are copies owned by the caller.
type TxnReader struct {
	snap    Snapshot
	overlay LockOverlay
	// view is snap when it is a *View: its iterator serves the point reads
	// (writeIt and dataIt stay nil; one iterator instead of two clones).
	view    *View
	writeIt *pebble.Iterator
	dataIt  *pebble.Iterator
	// w is the write record Get decodes into (no allocation per read).
	w    Write
	buf  []byte
	wbuf []byte
	// scratch backs buf and wbuf for ordinary key sizes (one allocation
	// with the reader instead of one per buffer and growth).
	scratch [2][64]byte
}

// LockOverlay is a set of locks kept outside the engine (the region
// leader's in-memory pessimistic locks) that a TxnReader sees on top of the
// lock key space: a key's lock in the overlay hides the engine's. Keys are
// encoded user keys (keys.Encode, no key-space prefix). Implementations are
// safe for concurrent use and return copies the caller owns.
type LockOverlay interface {
	// Lock returns encKey's lock, or nil.
	Lock(encKey []byte) *Lock
	// Locks returns the locks whose encoded keys lie in [lo, hi) (hi
	// empty: no upper bound), in key order.
	Locks(lo, hi []byte) []OverlayLock
}

// OverlayLock is one lock of a LockOverlay.
type OverlayLock struct {
	EncKey []byte
	Lock   *Lock
}

// NewTxnReader returns a reader over snap; snap must outlive it.
func NewTxnReader(snap Snapshot) *TxnReader {
	r := &TxnReader{}
	r.init(snap)
	return r
}

func (r *TxnReader) init(snap Snapshot) {
	r.snap = snap
	r.view, _ = snap.(*View)
	r.buf, r.wbuf = r.scratch[0][:0], r.scratch[1][:0]
}

// Close releases the reader's iterators (not the snapshot).
func (r *TxnReader) Close() error {
	var err error
	if r.writeIt != nil {
		err = r.writeIt.Close()
		r.writeIt = nil
	}
	if r.dataIt != nil {
		err = errors.Join(err, r.dataIt.Close())
		r.dataIt = nil
	}
	return err
}

// pointIter returns the iterator of r's point reads in cf: the view's, or
// *it, opened on first use (Close closes it).
func (r *TxnReader) pointIter(it **pebble.Iterator, cf raft_cmdpb.CF) (*pebble.Iterator, error) {
	if r.view != nil {
		return r.view.base, nil
	}
	if *it == nil {
		// Pebble copies the options: the shared ones do not escape.
		c, err := r.snap.NewIter(&cfIterOptions[cf])
		if err != nil {
			return nil, fmt.Errorf("mvcc: %v iterator: %w", cf, err)
		}
		*it = c
	}
	return *it, nil
}

// cfIterOptions bound an iterator to a column family, by CF (never
// modified).
var cfIterOptions = func() (o [3]pebble.IterOptions) {
	for cf := range o {
		p := keys.Prefix(raft_cmdpb.CF(cf))
		o[cf] = pebble.IterOptions{LowerBound: []byte{p}, UpperBound: []byte{p + 1}}
	}
	return o
}()

// SetOverlay makes the reader see o's locks over the engine's (nil: none).
func (r *TxnReader) SetOverlay(o LockOverlay) { r.overlay = o }

// LoadLock returns key's lock (the overlay's, else the engine's), or nil.
func (r *TxnReader) LoadLock(key []byte) (*Lock, error) {
	r.buf = keys.Encode(append(r.buf[:0], keys.PrefixLock), key)
	if r.overlay != nil {
		if l := r.overlay.Lock(r.buf[1:]); l != nil {
			return l, nil
		}
	}
	return r.loadEngineLock(key)
}

// EngineHasLock reports whether the engine (not the overlay) holds a lock
// of the encoded key encKey.
func (r *TxnReader) EngineHasLock(encKey []byte) (bool, error) {
	r.buf = append(append(r.buf[:0], keys.PrefixLock), encKey...)
	_, closer, err := r.snap.Get(r.buf)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("mvcc: load lock: %w", err)
	}
	return true, closer.Close()
}

func (r *TxnReader) loadEngineLock(key []byte) (*Lock, error) {
	v, closer, err := r.snap.Get(r.buf)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mvcc: load lock: %w", err)
	}
	defer closer.Close()
	l, err := DecodeLock(bytes.Clone(v))
	if err != nil {
		return nil, fmt.Errorf("lock of %q: %w", key, err)
	}
	return l, nil
}

func (r *TxnReader) writeIter() (*pebble.Iterator, error) {
	return r.pointIter(&r.writeIt, raft_cmdpb.CF_WRITE)
}

// writePrefix sets r.wbuf to the WRITE engine prefix of key's versions.
func (r *TxnReader) writePrefix(key []byte) []byte {
	r.wbuf = keys.Encode(append(r.wbuf[:0], keys.PrefixWrite), key)
	return r.wbuf
}

// SeekWrite returns the newest write record of key with commit_ts <= ts,
// or a nil Write.
func (r *TxnReader) SeekWrite(key []byte, ts uint64) (commitTS uint64, w *Write, err error) {
	it, err := r.writeIter()
	if err != nil {
		return 0, nil, err
	}
	prefix := r.writePrefix(key)
	return seekWrite(it, prefix, ts, false, nil)
}

// seekWrite positions it at prefix's newest version <= ts and decodes it.
// A point read's seek (scan false) is a SeekPrefixGE: Pebble consults its
// bloom filters for prefix, and Next stays within prefix's versions until
// the next seek. A scan's is a SeekGE, which keeps the iterator's position
// for the next key. The record is decoded as curWrite does with dst.
func seekWrite(it *pebble.Iterator, prefix []byte, ts uint64, scan bool, dst *Write) (uint64, *Write, error) {
	seek := codec.EncodeUintDesc(prefix, ts)
	var valid bool
	if scan {
		valid = it.SeekGE(seek)
	} else {
		valid = it.SeekPrefixGE(seek)
	}
	if !valid {
		return 0, nil, it.Error()
	}
	return curWrite(it, prefix[:len(prefix):len(prefix)], dst)
}

// curWrite decodes the write record under it if it is a version of prefix:
// with dst nil into a new Write that owns a copy of the record, else into
// *dst, whose ShortValue then aliases the iterator's value (valid until it
// moves).
func curWrite(it *pebble.Iterator, prefix []byte, dst *Write) (uint64, *Write, error) {
	k := it.Key()
	if len(k) != len(prefix)+8 || !bytes.HasPrefix(k, prefix) {
		return 0, nil, nil
	}
	_, commitTS, err := codec.DecodeUintDesc(k[len(prefix):])
	if err != nil {
		return 0, nil, fmt.Errorf("%w: write key %x", ErrCorruptRecord, k)
	}
	v, err := it.ValueAndErr()
	if err != nil {
		return 0, nil, fmt.Errorf("mvcc: read write record: %w", err)
	}
	if dst == nil {
		dst, err = DecodeWrite(bytes.Clone(v))
	} else {
		err = dst.decode(v)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("write record %x: %w", k, err)
	}
	return commitTS, dst, nil
}

// GetWrite returns the newest Put or Delete record of key with commit_ts
// <= ts, skipping Lock and Rollback records, or a nil Write.
func (r *TxnReader) GetWrite(key []byte, ts uint64) (commitTS uint64, w *Write, err error) {
	return r.getWrite(key, ts, nil)
}

// getWrite is GetWrite decoding as curWrite does with dst.
func (r *TxnReader) getWrite(key []byte, ts uint64, dst *Write) (commitTS uint64, w *Write, err error) {
	it, err := r.writeIter()
	if err != nil {
		return 0, nil, err
	}
	prefix := r.writePrefix(key)
	commitTS, w, err = seekWrite(it, prefix, ts, false, dst)
	for err == nil && w != nil && (w.Kind == WriteLock || w.Kind == WriteRollback) {
		if !it.Next() {
			return 0, nil, it.Error()
		}
		commitTS, w, err = curWrite(it, prefix, dst)
	}
	return commitTS, w, err
}

// LoadData returns the long value a transaction with startTS wrote to key.
func (r *TxnReader) LoadData(key []byte, startTS uint64) ([]byte, error) {
	it, err := r.pointIter(&r.dataIt, raft_cmdpb.CF_DEFAULT)
	if err != nil {
		return nil, err
	}
	r.buf = keys.EncodeVersioned(append(r.buf[:0], keys.PrefixDefault), key, startTS)
	if !it.SeekPrefixGE(r.buf) || !bytes.Equal(it.Key(), r.buf) {
		if err := it.Error(); err != nil {
			return nil, fmt.Errorf("mvcc: load data: %w", err)
		}
		return nil, fmt.Errorf("%w: value of %q at %d missing", ErrCorruptRecord, key, startTS)
	}
	v, err := it.ValueAndErr()
	if err != nil {
		return nil, fmt.Errorf("mvcc: load data: %w", err)
	}
	return bytes.Clone(v), nil
}

// LockValue returns the value a Put lock carries (inline or in DEFAULT).
func (r *TxnReader) LockValue(key []byte, l *Lock) ([]byte, error) {
	if l.HasShortValue {
		return l.ShortValue, nil
	}
	return r.LoadData(key, l.StartTS)
}

// Get returns key's committed value visible at ts (ignoring locks).
func (r *TxnReader) Get(key []byte, ts uint64) (value []byte, found bool, err error) {
	_, w, err := r.getWrite(key, ts, &r.w)
	if err != nil || w == nil || w.Kind != WritePut {
		return nil, false, err
	}
	if w.HasShortValue {
		return bytes.Clone(w.ShortValue), true, nil // w aliases the iterator
	}
	v, err := r.LoadData(key, w.StartTS)
	return v, err == nil, err
}

// CommitRecordKind classifies what WRITE says about one transaction on one
// key.
type CommitRecordKind int

// Commit record kinds.
const (
	// RecordNone: neither a commit nor a rollback of the transaction.
	RecordNone CommitRecordKind = iota
	// RecordCommitted: committed at CommitTS with Write.
	RecordCommitted
	// RecordRolledBack: a rollback record or an overlapped rollback flag.
	RecordRolledBack
)

// CommitRecord is the outcome of TxnCommitRecord.
type CommitRecord struct {
	Kind     CommitRecordKind
	CommitTS uint64
	Write    *Write
	// Overlapped is, for RecordNone, another transaction's record at
	// commit_ts == start_ts, where this transaction's rollback record
	// would go; a rollback then sets its OverlappedRollback flag instead.
	Overlapped *Write
}

// TxnCommitRecord looks for the commit or rollback of the transaction
// startTS on key: every record with commit_ts >= startTS.
func (r *TxnReader) TxnCommitRecord(key []byte, startTS uint64) (CommitRecord, error) {
	it, err := r.writeIter()
	if err != nil {
		return CommitRecord{}, err
	}
	prefix := r.writePrefix(key)
	commitTS, w, err := seekWrite(it, prefix, math.MaxUint64, false, nil)
	for err == nil && w != nil && commitTS >= startTS {
		if w.StartTS == startTS {
			if w.Kind == WriteRollback {
				return CommitRecord{Kind: RecordRolledBack, CommitTS: commitTS, Write: w}, nil
			}
			return CommitRecord{Kind: RecordCommitted, CommitTS: commitTS, Write: w}, nil
		}
		if commitTS == startTS {
			if w.OverlappedRollback {
				return CommitRecord{Kind: RecordRolledBack, CommitTS: commitTS, Write: w}, nil
			}
			return CommitRecord{Kind: RecordNone, Overlapped: w}, nil
		}
		if !it.Next() {
			return CommitRecord{}, it.Error()
		}
		commitTS, w, err = curWrite(it, prefix, nil)
	}
	return CommitRecord{}, err
}

// ScanLocks calls fn for each lock with a user key in [start, end) (empty
// end: no bound) in key order until fn returns false, the overlay's merged
// with the engine's (the overlay's hides the engine's of the same key). key
// and l are owned by fn.
func (r *TxnReader) ScanLocks(start, end []byte, fn func(key []byte, l *Lock) bool) error {
	lo, hi := keys.CFBounds(raft_cmdpb.CF_LOCK, start, end)
	var mem []OverlayLock
	if r.overlay != nil {
		mem = r.overlay.Locks(lo[1:], hi[1:])
	}
	// emitMem sends the overlay's locks below encKey (all with nil); it
	// reports false when fn stopped.
	emitMem := func(encKey []byte) (bool, error) {
		for len(mem) > 0 && (encKey == nil || bytes.Compare(mem[0].EncKey, encKey) < 0) {
			_, key, err := codec.DecodeBytes(mem[0].EncKey, nil)
			if err != nil {
				return false, fmt.Errorf("%w: in-memory lock key %x", ErrCorruptRecord, mem[0].EncKey)
			}
			l := mem[0].Lock
			mem = mem[1:]
			if !fn(key, l) {
				return false, nil
			}
		}
		return true, nil
	}
	it, err := r.snap.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("mvcc: scan locks: %w", err)
	}
	defer it.Close()
	for valid := it.First(); valid; valid = it.Next() {
		k := it.Key()
		if more, err := emitMem(k[1:]); !more {
			return err
		}
		if len(mem) > 0 && bytes.Equal(mem[0].EncKey, k[1:]) {
			continue // the overlay's lock of this key comes next
		}
		_, key, err := codec.DecodeBytes(k[1:], nil)
		if err != nil {
			return fmt.Errorf("%w: lock key %x", ErrCorruptRecord, k)
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("mvcc: scan locks: %w", err)
		}
		l, err := DecodeLock(bytes.Clone(v))
		if err != nil {
			return fmt.Errorf("lock of %q: %w", key, err)
		}
		if !fn(key, l) {
			return nil
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	_, err = emitMem(nil)
	return err
}
