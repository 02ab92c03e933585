package tablecodec

import (
	"bytes"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/types"
)

// Encoded datums of one kind sort as their values, NULL first.
func TestMemComparableOrder(t *testing.T) {
	cases := []struct {
		name   string
		sorted []types.Datum
	}{
		{"int", []types.Datum{types.NullDatum, types.NewInt(math.MinInt64), types.NewInt(-1), types.NewInt(0), types.NewInt(1), types.NewInt(math.MaxInt64)}},
		{"uint", []types.Datum{types.NullDatum, types.NewUint(0), types.NewUint(1), types.NewUint(1 << 63), types.NewUint(math.MaxUint64)}},
		{"float", []types.Datum{types.NullDatum, types.NewFloat(math.Inf(-1)), types.NewFloat(-2.5), types.NewFloat(-1e-300), types.NewFloat(0), types.NewFloat(1e-300), types.NewFloat(3), types.NewFloat(math.Inf(1))}},
		{"bytes", []types.Datum{types.NullDatum, types.NewString(""), types.NewString("a"), types.NewString("a\x00"), types.NewString("ab"), types.NewString("abcdefghij"), types.NewString("b")}},
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
	require.Equal(t, AppendMemComparable(nil, types.NewFloat(0)), AppendMemComparable(nil, types.NewFloat(math.Copysign(0, -1))))
}

func TestIndexKeyRoundTrip(t *testing.T) {
	cases := []struct {
		vals       []types.Datum
		withHandle bool
		handle     Handle
	}{
		{[]types.Datum{types.NewInt(5)}, false, IntHandle(9)},
		{[]types.Datum{types.NewInt(5)}, true, IntHandle(-9)},
		{[]types.Datum{types.NewString("x"), types.NullDatum, types.NewFloat(1.5)}, true, IntHandle(1 << 40)},
		{[]types.Datum{types.NewString("abcdefgh"), types.NewUint(7)}, false, IntHandle(0)},
		// Common handles: in the key of a non-unique entry, in the value of
		// a unique one, whatever their length (8 bytes too).
		{[]types.Datum{types.NewInt(5)}, true, CommonHandle(AppendMemComparable(nil, types.NewString("k")))},
		{[]types.Datum{types.NewInt(5)}, false, CommonHandle(AppendMemComparable(AppendMemComparable(nil, types.NewInt(1)), types.NewString("kk")))},
		{[]types.Datum{types.NewString("v")}, true, CommonHandle([]byte{1, 2, 3, 4, 5, 6, 7, 8})},
	}
	for _, c := range cases {
		common := !c.handle.IsInt()
		key := AppendIndexKey(nil, 42, 3, c.vals, c.withHandle, c.handle)
		require.True(t, IsIndexKey(key))
		require.Equal(t, int64(3), IndexIDOf(key))
		tid, ok := TableIDOf(key)
		require.True(t, ok)
		require.Equal(t, int64(42), tid)
		start, end := IndexRange(42, 3)
		require.True(t, bytes.Compare(start, key) <= 0 && bytes.Compare(key, end) < 0)
		tid, iid, vals, h, hasH, err := DecodeIndexKey(key, len(c.vals), common)
		require.NoError(t, err)
		require.Equal(t, int64(42), tid)
		require.Equal(t, int64(3), iid)
		require.Equal(t, c.withHandle, hasH)
		for i := range vals {
			require.Equal(t, c.vals[i].String(), vals[i].String())
		}
		got, err := DecodeIndexHandle(h, hasH, IndexValue(c.withHandle, c.handle), common)
		require.NoError(t, err)
		require.True(t, c.handle.Equal(got), "%v != %v", c.handle, got)
	}
	// Row keys are not index keys, and malformed keys are errors.
	require.False(t, IsIndexKey(RowKey(42, 1)))
	_, _, _, _, _, err := DecodeIndexKey(RowKey(42, 1), 1, false)
	require.ErrorIs(t, err, ErrInvalidIndexKey)
	key := AppendIndexKey(nil, 42, 3, []types.Datum{types.NewInt(1)}, false, IntHandle(0))
	_, _, _, _, _, err = DecodeIndexKey(append(key, 1, 2), 1, false)
	require.ErrorIs(t, err, ErrInvalidIndexKey)
}
