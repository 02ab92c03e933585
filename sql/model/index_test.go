package model

import (
	"testing"

	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/collate"
	"github.com/stratadb/strata/sql/types"
)

// TestIndexColumnDatum: a prefix key part holds the first n characters of
// a text value (bytes of a binary one), cut before the collation's sort
// key is taken, so values that differ only after the prefix, or only in
// case under a case-insensitive collation, share an entry.
func TestIndexColumnDatum(t *testing.T) {
	text := types.VarcharType
	bin := types.VarcharType
	bin.Flag |= mysql.BinaryFlag
	ci := types.VarcharType
	ci.Coll = collate.ByName("utf8mb4_general_ci").ID
	key := func(ft types.FieldType, v string, n int) string {
		return string(IndexColumnDatum(ft, types.NewString(v), n).Bytes())
	}
	for _, tc := range []struct {
		name string
		ft   types.FieldType
		v    string
		n    int
		want string
	}{
		{"whole value", text, "abcdef", 0, "abcdef"},
		{"prefix", text, "abcdef", 3, "abc"},
		{"shorter than the prefix", text, "ab", 3, "ab"},
		{"characters, not bytes", text, "ñandú", 2, "ña"},
		{"bytes of a binary string", bin, "ñandú", 2, "ñ"},
		{"invalid UTF-8 counts bytes", text, "\xff\xfeabc", 3, "\xff\xfea"},
	} {
		require.Equal(t, tc.want, key(tc.ft, tc.v, tc.n), tc.name)
	}
	require.Equal(t, key(ci, "ABCdef", 3), key(ci, "abcxyz", 3), "case-insensitive prefixes share an entry")
	require.NotEqual(t, key(ci, "ABCdef", 4), key(ci, "abcxyz", 4))
	require.Equal(t, types.NewInt(7), IndexColumnDatum(types.Int64Type, types.NewInt(7), 3), "a number is never cut")
}

// TestFKIndexSkipsPrefix: a foreign key is never served by an index whose
// matching key part is a prefix (InnoDB refuses those too).
func TestFKIndexSkipsPrefix(t *testing.T) {
	tbl := &TableInfo{HandleOffset: -1, Columns: []*ColumnInfo{{Name: "a", Type: types.VarcharType}}}
	tbl.Indices = []*IndexInfo{{ID: 1, Name: "p", Columns: []*IndexColumn{{Name: "a", Offset: 0, Length: 2}}}}
	_, ok := tbl.FKIndex([]int{0})
	require.False(t, ok)
	tbl.Indices = append(tbl.Indices, &IndexInfo{ID: 2, Name: "w", Columns: []*IndexColumn{{Name: "a", Offset: 0}}})
	ix, ok := tbl.FKIndex([]int{0})
	require.True(t, ok)
	require.Equal(t, "w", ix.Name)
}
