package codec

import (
	"bytes"
	"math"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIntRoundTripAndOrder(t *testing.T) {
	vals := []int64{math.MinInt64, -1 << 40, -2, -1, 0, 1, 2, 1 << 40, math.MaxInt64}
	var prev []byte
	for _, v := range vals {
		enc := EncodeInt(nil, v)
		rest, got, err := DecodeInt(enc)
		require.NoError(t, err)
		require.Empty(t, rest)
		require.Equal(t, v, got)
		if prev != nil {
			require.Negative(t, bytes.Compare(prev, enc), "order of %d", v)
		}
		prev = enc
	}
	_, _, err := DecodeInt([]byte{1, 2})
	require.ErrorIs(t, err, ErrInsufficientBytes)
}

func TestUintDescOrder(t *testing.T) {
	a, b := EncodeUintDesc(nil, 10), EncodeUintDesc(nil, 20)
	require.Positive(t, bytes.Compare(a, b))
	_, v, err := DecodeUintDesc(a)
	require.NoError(t, err)
	require.Equal(t, uint64(10), v)
}

func TestBytesRoundTripAndOrder(t *testing.T) {
	tests := [][]byte{
		{}, {0}, {0, 0}, {1}, {1, 2, 3, 4, 5, 6, 7}, {1, 2, 3, 4, 5, 6, 7, 8},
		{1, 2, 3, 4, 5, 6, 7, 8, 9}, []byte("abc"), []byte("abcdefghijklmnopq"), {0xFF, 0xFF},
	}
	for _, in := range tests {
		enc := EncodeBytes(nil, in)
		require.Len(t, enc, EncodedBytesLen(len(in)))
		enc = append(enc, 'x') // a suffix must not disturb decoding
		rest, out, err := DecodeBytes(enc, nil)
		require.NoError(t, err)
		require.Equal(t, []byte("x"), rest)
		require.Equal(t, string(in), string(out))
	}
	sorted := append([][]byte(nil), tests...)
	sort.Slice(sorted, func(i, j int) bool { return bytes.Compare(sorted[i], sorted[j]) < 0 })
	for i := 1; i < len(sorted); i++ {
		a, b := EncodeBytes(nil, sorted[i-1]), EncodeBytes(nil, sorted[i])
		require.Negative(t, bytes.Compare(a, b), "%q < %q", sorted[i-1], sorted[i])
	}
}

func TestDecodeBytesMalformed(t *testing.T) {
	_, _, err := DecodeBytes([]byte{1, 2, 3}, nil)
	require.ErrorIs(t, err, ErrInsufficientBytes)
	bad := []byte{1, 0, 0, 0, 0, 0, 0, 7, 0xF8} // padding byte not zero
	_, _, err = DecodeBytes(bad, nil)
	require.ErrorIs(t, err, ErrInvalidEncoding)
	bad = []byte{1, 0, 0, 0, 0, 0, 0, 0, 0x10} // pad count > 8
	_, _, err = DecodeBytes(bad, nil)
	require.ErrorIs(t, err, ErrInvalidEncoding)
}
