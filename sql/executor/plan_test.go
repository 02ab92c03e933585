package executor

import (
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

func TestPointHandle(t *testing.T) {
	cases := []struct {
		where    string
		pkHandle bool
		point    bool
		handle   int64
	}{
		{"id = 5", true, true, 5},
		{"5 = id", true, true, 5},
		{"id = -3", true, true, -3},
		{"id = '7'", true, true, 7},
		{"v = 'x' AND (id = 8)", true, true, 8},
		{"id = 1 + 1", true, true, 2},
		{"id = 1.5", true, false, 0},         // never equal to an integer handle: scan (finds nothing)
		{"id = 99999999999", true, false, 0}, // out of INT range
		{"id = 5 OR id = 6", true, false, 0},
		{"id > 5", true, false, 0},
		{"id = v", true, false, 0},
		{"id = NULL", true, false, 0},
		{"id = 5", false, false, 0}, // id is not the handle
		{"_tidb_rowid = 4", false, true, 4},
	}
	for _, c := range cases {
		stmt, err := parser.New().ParseOneStmt("SELECT * FROM t WHERE "+c.where, "", "")
		require.NoError(t, err)
		point, h := pointHandle(stmt.(*ast.SelectStmt).Where, testSource(c.pkHandle), nullEnv{})
		require.Equal(t, c.point, point, c.where)
		require.Equal(t, c.handle, h, c.where)
	}
}

func TestRowKeyForDistinct(t *testing.T) {
	// NULL, empty string and numerically equal values of different kinds.
	k := func(ds ...types.Datum) string { return string(rowKey(nil, ds)) }
	require.NotEqual(t, k(tablecodec.NullDatum), k(tablecodec.NewString("")))
	require.Equal(t, k(tablecodec.NewInt(1)), k(tablecodec.NewUint(1)))
	require.Equal(t, k(tablecodec.NewInt(2)), k(tablecodec.NewFloat(2)))
	require.NotEqual(t, k(tablecodec.NewString("a"), tablecodec.NewString("b")), k(tablecodec.NewString("ab"), tablecodec.NewString("")))
}
