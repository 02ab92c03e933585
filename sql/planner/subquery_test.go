package planner

import (
	"testing"

	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/types"
)

// TestCompareSubquery checks IN / NOT IN / ANY / ALL against MySQL's
// three-valued results, and that the subquery runs once however many
// rows evaluate it.
func TestCompareSubquery(t *testing.T) {
	null := types.NullDatum
	i := func(v int64) types.Datum { return types.NewInt(v) }
	set := func(vs ...types.Datum) [][]types.Datum {
		rows := make([][]types.Datum, len(vs))
		for j, v := range vs {
			rows[j] = []types.Datum{v}
		}
		return rows
	}
	for _, tc := range []struct {
		name     string
		op       opcode.Op
		all, not bool
		l        types.Datum
		rows     [][]types.Datum
		want     types.Datum // NULL or 0/1
	}{
		{"1 IN (1, NULL)", opcode.EQ, false, false, i(1), set(i(1), null), i(1)},
		{"2 IN (1, NULL)", opcode.EQ, false, false, i(2), set(i(1), null), null},
		{"2 IN (1)", opcode.EQ, false, false, i(2), set(i(1)), i(0)},
		{"NULL IN (1)", opcode.EQ, false, false, null, set(i(1)), null},
		{"NULL IN ()", opcode.EQ, false, false, null, set(), i(0)},
		{"NULL NOT IN ()", opcode.EQ, false, true, null, set(), i(1)},
		{"2 NOT IN (1, NULL)", opcode.EQ, false, true, i(2), set(i(1), null), null},
		{"1 NOT IN (1, NULL)", opcode.EQ, false, true, i(1), set(i(1), null), i(0)},
		{"2 NOT IN (1)", opcode.EQ, false, true, i(2), set(i(1)), i(1)},
		{"2 > ALL (1, NULL)", opcode.GT, true, false, i(2), set(i(1), null), null},
		{"0 > ALL (1, NULL)", opcode.GT, true, false, i(0), set(i(1), null), i(0)},
		{"NULL > ALL ()", opcode.GT, true, false, null, set(), i(1)},
		{"2 > ANY (3, 1)", opcode.GT, false, false, i(2), set(i(3), i(1)), i(1)},
		{"2 < ANY (1, NULL)", opcode.LT, false, false, i(2), set(i(1), null), null},
	} {
		runs := 0
		sq := &Subquery{Run: func() ([][]types.Datum, error) { runs++; return tc.rows, nil }}
		e := &compareSubquery{cols: []subqueryColumn{{l: &expr.Constant{Value: tc.l, Ft: types.Int64Type}}}, sq: sq, op: tc.op, all: tc.all, not: tc.not}
		for range 3 {
			got, err := e.Eval(nil)
			require.NoError(t, err, tc.name)
			if tc.want.IsNull() {
				require.True(t, got.IsNull(), "%s: got %v", tc.name, got)
			} else {
				require.False(t, got.IsNull(), tc.name)
				require.Equal(t, tc.want.Int64(), got.Int64(), tc.name)
			}
		}
		require.Equal(t, 1, runs, tc.name)
	}
}

// TestCorrelatedSubqueryRuns checks that a correlated subquery re-runs
// once per distinct outer value (Apply with a cache), and that its hash
// form runs the decorrelated query once and the correlated plan only for
// an aggregate's missing group.
func TestCorrelatedSubqueryRuns(t *testing.T) {
	i := func(v int64) types.Datum { return types.NewInt(v) }
	null := types.NullDatum
	outerRows := [][]types.Datum{{i(1)}, {i(2)}, {i(1)}, {null}, {i(2)}, {null}, {i(3)}}

	scope := &outerScope{keys: []expr.Expr{outerKey{off: 0}}}
	runs := 0
	sq := &Subquery{scope: scope}
	sq.Run = func() ([][]types.Datum, error) {
		runs++
		// What the plan sees: the outer value through an outerColumn.
		v, err := (&outerColumn{scope: scope, off: 0}).Eval(nil)
		return [][]types.Datum{{v}}, err
	}
	e := &scalarSubquery{sq: sq}
	for _, r := range outerRows {
		got, err := e.Eval(r)
		require.NoError(t, err)
		require.Equal(t, r[0], got)
	}
	require.Equal(t, 4, runs) // 1, 2, NULL, 3

	// Hash form of an aggregate (count per key 1 and 2): key 3 and NULL
	// have no group; the correlated plan runs for the first of them only
	// (an aggregate over no rows answers the same for every such value).
	hashRuns, applyRuns := 0, 0
	hsq := &Subquery{Run: func() ([][]types.Datum, error) {
		hashRuns++
		return [][]types.Datum{{i(10), i(1)}, {i(20), i(2)}, {i(99), null}}, nil
	}}
	sq = &Subquery{scope: &outerScope{keys: []expr.Expr{outerKey{off: 0}}},
		hash: &hashedSubquery{sq: hsq, width: 1, outer: []expr.Expr{&expr.Column{Offset: 0}}, agg: true}}
	sq.Run = func() ([][]types.Datum, error) { applyRuns++; return [][]types.Datum{{i(0)}}, nil }
	e = &scalarSubquery{sq: sq}
	want := []types.Datum{i(10), i(20), i(10), i(0), i(20), i(0), i(0)}
	for j, r := range outerRows {
		got, err := e.Eval(r)
		require.NoError(t, err)
		require.Equal(t, want[j], got)
	}
	require.Equal(t, 1, hashRuns)
	require.Equal(t, 1, applyRuns) // NULL; 3 reuses its answer
}
