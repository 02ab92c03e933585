package planner

import (
	"context"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/stratadb/strata/sql/collate"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/types"
)

// Subquery is a subquery of a statement, planned with it. An
// uncorrelated one runs at most once, when an expression first needs its
// rows (MySQL evaluates an uncorrelated subquery once). A correlated one
// (it names columns of an enclosing query) is either decorrelated (hash,
// below) or re-run per outer row, Apply style, with its results cached
// per distinct value of the outer columns it reads.
type Subquery struct {
	Plan *SelectPlan
	// Run runs Plan in the statement's transaction and returns its rows;
	// the executor sets it before the statement runs.
	Run func() ([][]types.Datum, error)

	rows [][]types.Datum
	err  error
	done bool

	// scope is the outer row a correlated Plan reads (nil: uncorrelated).
	scope *outerScope
	// hash, when set, answers most outer rows without running Plan.
	hash  *hashedSubquery
	cache map[string][][]types.Datum
	key   []byte
}

// applyCacheMax bounds the per-outer-value cache of a correlated
// subquery; past it the cache starts over.
const applyCacheMax = 1 << 14

// Correlated reports whether the subquery reads columns of an enclosing
// query.
func (s *Subquery) Correlated() bool { return s.scope != nil }

// errSubqueryNotRun: an expression with a subquery was evaluated while
// planning (constant folding), before the statement runs.
var errSubqueryNotRun = errors.New("planner: subquery evaluated before the statement runs")

// result returns the subquery's rows for the outer row row.
func (s *Subquery) result(row []types.Datum) ([][]types.Datum, error) {
	if s.scope == nil {
		if !s.done {
			if s.Run == nil {
				return nil, errSubqueryNotRun
			}
			s.rows, s.err = s.Run()
			s.done = true
		}
		return s.rows, s.err
	}
	if row == nil || s.Run == nil {
		return nil, errSubqueryNotRun
	}
	if s.hash != nil {
		rows, ok, err := s.hash.lookup(row)
		if err != nil || ok {
			return rows, err
		}
		if s.hash.emptyDone {
			return s.hash.empty, nil
		}
	}
	s.scope.row = row
	defer func() { s.scope.row = nil }()
	key := s.key[:0]
	for _, k := range s.scope.keys {
		v, err := k.Eval(row)
		if err != nil {
			return nil, err
		}
		key = appendKey(key, v)
	}
	s.key = key
	if rows, ok := s.cache[string(key)]; ok {
		return rows, nil
	}
	rows, err := s.Run()
	if err != nil {
		return nil, err
	}
	if s.hash != nil {
		// An aggregate over no rows: the same for every outer value.
		s.hash.empty, s.hash.emptyDone = rows, true
	}
	if s.cache == nil || len(s.cache) >= applyCacheMax {
		s.cache = make(map[string][][]types.Datum)
	}
	s.cache[string(key)] = rows
	return rows, nil
}

// appendKey encodes v for a cache or hash key: equal values (as `=` on
// integers and on bytewise strings compares them) give equal bytes.
func appendKey(b []byte, v types.Datum) []byte {
	switch {
	case v.IsNull():
		return append(b, 'n')
	case v.Kind() == types.KindInt64:
		b = append(b, 'i')
		return append(strconv.AppendInt(b, v.Int64(), 10), 0)
	case v.Kind() == types.KindUint64:
		b = append(b, 'i')
		return append(strconv.AppendUint(b, v.Uint64(), 10), 0)
	case v.Kind() == types.KindFloat64:
		b = append(b, 'f')
		return append(strconv.AppendFloat(b, v.Float64(), 'g', -1, 64), 0)
	}
	bs := v.Bytes()
	b = append(b, 's')
	b = binary.AppendUvarint(b, uint64(len(bs)))
	return append(b, bs...)
}

// outerScope is the enclosing query of a correlated subquery: the columns
// its names resolve in and, while the subquery runs, the outer row.
type outerScope struct {
	cols []expr.SchemaColumn
	up   expr.Env // the enclosing query's env (resolves names further out)
	row  []types.Datum
	// keys are the outer values the subquery reads (its cache key): the
	// enclosing row's columns, and columns of queries further out.
	keys []expr.Expr
	// refs are the names in the subquery that resolved outside it.
	refs map[*ast.ColumnName]bool
}

// outerColumn is a column of the enclosing query read by a correlated
// subquery's plan (TiDB's CorrelatedColumn).
type outerColumn struct {
	scope *outerScope
	off   int
	ft    types.FieldType
}

func (c *outerColumn) Type() types.FieldType { return c.ft }

func (c *outerColumn) Eval([]types.Datum) (types.Datum, error) {
	if c.scope.row == nil {
		return types.NullDatum, errSubqueryNotRun
	}
	return c.scope.row[c.off], nil
}

