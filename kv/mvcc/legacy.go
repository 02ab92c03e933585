package mvcc

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/stratadb/strata/kv/codec"
)

// DataPrefix is the first byte of every MVCC data key in the store engine.
const DataPrefix byte = 'z'

// Version flags: the first byte of every stored value.
const (
	FlagPut    byte = 'P'
	FlagDelete byte = 'D'
)

// ErrCorrupt is returned when a stored key or value cannot be decoded.
var ErrCorrupt = errors.New("mvcc: corrupt version")

// Iterable is the part of a Pebble reader mvcc needs. *pebble.DB,
// *pebble.Snapshot and indexed *pebble.Batch implement it.
type Iterable interface {
	NewIter(o *pebble.IterOptions) (*pebble.Iterator, error)
}

// KeyPrefix appends the encoded user key (without a version) to b. All
// versions of userKey start with it.
func KeyPrefix(b, userKey []byte) []byte {
	b = append(b, DataPrefix)
	return codec.EncodeBytes(b, userKey)
}

// EncodeKey appends the engine key of userKey's version commitTS to b.
func EncodeKey(b, userKey []byte, commitTS uint64) []byte {
	return codec.EncodeUintDesc(KeyPrefix(b, userKey), commitTS)
}

// DecodeKey splits an engine data key into the user key (appended to buf) and
// its commit timestamp.
func DecodeKey(engineKey, buf []byte) (userKey []byte, commitTS uint64, err error) {
	if len(engineKey) == 0 || engineKey[0] != DataPrefix {
		return nil, 0, fmt.Errorf("%w: key %x lacks data prefix", ErrCorrupt, engineKey)
	}
	rest, userKey, err := codec.DecodeBytes(engineKey[1:], buf)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: key %x: %v", ErrCorrupt, engineKey, err)
	}
	rest, ts, err := codec.DecodeUintDesc(rest)
	if err != nil || len(rest) != 0 {
		return nil, 0, fmt.Errorf("%w: key %x: bad version suffix", ErrCorrupt, engineKey)
	}
	return userKey, ts, nil
}

// DataSpanEnd is the exclusive upper bound of the whole data key space.
func DataSpanEnd() []byte { return []byte{DataPrefix + 1} }

// rangeBounds returns the engine bounds of user range [start, end); an empty
// end means the end of the key space.
func rangeBounds(start, end []byte) (lower, upper []byte) {
	lower = KeyPrefix(nil, start)
	if len(end) == 0 {
		upper = DataSpanEnd()
	} else {
		upper = KeyPrefix(nil, end)
	}
	return lower, upper
}

// versionsEnd returns the smallest engine key after every version of the key
// whose encoded prefix is prefix.
func versionsEnd(prefix []byte) []byte {
	out := make([]byte, 0, len(prefix)+9)
	out = append(out, prefix...)
	return append(out, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00)
}

// Put appends a put version of key at commitTS to b.
func Put(b *pebble.Batch, key []byte, commitTS uint64, value []byte) error {
	v := make([]byte, 0, 1+len(value))
	v = append(v, FlagPut)
	v = append(v, value...)
	return b.Set(EncodeKey(nil, key, commitTS), v, nil)
}

// Delete appends a delete marker (tombstone version) of key at commitTS to b.
func Delete(b *pebble.Batch, key []byte, commitTS uint64) error {
	return b.Set(EncodeKey(nil, key, commitTS), []byte{FlagDelete}, nil)
}

// Pair is one user key and its value as of a read timestamp.
type Pair struct {
	Key   []byte
	Value []byte
}

// Reader reads user data at a timestamp from an Iterable.
type Reader struct {
	r Iterable
}

// NewReader returns a Reader over r. r must outlive the Reader's calls.
func NewReader(r Iterable) *Reader { return &Reader{r: r} }

// Get returns the value of the newest version of key with commit_ts <= ts.
// found is false when there is no such version or it is a delete.
func (r *Reader) Get(key []byte, ts uint64) (value []byte, found bool, err error) {
	prefix := KeyPrefix(nil, key)
	it, err := r.r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: versionsEnd(prefix)})
	if err != nil {
		return nil, false, fmt.Errorf("mvcc: get: %w", err)
	}
	defer it.Close()
	if !it.SeekGE(codec.EncodeUintDesc(prefix, ts)) {
		return nil, false, it.Error()
	}
	v, err := it.ValueAndErr()
	if err != nil {
		return nil, false, fmt.Errorf("mvcc: get: %w", err)
	}
	if len(v) == 0 {
		return nil, false, fmt.Errorf("%w: empty value at %x", ErrCorrupt, it.Key())
	}
	if v[0] == FlagDelete {
		return nil, false, nil
	}
	return bytes.Clone(v[1:]), true, nil
}

