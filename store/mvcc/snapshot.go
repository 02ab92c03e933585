package mvcc

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/stratadb/strata/kv/codec"
	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
)

// ReadOptions say what a SnapshotReader reads and which locks stop it.
type ReadOptions struct {
	// TS is the read timestamp; math.MaxUint64 reads the latest committed
	// versions (locks are still checked).
	TS        uint64
	Isolation kvrpcpb.IsolationLevel
	// ResolvedLocks are start_ts of transactions whose locks the reader
	// skips (known rolled back, or committed after TS).
	ResolvedLocks []uint64
	// CommittedLocks are start_ts of transactions known committed (at a
	// commit_ts <= TS); the reader reads through their locks.
	CommittedLocks []uint64
}

// ReadOptionsFrom builds ReadOptions from a request's context and version.
func ReadOptionsFrom(rctx *kvrpcpb.Context, ts uint64) ReadOptions {
	return ReadOptions{
		TS:             ts,
		Isolation:      rctx.GetIsolationLevel(),
		ResolvedLocks:  rctx.GetResolvedLocks(),
		CommittedLocks: rctx.GetCommittedLocks(),
	}
}

// lockAction is what a reader does with a lock it meets.
type lockAction int

const (
	lockIgnore lockAction = iota
	lockRead              // committed lock: its value is the key's value
	lockBlock             // return ErrLocked
)

// CheckLock decides whether a read with o must stop at l (TiKV's
// check_ts_conflict): under SI a Put/Delete lock of a transaction that
// started at or before TS and whose min_commit_ts does not put its commit
// after TS blocks, unless the reader was told it is resolved. Lock and
// pessimistic locks never block reads.
func (o *ReadOptions) CheckLock(l *Lock) lockAction {
	if o.Isolation == kvrpcpb.IsolationLevel_RC {
		return lockIgnore
	}
	if l.StartTS > o.TS || l.Type == LockLock || l.Type == LockPessimistic || l.MinCommitTS > o.TS {
		return lockIgnore
	}
	if slices.Contains(o.ResolvedLocks, l.StartTS) {
		return lockIgnore
	}
	if slices.Contains(o.CommittedLocks, l.StartTS) {
		return lockRead
	}
	return lockBlock
}

// SnapshotReader serves Get, BatchGet and Scan at a timestamp with
// Percolator lock checks over one consistent Snapshot. Not safe for
// concurrent use; Close it after use. A lock that blocks the read is
// returned as a *KeyError (Locked).
type SnapshotReader struct {
	r    TxnReader
	opts ReadOptions
	// scanLock and scanWrite serve every Scan of the reader, re-bounded
	// per range: a coprocessor request over ten ranges opens two
	// iterators, not twenty.
	scanLock, scanWrite *pebble.Iterator
	sc                  scanner // its buffers serve every Scan
}

// NewSnapshotReader returns a reader of snap with opts; snap must outlive it.
func NewSnapshotReader(snap Snapshot, opts ReadOptions) *SnapshotReader {
	s := &SnapshotReader{opts: opts}
	s.r.init(snap)
	return s
}

// snapshotReaders holds released point-read SnapshotReaders (with their
// key buffers) for AcquireSnapshotReader.
var snapshotReaders = sync.Pool{New: func() any { return new(SnapshotReader) }}

// AcquireSnapshotReader is NewSnapshotReader from a pool: a store's point
// get takes one per request, which then allocates nothing for its reader
// (the reader and its key buffers are ~0.5 KiB). Release it, not Close.
func AcquireSnapshotReader(snap Snapshot, opts ReadOptions) *SnapshotReader {
	s := snapshotReaders.Get().(*SnapshotReader)
	s.opts = opts
	s.r.init(snap)
	return s
}

// Release closes a reader from AcquireSnapshotReader and returns it to
// the pool: neither it nor anything it returned that it documents as
// valid only until the next call may be used afterwards (Get's values are
// the caller's).
func (s *SnapshotReader) Release() error {
	err := s.Close()
	// Nothing of the request, the snapshot or the engine's memory stays
	// reachable from the pool.
	s.opts = ReadOptions{}
	s.r.snap, s.r.view, s.r.overlay, s.r.w = nil, nil, nil, Write{}
	s.sc = scanner{cur: s.sc.cur[:0], userKey: s.sc.userKey[:0], seekBuf: s.sc.seekBuf[:0]}
	snapshotReaders.Put(s)
	return err
}

