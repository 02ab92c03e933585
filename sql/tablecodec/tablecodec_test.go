package tablecodec

import (
	"bytes"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/types"
)

func TestRowKeyRoundTripAndOrder(t *testing.T) {
	cases := []struct {
		table, handle int64
	}{
		{1, math.MinInt64}, {1, -1}, {1, 0}, {1, 1}, {1, math.MaxInt64}, {2, -5}, {1 << 40, 7},
	}
	var prev []byte
	for _, c := range cases {
		k := RowKey(c.table, c.handle)
		require.Len(t, k, RowKeyLen)
		tid, h, err := DecodeRowKey(k)
		require.NoError(t, err)
		require.Equal(t, c.table, tid)
		require.Equal(t, c.handle, h)
		start, end := RecordRange(c.table)
		require.True(t, bytes.Compare(start, k) <= 0 && bytes.Compare(k, end) < 0, "key inside its record range")
		ts, te := TableRange(c.table)
		require.True(t, bytes.Compare(ts, start) <= 0 && bytes.Compare(end, te) <= 0)
		if prev != nil {
			require.Less(t, bytes.Compare(prev, k), 0, "row keys sort by (table, handle)")
		}
		prev = k
	}
	_, _, err := DecodeRowKey([]byte("m-not-a-row"))
	require.ErrorIs(t, err, ErrInvalidKey)
}

func TestPrefixNext(t *testing.T) {
	cases := []struct{ in, want []byte }{
		{[]byte{1, 2}, []byte{1, 3}},
		{[]byte{1, 0xFF}, []byte{2}},
		{[]byte{0xFF, 0xFF}, nil},
	}
	for _, c := range cases {
		require.Equal(t, c.want, PrefixNext(c.in))
	}
}

func TestRowRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		ids  []int64
		vals []types.Datum
	}{
		{"empty", nil, nil},
		{"ints", []int64{1, 2, 3}, []types.Datum{types.NewInt(0), types.NewInt(math.MinInt64), types.NewInt(math.MaxInt64)}},
		{"mixed", []int64{1, 5, 9, 3}, []types.Datum{types.NewUint(math.MaxUint64), types.NewFloat(-1.5), types.NewString("héllo"), types.NullDatum}},
		{"empty string", []int64{2}, []types.Datum{types.NewBytes([]byte{})}},
		{"big ids", []int64{300, 1}, []types.Datum{types.NewInt(-7), types.NewFloat(math.Inf(1))}},
		{"json", []int64{1, 2, 3}, []types.Datum{jsonDatum(t, `{"a": [1, "x", null]}`), jsonDatum(t, `"s"`), types.NewString(`{"a": 1}`)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			row := EncodeRow(nil, c.ids, c.vals)
			out := make([]types.Datum, len(c.ids))
			require.NoError(t, NewRowDecoder(c.ids).Decode(row, out))
			for i := range c.vals {
				require.Equal(t, c.vals[i].Kind(), out[i].Kind())
				require.Equal(t, c.vals[i].String(), out[i].String())
			}
		})
	}
}

func jsonDatum(t *testing.T, s string) types.Datum {
	j, err := types.ParseJSON([]byte(s))
	require.NoError(t, err)
	return types.NewJSONDatum(j)
}

func TestRowDecodeSubsetAndAbsent(t *testing.T) {
	row := EncodeRow(nil, []int64{1, 2, 3}, []types.Datum{types.NewInt(1), types.NewString("x"), types.NewFloat(2)})
	out := make([]types.Datum, 3)
	require.NoError(t, NewRowDecoder([]int64{3, 7, 1}).Decode(row, out))
	require.Equal(t, 2.0, out[0].Float64())
	require.Equal(t, types.KindAbsent, out[1].Kind())
	require.True(t, out[1].IsNull())
	require.Equal(t, int64(1), out[2].Int64())
}

func TestRowDecodeCorrupt(t *testing.T) {
	good := EncodeRow(nil, []int64{1, 2}, []types.Datum{types.NewInt(300), types.NewString("abcdef")})
	dec := NewRowDecoder([]int64{1, 2})
	out := make([]types.Datum, 2)
	for i := 0; i < len(good); i++ {
		if i == 1 || i == 5 { // column boundaries: a valid shorter row
			continue
		}
		err := dec.Decode(good[:i], out)
		require.ErrorIs(t, err, ErrCorruptRow, "truncated at %d", i)
	}
	require.ErrorIs(t, dec.Decode([]byte{RowFormatV1, 1, 99}, out), ErrCorruptRow)
	require.ErrorIs(t, dec.Decode([]byte{9}, out), ErrCorruptRow)
}

func BenchmarkRowEncodeDecode(b *testing.B) {
	ids := []int64{1, 2, 3, 4}
	vals := []types.Datum{types.NewInt(42), types.NewString("some varchar value"), types.NewFloat(3.25), types.NewString("2024-01-02 03:04:05")}
	dec := NewRowDecoder(ids)
	out := make([]types.Datum, len(ids))
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		buf = EncodeRow(buf[:0], ids, vals)
		if err := dec.Decode(buf, out); err != nil {
			b.Fatal(err)
		}
	}
}
