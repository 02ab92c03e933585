package ddl

import (
	"testing"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/model"
)

// TestBuildGenerated: the model keeps the restored expression, its
// storage and the columns it reads; the restored text parses back to
// itself (SHOW CREATE TABLE → mysqldump → CREATE TABLE keeps it).
func TestBuildGenerated(t *testing.T) {
	for _, tc := range []struct {
		def    string
		expr   string
		stored bool
		deps   []string
	}{
		{"c INT AS (a+b)", "(`a` + `b`)", false, []string{"a", "b"}},
		{"c INT GENERATED ALWAYS AS (A * 2 - b) STORED NOT NULL", "((`A` * 2) - `b`)", true, []string{"a", "b"}},
		{"c VARCHAR(9) AS (concat(a, 'x''y', b)) VIRTUAL", "concat(`a`, _utf8mb4'x''y', `b`)", false, []string{"a", "b"}},
		{"c INT AS (CASE WHEN a > 0 THEN b ELSE -b END)", "case when (`a` > 0) then `b` else -`b` end", false, []string{"a", "b"}},
		{"c INT AS (((a + (b))))", "(`a` + (`b`))", false, []string{"a", "b"}},
		{"c INT AS (-(a - b) * 2)", "(-(`a` - `b`) * 2)", false, []string{"a", "b"}},
		{"c INT AS (t.a + test.t.b)", "(`a` + `b`)", false, []string{"a", "b"}},
	} {
		stmt, err := parser.New().ParseOneStmt("CREATE TABLE t (a INT, b INT, "+tc.def+")", "", "")
		require.NoError(t, err, tc.def)
		ti, err := BuildTableInfo(stmt.(*ast.CreateTableStmt), "test", nil, nil)
		if err != nil {
			require.NoError(t, err, tc.def)
		}
		g := ti.Columns[2].Generated
		require.NotNil(t, g, tc.def)
		require.Equal(t, tc.expr, g.Expr, tc.def)
		require.Equal(t, tc.stored, g.Stored, tc.def)
		require.Equal(t, tc.deps, g.Deps, tc.def)

		n, err := model.ParseGeneratedExpr(g.Expr)
		require.NoError(t, err, tc.def)
		again, err := buildGenerated("c", "t", n, g.Stored)
		require.NoError(t, err, tc.def)
		require.Equal(t, g.Expr, again.Expr, "restored text is a fixed point: %s", tc.def)
	}
}

// TestGeneratedPrimaryKey: a STORED integer generated column can be the
// clustered primary key (its value is the row handle); a VIRTUAL one
// cannot (3103).
func TestGeneratedPrimaryKey(t *testing.T) {
	stmt, err := parser.New().ParseOneStmt("CREATE TABLE t (a INT, id INT AS (a * 2) STORED PRIMARY KEY)", "", "")
	require.NoError(t, err)
	ti, err := BuildTableInfo(stmt.(*ast.CreateTableStmt), "test", nil, nil)
	require.NoError(t, err)
	require.True(t, ti.PKIsHandle)
	require.Equal(t, 1, ti.HandleOffset)
}