// outerKey reads the enclosing row's column off as a cache key part.
type outerKey struct{ off int }

func (k outerKey) Type() types.FieldType                       { return types.NullType }
func (k outerKey) Eval(row []types.Datum) (types.Datum, error) { return row[k.off], nil }

// subqueryEnv is the Env of a statement being planned: it compiles the
// subqueries of its expressions (expr.SubqueryCompiler) and collects them
// for the executor. Inside a subquery, scope resolves the names of the
// enclosing query (expr.OuterResolver).
type subqueryEnv struct {
	expr.Env
	pl    *Planner
	ctx   context.Context
	subs  []*Subquery
	root  *subqueryEnv // the statement's env, which collects subs
	scope *outerScope
	ctes  []*cteDef // the CTEs in scope, innermost last
	views int       // views being expanded around this query
}

// withSubqueries wraps env for planning a statement; top is false when
// env already is a statement's (a derived table or a subquery of it).
func (pl *Planner) withSubqueries(ctx context.Context, env expr.Env) (*subqueryEnv, bool) {
	if se, ok := env.(*subqueryEnv); ok {
		return se, false
	}
	se := &subqueryEnv{Env: env, pl: pl, ctx: ctx}
	se.root = se
	return se, true
}

// Unwrap implements expr.EnvWrapper.
func (se *subqueryEnv) Unwrap() expr.Env { return se.Env }

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

func (se *subqueryEnv) add(sq *Subquery) { se.root.subs = append(se.root.subs, sq) }

// ResolveOuter implements expr.OuterResolver.
func (se *subqueryEnv) ResolveOuter(n *ast.ColumnName) (expr.Expr, error) {
	s := se.scope
	if s == nil {
		return nil, nil
	}
	e, err := expr.Compile(&ast.ColumnNameExpr{Name: n}, &expr.Ctx{Columns: s.cols, Env: s.up})
	if err != nil {
		var me *errno.Error
		if errors.As(err, &me) && me.Code == errno.ErrBadField {
			return nil, nil
		}
		return nil, err
	}
	s.refs[n] = true
	if col, ok := e.(*expr.Column); ok {
		for _, k := range s.keys {
			if ok, isKey := k.(outerKey); isKey && ok.off == col.Offset {
				return &outerColumn{scope: s, off: col.Offset, ft: col.Ft}, nil
			}
		}
		s.keys = append(s.keys, outerKey{off: col.Offset})
		return &outerColumn{scope: s, off: col.Offset, ft: col.Ft}, nil
	}
	// A column of a query further out: part of the key as it is.
	for _, k := range s.keys {
		if oc, ok := k.(*outerColumn); ok && oc.scope == e.(*outerColumn).scope && oc.off == e.(*outerColumn).off {
			return e, nil
		}
	}
	s.keys = append(s.keys, e)
	return e, nil
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
	lefts := []ast.ExprNode{l}
	if r, row := unparen(l).(*ast.RowExpr); row {
		if op != opcode.EQ && op != opcode.NE {
			var sb strings.Builder
			op.Format(&sb)
			return nil, errno.NotSupported("operator " + sb.String() + " between a row and a subquery")
		}
		lefts = r.Values
	}
	sq, err := se.plan(sub, c, len(lefts) == 1)
	if err != nil {
		return nil, err
	}
	if len(sq.Plan.Columns) != len(lefts) {
		return nil, errno.New(1241, "Operand should contain %d column(s)", len(lefts))
	}
	cs := &compareSubquery{sq: sq, op: op, all: all, not: not}
	// Strings, dates and datetimes compare as text (their canonical text
	// orders as time), as the comparison operators compare them.
	textual := func(ft types.FieldType) bool { return ft.Class() == types.ClassString || types.IsDateOrDatetime(ft) }
	for i, ln := range lefts {
		le, err := expr.Compile(ln, c)
		if err != nil {
			return nil, err
		}
		// A TIMESTAMP (UTC) compared with another type: the other side's
		// values are read in the session time zone (sql/expr timezone.go).
		rt := sq.Plan.Columns[i].Type
		if (le.Type().Tp == mysql.TypeTimestamp) != (rt.Tp == mysql.TypeTimestamp) {
			if rt.Tp == mysql.TypeTimestamp {
				le = expr.WriteValue(le, rt, c.Env)
			} else {
				le = expr.LocalTimestamp(le, c.Env)
			}
		}
		col := subqueryColumn{l: le, byBytes: textual(le.Type()) && textual(rt)}
		if col.byBytes {
			col.coll = expr.PairCollation(le.Type(), rt)
		}
		cs.cols = append(cs.cols, col)
	}
	return cs, nil
}

