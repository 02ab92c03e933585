package infoschema

import (
	"testing"

	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/types"
	"github.com/stretchr/testify/require"
)

func TestTableLookup(t *testing.T) {
	s := New(nil, nil)
	require.True(t, s.IsSystemDB("INFORMATION_SCHEMA"))
	require.False(t, s.IsSystemDB("test"))
	info, mt, err := s.Table(DBName, "columns")
	require.NoError(t, err)
	require.NotNil(t, mt)
	require.Equal(t, "COLUMNS", info.Name)
	require.Equal(t, 4, info.FindColumn("column_name")+1)
	_, _, err = s.Table(DBName, "nosuch")
	require.Equal(t, errno.ErrNoSuchTable, errno.FromError(err).Code)
	require.Contains(t, s.TableNames(), "KEY_COLUMN_USAGE")
}

// TestColumnFacts: COLUMNS' derived columns for the types GORM and the
// drivers compare against their models.
func TestColumnFacts(t *testing.T) {
	vc := types.FieldType{Tp: mysql.TypeVarchar, Flen: 32}
	dec := types.DecimalType(8, 2)
	dt := types.FieldType{Tp: mysql.TypeDatetime, Flen: 23, Decimal: 3, Flag: mysql.BinaryFlag}
	u64 := types.FieldType{Tp: mysql.TypeLonglong, Flen: 20, Flag: mysql.UnsignedFlag | mysql.BinaryFlag}
	for _, c := range []struct {
		ft                                             types.FieldType
		dataType                                       string
		charLen, octLen, prec, scale, dtPrec, cs, coll string
	}{
		{vc, "varchar", "32", "128", "NULL", "NULL", "NULL", "utf8mb4", "utf8mb4_bin"},
		{dec, "decimal", "NULL", "NULL", "8", "2", "NULL", "NULL", "NULL"},
		{dt, "datetime", "NULL", "NULL", "NULL", "NULL", "3", "NULL", "NULL"},
		{u64, "bigint", "NULL", "NULL", "20", "0", "NULL", "NULL", "NULL"},
		{types.JSONType, "json", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL"},
	} {
		require.Equal(t, c.dataType, dataType(c.ft))
		a, b, p, s, d, cs, coll := typeFacts(c.ft)
		got := []string{a.String(), b.String(), p.String(), s.String(), d.String(), cs.String(), coll.String()}
		require.Equal(t, []string{c.charLen, c.octLen, c.prec, c.scale, c.dtPrec, c.cs, c.coll}, got, c.dataType)
	}
}

func TestKeyOf(t *testing.T) {
	tbl := &model.TableInfo{Name: "t", PKIsHandle: true, HandleOffset: 0, Columns: []*model.ColumnInfo{{Name: "id"}, {Name: "a"}, {Name: "b"}, {Name: "c"}},
		Indices: []*model.IndexInfo{
			{Name: "ua", Unique: true, Columns: []*model.IndexColumn{{Name: "a", Offset: 1}}},
			{Name: "bc", Columns: []*model.IndexColumn{{Name: "b", Offset: 2}, {Name: "c", Offset: 3}}},
		}}
	var got []string
	for i := range tbl.Columns {
		got = append(got, keyOf(tbl, i))
	}
	require.Equal(t, []string{"PRI", "UNI", "MUL", ""}, got)
}
