package planner

import (
	"context"
	"errors"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/stratadb/strata/kv/tablecodec"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/types"
)

// Subquery is an uncorrelated subquery of a statement: planned with the
// statement, run at most once, when an expression first needs its rows
// (MySQL evaluates an uncorrelated subquery once).
type Subquery struct {
	Plan *SelectPlan
	// Run runs Plan in the statement's transaction and returns its rows;
	// the executor sets it before the statement runs.
	Run func() ([][]types.Datum, error)

	rows [][]types.Datum
	err  error
	done bool
}

// errSubqueryNotRun: an expression with a subquery was evaluated while
// planning (constant folding), before the statement runs.
var errSubqueryNotRun = errors.New("planner: subquery evaluated before the statement runs")

func (s *Subquery) result() ([][]types.Datum, error) {
	if !s.done {
		if s.Run == nil {
			return nil, errSubqueryNotRun
		}
		s.rows, s.err = s.Run()
		s.done = true
	}
	return s.rows, s.err
}

// subqueryEnv is the Env of a statement being planned: it compiles the
// subqueries of its expressions (expr.SubqueryCompiler) and collects them
// for the executor.
type subqueryEnv struct {
	expr.Env
	pl   *Planner
	ctx  context.Context
	subs []*Subquery
}

// withSubqueries wraps env for planning a statement; top is false when
// env already is a statement's (a derived table or a subquery of it).
func (pl *Planner) withSubqueries(ctx context.Context, env expr.Env) (*subqueryEnv, bool) {
	if se, ok := env.(*subqueryEnv); ok {
		return se, false
	}
	return &subqueryEnv{Env: env, pl: pl, ctx: ctx}, true
}

// CurrentUser forwards CURRENT_USER() to the session.
func (se *subqueryEnv) CurrentUser() string {
	if cu, ok := se.Env.(interface{ CurrentUser() string }); ok {
		return cu.CurrentUser()
	}
	return se.Env.User()
}

// baseEnv is the session's Env under a statement's (what system tables
// read their viewer from).
func baseEnv(env expr.Env) expr.Env {
	if se, ok := env.(*subqueryEnv); ok {
		return se.Env
	}
	return env
}

var boolType = types.FieldType{Tp: mysql.TypeLonglong, Flen: 1, Flag: mysql.BinaryFlag}

// CompileSubquery implements expr.SubqueryCompiler: scalar subqueries
// (1242 when one returns more than one row), EXISTS, IN and ANY / ALL
// comparisons, with MySQL's NULL semantics.
func (se *subqueryEnv) CompileSubquery(n ast.ExprNode, c *expr.Ctx) (expr.Expr, error) {
	switch x := n.(type) {
	case *ast.SubqueryExpr:
		sq, err := se.plan(x, c, true)
		if err != nil {
			return nil, err
		}
		ft := sq.Plan.Columns[0].Type
		ft.Flag &^= mysql.NotNullFlag | mysql.PriKeyFlag | mysql.UniqueKeyFlag | mysql.MultipleKeyFlag | mysql.AutoIncrementFlag
		return &scalarSubquery{sq: sq, ft: ft}, nil
	case *ast.ExistsSubqueryExpr:
		sub, ok := x.Sel.(*ast.SubqueryExpr)
		if !ok {
			return nil, errno.NotSupported("this EXISTS operand")
		}
		sq, err := se.plan(sub, c, false)
		if err != nil {
			return nil, err
		}
		return &existsSubquery{sq: sq, not: x.Not}, nil
	case *ast.PatternInExpr:
		sub, ok := x.Sel.(*ast.SubqueryExpr)
		if !ok {
			return nil, errno.NotSupported("this IN operand")
		}
		return se.compare(x.Expr, sub, c, opcode.EQ, false, x.Not)
	case *ast.CompareSubqueryExpr:
		sub, ok := x.R.(*ast.SubqueryExpr)
		if !ok {
			return nil, errno.NotSupported("this comparison operand")
		}
		return se.compare(x.L, sub, c, x.Op, x.All, false)
	}
	return nil, errno.NotSupported("this subquery")
}

func (se *subqueryEnv) compare(l ast.ExprNode, sub *ast.SubqueryExpr, c *expr.Ctx, op opcode.Op, all, not bool) (expr.Expr, error) {
	switch op {
	case opcode.EQ, opcode.NE, opcode.LT, opcode.LE, opcode.GT, opcode.GE:
	default:
		return nil, errno.NotSupported("operator " + op.String() + " with a subquery")
	}
	if _, row := unparen(l).(*ast.RowExpr); row {
		return nil, errno.NotSupported("row subqueries")
	}
	le, err := expr.Compile(l, c)
	if err != nil {
		return nil, err
	}
	sq, err := se.plan(sub, c, true)
	if err != nil {
		return nil, err
	}
	byBytes := le.Type().Class() == types.ClassString && sq.Plan.Columns[0].Type.Class() == types.ClassString
	return &compareSubquery{l: le, sq: sq, op: op, all: all, not: not, byBytes: byBytes}, nil
}

