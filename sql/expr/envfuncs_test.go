package expr_test

import (
	"testing"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/types"
)

// countsEnv is a session that remembers statement counts and takes
// LAST_INSERT_ID(expr).
type countsEnv struct {
	env
	last uint64
}

func (*countsEnv) RowCount() int64            { return -1 }
func (*countsEnv) FoundRows() uint64          { return 7 }
func (e *countsEnv) SetLastInsertID(v uint64) { e.last = v }

// wrapEnv is a statement env over a session (the planner's).
type wrapEnv struct{ expr.Env }

func (w wrapEnv) Unwrap() expr.Env { return w.Env }

func TestStatementFuncs(t *testing.T) {
	sess := &countsEnv{}
	for _, c := range []struct{ expr, want string }{
		{"ROW_COUNT()", "-1"},
		{"FOUND_ROWS()", "7"},
		{"LAST_INSERT_ID()", "42"},
		{"LAST_INSERT_ID(5 + 1)", "6"},
		{"LAST_INSERT_ID(NULL)", "NULL"},
	} {
		e, err := expr.Compile(parseExpr(t, c.expr), &expr.Ctx{Env: wrapEnv{sess}})
		require.NoError(t, err, c.expr)
		d, err := e.Eval(nil)
		require.NoError(t, err, c.expr)
		require.Equal(t, c.want, d.String(), c.expr)
	}
	require.Equal(t, uint64(6), sess.last)

	// Without a session that keeps them, the counts are not supported.
	_, err := expr.Compile(parseExpr(t, "ROW_COUNT()"), &expr.Ctx{Env: env{}})
	require.Equal(t, errno.ErrNotSupportedYet, errno.FromError(err).Code)
	_, err = expr.Compile(parseExpr(t, "FOUND_ROWS(1)"), &expr.Ctx{Env: env{}})
	require.Equal(t, errno.ErrWrongParamCount, errno.FromError(err).Code)
}

// TestAliasHook: an unqualified name the Alias hook knows compiles to its
// expression; others resolve as columns.
func TestAliasHook(t *testing.T) {
	ctx := &expr.Ctx{Columns: fnSchema, Env: env{}}
	ctx.Alias = func(n *ast.ColumnName) (expr.Expr, error) {
		if n.Name.L == "c" {
			return &expr.Constant{Value: types.NewInt(3), Ft: types.Int64Type}, nil
		}
		return nil, nil
	}
	e, err := expr.Compile(parseExpr(t, "c * 2 + i"), ctx)
	require.NoError(t, err)
	d, err := e.Eval(fnRow)
	require.NoError(t, err)
	require.Equal(t, "11", d.String())
	_, err = expr.Compile(parseExpr(t, "t.c"), ctx)
	require.Equal(t, errno.ErrBadField, errno.FromError(err).Code)
}
