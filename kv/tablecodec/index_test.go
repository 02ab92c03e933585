package tablecodec

import (
	"bytes"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// Encoded datums of one kind sort as their values, NULL first.
func TestMemComparableOrder(t *testing.T) {
	cases := []struct {
		name   string
		sorted []Datum
	}{
		{"int", []Datum{NullDatum, NewInt(math.MinInt64), NewInt(-1), NewInt(0), NewInt(1), NewInt(math.MaxInt64)}},
		{"uint", []Datum{NullDatum, NewUint(0), NewUint(1), NewUint(1 << 63), NewUint(math.MaxUint64)}},
		{"float", []Datum{NullDatum, NewFloat(math.Inf(-1)), NewFloat(-2.5), NewFloat(-1e-300), NewFloat(0), NewFloat(1e-300), NewFloat(3), NewFloat(math.Inf(1))}},
		{"bytes", []Datum{NullDatum, NewString(""), NewString("a"), NewString("a\x00"), NewString("ab"), NewString("abcdefghij"), NewString("b")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var prev []byte
			for i, d := range c.sorted {
				enc := AppendMemComparable(nil, d)
				if i > 0 {
					require.Negative(t, bytes.Compare(prev, enc), "%v !< %v", c.sorted[i-1], d)
				}
				rest, got, err := DecodeMemComparable(enc)
				require.NoError(t, err)
				require.Empty(t, rest)
				require.Equal(t, d.String(), got.String())
				prev = enc
			}
		})
	}
	// -0 and 0 are one value.
	require.Equal(t, AppendMemComparable(nil, NewFloat(0)), AppendMemComparable(nil, NewFloat(math.Copysign(0, -1))))
}

func TestIndexKeyRoundTrip(t *testing.T) {
	cases := []struct {
		vals       []Datum
		withHandle bool
		handle     int64
	}{
		{[]Datum{NewInt(5)}, false, 9},
		{[]Datum{NewInt(5)}, true, -9},
		{[]Datum{NewString("x"), NullDatum, NewFloat(1.5)}, true, 1 << 40},
		{[]Datum{NewString("abcdefgh"), NewUint(7)}, false, 0},
	}
	for _, c := range cases {
		key := AppendIndexKey(nil, 42, 3, c.vals, c.withHandle, c.handle)
		require.True(t, IsIndexKey(key))
		require.Equal(t, int64(3), IndexIDOf(key))
		tid, ok := TableIDOf(key)
		require.True(t, ok)
		require.Equal(t, int64(42), tid)
		start, end := IndexRange(42, 3)
		require.True(t, bytes.Compare(start, key) <= 0 && bytes.Compare(key, end) < 0)
		tid, iid, vals, h, hasH, err := DecodeIndexKey(key, len(c.vals))
		require.NoError(t, err)
		require.Equal(t, int64(42), tid)
		require.Equal(t, int64(3), iid)
		require.Equal(t, c.withHandle, hasH)
		for i := range vals {
			require.Equal(t, c.vals[i].String(), vals[i].String())
		}
		got, err := DecodeIndexHandle(h, hasH, IndexValue(c.withHandle, c.handle))
		require.NoError(t, err)
		require.Equal(t, c.handle, got)
	}
	// Row keys are not index keys, and malformed keys are errors.
	require.False(t, IsIndexKey(RowKey(42, 1)))
	_, _, _, _, _, err := DecodeIndexKey(RowKey(42, 1), 1)
	require.ErrorIs(t, err, ErrInvalidIndexKey)
	key := AppendIndexKey(nil, 42, 3, []Datum{NewInt(1)}, false, 0)
	_, _, _, _, _, err = DecodeIndexKey(append(key, 1, 2), 1)
	require.ErrorIs(t, err, ErrInvalidIndexKey)
}