// Close releases the reader's iterators.
func (s *SnapshotReader) Close() error {
	err := s.r.Close()
	for _, it := range []**pebble.Iterator{&s.scanLock, &s.scanWrite} {
		if *it != nil {
			err = errors.Join(err, (*it).Close())
			*it = nil
		}
	}
	return err
}

// scanIter returns *it bounded to [lo, hi), opened on first use.
func (s *SnapshotReader) scanIter(it **pebble.Iterator, lo, hi []byte) (*pebble.Iterator, error) {
	if *it != nil {
		(*it).SetBounds(lo, hi)
		return *it, nil
	}
	n, err := s.r.snap.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, fmt.Errorf("mvcc: scan: %w", err)
	}
	*it = n
	return n, nil
}

// Get returns key's value at the read timestamp. The value is owned by the
// caller.
func (s *SnapshotReader) Get(key []byte) (value []byte, found bool, err error) {
	if s.opts.Isolation != kvrpcpb.IsolationLevel_RC {
		l, err := s.r.LoadLock(key)
		if err != nil {
			return nil, false, err
		}
		if l != nil {
			switch s.opts.CheckLock(l) {
			case lockBlock:
				return nil, false, ErrLocked(key, l)
			case lockRead:
				return s.lockValue(key, l)
			}
		}
	}
	return s.r.Get(key, s.opts.TS)
}

func (s *SnapshotReader) lockValue(key []byte, l *Lock) ([]byte, bool, error) {
	if l.Type != LockPut {
		return nil, false, nil
	}
	v, err := s.r.LockValue(key, l)
	return v, err == nil, err
}

// KeyValue is one key and its value (nil with KeyOnly). A pair with Err set is
// a lock met by BatchGet.
type KeyValue struct {
	Key   []byte
	Value []byte
	Err   *KeyError
}

// BatchGet returns the found keys in request order; a locked key is a pair
// with Err. Other errors end the read.
func (s *SnapshotReader) BatchGet(keys [][]byte) ([]KeyValue, error) {
	out := make([]KeyValue, 0, len(keys))
	for _, k := range keys {
		v, found, err := s.Get(k)
		if ke, ok := err.(*KeyError); ok {
			out = append(out, KeyValue{Key: k, Err: ke})
			continue
		}
		if err != nil {
			return nil, err
		}
		if found {
			if v == nil {
				v = []byte{}
			}
			out = append(out, KeyValue{Key: k, Value: v})
		}
	}
	return out, nil
}

// Scan calls fn for each live key in [start, end) (empty end: no bound) at
// the read timestamp, ascending or, with reverse, descending, until fn
// returns false. key and value are valid only during the call; value is nil
// with keyOnly. The first blocking lock ends the scan with a *KeyError;
// keys before it were passed to fn.
func (s *SnapshotReader) Scan(start, end []byte, keyOnly, reverse bool, fn func(key, value []byte) bool) error {
	var lockIt *pebble.Iterator
	if s.opts.Isolation != kvrpcpb.IsolationLevel_RC {
		lo, hi := keys.CFBounds(raft_cmdpb.CF_LOCK, start, end)
		it, err := s.scanIter(&s.scanLock, lo, hi)
		if err != nil {
			return err
		}
		lockIt = it
	}
	lo, hi := keys.CFBounds(raft_cmdpb.CF_WRITE, start, end)
	writeIt, err := s.scanIter(&s.scanWrite, lo, hi)
	if err != nil {
		return err
	}
	sc := &s.sc
	*sc = scanner{s: s, lockIt: lockIt, writeIt: writeIt, keyOnly: keyOnly, reverse: reverse, fn: fn,
		cur: sc.cur[:0], userKey: sc.userKey[:0], seekBuf: sc.seekBuf[:0]}
	return sc.run()
}

type scanner struct {
	s               *SnapshotReader
	lockIt, writeIt *pebble.Iterator
	keyOnly         bool
	reverse         bool
	fn              func(key, value []byte) bool

	cur     []byte // enc(key) of the key being read
	userKey []byte
	seekBuf []byte
	w       Write // the write record visible decodes into
}

