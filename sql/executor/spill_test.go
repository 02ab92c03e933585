package executor

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/executor/spill"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/memory"
	"github.com/stratadb/strata/sql/planner"
	"github.com/stratadb/strata/sql/types"
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "spilltest")
	if err != nil {
		panic(err)
	}
	if err := spill.SetRoot(dir); err != nil {
		panic(err)
	}
	code := m.Run()
	spill.Cleanup()
	os.RemoveAll(dir)
	os.Exit(code)
}

// randRows returns n rows (a, b, c): a in [0, keys) or NULL (1 in 20), b
// an int, c a string of 0-40 bytes.
func randRows(rng *rand.Rand, n, keys int) [][]datum {
	rows := make([][]datum, n)
	for i := range rows {
		a := types.NewInt(int64(rng.Intn(keys)))
		if rng.Intn(20) == 0 {
			a = types.NullDatum
		}
		c := make([]byte, rng.Intn(41))
		for j := range c {
			c[j] = byte('a' + rng.Intn(26))
		}
		rows[i] = []datum{a, types.NewInt(rng.Int63n(1000) - 500), types.NewBytes(c)}
	}
	return rows
}

func source(rows [][]datum) Operator {
	return &rowsOp{w: 3, load: func(context.Context) ([][]datum, error) { return rows, nil }}
}

func col(i int) expr.Expr { return &expr.Column{Offset: i, Ft: types.Int64Type} }

func strCol(i int) expr.Expr { return &expr.Column{Offset: i, Ft: types.VarcharType} }

// run drains op under a statement with the quota (0: none) and returns
// its rows and whether it spilled.
func run(t *testing.T, op Operator, quota int64, spillOK bool) ([][]datum, bool, error) {
	t.Helper()
	st := memory.NewStatement(7)
	st.Start(quota, spillOK)
	defer st.End()
	setTracker(op, st)
	rows, err := drain(context.Background(), op, st)
	return rows, st.Spilled(), err
}

// setTracker gives op's trackers statement st (what runCtx.build does).
func setTracker(op Operator, st *memory.Statement) {
	switch o := op.(type) {
	case *sortOp:
		o.mem = memory.NewTracker(st)
	case *hashJoinOp:
		o.mem = memory.NewTracker(st)
	case *hashAggOp:
		o.mem = memory.NewTracker(st)
	}
}

func texts(rows [][]datum) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		var b strings.Builder
		for _, d := range r {
			fmt.Fprintf(&b, "%v|", d)
		}
		out[i] = b.String()
	}
	return out
}

func sortedTexts(rows [][]datum) []string {
	s := texts(rows)
	slices.Sort(s)
	return s
}

func isCode(err error, code uint16) bool {
	var e *errno.Error
	return errors.As(err, &e) && e.Code == code
}

func TestSortSpillMatchesInMemory(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	keys := []planner.SortKey{{E: col(0)}, {E: strCol(2), Desc: true}}
	for _, tc := range []struct {
		name          string
		rows          int
		topN          bool
		offset, count uint64
	}{
		{"sort few runs", 3000, false, 0, 0},
		{"sort merge passes", 8000, false, 0, 0}, // > maxMergeFanIn runs (16 KB each) at a 1-byte quota
		{"topn large", 8000, true, 100, 6000},
		{"topn small", 5000, true, 7, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := randRows(rng, tc.rows, 50) // many equal keys: stability matters
			mk := func() Operator {
				return &sortOp{child: source(data), keys: keys, topN: tc.topN, offset: tc.offset, count: tc.count}
			}
			want, spilled, err := run(t, mk(), 0, true)
			require.NoError(t, err)
			require.False(t, spilled)
			got, spilled, err := run(t, mk(), 1, true)
			require.NoError(t, err)
			if !tc.topN || tc.offset+tc.count > 1000 {
				require.True(t, spilled, "a 1-byte quota spills")
			}
			require.Equal(t, texts(want), texts(got), "same rows in the same (stable) order")
			_, _, err = run(t, mk(), 1, false)
			if !tc.topN || tc.offset+tc.count > 1000 {
				require.True(t, isCode(err, 8175), "spilling off: 8175, got %v", err)
			}
		})
	}
}

