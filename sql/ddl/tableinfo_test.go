package ddl

import (
	"testing"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/types"
)

func TestBuildTableInfo(t *testing.T) {
	cases := []struct {
		sql        string
		code       uint16 // 0: ok
		pkIsHandle bool
		autoInc    int
	}{
		{"CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))", 0, true, -1},
		{"CREATE TABLE t (id BIGINT UNSIGNED AUTO_INCREMENT, v TEXT, PRIMARY KEY (id))", 0, true, 0},
		{"CREATE TABLE t (a INT, b DOUBLE, c DECIMAL(10,2), d DATETIME, e DATE, f TIMESTAMP, g CHAR(3), h TINYINT, i SMALLINT, j MEDIUMINT, k FLOAT, l BLOB)", 0, false, -1},
		{"CREATE TABLE t (a INT NOT NULL DEFAULT 3, d DATETIME DEFAULT CURRENT_TIMESTAMP)", 0, false, -1},
		{"CREATE TABLE t (s VARCHAR(5) PRIMARY KEY)", 0, false, -1},
		{"CREATE TABLE t (a INT, b INT, PRIMARY KEY (a, b))", 0, false, -1},
		{"CREATE TABLE t (a INT AUTO_INCREMENT, b INT, PRIMARY KEY (a, b))", 0, false, 0},
		{"CREATE TABLE t (a INT, b INT AUTO_INCREMENT, PRIMARY KEY (a, b))", errno.ErrWrongAutoKey, false, -1},
		{"CREATE TABLE t (a INT NULL, b INT, PRIMARY KEY (a, b))", 1171, false, -1},
		{"CREATE TABLE t (a INT, b TEXT, UNIQUE (b))", 1170, false, -1},
		{"CREATE TABLE t (a INT, INDEX (z))", 1072, false, -1},
		{"CREATE TABLE t (a INT PRIMARY KEY, b INT PRIMARY KEY)", errno.ErrMultiplePriKey, false, -1},
		{"CREATE TABLE t (a INT, a INT)", errno.ErrDupFieldName, false, -1},
		{"CREATE TABLE t (a INT AUTO_INCREMENT)", errno.ErrWrongAutoKey, false, -1},
		{"CREATE TABLE t (a TINYINT DEFAULT 300)", errno.ErrInvalidDefault, false, -1},
		{"CREATE TABLE t (a INT NOT NULL DEFAULT NULL)", errno.ErrInvalidDefault, false, -1},
		{"CREATE TABLE t (a INT DEFAULT CURRENT_TIMESTAMP)", errno.ErrInvalidDefault, false, -1},
		{"CREATE TABLE t (j JSON)", 0, false, -1},
		{"CREATE TABLE t (j JSON DEFAULT '{}')", 1101, false, -1},
		{"CREATE TABLE t (j JSON, KEY (j))", 3152, false, -1},
		{"CREATE TABLE t (_tidb_rowid INT)", errno.ErrWrongFieldSpec, false, -1},
		// CLUSTERED / NONCLUSTERED, on the column and on the constraint.
		{"CREATE TABLE t (id INT PRIMARY KEY CLUSTERED)", 0, true, -1},
		{"CREATE TABLE t (id INT PRIMARY KEY NONCLUSTERED)", 0, false, -1},
		{"CREATE TABLE t (id INT KEY /*T![clustered_index] NONCLUSTERED */)", 0, false, -1},
		{"CREATE TABLE t (id BIGINT AUTO_INCREMENT, PRIMARY KEY (id) NONCLUSTERED)", 0, false, 0},
		{"CREATE TABLE t (id BIGINT, PRIMARY KEY (id) CLUSTERED)", 0, true, -1},
		{"CREATE TABLE t (s VARCHAR(5) PRIMARY KEY NONCLUSTERED)", 0, false, -1},
		// Not a single integer column: stored NONCLUSTERED (ClusteredWarning).
		{"CREATE TABLE t (s VARCHAR(5) PRIMARY KEY CLUSTERED)", 0, false, -1},
		{"CREATE TABLE t (a INT, b INT, PRIMARY KEY (a, b) CLUSTERED)", 0, false, -1},
	}
	for _, c := range cases {
		stmt, err := parser.New().ParseOneStmt(c.sql, "", "")
		require.NoError(t, err, c.sql)
		ti, err := BuildTableInfo(stmt.(*ast.CreateTableStmt), "test", nil, nil)
		if c.code != 0 {
			require.Error(t, err, c.sql)
			require.Equal(t, c.code, errno.FromError(err).Code, "%s: %v", c.sql, err)
			continue
		}
		require.NoError(t, err, c.sql)
		require.Equal(t, c.pkIsHandle, ti.PKIsHandle, c.sql)
		require.Equal(t, c.autoInc, ti.AutoIncOffset, c.sql)
		if ti.PKIsHandle {
			pk := ti.Columns[ti.HandleOffset]
			require.NotZero(t, pk.Type.Flag&mysql.PriKeyFlag)
			require.True(t, pk.Type.NotNull())
			require.Nil(t, ti.PrimaryIndex(), c.sql)
		} else if pk := ti.PrimaryIndex(); pk != nil { // NONCLUSTERED: a unique index named PRIMARY, listed first
			require.Same(t, pk, ti.Indices[0], c.sql)
			require.True(t, pk.Unique, c.sql)
			require.Equal(t, "PRIMARY", pk.Name, c.sql)
			for _, ic := range pk.Columns {
				col := ti.Columns[ic.Offset]
				require.NotZero(t, col.Type.Flag&mysql.PriKeyFlag, c.sql)
				require.True(t, col.Type.NotNull(), c.sql)
			}
		}
		for i, col := range ti.Columns {
			require.Equal(t, int64(i+1), col.ID)
		}
	}
}