func (sc *scanner) run() error {
	lv := sc.lockIt != nil && sc.first(sc.lockIt)
	wv := sc.first(sc.writeIt)
	for lv || wv {
		// The next key in scan order among the two key spaces (compare the
		// enc(key) parts).
		var lk, wk []byte
		if lv {
			lk = sc.lockIt.Key()[1:]
		}
		if wv {
			k := sc.writeIt.Key()
			if len(k) < 9 {
				return fmt.Errorf("%w: write key %x", ErrCorruptRecord, k)
			}
			wk = k[1 : len(k)-8]
		}
		switch {
		case !lv:
			sc.cur = append(sc.cur[:0], wk...)
		case !wv:
			sc.cur = append(sc.cur[:0], lk...)
		default:
			c := bytes.Compare(lk, wk)
			if sc.reverse {
				c = -c
			}
			if c <= 0 {
				sc.cur = append(sc.cur[:0], lk...)
			} else {
				sc.cur = append(sc.cur[:0], wk...)
			}
		}
		var err error
		if _, sc.userKey, err = codec.DecodeBytes(sc.cur, sc.userKey[:0]); err != nil {
			return fmt.Errorf("%w: key %x", ErrCorruptRecord, sc.cur)
		}
		hasLock := lv && bytes.Equal(lk, sc.cur)
		hasWrite := wv && bytes.Equal(wk, sc.cur)
		var (
			value   []byte
			found   bool
			decided bool
		)
		if hasLock {
			v, err := sc.lockIt.ValueAndErr()
			if err != nil {
				return fmt.Errorf("mvcc: scan: %w", err)
			}
			l, err := DecodeLock(bytes.Clone(v))
			if err != nil {
				return fmt.Errorf("lock of %q: %w", sc.userKey, err)
			}
			switch sc.s.opts.CheckLock(l) {
			case lockBlock:
				return ErrLocked(bytes.Clone(sc.userKey), l)
			case lockRead:
				value, found, err = sc.s.lockValue(sc.userKey, l)
				if err != nil {
					return err
				}
				decided = true
			}
			lv = sc.step(sc.lockIt)
		}
		if hasWrite {
			if !decided {
				value, found, err = sc.visible()
				if err != nil {
					return err
				}
			}
			wv, err = sc.skipKey()
			if err != nil {
				return err
			}
		}
		if found {
			if sc.keyOnly {
				value = nil
			} else if value == nil {
				value = []byte{}
			}
			if !sc.fn(sc.userKey, value) {
				return nil
			}
		}
	}
	if sc.lockIt != nil {
		if err := sc.lockIt.Error(); err != nil {
			return err
		}
	}
	return sc.writeIt.Error()
}

func (sc *scanner) first(it *pebble.Iterator) bool {
	if sc.reverse {
		return it.Last()
	}
	return it.First()
}

func (sc *scanner) step(it *pebble.Iterator) bool {
	if sc.reverse {
		return it.Prev()
	}
	return it.Next()
}

// visible reads the value of sc.cur at the read timestamp from WRITE.
// The value is the caller's: the records are decoded in place (sc.w
// aliases the iterator) and only the value is copied.
func (sc *scanner) visible() ([]byte, bool, error) {
	// The seek key is built in seekBuf's spare capacity: no allocation.
	prefix := append(append(sc.seekBuf[:0], keys.PrefixWrite), sc.cur...)
	sc.seekBuf = prefix
	it := sc.writeIt
	_, w, err := seekWrite(it, prefix, sc.s.opts.TS, true, &sc.w)
	for err == nil && w != nil && (w.Kind == WriteLock || w.Kind == WriteRollback) {
		if !it.Next() {
			return nil, false, it.Error()
		}
		_, w, err = curWrite(it, prefix, &sc.w)
	}
	if err != nil || w == nil || w.Kind != WritePut {
		return nil, false, err
	}
	if w.HasShortValue {
		return bytes.Clone(w.ShortValue), true, nil
	}
	v, err := sc.s.r.LoadData(sc.userKey, w.StartTS)
	return v, err == nil, err
}

// skipKey moves the write iterator to the next key in scan order.
func (sc *scanner) skipKey() (bool, error) {
	prefix := append(append(sc.seekBuf[:0], keys.PrefixWrite), sc.cur...)
	sc.seekBuf = prefix
	if sc.reverse {
		return sc.writeIt.SeekLT(prefix), nil
	}
	// The smallest key after every version of prefix.
	sc.seekBuf = append(codec.EncodeUintDesc(prefix, 0), 0)
	return sc.writeIt.SeekGE(sc.seekBuf), nil
}

// MaxTS is the timestamp of a read of the latest committed versions.
const MaxTS = math.MaxUint64
