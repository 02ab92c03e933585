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