// sysVarEnv is an expr.Env with one session variable.
type sysVarEnv struct {
	expr.Env
	name, value string
}

func (e sysVarEnv) SysVar(name string, global bool) (types.Datum, types.FieldType, error) {
	if name != e.name {
		return types.NullDatum, types.FieldType{}, errno.New(1193, "Unknown system variable '%s'", name)
	}
	return types.NewString(e.value), types.VarcharType, nil
}

// TestClustering: the keyword decides; without one,
// tidb_enable_clustered_index does (OFF: never clustered; ON: always;
// INT_ONLY: a single integer column).
func TestClustering(t *testing.T) {
	cases := []struct {
		tp   ast.PrimaryKeyType
		env  expr.Env
		want Clustered
	}{
		{ast.PrimaryKeyTypeClustered, sysVarEnv{name: ClusteredIndexVar, value: "OFF"}, ClusteredAlways},
		{ast.PrimaryKeyTypeNonClustered, sysVarEnv{name: ClusteredIndexVar, value: "ON"}, ClusteredNever},
		{ast.PrimaryKeyTypeDefault, nil, ClusteredIntOnly},
		{ast.PrimaryKeyTypeDefault, sysVarEnv{name: ClusteredIndexVar, value: "ON"}, ClusteredAlways},
		{ast.PrimaryKeyTypeDefault, sysVarEnv{name: ClusteredIndexVar, value: "INT_ONLY"}, ClusteredIntOnly},
		{ast.PrimaryKeyTypeDefault, sysVarEnv{name: ClusteredIndexVar, value: "OFF"}, ClusteredNever},
		{ast.PrimaryKeyTypeDefault, sysVarEnv{name: "other"}, ClusteredIntOnly},
	}
	for i, c := range cases {
		require.Equal(t, c.want, Clustering(c.tp, c.env), "case %d", i)
	}
	stmt, err := parser.New().ParseOneStmt("CREATE TABLE t (id INT PRIMARY KEY)", "", "")
	require.NoError(t, err)
	ti, err := BuildTableInfo(stmt.(*ast.CreateTableStmt), "test", nil, sysVarEnv{name: ClusteredIndexVar, value: "OFF"})
	require.NoError(t, err)
	require.False(t, ti.PKIsHandle)
	require.NotNil(t, ti.PrimaryIndex())

	// Under ON any other key is a common handle, unless a part is a
	// prefix; under INT_ONLY it is NONCLUSTERED.
	for _, c := range []struct {
		sql, mode string
		common    bool
	}{
		{"CREATE TABLE t (a INT, b VARCHAR(5), PRIMARY KEY (a, b))", "ON", true},
		{"CREATE TABLE t (a VARCHAR(5) PRIMARY KEY)", "ON", true},
		{"CREATE TABLE t (a VARCHAR(5), PRIMARY KEY (a(2)))", "ON", false},
		{"CREATE TABLE t (a VARCHAR(5) PRIMARY KEY)", "INT_ONLY", false},
		{"CREATE TABLE t (a INT PRIMARY KEY)", "ON", false}, // an int handle
	} {
		stmt, err := parser.New().ParseOneStmt(c.sql, "", "")
		require.NoError(t, err)
		ti, err := BuildTableInfo(stmt.(*ast.CreateTableStmt), "test", nil, sysVarEnv{name: ClusteredIndexVar, value: c.mode})
		require.NoError(t, err, c.sql)
		require.Equal(t, c.common, ti.CommonHandle, "%s under %s", c.sql, c.mode)
	}
}
