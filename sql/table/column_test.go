package table

import (
	"bytes"
	"context"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
)

// mapTxn is the part of kv.Txn an optimistic Writer uses, over a map.
type mapTxn struct {
	kv.Txn
	m map[string][]byte
}

func (t *mapTxn) Set(k, v []byte) error    { t.m[string(k)] = bytes.Clone(v); return nil }
func (t *mapTxn) Insert(k, v []byte) error { return t.Set(k, v) }
func (t *mapTxn) Delete(k []byte) error    { delete(t.m, string(k)); return nil }
func (t *mapTxn) Dirty(_, _ []byte) bool   { return false }

// rows decodes every row of tbl's table as a node with schema tbl reads
// it: the public columns, sorted by handle.
func (t *mapTxn) rows(tb *testing.T, tbl *model.TableInfo) [][]types.Datum {
	var keys []string
	for k := range t.m {
		if !tablecodec.IsIndexKey([]byte(k)) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out [][]types.Datum
	for _, k := range keys {
		row := make([]types.Datum, tbl.RowWidth())
		require.NoError(tb, tbl.DecodeRow([]byte(k), t.m[k], row))
		out = append(out, row[:tbl.PublicColumns()])
	}
	return out
}

// readForWrite decodes the row with handle h through tbl's ForWrite
// table, as an UPDATE reads it.
func (t *mapTxn) readForWrite(tb *testing.T, tbl *model.TableInfo, h int64) []types.Datum {
	w := tbl.ForWrite()
	row := make([]types.Datum, w.RowWidth())
	require.NoError(tb, w.DecodeRow(tablecodec.RowKey(tbl.ID, h), t.m[string(tablecodec.RowKey(tbl.ID, h))], row))
	return row
}

func col(id int64, name string, st model.SchemaState) *model.ColumnInfo {
	return &model.ColumnInfo{ID: id, Name: name, Type: types.Int64Type, State: st}
}

// version builds table 9 with the public columns and the non-public ones.
func version(pub []*model.ColumnInfo, nonPublic ...*model.ColumnInfo) *model.TableInfo {
	t := &model.TableInfo{ID: 9, Name: "t", HandleOffset: -1, AutoIncOffset: -1, MaxColumnID: 3}
	for _, c := range pub {
		cc := *c
		t.Columns = append(t.Columns, &cc)
	}
	for _, c := range nonPublic {
		cc := *c
		t.NonPublic = append(t.NonPublic, &cc)
	}
	t.Init()
	return t
}

func ints(vs ...any) []types.Datum {
	out := make([]types.Datum, len(vs))
	for i, v := range vs {
		if v == nil {
			out[i] = types.NullDatum
		} else {
			out[i] = types.NewInt(int64(v.(int)))
		}
	}
	return out
}

// TestAddColumnAcrossVersions: ADD COLUMN c DEFAULT 7 goes none -> delete
// only -> write only -> public; nodes one version apart write rows the
// other decodes right, and an UPDATE on a node a version behind keeps the
// value a public node wrote.
func TestAddColumnAcrossVersions(t *testing.T) {
	ctx := context.Background()
	a, b := col(1, "a", model.StatePublic), col(2, "b", model.StatePublic)
	c := col(3, "c", model.StatePublic)
	c.HasDefault, c.Default, c.Origin = true, "7", &model.OriginDefault{Value: "7"}
	cst := func(st model.SchemaState) *model.ColumnInfo { x := *c; x.State = st; return &x }
	v0 := version([]*model.ColumnInfo{a, b})
	v1 := version([]*model.ColumnInfo{a, b}, cst(model.StateDeleteOnly))
	v2 := version([]*model.ColumnInfo{a, b}, cst(model.StateWriteOnly))
	v3 := version([]*model.ColumnInfo{a, b, c})
	c9 := *c
	c9.Default = "9" // ALTER COLUMN c SET DEFAULT 9
	v4 := version([]*model.ColumnInfo{a, b, &c9})

	txn := &mapTxn{m: map[string][]byte{}}
	w := func(tbl *model.TableInfo) *Writer { return &Writer{Txn: txn, T: tbl} }
	require.NoError(t, w(v0).AddRecords(ctx, []tablecodec.Handle{tablecodec.IntHandle(1)}, [][]types.Datum{ints(1, 1)}))
	require.NoError(t, w(v1).AddRecords(ctx, []tablecodec.Handle{tablecodec.IntHandle(2)}, [][]types.Datum{ints(2, 2)}))
	require.NoError(t, w(v2).AddRecords(ctx, []tablecodec.Handle{tablecodec.IntHandle(3)}, [][]types.Datum{ints(3, 3)}))
	require.NoError(t, w(v3).AddRecords(ctx, []tablecodec.Handle{tablecodec.IntHandle(4)}, [][]types.Datum{ints(4, 4, 42)}))
	// Every row reads right one version behind and one ahead.
	require.Equal(t, [][]types.Datum{ints(1, 1), ints(2, 2), ints(3, 3), ints(4, 4)}, txn.rows(t, v2))
	require.Equal(t, [][]types.Datum{ints(1, 1, 7), ints(2, 2, 7), ints(3, 3, 7), ints(4, 4, 42)}, txn.rows(t, v3))

	// A write-only node updates row 4 (a public node set c = 42): c stays.
	old := txn.readForWrite(t, v2, 4)
	require.Equal(t, ints(4, 4, 42), old[:3])
	nr := append([]types.Datum(nil), old...)
	nr[1] = types.NewInt(40)
	require.NoError(t, w(v2.ForWrite()).UpdateRecords(ctx, []tablecodec.Handle{tablecodec.IntHandle(4)}, [][]types.Datum{old}, []tablecodec.Handle{tablecodec.IntHandle(4)}, [][]types.Datum{nr}))
	// Updating through the table without its non-public columns is refused.
	require.ErrorIs(t, w(v2).UpdateRecords(ctx, []tablecodec.Handle{tablecodec.IntHandle(4)}, [][]types.Datum{old[:2]}, []tablecodec.Handle{tablecodec.IntHandle(4)}, [][]types.Datum{nr[:2]}), errNotForWrite)

	// SET DEFAULT does not change what rows without the column read.
	require.Equal(t, [][]types.Datum{ints(1, 1, 7), ints(2, 2, 7), ints(3, 3, 7), ints(4, 40, 42)}, txn.rows(t, v4))
}

// TestDropColumnAcrossVersions: DROP COLUMN b goes public -> write only ->
// delete only -> gone; a public node sees the rows a write-only node
// inserted with b's default, and b's values survive updates by write-only
// nodes while public nodes may still read them.
func TestDropColumnAcrossVersions(t *testing.T) {
	ctx := context.Background()
	a, b := col(1, "a", model.StatePublic), col(2, "b", model.StatePublic)
	b.HasDefault, b.Default = true, "5"
	bst := func(st model.SchemaState) *model.ColumnInfo {
		x := *b
		x.State, x.Origin = st, &model.OriginDefault{Value: "5"}
		return &x
	}
	p := version([]*model.ColumnInfo{a, b})
	w1 := version([]*model.ColumnInfo{a}, bst(model.StateWriteOnly))
	w2 := version([]*model.ColumnInfo{a}, bst(model.StateDeleteOnly))
	gone := version([]*model.ColumnInfo{a})

	txn := &mapTxn{m: map[string][]byte{}}
	w := func(tbl *model.TableInfo) *Writer { return &Writer{Txn: txn, T: tbl} }
	require.NoError(t, w(p).AddRecords(ctx, []tablecodec.Handle{tablecodec.IntHandle(1)}, [][]types.Datum{ints(1, 100)}))
	require.NoError(t, w(w1).AddRecords(ctx, []tablecodec.Handle{tablecodec.IntHandle(2)}, [][]types.Datum{ints(2)}))
	require.NoError(t, w(w2).AddRecords(ctx, []tablecodec.Handle{tablecodec.IntHandle(3)}, [][]types.Datum{ints(3)}))
	// A write-only node updates row 1: b = 100 stays for public nodes.
	old := txn.readForWrite(t, w1, 1)
	nr := append([]types.Datum(nil), old...)
	nr[0] = types.NewInt(10)
	require.NoError(t, w(w1.ForWrite()).UpdateRecords(ctx, []tablecodec.Handle{tablecodec.IntHandle(1)}, [][]types.Datum{old}, []tablecodec.Handle{tablecodec.IntHandle(1)}, [][]types.Datum{nr}))
	require.Equal(t, [][]types.Datum{ints(10, 100), ints(2, 5), ints(3, 5)}, txn.rows(t, p))
	require.Equal(t, [][]types.Datum{ints(10), ints(2), ints(3)}, txn.rows(t, gone))
	// A delete-only node does not write b: the row reads b's origin
	// default on write-only nodes.
	old = txn.readForWrite(t, w2, 1)
	require.NoError(t, w(w2.ForWrite()).UpdateRecords(ctx, []tablecodec.Handle{tablecodec.IntHandle(1)}, [][]types.Datum{old}, []tablecodec.Handle{tablecodec.IntHandle(1)}, [][]types.Datum{old}))
	require.Equal(t, ints(10, 5), txn.readForWrite(t, w1, 1)[:2])
}
