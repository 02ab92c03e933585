package planner

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	driver "github.com/pingcap/tidb/pkg/parser/test_driver"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
)

// bound is one end of an interval of a column's values. NULL sorts before
// every value, as in index keys.
type bound struct {
	v    types.Datum
	inf  int8 // -1: -inf, +1: +inf, 0: v
	excl bool
}

// interval is [lo, hi] of one column, ends exclusive when marked.
type interval struct{ lo, hi bound }

var (
	negInf  = bound{inf: -1}
	posInf  = bound{inf: 1}
	fullIv  = interval{lo: negInf, hi: posInf}
	notNull = interval{lo: bound{v: types.NullDatum, excl: true}, hi: posInf}
)

// cmpVal orders values of one column kind; NULL first.
func cmpVal(a, b types.Datum) int {
	switch an, bn := a.IsNull(), b.IsNull(); {
	case an && bn:
		return 0
	case an:
		return -1
	case bn:
		return 1
	}
	switch a.Kind() {
	case types.KindInt64:
		return cmpOrdered(a.Int64(), b.Int64())
	case types.KindUint64:
		return cmpOrdered(a.Uint64(), b.Uint64())
	case types.KindFloat64:
		return cmpOrdered(a.Float64(), b.Float64())
	}
	return bytes.Compare(a.Bytes(), b.Bytes())
}

