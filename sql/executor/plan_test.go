package executor

import (
	"math"
	"testing"
	"time"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv/tablecodec"
	"github.com/stratadb/strata/sql/catalog"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/types"
)

type nullEnv struct{}

func (nullEnv) CurrentDB() string             { return "db" }
func (nullEnv) User() string                  { return "root@%" }
func (nullEnv) ConnectionID() uint64          { return 1 }
func (nullEnv) LastInsertID() uint64          { return 0 }
func (nullEnv) Now() time.Time                { return time.Unix(0, 0) }
func (nullEnv) UserVar(string) types.Datum    { return tablecodec.NullDatum }
func (nullEnv) Param(int) (types.Datum, bool) { return tablecodec.NullDatum, false }
func (nullEnv) SysVar(name string, _ bool) (types.Datum, types.FieldType, error) {
	return tablecodec.NullDatum, types.FieldType{}, errno.New(errno.ErrUnknownSystemVar, "Unknown system variable '%s'", name)
}

func testSource(pkHandle bool) *source {
	t := &catalog.TableInfo{ID: 9, Name: "t", HandleOffset: -1, AutoIncOffset: -1, Columns: []*catalog.ColumnInfo{
		{ID: 1, Name: "id", Type: types.FieldType{Tp: mysql.TypeLong, Flag: mysql.PriKeyFlag | mysql.NotNullFlag}},
		{ID: 2, Name: "v", Type: types.FieldType{Tp: mysql.TypeVarchar, Flen: 10}},
	}}
	if pkHandle {
		t.PKIsHandle, t.HandleOffset = true, 0
	}
	t.Init()
	return &source{db: &catalog.DBInfo{ID: 1, Name: "db"}, tbl: t, alias: "t", cols: t.Schema()}
}

func TestRangeOfHandle(t *testing.T) {
	const lo, hi = math.MinInt64, math.MaxInt64
	cases := []struct {
		where    string
		pkHandle bool
		lo, hi   int64
	}{
		{"id = 5", true, 5, 5},
		{"5 = id", true, 5, 5},
		{"id = -3", true, -3, -3},
		{"id = '7'", true, 7, 7},
		{"v = 'x' AND (id = 8)", true, 8, 8},
		{"id = 1 + 1", true, 2, 2},
		{"id = 1.5", true, hi, lo}, // no integer equals it: empty
		{"id = 5 AND id = 6", true, 6, 5},
		{"id BETWEEN 10 AND 20", true, 10, 20},
		{"id NOT BETWEEN 10 AND 20", true, lo, hi},
		{"id > 10 AND id <= 20", true, 11, 20},
		{"id >= 10.5 AND id < 20.5", true, 11, 20},
		{"10 < id AND 20 >= id", true, 11, 20},
		{"id > 9223372036854775807", true, hi, lo},
		{"id < -9223372036854775808", true, hi, lo},
		{"id = 5 OR id = 6", true, lo, hi},
		{"id = v", true, lo, hi},
		{"id = NULL", true, lo, hi},
		{"id = 5", false, lo, hi}, // id is not the handle
		{"_tidb_rowid = 4", false, 4, 4},
		{"_tidb_rowid BETWEEN 1 AND 3 AND id = 2", false, 1, 3},
	}
	for _, c := range cases {
		stmt, err := parser.New().ParseOneStmt("SELECT * FROM t WHERE "+c.where, "", "")
		require.NoError(t, err)
		r := rangeOfHandle(stmt.(*ast.SelectStmt).Where, testSource(c.pkHandle), nullEnv{})
		require.Equal(t, handleRange{lo: c.lo, hi: c.hi}, r, c.where)
	}
}

func TestHandleRangeKeys(t *testing.T) {
	start, end := handleRange{lo: 3, hi: 7}.keys(9)
	require.Equal(t, tablecodec.RowKey(9, 3), start)
	require.Equal(t, tablecodec.RowKey(9, 8), end)
	fs, fe := fullRange.keys(9)
	rs, re := tablecodec.RecordRange(9)
	require.Equal(t, rs, fs)
	require.Equal(t, re, fe)
}

func TestRowKeyForDistinct(t *testing.T) {
	// NULL, empty string and numerically equal values of different kinds.
	k := func(ds ...types.Datum) string { return string(rowKey(nil, ds)) }
	require.NotEqual(t, k(tablecodec.NullDatum), k(tablecodec.NewString("")))
	require.Equal(t, k(tablecodec.NewInt(1)), k(tablecodec.NewUint(1)))
	require.Equal(t, k(tablecodec.NewInt(2)), k(tablecodec.NewFloat(2)))
	require.NotEqual(t, k(tablecodec.NewString("a"), tablecodec.NewString("b")), k(tablecodec.NewString("ab"), tablecodec.NewString("")))
}