func TestHashJoinSpillMatchesInMemory(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for _, tc := range []struct {
		name   string
		typ    planner.JoinType
		keys   int
		build  int
		quota  int64
		ok     bool
		splits bool
	}{
		{"inner, partitions fit", planner.InnerJoin, 3000, 3000, 512 << 10, true, false},
		{"left outer, partitions fit", planner.LeftOuterJoin, 3000, 3000, 512 << 10, true, false},
		// 1.2 MB of build rows: 32 partitions of ~40 KB, over a 16 KB quota.
		{"inner, partitions split again", planner.InnerJoin, 20000, 8000, 16 << 10, true, true},
		{"left outer, partitions split again", planner.LeftOuterJoin, 20000, 8000, 16 << 10, true, true},
		{"one key: cannot split", planner.InnerJoin, 1, 3000, 16 << 10, false, true}, // 3000 rows of one key: 500 KB
	} {
		t.Run(tc.name, func(t *testing.T) {
			left := randRows(rng, 3000, tc.keys*2) // half the probe keys match nothing
			right := randRows(rng, tc.build, tc.keys)
			p := &planner.HashJoin{Type: tc.typ, BuildRight: true, LeftW: 3, RightW: 3,
				LeftKeys: []expr.Expr{col(0)}, RightKeys: []expr.Expr{col(0)},
				Other: []expr.Expr{&ltExpr{l: 1, r: 4}}}
			mk := func() Operator { return newHashJoinOp(p, source(right), source(left)) }
			if !tc.ok {
				left = left[:100] // fails before probing
				_, _, err := run(t, mk(), tc.quota, true)
				require.True(t, isCode(err, 8175), "got %v", err)
				return
			}
			want, spilled, err := run(t, mk(), 0, true)
			require.NoError(t, err)
			require.False(t, spilled)
			before := spill.Count("hash_join")
			got, spilled, err := run(t, mk(), tc.quota, true)
			require.NoError(t, err)
			require.True(t, spilled)
			require.Equal(t, tc.splits, spill.Count("hash_join")-before > 1, "partitions split again")
			require.Equal(t, sortedTexts(want), sortedTexts(got))
			_, _, err = run(t, mk(), tc.quota, false)
			require.True(t, isCode(err, 8175), "spilling off: 8175, got %v", err)
		})
	}
}

// ltExpr is row[l] < row[r] (a non-equality join condition).
type ltExpr struct{ l, r int }

func (e *ltExpr) Eval(row []datum) (datum, error) {
	if row[e.l].IsNull() || row[e.r].IsNull() {
		return types.NullDatum, nil
	}
	return boolDatum(row[e.l].Int64() < row[e.r].Int64()), nil
}
func (e *ltExpr) Type() types.FieldType { return types.Int64Type }

func boolDatum(b bool) datum {
	if b {
		return types.NewInt(1)
	}
	return types.NewInt(0)
}

func TestHashAggSpillMatchesInMemory(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	aggs := []planner.AggSpec{
		{Fn: ast.AggFuncCount},
		{Fn: ast.AggFuncSum, Arg: col(1), Ft: types.Int64Type},
		{Fn: ast.AggFuncMax, Arg: strCol(2), Ft: types.VarcharType},
		{Fn: ast.AggFuncCount, Arg: col(1), Distinct: true, Ft: types.Int64Type},
	}
	for _, groups := range []int{1, 300, 5000} {
		t.Run(fmt.Sprint(groups, " groups"), func(t *testing.T) {
			data := randRows(rng, 10000, groups)
			p := &planner.HashAgg{GroupBy: []expr.Expr{col(0)}, Aggs: aggs, Width: 3}
			mk := func() Operator { return &hashAggOp{child: source(data), p: p} }
			want, _, err := run(t, mk(), 0, true)
			require.NoError(t, err)
			got, spilled, err := run(t, mk(), 1, true)
			require.NoError(t, err)
			require.Equal(t, groups > 100, spilled)
			// The first row of a group is the same whether or not it spilled.
			require.Equal(t, sortedTexts(want), sortedTexts(got))
			if groups > 100 {
				_, _, err = run(t, mk(), 1, false)
				require.True(t, isCode(err, 8175), "spilling off: 8175, got %v", err)
			}
		})
	}
}
