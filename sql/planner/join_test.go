package planner

import (
	"testing"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/expr"
)

// twoTables is the join of t AS a and t AS b (testSource's columns).
func twoTables(t *testing.T) (*JoinInfo, []expr.SchemaColumn) {
	a, b := testSource(true, 0), testSource(true, 0)
	a.Alias, a.Cols = "a", a.Table.BuildSchema("a")
	b.Alias, b.Cols = "b", b.Table.BuildSchema("b")
	cols := append(append([]expr.SchemaColumn(nil), a.Cols...), b.Cols...)
	return &JoinInfo{leaves: []*Source{a, b}, base: []int{0, len(a.Cols)}}, cols
}

func whereConds(t *testing.T, where string, cols []expr.SchemaColumn) []ast.ExprNode {
	stmt, err := parser.New().ParseOneStmt("SELECT * FROM a, b WHERE "+where, "", "")
	require.NoError(t, err)
	w := stmt.(*ast.SelectStmt).Where
	require.NoError(t, qualify(w, cols, nullEnv{}, "where clause"))
	return conjuncts(w, nil)
}

func TestNullRejecting(t *testing.T) {
	ji, cols := twoTables(t)
	const inner = 1 << 1 // b
	for _, tc := range []struct {
		where  string
		reject bool
	}{
		{"b.k = 1", true},
		{"b.k = a.k", true},
		{"a.k < b.k", true},
		{"b.k IS NOT NULL", true},
		{"b.k IS NULL", false},
		{"b.k <=> a.k", false},
		{"a.k = 1", false},
		{"coalesce(b.k, a.k) > 0", false},
		{"coalesce(b.k, 1) > 0", false},
		{"b.c = 'x' OR b.k = 2", true},
		{"b.c = 'x' OR a.k = 2", false},
	} {
		c := whereConds(t, tc.where, cols)[0]
		require.Equal(t, tc.reject, nullRejecting(c, inner, ji, cols, nullEnv{}), tc.where)
	}
}

func TestPropagateConstants(t *testing.T) {
	ji, cols := twoTables(t)
	src := &Source{Join: ji, Cols: cols}
	for _, tc := range []struct {
		where string
		added []string
	}{
		{"a.id = 1 AND b.k = a.id", []string{"eq(db.b.k, 1)"}},
		{"b.k = a.id AND 1 = a.id", []string{"eq(db.b.k, 1)"}},
		{"a.id = 1 AND b.k = a.id AND b.id = b.k", []string{"eq(db.b.k, 1)", "eq(db.b.id, 1)"}},
		{"a.id = 1 AND b.c = a.id", nil},             // different classes: no implication
		{"a.id = 1 AND a.id = 2 AND b.k = a.k", nil}, // no constant on a join column
		{"a.id > 1 AND b.k = a.id", nil},
	} {
		conds := whereConds(t, tc.where, cols)
		out := propagateConstants(conds, cols)
		var added []string
		for _, c := range out[len(conds):] {
			added = append(added, exprText(c, src))
		}
		require.Equal(t, tc.added, added, tc.where)
	}
}
