package model

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
)

// TestForWrite: the ForWrite table lists the non-public columns after the
// public ones, hides them from names and SELECT *, writes a write-only one
// and skips a delete-only one; its JSON (what a pushed-down scan of an
// UPDATE gets) decodes to the same layout.
func TestForWrite(t *testing.T) {
	tbl := &TableInfo{ID: 5, Name: "t", HandleOffset: -1, AutoIncOffset: -1, Columns: []*ColumnInfo{
		{ID: 1, Name: "a", Type: types.Int64Type},
		{ID: 3, Name: "c", Type: types.Int64Type},
	}, NonPublic: []*ColumnInfo{
		{ID: 2, Name: "b", Type: types.Int64Type, State: StateWriteOnly, Origin: &OriginDefault{Value: "4"}},
		{ID: 4, Name: "d", Type: types.Int64Type, State: StateDeleteOnly, Origin: &OriginDefault{Null: true}},
	}, Indices: []*IndexInfo{{ID: 1, Name: "ic", Columns: []*IndexColumn{{Name: "c", Offset: 7}}}}}
	tbl.Init()
	require.Equal(t, 2, tbl.PublicColumns())
	require.Equal(t, 1, tbl.Indices[0].Columns[0].Offset, "index offsets follow the column names")
	require.Equal(t, int64(5), tbl.NextColumnID())
	require.Equal(t, -1, tbl.FindColumn("b"))

	w := tbl.ForWrite()
	require.NotSame(t, tbl, w)
	require.Same(t, w, w.ForWrite())
	require.Equal(t, 2, w.PublicColumns())
	require.Len(t, w.Columns, 4)
	require.Equal(t, -1, w.FindColumn("b"))
	require.Equal(t, 5, w.RowWidth())
	sch := w.Schema()
	require.True(t, sch[2].Hidden)
	require.Empty(t, sch[2].Name)
	require.Equal(t, HandleColumnName, sch[4].Name)

	// b is written, d is not.
	v := w.EncodeRow(nil, []types.Datum{types.NewInt(1), types.NewInt(3), types.NewInt(2), types.NewInt(9)}, make([]types.Datum, 4))
	out := make([]types.Datum, w.RowWidth())
	require.NoError(t, w.DecodeRow(tablecodec.RowKey(5, 1), v, out))
	require.Equal(t, []types.Datum{types.NewInt(1), types.NewInt(3), types.NewInt(2), types.NullDatum}, out[:4])
	// A row without b reads its origin default.
	v = tbl.EncodeRow(nil, []types.Datum{types.NewInt(1), types.NewInt(3)}, make([]types.Datum, 2))
	require.NoError(t, w.DecodeRow(tablecodec.RowKey(5, 1), v, out))
	require.Equal(t, types.NewInt(4), out[2])

	b, err := json.Marshal(w)
	require.NoError(t, err)
	var s TableInfo
	require.NoError(t, json.Unmarshal(b, &s))
	s.Init()
	require.Equal(t, 2, s.PublicColumns())
	require.Same(t, &s, s.ForWrite())
	require.Equal(t, w.RowWidth(), s.RowWidth())
	require.Equal(t, w.storedIDs, s.storedIDs)

	// Clone copies deeply: changing the copy leaves t alone.
	c := tbl.Clone()
	c.Columns[0].Name = "z"
	c.NonPublic[0].Origin.Value = "8"
	c.Indices[0].Columns[0].Offset = 0
	require.Equal(t, "a", tbl.Columns[0].Name)
	require.Equal(t, "4", tbl.NonPublic[0].Origin.Value)
	require.Equal(t, 1, tbl.Indices[0].Columns[0].Offset)
}

// TestForeignKeys: an FK's clause as SHOW CREATE TABLE and the 1451 / 1452
// messages print it, the index an FK uses, Clone's deep copy, and a
// stored table info from before FKs decoding without them.
func TestForeignKeys(t *testing.T) {
	tbl := &TableInfo{ID: 7, Name: "c", PKIsHandle: true, HandleOffset: 0, AutoIncOffset: -1, Columns: []*ColumnInfo{
		{ID: 1, Name: "id", Type: types.Int64Type},
		{ID: 2, Name: "a", Type: types.Int64Type},
		{ID: 3, Name: "b", Type: types.Int64Type},
	}, Indices: []*IndexInfo{
		{ID: 1, Name: "abc", Columns: []*IndexColumn{{Name: "a"}, {Name: "b"}, {Name: "id"}}},
		{ID: 2, Name: "ab", Columns: []*IndexColumn{{Name: "a"}, {Name: "b"}}},
		{ID: 3, Name: "b", Columns: []*IndexColumn{{Name: "b"}}, State: StateWriteOnly},
	}, ForeignKeys: []*FKInfo{{ID: 1, Name: "fk", Cols: []string{"a", "b"}, RefSchema: "other", RefTable: "p", RefCols: []string{"x", "y"}, OnDelete: FKCascade}}}
	tbl.Init()
	fk := tbl.ForeignKeys[0]
	require.Equal(t, "CONSTRAINT `fk` FOREIGN KEY (`a`, `b`) REFERENCES `other`.`p` (`x`, `y`) ON DELETE CASCADE", fk.Clause("test"))
	require.Equal(t, "CONSTRAINT `fk` FOREIGN KEY (`a`, `b`) REFERENCES `p` (`x`, `y`) ON DELETE CASCADE", fk.Clause("OTHER"))
	require.Equal(t, "NO ACTION", fk.OnUpdate.String())

	ix, ok := tbl.FKIndex([]int{1, 2})
	require.True(t, ok)
	require.Equal(t, "ab", ix.Name, "the shortest index starting with the columns")
	ix, ok = tbl.FKIndex([]int{0})
	require.True(t, ok)
	require.Nil(t, ix, "the integer primary key is the handle")
	_, ok = tbl.FKIndex([]int{2})
	require.False(t, ok, "a write-only index does not count")

	c := tbl.Clone()
	c.ForeignKeys[0].Cols[0] = "z"
	require.Equal(t, "a", fk.Cols[0])

	var old TableInfo
	require.NoError(t, json.Unmarshal([]byte(`{"id":1,"name":"t","columns":[],"pk_is_handle":false,"handle_offset":-1,"auto_inc_offset":-1}`), &old))
	require.Nil(t, old.ForeignKeys)
	v, err := json.Marshal(&old)
	require.NoError(t, err)
	require.NotContains(t, string(v), "foreign_keys")
}
