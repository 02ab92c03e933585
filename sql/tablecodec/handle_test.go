package tablecodec

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/collate"
	"github.com/stratadb/strata/sql/types"
)

// keyTuple is one clustered key's values as SQL compares them; ci marks
// strings of utf8mb4_general_ci (encoded as their sort keys).
type keyTuple []types.Datum

func commonHandle(t *testing.T, vals keyTuple, decimal []bool, ci []bool) []byte {
	t.Helper()
	gen := collate.ByName("utf8mb4_general_ci")
	idx := make([]types.Datum, len(vals))
	for i, v := range vals {
		idx[i] = v
		if ci != nil && ci[i] {
			idx[i] = types.NewBytes(gen.Key(nil, v.Bytes()))
		}
	}
	h, err := AppendCommonHandle(nil, idx, decimal)
	require.NoError(t, err)
	return h
}

func str(s string) types.Datum { return types.NewString(s) }

// TestCommonHandleOrder: for each clustered key type, tuples listed in
// SQL order encode in strictly increasing byte order (equal rows of a
// group encode alike), so a row-key range scan returns rows in PRIMARY
// KEY order and equal keys collide.
func TestCommonHandleOrder(t *testing.T) {
	cases := []struct {
		name    string
		decimal []bool
		ci      []bool
		groups  [][]keyTuple // ascending; the tuples of one group are equal
	}{
		{"varchar_bin", []bool{false}, nil, [][]keyTuple{
			{{str("")}}, {{str("A")}}, {{str("Ann")}}, {{str("a")}}, {{str("ann")}}, {{str("ann\x00")}}, {{str("annabel-long-name")}}, {{str("b")}},
		}},
		{"varchar_general_ci", []bool{false}, []bool{true}, [][]keyTuple{
			{{str("a")}, {str("A")}}, {{str("Ann")}, {str("ann")}, {str("ANN")}}, {{str("annabel")}}, {{str("b")}, {str("B")}},
		}},
		{"decimal", []bool{true}, nil, [][]keyTuple{
			{{str("-100.5")}}, {{str("-100.25")}}, {{str("-10")}}, {{str("-2")}, {str("-2.00")}}, {{str("-0.5")}}, {{str("-0.05")}},
			{{str("0")}, {str("0.00")}, {str("-0.00")}}, {{str("0.001")}}, {{str("0.01")}}, {{str("0.1")}}, {{str("0.25")}},
			{{str("1")}, {str("1.0")}}, {{str("1.5")}, {str("1.50")}}, {{str("9.99")}}, {{str("10")}}, {{str("10.01")}}, {{str("100")}},
			{{str("12345678901234567890.123456789")}},
		}},
		{"datetime", []bool{false}, nil, [][]keyTuple{
			{{str("1000-01-01 00:00:00")}}, {{str("1999-12-31 23:59:59")}}, {{str("1999-12-31 23:59:59.5")}}, {{str("2024-02-29 00:00:00")}}, {{str("9999-12-31 23:59:59")}},
		}},
		{"int_varchar", []bool{false, false}, nil, [][]keyTuple{
			{{types.NewInt(-5), str("z")}}, {{types.NewInt(1), str("")}}, {{types.NewInt(1), str("a")}}, {{types.NewInt(1), str("ab")}},
			{{types.NewInt(1), str("b")}}, {{types.NewInt(2), str("a")}}, {{types.NewInt(100), str("a")}},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var prev []byte
			for gi, g := range c.groups {
				first := commonHandle(t, g[0], c.decimal, c.ci)
				for _, tup := range g[1:] {
					require.Equal(t, first, commonHandle(t, tup, c.decimal, c.ci), "group %d: %v", gi, tup)
				}
				if prev != nil {
					require.Equal(t, 1, bytes.Compare(first, prev), "group %d (%v) must sort after group %d", gi, g[0], gi-1)
				}
				prev = first
			}
		})
	}
}

// TestCommonHandleRoundTrip: a common handle decodes to its values (a
// decimal in its shortest text), and its row key back to the table and
// handle; an int handle's row key is AppendRowKey's.
func TestCommonHandleRoundTrip(t *testing.T) {
	cases := []struct {
		vals    keyTuple
		decimal []bool
		want    []string
	}{
		{keyTuple{str("abc")}, []bool{false}, []string{"abc"}},
		{keyTuple{types.NewInt(7), str("x y")}, []bool{false, false}, []string{"7", "x y"}},
		{keyTuple{str("123.450")}, []bool{true}, []string{"123.45"}},
		{keyTuple{str("-0.0012")}, []bool{true}, []string{"-0.0012"}},
		{keyTuple{str("-1200")}, []bool{true}, []string{"-1200"}},
		{keyTuple{str("0.00")}, []bool{true}, []string{"0"}},
		{keyTuple{str("-7.5"), str("2024-01-02 03:04:05"), types.NewUint(9)}, []bool{true, false, false}, []string{"-7.5", "2024-01-02 03:04:05", "9"}},
	}
	for _, c := range cases {
		enc, err := AppendCommonHandle(nil, c.vals, c.decimal)
		require.NoError(t, err)
		vals, err := DecodeCommonHandle(enc)
		require.NoError(t, err)
		got := make([]string, len(vals))
		for i, v := range vals {
			got[i] = v.String()
		}
		require.Equal(t, c.want, got)

		h := CommonHandle(enc)
		require.False(t, h.IsInt())
		key := AppendHandleRowKey(nil, 42, h)
		tid, back, err := DecodeHandleRowKey(key, true)
		require.NoError(t, err)
		require.Equal(t, int64(42), tid)
		require.Equal(t, 0, h.Compare(back))
		require.Equal(t, enc, back.Encoded())
		require.Equal(t, strings.Join(c.want, "-"), h.String())
	}
	_, err := AppendCommonHandle(nil, keyTuple{str("x1")}, []bool{true})
	require.Error(t, err)
	_, _, err = DecodeHandleRowKey(RowKey(1, 5)[:11], true)
	require.ErrorIs(t, err, ErrInvalidKey)

	ih := IntHandle(-3)
	require.True(t, ih.IsInt())
	require.Equal(t, RowKey(9, -3), AppendHandleRowKey(nil, 9, ih))
	tid, back, err := DecodeHandleRowKey(RowKey(9, -3), false)
	require.NoError(t, err)
	require.Equal(t, int64(9), tid)
	require.Equal(t, ih, back)
	require.Equal(t, "-3", ih.String())
	require.Equal(t, -1, ih.Compare(IntHandle(2)))
	require.Equal(t, 1, IntHandle(2).Compare(ih))
}