func cmpOrdered[T int64 | uint64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// cmpLo orders lower bounds: the one admitting more values first.
func cmpLo(a, b bound) int {
	if a.inf != 0 || b.inf != 0 {
		return cmpOrdered(int64(a.inf), int64(b.inf))
	}
	if c := cmpVal(a.v, b.v); c != 0 {
		return c
	}
	switch {
	case a.excl == b.excl:
		return 0
	case a.excl:
		return 1
	}
	return -1
}

// cmpHi orders upper bounds: the one admitting fewer values first.
func cmpHi(a, b bound) int {
	if a.inf != 0 || b.inf != 0 {
		return cmpOrdered(int64(a.inf), int64(b.inf))
	}
	if c := cmpVal(a.v, b.v); c != 0 {
		return c
	}
	switch {
	case a.excl == b.excl:
		return 0
	case a.excl:
		return -1
	}
	return 1
}

func (iv interval) empty() bool {
	if iv.lo.inf == 1 || iv.hi.inf == -1 {
		return true
	}
	if iv.lo.inf == -1 || iv.hi.inf == 1 {
		return false
	}
	c := cmpVal(iv.lo.v, iv.hi.v)
	return c > 0 || (c == 0 && (iv.lo.excl || iv.hi.excl))
}

func (iv interval) isPoint() bool {
	return iv.lo.inf == 0 && iv.hi.inf == 0 && !iv.lo.excl && !iv.hi.excl && cmpVal(iv.lo.v, iv.hi.v) == 0
}

// intersect returns the intervals in both a and b (each sorted, disjoint).
func intersect(a, b []interval) []interval {
	var out []interval
	for _, x := range a {
		for _, y := range b {
			iv := x
			if cmpLo(y.lo, iv.lo) > 0 {
				iv.lo = y.lo
			}
			if cmpHi(y.hi, iv.hi) < 0 {
				iv.hi = y.hi
			}
			if !iv.empty() {
				out = append(out, iv)
			}
		}
	}
	return union(out)
}

// union sorts ivs and merges the overlapping and adjacent ones.
func union(ivs []interval) []interval {
	ivs = slices.DeleteFunc(ivs, interval.empty)
	if len(ivs) < 2 {
		return ivs
	}
	slices.SortFunc(ivs, func(a, b interval) int { return cmpLo(a.lo, b.lo) })
	out := ivs[:1]
	for _, iv := range ivs[1:] {
		cur := &out[len(out)-1]
		if touches(cur.hi, iv.lo) {
			if cmpHi(iv.hi, cur.hi) > 0 {
				cur.hi = iv.hi
			}
			continue
		}
		out = append(out, iv)
	}
	return out
}

// touches reports whether an interval ending at hi and one starting at lo
// (lo >= the first's start) overlap or meet.
func touches(hi, lo bound) bool {
	if hi.inf == 1 || lo.inf == -1 {
		return true
	}
	if hi.inf == -1 || lo.inf == 1 {
		return false
	}
	c := cmpVal(lo.v, hi.v)
	return c < 0 || (c == 0 && !(lo.excl && hi.excl))
}

// colDomain is how a column's values are kept in keys, which decides the
// constants that can bound it exactly.
type colDomain int8

const (
	domainNone colDomain = iota // not sargable (decimal, float, TIME)
	domainInt                   // signed integers (KindInt64)
	domainUint                  // unsigned integers (KindUint64)
	// domainString: strings, and DATE / DATETIME / TIMESTAMP (their
	// canonical text in rows and keys orders as time does; a string
	// constant is first converted to the column's canonical text, as the
	// evaluator does: types.TemporalConstant). TIME is not: negative and
	// 100+ hour values do not order as text.
	domainString
)

func domainOf(ft types.FieldType) colDomain {
	switch ft.Class() {
	case types.ClassInt:
		if ft.Unsigned() {
			return domainUint
		}
		return domainInt
	case types.ClassString:
		return domainString
	case types.ClassTime:
		if ft.Tp != mysql.TypeDuration {
			return domainString
		}
	}
	return domainNone
}

// ranger derives intervals of one column from AST conditions.
type ranger struct {
	src *Source
	env expr.Env
	// exprs memoizes the canonical text and type of the expressions
	// compared with a generated column (text "" when they have none).
	exprs map[ast.ExprNode]genExpr
	// prefix: the prefix length of each prefix key part (by source
	// offset) of the index being detached; set by detachIndex.
	prefix map[int]int
}

// detachIndex is detach for the columns of index ix (nil: the handle,
// cols): a prefix key part bounds its column by the constants' prefixes,
// never exactly.
func (r *ranger) detachIndex(conds []ast.ExprNode, cols []int, ix *model.IndexInfo) detached {
	if ix != nil && ix.HasPrefix() {
		r.prefix = make(map[int]int, len(ix.Columns))
		for _, c := range ix.Columns {
			if c.Length > 0 {
				r.prefix[c.Offset] = c.Length
			}
		}
		defer func() { r.prefix = nil }()
	}
	return r.detach(conds, cols)
}

// genExpr is an expression of a condition as a generated column would
// keep it (model.GeneratedText) and its type.
type genExpr struct {
	text string
	ft   types.FieldType
}

// isColumn reports whether n is a reference to column off of the source.
func (r *ranger) isColumn(n ast.ExprNode, off int) bool {
	cn, ok := unparen(n).(*ast.ColumnNameExpr)
	if !ok {
		return false
	}
	return r.src.columnOffset(cn.Name) == off
}

// matches reports whether n stands for column off of the source: a
// reference to it, or (gen) an expression that is generated column off's
// own, as MySQL 8 lets an index on a generated column serve its
// expression. The expression must have the column's type class (and
// collation, for strings): then the index holds its values as the column
// converts them. Conditions found through it are never exact (the
// Selection keeps them), so a value the column stored adjusted outside
// strict mode is still filtered right.
func (r *ranger) matches(n ast.ExprNode, off int) (ok, gen bool) {
	if r.isColumn(n, off) {
		return true, false
	}
	t := r.src.Table
	if r.src.Join != nil || t == nil || off >= len(t.Columns) || !t.Columns[off].IsGenerated() {
		return false, false
	}
	switch unparen(n).(type) {
	case *ast.ColumnNameExpr, ast.ValueExpr:
		return false, false
	}
	g, seen := r.exprs[n]
	if !seen {
		g = r.genExprOf(n)
		if r.exprs == nil {
			r.exprs = map[ast.ExprNode]genExpr{}
		}
		r.exprs[n] = g
	}
	c := t.Columns[off]
	if g.text == "" || g.text != c.Generated.Expr || g.ft.Class() != c.Type.Class() ||
		(c.Type.Class() == types.ClassString && g.ft.Collation() != c.Type.Collation()) {
		return false, true
	}
	return true, true
}

// genExprOf is n's canonical text and type when every column n reads is
// the source's (text "" otherwise).
func (r *ranger) genExprOf(n ast.ExprNode) genExpr {
	own := true
	contains(n, func(x ast.Node) bool {
		if cn, ok := x.(*ast.ColumnNameExpr); ok && r.src.columnOffset(cn.Name) < 0 {
			own = false
		}
		return false
	})
	if !own {
		return genExpr{}
	}
	e, err := expr.Compile(n, &expr.Ctx{Columns: r.src.Cols, Env: r.env})
	if err != nil {
		return genExpr{}
	}
	text, err := model.GeneratedText(n)
	if err != nil {
		return genExpr{}
	}
	return genExpr{text: text, ft: e.Type()}
}

// constant evaluates n when it is foldable.
// A constant under COLLATE does not bound the column: the comparison
// then runs under that collation, not the column's (whose order the
// index has).
func (r *ranger) constant(n ast.ExprNode) (types.Datum, types.FieldType, bool) {
	if pm, ok := n.(*driver.ParamMarkerExpr); ok { // what Compile and Eval give, without either
		v, ok := r.env.Param(pm.Order)
		return v, expr.ParamType(v), ok
	}
	if !foldable(n) || hasCollate(n) {
		return types.Datum{}, types.FieldType{}, false
	}
	k, err := expr.Compile(n, &expr.Ctx{Env: r.env})
	if err != nil {
		return types.Datum{}, types.FieldType{}, false
	}
	v, err := k.Eval(nil)
	if err != nil {
		return types.Datum{}, types.FieldType{}, false
	}
	return v, k.Type(), true
}

// utc is v, of type ft, compared with a column of type col: a date
// string or temporal value compared with a TIMESTAMP column is read in
// the session zone and bounds the column's UTC values (as the evaluator
// converts it: sql/expr timezone.go).
func (r *ranger) utc(col types.FieldType, v types.Datum, ft types.FieldType) types.Datum {
	if col.Tp != mysql.TypeTimestamp || ft.Tp == mysql.TypeDuration || (ft.Class() != types.ClassString && ft.Class() != types.ClassTime) {
		return v
	}
	return expr.TimestampToUTC(v, expr.TimestampZone(r.env))
}

// foldable reports whether n has one value for the whole statement, which
// planning may compute once: it references no column and calls no
// function whose value differs per call (RAND() < 0.5 filters each row).
func foldable(n ast.ExprNode) bool { return !hasColumn(n) && !callsNonDeterministic(n) }

func hasColumn(n ast.ExprNode) bool {
	return contains(n, func(n ast.Node) bool {
		switch n.(type) {
		case *ast.ColumnNameExpr, *ast.AggregateFuncExpr, *ast.SubqueryExpr, *ast.DefaultExpr:
			return true
		}
		return false
	})
}

// hasCollate reports whether n has a COLLATE clause. A literal or a
// parameter (the common constant) is answered without a walk, which
// would allocate.
func hasCollate(n ast.ExprNode) bool {
	switch unparen(n).(type) {
	case ast.ValueExpr, ast.ParamMarkerExpr:
		return false
	}
	return contains(n, func(n ast.Node) bool {
		_, ok := n.(*ast.SetCollationExpr)
		return ok
	})
}

// contains reports whether n or a node under it matches.
func contains(n ast.ExprNode, match func(ast.Node) bool) bool {
	v := &nodeFinder{match: match}
	n.Accept(v)
	return v.found
}

// ContainsOutsideSubqueries reports whether n or a node under it
// matches, not looking into subqueries (their names are their own
// tables', their aggregates their own).
func ContainsOutsideSubqueries(n ast.Node, match func(ast.Node) bool) bool {
	v := &nodeFinder{match: match, skipSubqueries: true}
	n.Accept(v)
	return v.found
}

type nodeFinder struct {
	match          func(ast.Node) bool
	skipSubqueries bool
	found          bool
}

func (f *nodeFinder) Enter(n ast.Node) (ast.Node, bool) {
	if f.found {
		return n, true
	}
	if f.match(n) {
		f.found = true
		return n, true
	}
	if _, ok := n.(*ast.SubqueryExpr); ok && f.skipSubqueries {
		return n, true
	}
	return n, false
}

func (f *nodeFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// intervals returns the values of column off that can satisfy cond, and
// whether they are exactly the values that satisfy it; ok is false when
// cond does not constrain that column alone.
func (r *ranger) intervals(cond ast.ExprNode, off int) (ivs []interval, exact, ok bool) {
	col := r.src.Cols[off].Type
	if domainOf(col) == domainNone {
		return nil, false, false
	}
	plen := r.prefix[off]
	switch x := unparen(cond).(type) {
	case *ast.BinaryOperationExpr:
		switch x.Op {
		case opcode.LogicAnd, opcode.LogicOr:
			a, ea, oka := r.intervals(x.L, off)
			b, eb, okb := r.intervals(x.R, off)
			if !oka || !okb {
				if x.Op == opcode.LogicAnd && (oka || okb) { // one side narrows, the other filters
					if oka {
						return a, false, true
					}
					return b, false, true
				}
				return nil, false, false
			}
			if x.Op == opcode.LogicAnd {
				return intersect(a, b), ea && eb, true
			}
			return union(append(slices.Clip(a), b...)), ea && eb, true
		case opcode.EQ, opcode.LT, opcode.LE, opcode.GT, opcode.GE:
			op, other := x.Op, x.R
			var gen bool
			if ok, g := r.matches(x.L, off); ok {
				gen = g
			} else if ok, g := r.matches(x.R, off); ok {
				other, gen = x.L, g
				op = expr.FlipCompare(op)
			} else {
				return nil, false, false
			}
			v, ft, ok := r.constant(other)
			if !ok {
				return nil, false, false
			}
			ivs, exact, ok := cmpInterval(col, op, r.utc(col, v, ft), ft, plen)
			return ivs, exact && !gen, ok
		}
	case *ast.BetweenExpr:
		ok, gen := r.matches(x.Expr, off)
		if x.Not || !ok {
			return nil, false, false
		}
		lv, lft, ok1 := r.constant(x.Left)
		hv, hft, ok2 := r.constant(x.Right)
		if !ok1 || !ok2 {
			return nil, false, false
		}
		a, ea, oka := cmpInterval(col, opcode.GE, r.utc(col, lv, lft), lft, plen)
		b, eb, okb := cmpInterval(col, opcode.LE, r.utc(col, hv, hft), hft, plen)
		if !oka || !okb {
			return nil, false, false
		}
		return intersect(a, b), ea && eb && !gen, true
	case *ast.PatternInExpr:
		ok, gen := r.matches(x.Expr, off)
		if x.Not || x.Sel != nil || !ok {
			return nil, false, false
		}
		exact = !gen
		for _, item := range x.List {
			v, ft, ok := r.constant(item)
			if !ok {
				return nil, false, false
			}
			iv, e, ok := cmpInterval(col, opcode.EQ, r.utc(col, v, ft), ft, plen)
			if !ok {
				return nil, false, false
			}
			exact = exact && e
			ivs = append(ivs, iv...)
		}
		return union(ivs), exact, true
	case *ast.IsNullExpr:
		ok, gen := r.matches(x.Expr, off)
		if !ok {
			return nil, false, false
		}
		if x.Not {
			return []interval{notNull}, !gen, true
		}
		null := bound{v: types.NullDatum}
		return []interval{{lo: null, hi: null}}, !gen, true
	}
	return nil, false, false
}

const two63 = 9223372036854775808.0 // 2^63, exactly representable

// cmpInterval returns the values of a column of type col satisfying
// `col op v` (v of type ft). A comparison with NULL matches nothing. For
// a prefix key part of plen characters the interval is over prefixes:
// v's prefix, with the bound closed (`v < 'abd'` holds for a value whose
// prefix is 'abd'), and never exact.
func cmpInterval(col types.FieldType, op opcode.Op, v types.Datum, ft types.FieldType, plen int) ([]interval, bool, bool) {
	if v.IsNull() {
		return nil, true, true
	}
	switch domainOf(col) {
	case domainString:
		c := ft.Class()
		if v.Kind() != types.KindBytes || (c != types.ClassString && c != types.ClassTime && c != types.ClassNull) {
			return nil, false, false // compared as numbers by the evaluator
		}
		if types.IsDateOrDatetime(col) {
			// As the evaluator compares (expr.TemporalCompare).
			if op2, canon, none, ok := expr.TemporalCompare(op, col, string(v.Bytes())); ok {
				if none {
					return nil, true, true
				}
				return []interval{opInterval(op2, types.NewString(canon))}, true, true
			}
		}
		// The index of a column of a non-binary collation holds sort
		// keys (table.IndexDatum): bound it by the constant's.
		if plen > 0 {
			switch op {
			case opcode.LT:
				op = opcode.LE
			case opcode.GT:
				op = opcode.GE
			}
			return []interval{opInterval(op, model.IndexColumnDatum(col, v, plen))}, false, true
		}
		return []interval{opInterval(op, model.IndexDatum(col, v))}, true, true
	case domainUint:
		switch v.Kind() {
		case types.KindUint64:
			return []interval{opInterval(op, v)}, true, true
		case types.KindInt64:
			if v.Int64() >= 0 {
				return []interval{opInterval(op, types.NewUint(uint64(v.Int64())))}, true, true
			}
			if op == opcode.GT || op == opcode.GE { // every value is above a negative one
				return []interval{notNull}, true, true
			}
			return nil, true, true
		}
		return nil, false, false
	case domainInt:
		switch v.Kind() {
		case types.KindInt64:
			return []interval{opInterval(op, v)}, true, true
		case types.KindUint64:
			if v.Uint64() <= math.MaxInt64 {
				return []interval{opInterval(op, types.NewInt(int64(v.Uint64())))}, true, true
			}
			if op == opcode.LT || op == opcode.LE {
				return []interval{notNull}, true, true
			}
			return nil, true, true
		}
		f, _ := types.ToFloat(v) // as the evaluator compares an integer with a non-integer
		if math.IsNaN(f) {
			return nil, false, false
		}
		return floatIntInterval(op, f), true, true
	}
	return nil, false, false
}

// opInterval is `col op v` for v of the column's kind.
func opInterval(op opcode.Op, v types.Datum) interval {
	b := bound{v: v}
	switch op {
	case opcode.LT, opcode.LE:
		return interval{lo: bound{v: types.NullDatum, excl: true}, hi: bound{v: v, excl: op == opcode.LT}}
	case opcode.GT, opcode.GE:
		return interval{lo: bound{v: v, excl: op == opcode.GT}, hi: posInf}
	}
	return interval{lo: b, hi: b}
}

// floatIntInterval is `col op f` for a signed integer column.
func floatIntInterval(op opcode.Op, f float64) []interval {
	none := []interval(nil)
	all := []interval{notNull}
	switch op {
	case opcode.EQ:
		if f != math.Trunc(f) || f < -two63 || f >= two63 {
			return none
		}
		return []interval{opInterval(op, types.NewInt(int64(f)))}
	case opcode.GT, opcode.GE:
		c := math.Ceil(f)
		switch {
		case c >= two63:
			return none
		case c < -two63:
			return all
		}
		return []interval{opInterval(ternary(c == f, op, opcode.GE), types.NewInt(int64(c)))}
	default: // LT, LE
		c := math.Floor(f)
		switch {
		case c < -two63:
			return none
		case c >= two63:
			return all
		}
		return []interval{opInterval(ternary(c == f, op, opcode.LE), types.NewInt(int64(c)))}
	}
}

func ternary[T any](c bool, a, b T) T {
	if c {
		return a
	}
	return b
}

// Range is an interval of index keys: Low and High are values of a prefix
// of the index columns (the remaining columns are unbounded).
type Range struct {
	Low, High         []types.Datum
	LowExcl, HighExcl bool
}

// IsPoint reports whether r holds the single value tuple Low (of n
// columns).
func (r Range) IsPoint(n int) bool {
	if len(r.Low) != n || len(r.High) != n || r.LowExcl || r.HighExcl {
		return false
	}
	for i := range r.Low {
		if cmpVal(r.Low[i], r.High[i]) != 0 {
			return false
		}
	}
	return true
}

// maxPointRanges bounds the cartesian product of IN lists over several
// index columns.
const maxPointRanges = 4096

// detached is the outcome of matching conditions against an index's
// columns.
type detached struct {
	ranges    []Range
	access    []bool // per condition: fully represented by the ranges
	eqCols    int    // leading columns with a single value in every range
	usedCols  int    // columns that bound the ranges
	rangeSels []float64
}

// detach builds the ranges of the columns cols (source offsets, in index
// order) from conds: column by column from the conjuncts (detachCNF), or,
// when that bounds fewer columns, as the union over the disjuncts of one
// condition that is an OR or a row-constructor IN, each disjunct detached
// together with the other conjuncts (TiDB's DNF ranges): `(a, b) IN ((1,
// 2), (3, 4))` is two points on an index (a, b), not the four of a IN (1,
// 3) x b IN (2, 4), and none at all column by column.
func (r *ranger) detach(conds []ast.ExprNode, cols []int) detached {
	d := r.detachCNF(conds, cols)
	if d.eqCols == len(cols) && len(d.ranges) <= 1 {
		return d
	}
	for i, c := range conds {
		items := dnfItems(c)
		if len(items) < 2 || len(items) > maxPointRanges {
			continue
		}
		if dd, ok := r.detachDNF(conds, i, items, cols); ok && dd.better(d) {
			d = dd
		}
	}
	return d
}

// better reports whether d bounds more index columns than o, or as many
// with fewer ranges.
func (d detached) better(o detached) bool {
	if d.eqCols != o.eqCols {
		return d.eqCols > o.eqCols
	}
	if d.usedCols != o.usedCols {
		return d.usedCols > o.usedCols
	}
	return len(d.ranges) < len(o.ranges)
}

// dnfItems returns the disjuncts of cond, each as its conjuncts, when cond
// is an OR or a row-constructor IN ((a, b) IN ((1, 2), ...) is a = 1 AND
// b = 2 OR ..., as sql/expr evaluates it); nil otherwise.
func dnfItems(cond ast.ExprNode) [][]ast.ExprNode {
	var items [][]ast.ExprNode
	var add func(n ast.ExprNode) bool
	add = func(n ast.ExprNode) bool {
		switch x := unparen(n).(type) {
		case *ast.BinaryOperationExpr:
			if x.Op == opcode.LogicOr {
				return add(x.L) && add(x.R)
			}
		case *ast.PatternInExpr:
			if row, ok := x.Expr.(*ast.RowExpr); ok {
				if x.Not || x.Sel != nil {
					return false
				}
				for _, it := range x.List {
					ir, ok := it.(*ast.RowExpr)
					if !ok || len(ir.Values) != len(row.Values) {
						return false
					}
					conj := make([]ast.ExprNode, len(row.Values))
					for i, v := range row.Values {
						conj[i] = &ast.BinaryOperationExpr{Op: opcode.EQ, L: v, R: ir.Values[i]}
					}
					items = append(items, conj)
				}
				return true
			}
		}
		items = append(items, splitAnd(n, nil))
		return len(items) <= maxPointRanges
	}
	x := unparen(cond)
	if b, ok := x.(*ast.BinaryOperationExpr); !ok || b.Op != opcode.LogicOr {
		if in, ok := x.(*ast.PatternInExpr); !ok || in.Sel != nil {
			return nil
		} else if _, row := in.Expr.(*ast.RowExpr); !row {
			return nil
		}
	}
	if !add(cond) {
		return nil
	}
	return items
}

// splitAnd appends the conjuncts of n to out.
func splitAnd(n ast.ExprNode, out []ast.ExprNode) []ast.ExprNode {
	if b, ok := unparen(n).(*ast.BinaryOperationExpr); ok && b.Op == opcode.LogicAnd {
		return splitAnd(b.R, splitAnd(b.L, out))
	}
	return append(out, n)
}

// detachDNF detaches conds with conds[at] replaced by each of its
// disjuncts in turn and returns the union of the ranges; ok is false when a
// disjunct bounds no column, the ranges are too many, or ranges of
// different disjuncts overlap without being equal (a row would be read
// twice).
func (r *ranger) detachDNF(conds []ast.ExprNode, at int, items [][]ast.ExprNode, cols []int) (detached, bool) {
	others := make([]ast.ExprNode, 0, len(conds)-1)
	others = append(others, conds[:at]...)
	others = append(others, conds[at+1:]...)
	d := detached{access: make([]bool, len(conds)), eqCols: len(cols), usedCols: len(cols)}
	for i := range conds {
		d.access[i] = true
	}
	for _, item := range items {
		sub := r.detachCNF(append(slices.Clip(others), item...), cols)
		if sub.usedCols == 0 {
			return detached{}, false
		}
		d.eqCols = min(d.eqCols, sub.eqCols)
		d.usedCols = min(d.usedCols, sub.usedCols)
		for j := range others {
			if !sub.access[j] {
				d.access[j+btoi(j >= at)] = false
			}
		}
		for _, a := range sub.access[len(others):] {
			if !a {
				d.access[at] = false
			}
		}
		d.ranges = append(d.ranges, sub.ranges...)
		if len(d.ranges) > maxPointRanges {
			return detached{}, false
		}
	}
	ranges, ok := disjointRanges(d.ranges)
	if !ok {
		return detached{}, false
	}
	d.ranges = ranges
	return d, true
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// disjointRanges sorts rs by their keys and removes duplicates; ok is
// false when two different ranges overlap.
func disjointRanges(rs []Range) ([]Range, bool) {
	type keyed struct {
		r          Range
		start, end []byte
	}
	ks := make([]keyed, len(rs))
	for i, rg := range rs {
		s, e := IndexKeyRange(0, 0, rg)
		ks[i] = keyed{rg, s, e}
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if c := bytes.Compare(a.start, b.start); c != 0 {
			return c
		}
		return bytes.Compare(a.end, b.end)
	})
	out := make([]Range, 0, len(ks))
	for i, k := range ks {
		if i > 0 {
			p := ks[i-1]
			if bytes.Equal(p.start, k.start) && bytes.Equal(p.end, k.end) {
				continue
			}
			if bytes.Compare(p.end, k.start) > 0 {
				return nil, false
			}
		}
		out = append(out, k.r)
	}
	return out, true
}

// detachCNF builds the ranges of the columns cols column by column: each
// column's intervals are the intersection of what every condition allows.
func (r *ranger) detachCNF(conds []ast.ExprNode, cols []int) detached {
	d := detached{ranges: []Range{{}}, access: make([]bool, len(conds))}
	for _, off := range cols {
		ivs := []interval{fullIv}
		found := false
		var used []int
		for i, c := range conds {
			civ, e, ok := r.intervals(c, off)
			if !ok {
				continue
			}
			found = true
			ivs = intersect(ivs, civ)
			if e {
				used = append(used, i)
			}
		}
		if !found {
			break
		}
		d.usedCols++
		for _, i := range used {
			d.access[i] = true
		}
		points := true
		for _, iv := range ivs {
			points = points && iv.isPoint()
		}
		if points && len(d.ranges)*len(ivs) <= maxPointRanges {
			next := make([]Range, 0, len(d.ranges)*len(ivs))
			for _, rg := range d.ranges {
				for _, iv := range ivs {
					low := append(slices.Clip(rg.Low), iv.lo.v)
					next = append(next, Range{Low: low, High: low})
				}
			}
			d.ranges = next
			d.eqCols++
			if len(ivs) == 0 {
				break
			}
			continue
		}
		next := make([]Range, 0, len(d.ranges)*len(ivs))
		for _, rg := range d.ranges {
			for _, iv := range ivs {
				n := Range{Low: slices.Clip(rg.Low), High: slices.Clip(rg.High)}
				if iv.lo.inf == 0 {
					n.Low, n.LowExcl = append(n.Low, iv.lo.v), iv.lo.excl
				}
				if iv.hi.inf == 0 {
					n.High, n.HighExcl = append(n.High, iv.hi.v), iv.hi.excl
				}
				next = append(next, n)
			}
		}
		d.ranges = next
		break
	}
	return d
}

// IndexKeyRange returns the [start, end) keys of r in index ix of table tid.
func IndexKeyRange(tid, iid int64, r Range) (start, end []byte) {
	start = tablecodec.AppendIndexKey(nil, tid, iid, r.Low, false, tablecodec.Handle{})
	if r.LowExcl {
		start = tablecodec.PrefixNext(start)
	}
	end = tablecodec.AppendIndexKey(nil, tid, iid, r.High, false, tablecodec.Handle{})
	if !r.HighExcl {
		end = tablecodec.PrefixNext(end)
	}
	return start, end
}

// PKKeyRange returns the [start, end) row keys of r, a range over the
// columns of t's clustered PRIMARY KEY: the keys of the rows whose common
// handles begin within r.
func PKKeyRange(t *model.TableInfo, r Range) (start, end []byte) {
	prefix := tablecodec.AppendRecordPrefix(nil, t.ID)
	start = t.CommonHandleKey(slices.Clip(prefix), r.Low)
	if r.LowExcl {
		start = tablecodec.PrefixNext(start)
	}
	end = t.CommonHandleKey(slices.Clip(prefix), r.High)
	if !r.HighExcl {
		end = tablecodec.PrefixNext(end)
	}
	return start, end
}

// HandleRange is an inclusive range of row handles.
type HandleRange struct{ Lo, Hi int64 }

// FullHandleRange holds every handle.
var FullHandleRange = HandleRange{Lo: math.MinInt64, Hi: math.MaxInt64}

// Keys returns the [start, end) row keys of r.
func (r HandleRange) Keys(tableID int64) (start, end []byte) {
	start, end = tablecodec.RecordRange(tableID)
	if r.Lo != math.MinInt64 {
		start = tablecodec.RowKey(tableID, r.Lo)
	}
	if r.Hi != math.MaxInt64 {
		end = tablecodec.RowKey(tableID, r.Hi+1)
	}
	return start, end
}

// handleRanges converts single-column ranges of a signed handle to handle
// ranges; ok is false when a range cannot be expressed (it never is for
// signed integers).
func handleRanges(rs []Range) []HandleRange {
	out := make([]HandleRange, 0, len(rs))
	for _, r := range rs {
		h := FullHandleRange
		if len(r.Low) == 1 && !r.Low[0].IsNull() {
			h.Lo = r.Low[0].Int64()
			if r.LowExcl {
				if h.Lo == math.MaxInt64 {
					continue
				}
				h.Lo++
			}
		}
		if len(r.High) == 1 {
			if r.High[0].IsNull() {
				continue // handles are never NULL
			}
			h.Hi = r.High[0].Int64()
			if r.HighExcl {
				if h.Hi == math.MinInt64 {
					continue
				}
				h.Hi--
			}
		}
		if h.Lo <= h.Hi {
			out = append(out, h)
		}
	}
	return out
}

// formatRange renders r as TiDB's EXPLAIN does: [1,1], (1,+inf], [-inf,5).
func formatRange(r Range) string {
	n := max(len(r.Low), len(r.High))
	var sb strings.Builder
	sb.WriteByte(ternary(r.LowExcl, byte('('), byte('[')))
	writeVals(&sb, r.Low, n, "-inf")
	sb.WriteByte(',')
	writeVals(&sb, r.High, n, "+inf")
	sb.WriteByte(ternary(r.HighExcl, byte(')'), byte(']')))
	return sb.String()
}

// writeVals writes n values: vals, then inf for the unbounded rest.
func writeVals(sb *strings.Builder, vals []types.Datum, n int, inf string) {
	for i := range max(n, 1) {
		if i > 0 {
			sb.WriteByte(' ')
		}
		if i < len(vals) {
			sb.WriteString(datumText(vals[i]))
		} else {
			sb.WriteString(inf)
		}
	}
}

func datumText(d types.Datum) string {
	if d.IsNull() {
		return "NULL"
	}
	if d.Kind() == types.KindBytes {
		return `"` + printable(d.Bytes()) + `"`
	}
	return d.String()
}

// printable is b with control bytes as \xNN (the sort keys bounding an
// index of a non-binary collation are mostly not text).
func printable(b []byte) string {
	clean := true
	for _, c := range b {
		if c < 0x20 || c == 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return string(b)
	}
	var sb strings.Builder
	for _, c := range b {
		if c < 0x20 || c == 0x7f {
			fmt.Fprintf(&sb, `\x%02x`, c)
		} else {
			sb.WriteByte(c)
		}
	}
	return sb.String()
}