// plan plans the subquery of n in the scope of c's columns; one: it must
// return one column (1241). A subquery that names columns of the outer
// query is correlated: decorrelated into a hash lookup when it can be
// (decorrelate), else re-run per outer value.
func (se *subqueryEnv) plan(n *ast.SubqueryExpr, c *expr.Ctx, one bool) (*Subquery, error) {
	scope := &outerScope{cols: c.Columns, up: c.Env, refs: map[*ast.ColumnName]bool{}}
	inner := &subqueryEnv{Env: se.Env, pl: se.pl, ctx: se.ctx, root: se.root, scope: scope, ctes: se.ctes}
	sp, err := se.pl.PlanQuery(se.ctx, n.Query, inner, false)
	if err != nil {
		return nil, err
	}
	if one && len(sp.Columns) != 1 {
		return nil, errno.New(1241, "Operand should contain 1 column(s)")
	}
	sq := &Subquery{Plan: sp}
	if len(scope.refs) > 0 {
		sq.scope = scope
		sq.hash = se.decorrelate(n.Query, sp, scope, c)
	}
	se.add(sq)
	return sq, nil
}

type scalarSubquery struct {
	sq *Subquery
	ft types.FieldType
}

func (s *scalarSubquery) Type() types.FieldType { return s.ft }

func (s *scalarSubquery) Eval(row []types.Datum) (types.Datum, error) {
	rows, err := s.sq.result(row)
	switch {
	case err != nil:
		return types.NullDatum, err
	case len(rows) == 0:
		return types.NullDatum, nil
	case len(rows) > 1:
		return types.NullDatum, errno.New(1242, "Subquery returns more than 1 row")
	}
	return rows[0][0], nil
}

type existsSubquery struct {
	sq  *Subquery
	not bool
}

func (s *existsSubquery) Type() types.FieldType { return boolType }

func (s *existsSubquery) Eval(row []types.Datum) (types.Datum, error) {
	rows, err := s.sq.result(row)
	if err != nil {
		return types.NullDatum, err
	}
	return boolValue((len(rows) > 0) != s.not), nil
}

// compareSubquery is `l op ANY (q)` (IN is `= ANY`) or `l op ALL (q)`
// (NOT IN is `NOT (= ANY)`): ANY is true when some comparison is, else
// NULL when some is NULL, else false (so an empty q gives false); ALL is
// false when some comparison is, else NULL when some is NULL, else true.
// compareSubquery is `l op ANY / ALL (subquery)` and [NOT] IN, of one
// value or of a row (`(a, b) IN (SELECT x, y ...)`: = and <> only).
type compareSubquery struct {
	cols     []subqueryColumn
	sq       *Subquery
	op       opcode.Op
	all, not bool
}

// subqueryColumn is one left operand and how it compares with the
// subquery's column.
type subqueryColumn struct {
	l       expr.Expr
	byBytes bool
	coll    *collate.Collation // strings compare under it (nil: bytewise)
}

func (s *compareSubquery) Type() types.FieldType { return boolType }

func (s *compareSubquery) Eval(row []types.Datum) (types.Datum, error) {
	rows, err := s.sq.result(row)
	if err != nil {
		return types.NullDatum, err
	}
	if len(rows) == 0 {
		return boolValue(s.all != s.not), nil
	}
	var buf [4]types.Datum
	ls := buf[:0]
	for _, c := range s.cols {
		l, err := c.l.Eval(row)
		if err != nil {
			return types.NullDatum, err
		}
		ls = append(ls, l)
	}
	sawNull := false
	for _, r := range rows {
		t, null := s.compareRow(ls, r)
		if null {
			sawNull = true
			continue
		}
		if t != s.all { // ANY: a true one decides; ALL: a false one
			return boolValue(t != s.not), nil
		}
	}
	if sawNull {
		return types.NullDatum, nil
	}
	return boolValue(s.all != s.not), nil
}

// compareRow compares the left values with a subquery row: one value by
// op; a row by equality, false as soon as a pair differs, NULL (null
// true) when none differs and a pair has a NULL, as MySQL's row
// comparison; <> is its negation.
func (s *compareSubquery) compareRow(ls, r []types.Datum) (t, null bool) {
	if len(ls) == 1 {
		if ls[0].IsNull() || r[0].IsNull() {
			return false, true
		}
		return compareTrue(s.op, expr.CompareWith(ls[0], r[0], s.cols[0].byBytes, s.cols[0].coll)), false
	}
	for i, l := range ls {
		if l.IsNull() || r[i].IsNull() {
			null = true
			continue
		}
		if expr.CompareWith(l, r[i], s.cols[i].byBytes, s.cols[i].coll) != 0 {
			return s.op == opcode.NE, false
		}
	}
	if null {
		return false, true
	}
	return s.op == opcode.EQ, false
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
		return types.NewInt(1)
	}
	return types.NewInt(0)
}
