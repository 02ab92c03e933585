package mvcc

import (
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv/keys"
)

// TestViewIsConsistent: a View's Get and its iterators see the DB as of
// NewView, not writes, deletes or flushes after it.
func TestViewIsConsistent(t *testing.T) {
	db, err := pebble.Open("", &pebble.Options{Comparer: keys.Comparer, FS: vfs.NewMem()})
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.Set([]byte("a"), []byte("1"), pebble.NoSync))
	require.NoError(t, db.Set([]byte("b"), []byte("2"), pebble.NoSync))

	v, err := NewView(db)
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("a"), []byte("changed"), pebble.NoSync))
	require.NoError(t, db.Delete([]byte("b"), pebble.NoSync))
	require.NoError(t, db.Set([]byte("c"), []byte("3"), pebble.NoSync))
	require.NoError(t, db.Flush())

	for _, tc := range []struct {
		key, want string
		found     bool
	}{
		{"a", "1", true},
		{"b", "2", true},
		{"c", "", false},
		{"0", "", false},  // before every key
		{"ab", "", false}, // between keys: the next key is not a match
		{"z", "", false},  // after every key
	} {
		val, closer, err := v.Get([]byte(tc.key))
		if !tc.found {
			require.ErrorIs(t, err, pebble.ErrNotFound, tc.key)
			continue
		}
		require.NoError(t, err, tc.key)
		require.Equal(t, tc.want, string(val), tc.key)
		require.NoError(t, closer.Close())
	}

	for _, tc := range []struct {
		name string
		opts *pebble.IterOptions
		want []string
	}{
		{"all", nil, []string{"a=1", "b=2"}},
		{"bounded", &pebble.IterOptions{LowerBound: []byte("b"), UpperBound: []byte("z")}, []string{"b=2"}},
	} {
		it, err := v.NewIter(tc.opts)
		require.NoError(t, err, tc.name)
		var got []string
		for ok := it.First(); ok; ok = it.Next() {
			got = append(got, string(it.Key())+"="+string(it.Value()))
		}
		require.NoError(t, it.Close(), tc.name)
		require.Equal(t, tc.want, got, tc.name)
	}
	require.NoError(t, v.Close())

	// A new view sees the writes.
	v2, err := NewView(db)
	require.NoError(t, err)
	defer v2.Close()
	val, _, err := v2.Get([]byte("a"))
	require.NoError(t, err)
	require.Equal(t, "changed", string(val))
	_, _, err = v2.Get([]byte("b"))
	require.ErrorIs(t, err, pebble.ErrNotFound)
}

// TestPooledSnapshotReader: a reader from AcquireSnapshotReader, released
// and taken again, reads the view and with the options it was taken with
// now (nothing of an earlier read stays), and the values it returned stay
// the caller's after Release.
func TestPooledSnapshotReader(t *testing.T) {
	db, err := pebble.Open("", &pebble.Options{Comparer: keys.Comparer, FS: vfs.NewMem()})
	require.NoError(t, err)
	defer db.Close()
	apply := func(txn *Txn) {
		for _, r := range txn.Writes() {
			require.NoError(t, db.Set(append([]byte{keys.Prefix(r.GetCf())}, r.GetKey()...), r.GetValue(), pebble.NoSync))
		}
	}
	k := []byte("k")
	var t1 Txn
	t1.PutWrite(k, 11, &Write{Kind: WritePut, StartTS: 10, ShortValue: []byte("v1"), HasShortValue: true})
	apply(&t1)
	v1, err := NewView(db)
	require.NoError(t, err)
	defer v1.Close()
	var t2 Txn
	t2.PutWrite(k, 21, &Write{Kind: WritePut, StartTS: 20, ShortValue: []byte("v2"), HasShortValue: true})
	t2.PutLock(k, &Lock{Type: LockPut, Primary: k, StartTS: 30, TTL: 100})
	apply(&t2)
	v2, err := NewView(db)
	require.NoError(t, err)
	defer v2.Close()

	get := func(snap Snapshot, opts ReadOptions) ([]byte, error) {
		r := AcquireSnapshotReader(snap, opts)
		v, found, err := r.Get(k)
		require.NoError(t, r.Release())
		if err == nil {
			require.True(t, found)
		}
		return v, err
	}
	for range 3 { // the pool may hand back the same reader or a new one
		first, err := get(v1, ReadOptions{TS: 100})
		require.NoError(t, err)
		got, err := get(v2, ReadOptions{TS: 25})
		require.NoError(t, err)
		require.Equal(t, "v2", string(got))
		require.Equal(t, "v1", string(first), "a value stays the caller's after Release")
		_, err = get(v2, ReadOptions{TS: 40})
		var ke *KeyError
		require.ErrorAs(t, err, &ke, "the lock at 30 blocks a read at 40")
		got, err = get(v2, ReadOptions{TS: 40, ResolvedLocks: []uint64{30}})
		require.NoError(t, err)
		require.Equal(t, "v2", string(got))
		_, err = get(v2, ReadOptions{TS: 40})
		require.ErrorAs(t, err, &ke, "the resolved locks of an earlier read are not kept")
	}
}
