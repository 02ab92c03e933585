package mvcc

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

type version struct {
	key    string
	ts     uint64
	value  string
	delete bool
}

func openMem(t *testing.T, versions []version) *pebble.DB {
	t.Helper()
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	b := db.NewBatch()
	for _, v := range versions {
		if v.delete {
			require.NoError(t, Delete(b, []byte(v.key), v.ts))
		} else {
			require.NoError(t, Put(b, []byte(v.key), v.ts, []byte(v.value)))
		}
	}
	require.NoError(t, b.Commit(pebble.NoSync))
	return db
}

// fixture: a has 3 versions, b is deleted at 20, c only exists after 30,
// "a\x00" checks prefix handling, d has many versions (seek path).
var fixture = []version{
	{key: "a", ts: 10, value: "a10"},
	{key: "a", ts: 20, value: "a20"},
	{key: "a", ts: 30, value: "a30"},
	{key: "a\x00", ts: 5, value: "a0-5"},
	{key: "b", ts: 10, value: "b10"},
	{key: "b", ts: 20, delete: true},
	{key: "c", ts: 30, value: "c30"},
	{key: "d", ts: 1, value: "d1"},
	{key: "d", ts: 2, value: "d2"},
	{key: "d", ts: 3, value: "d3"},
	{key: "d", ts: 4, value: "d4"},
	{key: "d", ts: 5, value: "d5"},
	{key: "d", ts: 6, value: "d6"},
	{key: "e", ts: 7, value: ""},
}

func TestKeyRoundTrip(t *testing.T) {
	for _, k := range []string{"", "a", "12345678", "123456789", "\x00\xff"} {
		ek := EncodeKey(nil, []byte(k), 42)
		uk, ts, err := DecodeKey(ek, nil)
		require.NoError(t, err)
		require.Equal(t, k, string(uk))
		require.Equal(t, uint64(42), ts)
	}
	_, _, err := DecodeKey([]byte("x"), nil)
	require.ErrorIs(t, err, ErrCorrupt)
}

func TestGet(t *testing.T) {
	db := openMem(t, fixture)
	r := NewReader(db)
	tests := []struct {
		key   string
		ts    uint64
		want  string
		found bool
	}{
		{"a", 9, "", false},
		{"a", 10, "a10", true},
		{"a", 15, "a10", true},
		{"a", 20, "a20", true},
		{"a", 100, "a30", true},
		{"a\x00", 100, "a0-5", true},
		{"b", 15, "b10", true},
		{"b", 20, "", false},
		{"b", 25, "", false},
		{"c", 29, "", false},
		{"c", 30, "c30", true},
		{"d", 3, "d3", true},
		{"e", 7, "", true},
		{"zz", 100, "", false},
		{"", 100, "", false},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%q@%d", tc.key, tc.ts), func(t *testing.T) {
			v, found, err := r.Get([]byte(tc.key), tc.ts)
			require.NoError(t, err)
			require.Equal(t, tc.found, found)
			require.Equal(t, tc.want, string(v))
		})
	}
}

func TestNewest(t *testing.T) {
	db := openMem(t, fixture)
	r := NewReader(db)
	tests := []struct {
		key     string
		ts      uint64
		deleted bool
		found   bool
	}{
		{"a", 30, false, true},
		{"b", 20, true, true},
		{"d", 6, false, true},
		{"nope", 0, false, false},
	}
	for _, tc := range tests {
		ts, del, found, err := r.Newest([]byte(tc.key))
		require.NoError(t, err)
		require.Equal(t, tc.found, found, tc.key)
		require.Equal(t, tc.deleted, del, tc.key)
		require.Equal(t, tc.ts, ts, tc.key)
	}
}

func pairsString(ps []Pair) []string {
	out := []string{}
	for _, p := range ps {
		if p.Value == nil {
			out = append(out, string(p.Key))
		} else {
			out = append(out, string(p.Key)+"="+string(p.Value))
		}
	}
	return out
}

func TestScan(t *testing.T) {
	db := openMem(t, fixture)
	r := NewReader(db)
	tests := []struct {
		name       string
		start, end string
		ts         uint64
		limit      int
		keyOnly    bool
		want       []string
	}{
		{name: "all-latest", ts: 100, want: []string{"a=a30", "a\x00=a0-5", "c=c30", "d=d6", "e="}},
		{name: "at-15", ts: 15, want: []string{"a=a10", "a\x00=a0-5", "b=b10", "d=d6", "e="}},
		{name: "at-3", ts: 3, want: []string{"d=d3"}},
		{name: "at-0", ts: 0, want: []string{}},
		{name: "range", start: "a\x00", end: "d", ts: 100, want: []string{"a\x00=a0-5", "c=c30"}},
		{name: "limit", ts: 100, limit: 2, want: []string{"a=a30", "a\x00=a0-5"}},
		{name: "key-only", start: "c", ts: 100, keyOnly: true, want: []string{"c", "d", "e"}},
		{name: "empty-range", start: "x", end: "y", ts: 100, want: []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.Scan([]byte(tc.start), []byte(tc.end), tc.ts, tc.limit, tc.keyOnly)
			require.NoError(t, err)
			require.Equal(t, tc.want, pairsString(got))

			// Reverse scan yields the same pairs backwards (no limit).
			if tc.limit == 0 {
				var rev []string
				err := r.ReverseScanFunc([]byte(tc.start), []byte(tc.end), tc.ts, tc.keyOnly, func(k, v []byte) bool {
					if tc.keyOnly {
						rev = append([]string{string(k)}, rev...)
					} else {
						rev = append([]string{string(k) + "=" + string(v)}, rev...)
					}
					return true
				})
				require.NoError(t, err)
				if rev == nil {
					rev = []string{}
				}
				require.Equal(t, tc.want, rev)
			}
		})
	}
}

func TestScanReadsIndexedBatch(t *testing.T) {
	db := openMem(t, fixture)
	b := db.NewIndexedBatch()
	defer b.Close()
	require.NoError(t, Put(b, []byte("a"), 40, []byte("a40")))
	require.NoError(t, Delete(b, []byte("c"), 40))
	r := NewReader(b)
	got, err := r.Scan(nil, nil, 50, 0, false)
	require.NoError(t, err)
	require.Equal(t, []string{"a=a40", "a\x00=a0-5", "d=d6", "e="}, pairsString(got))
	ts, del, found, err := r.Newest([]byte("c"))
	require.NoError(t, err)
	require.True(t, found)
	require.True(t, del)
	require.Equal(t, uint64(40), ts)
}
