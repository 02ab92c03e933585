package ddl

import (
	"testing"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/collate"
	"github.com/stratadb/strata/sql/errno"
)

// TestConvertColumn: CONVERT TO CHARACTER SET changes text columns only,
// widens TEXT types for a wider character set, and refuses what MODIFY
// COLUMN refuses.
func TestConvertColumn(t *testing.T) {
	stmt, err := parser.New().ParseOneStmt("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(5), tt TINYTEXT, x TEXT, "+
		"m MEDIUMTEXT, b VARBINARY(5), j JSON, n INT, e ENUM('a'), g VARCHAR(5) COLLATE utf8mb4_general_ci, "+
		"s VARCHAR(5), UNIQUE KEY us (s), KEY px (x(4))) CHARACTER SET latin1", "", "")
	require.NoError(t, err)
	ti, err := BuildTableInfo(stmt.(*ast.CreateTableStmt), "test", nil, nil)
	require.NoError(t, err)
	general := collate.ByName("utf8mb4_general_ci")
	for _, c := range []struct {
		col  string
		to   *collate.Collation
		same bool // nil: keeps its type
		tp   byte
	}{
		{"id", general, true, 0},
		{"n", general, true, 0},
		{"b", general, true, 0},
		{"j", general, true, 0},
		{"g", general, true, 0}, // already in it
		{"v", general, false, mysql.TypeVarchar},
		{"tt", general, false, mysql.TypeBlob},
		{"x", general, false, mysql.TypeMediumBlob},
		{"m", general, false, mysql.TypeLongBlob},
		{"e", general, false, mysql.TypeEnum},
		{"s", general, false, mysql.TypeVarchar}, // indexed: rewritten
		{"x", collate.ByName("latin1_bin"), true, 0},
		{"g", collate.ByName("utf8mb4_bin"), false, mysql.TypeVarchar},
	} {
		oc := ti.Columns[ti.FindColumn(c.col)]
		nc, err := ConvertColumn(ti, oc, c.to)
		require.NoError(t, err, c.col)
		if c.same {
			require.Nil(t, nc, c.col)
			continue
		}
		require.NotNil(t, nc, c.col)
		require.Equal(t, c.tp, nc.Type.Tp, c.col)
		require.Equal(t, c.to.ID, nc.Type.Collation(), c.col)
		require.Equal(t, oc.Name, nc.Name)
	}

	// The collation of a PRIMARY KEY column: the rewrite TiDB refuses.
	stmt, err = parser.New().ParseOneStmt("CREATE TABLE p (s VARCHAR(5) PRIMARY KEY)", "", "")
	require.NoError(t, err)
	pi, err := BuildTableInfo(stmt.(*ast.CreateTableStmt), "test", nil, nil)
	require.NoError(t, err)
	_, err = ConvertColumn(pi, pi.Columns[0], general)
	require.Equal(t, uint16(errUnsupportedDDL), errno.FromError(err).Code)
}
