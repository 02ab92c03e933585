package table

import (
	"testing"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
	"github.com/stretchr/testify/require"
)

func testTable() *model.TableInfo {
	t := &model.TableInfo{ID: 7, Name: "t", HandleOffset: -1, AutoIncOffset: -1, Columns: []*model.ColumnInfo{
		{ID: 1, Name: "a", Type: types.Int64Type},
		{ID: 2, Name: "b", Type: types.VarcharType},
	}, Indices: []*model.IndexInfo{
		{ID: 1, Name: "ia", Columns: []*model.IndexColumn{{Name: "a", Offset: 0}}},
		{ID: 2, Name: "uab", Unique: true, Columns: []*model.IndexColumn{{Name: "a", Offset: 0}, {Name: "b", Offset: 1}}},
	}, MaxIndexID: 2}
	t.Init()
	return t
}

// IndexEntry: non-unique entries and unique ones with a NULL carry the
// handle in the key; other unique entries store it as the value.
func TestIndexEntry(t *testing.T) {
	tbl := testTable()
	cases := []struct {
		ix         int
		row        []types.Datum
		unique     bool
		keyHandle  bool
		wantHandle int64
	}{
		{0, []types.Datum{types.NewInt(3), types.NewString("x")}, false, true, 11},
		{1, []types.Datum{types.NewInt(3), types.NewString("x")}, true, false, 11},
		{1, []types.Datum{types.NewInt(3), types.NullDatum}, false, true, 11},
	}
	for _, c := range cases {
		ix := tbl.Indices[c.ix]
		key, val, unique := IndexEntry(nil, tbl, ix, c.row, tablecodec.IntHandle(c.wantHandle))
		require.Equal(t, c.unique, unique)
		tid, iid, vals, kh, hasH, err := tablecodec.DecodeIndexKey(key, len(ix.Columns), false)
		require.NoError(t, err)
		require.Equal(t, tbl.ID, tid)
		require.Equal(t, ix.ID, iid)
		require.Equal(t, c.keyHandle, hasH)
		require.Len(t, vals, len(ix.Columns))
		h, err := tablecodec.DecodeIndexHandle(kh, hasH, val, false)
		require.NoError(t, err)
		require.Equal(t, c.wantHandle, h.IntValue())
	}
}

func TestDupKeyError(t *testing.T) {
	tbl := testTable()
	ukey, _, _ := IndexEntry(nil, tbl, tbl.Indices[1], []types.Datum{types.NewInt(-4), types.NewString("x y")}, tablecodec.IntHandle(1))
	cases := []struct {
		tbl  *model.TableInfo
		key  []byte
		want string
	}{
		{tbl, ukey, "Duplicate entry '-4-x y' for key 't.uab'"},
		{tbl, tablecodec.RowKey(7, 12), "Duplicate entry '12' for key 't.PRIMARY'"},
		{nil, tablecodec.RowKey(7, 12), "Duplicate entry '12' for key 'PRIMARY'"},
	}
	for _, c := range cases {
		err := DupKeyError(c.tbl, c.key)
		e := errno.FromError(err)
		require.Equal(t, errno.ErrDupEntry, e.Code)
		require.Equal(t, c.want, e.Msg)
	}
	// An index key of an unknown table stays a KeyExistsError.
	var ke *kv.KeyExistsError
	require.ErrorAs(t, DupKeyError(nil, ukey), &ke)
}

// commonTable is t(a INT, b VARCHAR, c INT, PRIMARY KEY (a, b) CLUSTERED,
// KEY ic (c), UNIQUE uc (c)): rows keyed by a common handle.
func commonTable() *model.TableInfo {
	t := &model.TableInfo{ID: 8, Name: "ct", HandleOffset: -1, AutoIncOffset: -1, CommonHandle: true, Columns: []*model.ColumnInfo{
		{ID: 1, Name: "a", Type: types.Int64Type},
		{ID: 2, Name: "b", Type: types.VarcharType},
		{ID: 3, Name: "c", Type: types.Int64Type},
	}, Indices: []*model.IndexInfo{
		{ID: 1, Name: "PRIMARY", Primary: true, Unique: true, Columns: []*model.IndexColumn{{Name: "a", Offset: 0}, {Name: "b", Offset: 1}}},
		{ID: 2, Name: "ic", Columns: []*model.IndexColumn{{Name: "c", Offset: 2}}},
		{ID: 3, Name: "uc", Unique: true, Columns: []*model.IndexColumn{{Name: "c", Offset: 2}}},
	}, MaxIndexID: 3}
	t.Init()
	return t
}

// TestCommonHandle: a common-handle table's row key holds its key's
// values, its PRIMARY KEY has no entries, secondary entries carry the
// handle (in a non-unique key, as a unique value), an entry gives the
// key's columns back, and a duplicate row key names the values.
func TestCommonHandle(t *testing.T) {
	tbl := commonTable()
	row := []types.Datum{types.NewInt(5), types.NewString("k"), types.NewInt(9), types.NullDatum}
	h := tbl.HandleOf(row)
	require.False(t, h.IsInt())
	require.False(t, tbl.HasEntries(tbl.Indices[0]))
	require.True(t, tbl.HasEntries(tbl.Indices[1]))
	rk := tablecodec.AppendHandleRowKey(nil, tbl.ID, h)
	_, got, err := tablecodec.DecodeHandleRowKey(rk, true)
	require.NoError(t, err)
	require.True(t, h.Equal(got))

	for _, ix := range tbl.Indices[1:] {
		key, val, _ := IndexEntry(nil, tbl, ix, row, h)
		_, _, vals, kh, hasH, err := tablecodec.DecodeIndexKey(key, len(ix.Columns), true)
		require.NoError(t, err)
		require.Equal(t, !ix.Unique, hasH, ix.Name)
		eh, err := tablecodec.DecodeIndexHandle(kh, hasH, val, true)
		require.NoError(t, err)
		require.True(t, h.Equal(eh), ix.Name)
		out := make([]types.Datum, tbl.RowWidth())
		tbl.SetIndexRow(ix, vals, eh, out)
		require.Equal(t, "5", out[0].String(), "the key's int column comes back from the handle")
		require.Equal(t, "k", out[1].String(), "the key's binary string column comes back from the handle")
		require.Equal(t, "9", out[2].String())
	}
	e := errno.FromError(DupKeyError(tbl, rk))
	require.Equal(t, errno.ErrDupEntry, e.Code)
	require.Equal(t, "Duplicate entry '5-k' for key 'ct.PRIMARY'", e.Msg)
}
