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

func TestFactorCommon(t *testing.T) {
	_, cols := twoTables(t)
	for _, tc := range []struct {
		where string
		want  []string
	}{
		{"(a.k = b.k AND a.c = 'x') OR (a.k = b.k AND b.c = 'y')",
			[]string{"`a`.`k`=`b`.`k`", "(`a`.`c`=_UTF8MB4'x') OR (`b`.`c`=_UTF8MB4'y')"}},
		// Three disjuncts; a factor in only two stays.
		{"(a.k = b.k AND a.id < 3 AND a.c = 'x') OR (b.k = 1 AND a.k = b.k AND a.id < 3) OR (a.id < 3 AND a.k = b.k AND a.c = 'z')",
			[]string{"`a`.`k`=`b`.`k`", "`a`.`id`<3", "(`a`.`c`=_UTF8MB4'x') OR (`b`.`k`=1) OR (`a`.`c`=_UTF8MB4'z')"}},
		// A disjunct of common factors only: the OR is true.
		{"a.k = b.k OR (a.k = b.k AND a.c = 'x')", []string{"`a`.`k`=`b`.`k`"}},
		// Nothing common, no OR, or a non-deterministic factor: unchanged.
		{"a.k = 1 OR b.k = 2", []string{"`a`.`k`=1 OR `b`.`k`=2"}},
		{"a.k = b.k AND a.c = 'x'", []string{"`a`.`k`=`b`.`k`", "`a`.`c`=_UTF8MB4'x'"}},
		{"(rand() < 0.5 AND a.k = 1) OR (rand() < 0.5 AND b.k = 1)",
			[]string{"(RAND()<0.5 AND `a`.`k`=1) OR (RAND()<0.5 AND `b`.`k`=1)"}},
	} {
		var got []string
		for _, c := range factorCommon(whereConds(t, tc.where, cols)) {
			got = append(got, exprKey(c))
		}
		require.Equal(t, tc.want, got, tc.where)
	}
}
