package mvcc

import (
	"bytes"
	"io"

	"github.com/cockroachdb/pebble/v2"
)

// View is a consistent read view of a Pebble DB that is cheaper than a
// *pebble.Snapshot for short reads: one iterator opened by NewView pins the
// DB's state (sequence number, memtables and sstables) and every further
// iterator is a Clone of it, so all reads see the same state. A
// pebble.Snapshot takes the DB mutex twice and, when closed as the oldest
// snapshot (the common case under point reads), asks the compaction picker
// for work under that mutex: a third of the snapshot-based point read's
// allocations on a store. Keep a View short-lived: it pins the files and
// memtables it reads. Not safe for concurrent use; Close it after use.
type View struct {
	base *pebble.Iterator
}

// NewView opens a view of db's current state.
func NewView(db *pebble.DB) (*View, error) {
	it, err := db.NewIter(nil)
	if err != nil {
		return nil, err
	}
	return &View{base: it}, nil
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// Get returns key's value. Unlike pebble's, the value is valid only until
// the next call on the view or point read of a TxnReader over it, which
// shares the view's iterator (closing the closer is optional). The lookup is
// a SeekPrefixGE: Pebble skips the SSTables whose bloom filter does not
// hold key's prefix (kv/keys.Comparer) and, once the prefix ends, stops
// without stepping over the tombstones of later keys (the LOCK column
// family is mostly tombstones of resolved locks).
func (v *View) Get(key []byte) ([]byte, io.Closer, error) {
	if !v.base.SeekPrefixGE(key) || !bytes.Equal(v.base.Key(), key) {
		if err := v.base.Error(); err != nil {
			return nil, nil, err
		}
		return nil, nil, pebble.ErrNotFound
	}
	val, err := v.base.ValueAndErr()
	if err != nil {
		return nil, nil, err
	}
	return val, nopCloser{}, nil
}

// NewIter returns an iterator over the view's state with o.
func (v *View) NewIter(o *pebble.IterOptions) (*pebble.Iterator, error) {
	if o == nil {
		o = &pebble.IterOptions{} // not the base's (prefix) state
	}
	return v.base.Clone(pebble.CloneOptions{IterOptions: o})
}

// Close releases the view; iterators from NewIter must be closed too.
func (v *View) Close() error { return v.base.Close() }
