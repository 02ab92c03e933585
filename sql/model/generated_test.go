package model

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
)

func gen(name, text string, stored bool, deps ...string) *ColumnInfo {
	return &ColumnInfo{Name: name, Type: types.Int64Type, Generated: &GeneratedInfo{Expr: text, Stored: stored, Deps: deps}}
}

func base(name string) *ColumnInfo { return &ColumnInfo{Name: name, Type: types.Int64Type} }

// TestGeneratedOrder: generated columns are computed after the generated
// columns they read, whatever their positions (ADD COLUMN ... FIRST can
// put one before what it reads); ties keep offset order; a cycle is an
// error.
func TestGeneratedOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		cols []*ColumnInfo
		want []int
		err  string
	}{
		{name: "none", cols: []*ColumnInfo{base("a"), base("b")}},
		{name: "offset order", cols: []*ColumnInfo{base("a"), gen("x", "`a`+1", false, "a"), gen("y", "`a`*2", true, "a")}, want: []int{1, 2}},
		{name: "chain", cols: []*ColumnInfo{base("a"), gen("x", "`a`+1", false, "a"), gen("y", "`x`*2", false, "x")}, want: []int{1, 2}},
		{name: "reader first", cols: []*ColumnInfo{gen("z", "`y`+`x`", false, "y", "x"), base("a"), gen("y", "`x`*2", true, "x"), gen("x", "`a`+1", false, "a")}, want: []int{3, 2, 0}},
		{name: "case of names", cols: []*ColumnInfo{gen("Z", "`X`", false, "x"), gen("X", "1", false)}, want: []int{1, 0}},
		{name: "cycle", cols: []*ColumnInfo{gen("x", "`y`", false, "y"), gen("y", "`x`", false, "x")}, err: "depends on itself"},
		{name: "self", cols: []*ColumnInfo{gen("x", "`x`", false, "x")}, err: "depends on itself"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := GeneratedOrder(tc.cols)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// TestVirtualColumns: a VIRTUAL column is not in the row value and is
// computed by DecodeRow (also through the JSON a coprocessor request
// carries); a STORED one is written as computed by FillGenerated.
func TestVirtualColumns(t *testing.T) {
	tbl := &TableInfo{ID: 7, Name: "t", HandleOffset: -1, AutoIncOffset: -1, Columns: []*ColumnInfo{
		{ID: 1, Name: "a", Type: types.Int64Type},
		{ID: 4, Name: "v2", Type: types.Int64Type, Generated: &GeneratedInfo{Expr: "`v`*2", Deps: []string{"v"}}},
		{ID: 2, Name: "v", Type: types.Int64Type, Generated: &GeneratedInfo{Expr: "`a`+`s`", Deps: []string{"a", "s"}}},
		{ID: 3, Name: "s", Type: types.Int64Type, Generated: &GeneratedInfo{Expr: "`a`*10", Stored: true, Deps: []string{"a"}}},
	}}
	tbl.Init()
	require.True(t, tbl.HasGenerated())
	row := make([]types.Datum, tbl.RowWidth())
	row[0] = types.NewInt(3)
	var computed []string
	require.NoError(t, tbl.FillGenerated(row, func(c *ColumnInfo, v types.Datum) (types.Datum, error) {
		computed = append(computed, c.Name)
		return v, nil
	}))
	require.Equal(t, []string{"s", "v", "v2"}, computed)
	require.Equal(t, []types.Datum{types.NewInt(3), types.NewInt(66), types.NewInt(33), types.NewInt(30)}, row[:4])

	val := tbl.EncodeRow(nil, row, make([]types.Datum, 4))
	stored := tablecodec.NewRowDecoder([]int64{1, 2, 3, 4})
	raw := make([]types.Datum, 4)
	require.NoError(t, stored.Decode(val, raw))
	require.Equal(t, types.KindAbsent, raw[1].Kind(), "virtual v is not stored")
	require.Equal(t, types.KindAbsent, raw[3].Kind(), "virtual v2 is not stored")
	require.Equal(t, types.NewInt(30), raw[2])

	b, err := json.Marshal(tbl)
	require.NoError(t, err)
	var remote TableInfo
	require.NoError(t, json.Unmarshal(b, &remote))
	remote.Init()
	out := make([]types.Datum, remote.RowWidth())
	require.NoError(t, remote.DecodeRow(tablecodec.RowKey(7, 1), val, out))
	require.Equal(t, row[:4], out[:4])

	// NULL flows through; a value that does not fit is adjusted on read.
	row[0] = types.NullDatum
	require.NoError(t, tbl.FillGenerated(row, func(_ *ColumnInfo, v types.Datum) (types.Datum, error) { return v, nil }))
	val = tbl.EncodeRow(nil, row, make([]types.Datum, 4))
	require.NoError(t, tbl.DecodeRow(tablecodec.RowKey(7, 2), val, out))
	require.True(t, out[1].IsNull() && out[2].IsNull() && out[3].IsNull())
}

// TestGeneratedCompileError: an expression that does not compile (DDL
// prevents it) fails every write and reads as NULL.
func TestGeneratedCompileError(t *testing.T) {
	tbl := &TableInfo{ID: 1, Name: "t", HandleOffset: -1, AutoIncOffset: -1, Columns: []*ColumnInfo{
		{ID: 1, Name: "a", Type: types.Int64Type},
		{ID: 2, Name: "g", Type: types.Int64Type, Generated: &GeneratedInfo{Expr: "`nope`+1", Deps: []string{"nope"}}},
	}}
	tbl.Init()
	require.True(t, tbl.HasGenerated())
	row := []types.Datum{types.NewInt(1), types.NullDatum, types.NewInt(1)}
	require.ErrorContains(t, tbl.FillGenerated(row, func(_ *ColumnInfo, v types.Datum) (types.Datum, error) { return v, nil }), "nope")
	out := make([]types.Datum, tbl.RowWidth())
	require.NoError(t, tbl.DecodeRow(tablecodec.RowKey(1, 1), tbl.EncodeRow(nil, row, make([]types.Datum, 2)), out))
	require.Equal(t, types.NewInt(1), out[0])
	require.True(t, out[1].IsNull())
}

// TestGeneratedTextNotEqual: the text a generated column or CHECK
// constraint keeps is MySQL's (<> for not equal, outside quoted strings
// and names), and its own parse gives it back.
func TestGeneratedTextNotEqual(t *testing.T) {
	for in, want := range map[string]string{
		"a <> b":                       "(`a` <> `b`)",
		"a != 'x != y' AND b <> `c!=`": "((`a` <> _utf8mb4'x != y') and (`b` <> `c!=`))",
		"(test.t.a > 1)":               "(`a` > 1)",
		"NOT (a = 3)":                  "not (`a` = 3)",
	} {
		n, err := ParseGeneratedExpr(in)
		require.NoError(t, err)
		got, err := GeneratedText(n)
		require.NoError(t, err)
		require.Equal(t, want, got, in)
		again, err := ParseGeneratedExpr(got)
		require.NoError(t, err)
		got2, err := GeneratedText(again)
		require.NoError(t, err)
		require.Equal(t, got, got2, in)
	}
}
