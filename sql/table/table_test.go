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
		key, val, unique := IndexEntry(nil, tbl, ix, c.row, c.wantHandle)
		require.Equal(t, c.unique, unique)
		tid, iid, vals, kh, hasH, err := tablecodec.DecodeIndexKey(key, len(ix.Columns))
		require.NoError(t, err)
		require.Equal(t, tbl.ID, tid)
		require.Equal(t, ix.ID, iid)
		require.Equal(t, c.keyHandle, hasH)
		require.Len(t, vals, len(ix.Columns))
		h, err := tablecodec.DecodeIndexHandle(kh, hasH, val)
		require.NoError(t, err)
		require.Equal(t, c.wantHandle, h)
	}
}

func TestDupKeyError(t *testing.T) {
	tbl := testTable()
	ukey, _, _ := IndexEntry(nil, tbl, tbl.Indices[1], []types.Datum{types.NewInt(-4), types.NewString("x y")}, 1)
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