// Newest returns the commit timestamp of key's newest version, whatever its
// timestamp, and whether that version is a delete. found is false when the key
// has no version at all.
func (r *Reader) Newest(key []byte) (commitTS uint64, deleted, found bool, err error) {
	prefix := KeyPrefix(nil, key)
	it, err := r.r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: versionsEnd(prefix)})
	if err != nil {
		return 0, false, false, fmt.Errorf("mvcc: newest: %w", err)
	}
	defer it.Close()
	if !it.First() {
		return 0, false, false, it.Error()
	}
	_, commitTS, err = DecodeKey(it.Key(), nil)
	if err != nil {
		return 0, false, false, err
	}
	v, err := it.ValueAndErr()
	if err != nil {
		return 0, false, false, fmt.Errorf("mvcc: newest: %w", err)
	}
	return commitTS, len(v) > 0 && v[0] == FlagDelete, true, nil
}

// nextsBeforeSeek is how many Next calls a scan tries before it seeks past a
// key's remaining versions (most keys have few versions; a seek costs more).
const nextsBeforeSeek = 3

// Scan returns up to limit (0 = unlimited) live pairs with user keys in
// [start, end) (empty end = unbounded) as of ts, in ascending key order. With
// keyOnly the values are nil.
func (r *Reader) Scan(start, end []byte, ts uint64, limit int, keyOnly bool) ([]Pair, error) {
	var out []Pair
	err := r.ScanFunc(start, end, ts, keyOnly, func(k, v []byte) bool {
		out = append(out, Pair{Key: bytes.Clone(k), Value: cloneOrNil(v, keyOnly)})
		return limit <= 0 || len(out) < limit
	})
	return out, err
}

func cloneOrNil(v []byte, keyOnly bool) []byte {
	if keyOnly {
		return nil
	}
	if v == nil {
		return []byte{}
	}
	return bytes.Clone(v)
}

// ScanFunc calls fn for each live key in [start, end) as of ts in ascending
// order until fn returns false. key and value are only valid during the call.
// With keyOnly, value is nil.
func (r *Reader) ScanFunc(start, end []byte, ts uint64, keyOnly bool, fn func(key, value []byte) bool) error {
	lower, upper := rangeBounds(start, end)
	it, err := r.r.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("mvcc: scan: %w", err)
	}
	defer it.Close()
	var (
		userKey   []byte
		prefixBuf []byte
		seekBuf   []byte
	)
	valid := it.First()
	for valid {
		k := it.Key()
		var commitTS uint64
		userKey, commitTS, err = DecodeKey(k, userKey[:0])
		if err != nil {
			return err
		}
		// Copy: the iterator's key memory is invalid after it moves.
		prefixBuf = append(prefixBuf[:0], k[:len(k)-8]...)
		prefix := prefixBuf
		if commitTS > ts {
			// Jump to the newest version visible at ts.
			seekBuf = codec.EncodeUintDesc(append(seekBuf[:0], prefix...), ts)
			valid = it.SeekGE(seekBuf)
			if !valid {
				break
			}
			if !isVersionOf(it.Key(), prefix) {
				continue // no visible version of this key
			}
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("mvcc: scan: %w", err)
		}
		if len(v) == 0 {
			return fmt.Errorf("%w: empty value at %x", ErrCorrupt, it.Key())
		}
		if v[0] == FlagPut {
			var val []byte
			if !keyOnly {
				val = v[1:]
			}
			if !fn(userKey, val) {
				return nil
			}
		}
		// Skip the key's older versions: a few Nexts, then a seek.
		valid = it.Next()
		for i := 0; valid && i < nextsBeforeSeek && isVersionOf(it.Key(), prefix); i++ {
			valid = it.Next()
		}
		if valid && isVersionOf(it.Key(), prefix) {
			valid = it.SeekGE(versionsEnd(prefix))
		}
	}
	return it.Error()
}

func isVersionOf(engineKey, prefix []byte) bool {
	return len(engineKey) == len(prefix)+8 && bytes.HasPrefix(engineKey, prefix)
}

// ReverseScanFunc is ScanFunc in descending key order.
func (r *Reader) ReverseScanFunc(start, end []byte, ts uint64, keyOnly bool, fn func(key, value []byte) bool) error {
	lower, upper := rangeBounds(start, end)
	it, err := r.r.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("mvcc: reverse scan: %w", err)
	}
	defer it.Close()
	// Walking backwards, a key's versions come oldest first: remember the
	// newest one visible at ts until the key changes.
	var (
		curPrefix []byte
		curKey    []byte
		curVal    []byte
		have      bool
	)
	emit := func() bool {
		if have && len(curVal) > 0 && curVal[0] == FlagPut {
			var val []byte
			if !keyOnly {
				val = curVal[1:]
			}
			return fn(curKey, val)
		}
		return true
	}
	for valid := it.Last(); valid; valid = it.Prev() {
		k := it.Key()
		prefix := k[:len(k)-8]
		if curPrefix == nil || !bytes.Equal(prefix, curPrefix) {
			if !emit() {
				return nil
			}
			curPrefix = append(curPrefix[:0], prefix...)
			have = false
			curKey, _, err = DecodeKey(k, curKey[:0])
			if err != nil {
				return err
			}
		}
		_, commitTS, err := codec.DecodeUintDesc(k[len(k)-8:])
		if err != nil {
			return fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		if commitTS <= ts {
			v, err := it.ValueAndErr()
			if err != nil {
				return fmt.Errorf("mvcc: reverse scan: %w", err)
			}
			curVal = append(curVal[:0], v...)
			have = true
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	emit()
	return nil
}