// plan plans the subquery of n; one: it must return one column (1241).
// A subquery that names a column of the outer query (correlated) is not
// supported yet.
func (se *subqueryEnv) plan(n *ast.SubqueryExpr, c *expr.Ctx, one bool) (*Subquery, error) {
	sp, err := se.pl.PlanQuery(se.ctx, n.Query, se, false)
	if err != nil {
		var e *errno.Error
		if errors.As(err, &e) && e.Code == errno.ErrBadField && namesOuterColumn(n.Query, c) {
			return nil, errno.NotSupported("correlated subqueries")
		}
		return nil, err
	}
	if one && len(sp.Columns) != 1 {
		return nil, errno.New(1241, "Operand should contain 1 column(s)")
	}
	sq := &Subquery{Plan: sp}
	se.subs = append(se.subs, sq)
	return sq, nil
}

// namesOuterColumn reports whether some column name in q resolves in the
// outer query's columns.
func namesOuterColumn(q ast.Node, c *expr.Ctx) bool {
	if c == nil || len(c.Columns) == 0 {
		return false
	}
	v := &outerRefFinder{cols: c.Columns}
	q.Accept(v)
	return v.found
}

type outerRefFinder struct {
	cols  []expr.SchemaColumn
	found bool
}

func (v *outerRefFinder) Enter(n ast.Node) (ast.Node, bool) {
	if cn, ok := n.(*ast.ColumnNameExpr); ok {
		if _, err := expr.Compile(cn, &expr.Ctx{Columns: v.cols}); err == nil {
			v.found = true
		}
		return n, true
	}
	return n, false
}

func (v *outerRefFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }

type scalarSubquery struct {
	sq *Subquery
	ft types.FieldType
}

func (s *scalarSubquery) Type() types.FieldType { return s.ft }

func (s *scalarSubquery) Eval([]types.Datum) (types.Datum, error) {
	rows, err := s.sq.result()
	switch {
	case err != nil:
		return tablecodec.NullDatum, err
	case len(rows) == 0:
		return tablecodec.NullDatum, nil
	case len(rows) > 1:
		return tablecodec.NullDatum, errno.New(1242, "Subquery returns more than 1 row")
	}
	return rows[0][0], nil
}

type existsSubquery struct {
	sq  *Subquery
	not bool
}

func (s *existsSubquery) Type() types.FieldType { return boolType }

func (s *existsSubquery) Eval([]types.Datum) (types.Datum, error) {
	rows, err := s.sq.result()
	if err != nil {
		return tablecodec.NullDatum, err
	}
	return boolValue((len(rows) > 0) != s.not), nil
}

// compareSubquery is `l op ANY (q)` (IN is `= ANY`) or `l op ALL (q)`
// (NOT IN is `NOT (= ANY)`): ANY is true when some comparison is, else
// NULL when some is NULL, else false (so an empty q gives false); ALL is
// false when some comparison is, else NULL when some is NULL, else true.
type compareSubquery struct {
	l        expr.Expr
	sq       *Subquery
	op       opcode.Op
	all, not bool
	byBytes  bool
}

func (s *compareSubquery) Type() types.FieldType { return boolType }

func (s *compareSubquery) Eval(row []types.Datum) (types.Datum, error) {
	rows, err := s.sq.result()
	if err != nil {
		return tablecodec.NullDatum, err
	}
	if len(rows) == 0 {
		return boolValue(s.all != s.not), nil
	}
	l, err := s.l.Eval(row)
	if err != nil {
		return tablecodec.NullDatum, err
	}
	sawNull := l.IsNull()
	if !sawNull {
		for _, r := range rows {
			v := r[0]
			if v.IsNull() {
				sawNull = true
				continue
			}
			t := compareTrue(s.op, expr.Compare(l, v, s.byBytes))
			if t != s.all { // ANY: a true one decides; ALL: a false one
				return boolValue(t != s.not), nil
			}
		}
	}
	if sawNull {
		return tablecodec.NullDatum, nil
	}
	return boolValue(s.all != s.not), nil
}

func compareTrue(op opcode.Op, c int) bool {
	switch op {
	case opcode.EQ:
		return c == 0
	case opcode.NE:
		return c != 0
	case opcode.LT:
		return c < 0
	case opcode.LE:
		return c <= 0
	case opcode.GT:
		return c > 0
	}
	return c >= 0
}

func boolValue(b bool) types.Datum {
	if b {
		return tablecodec.NewInt(1)
	}
	return tablecodec.NewInt(0)
}
