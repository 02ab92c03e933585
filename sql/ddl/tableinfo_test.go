package ddl

import (
	"testing"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/errno"
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
