package planner

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/types"
)

// hashedSubquery is a correlated subquery decorrelated as TiDB turns an
// Apply into a join: when the subquery's outer references are all in
// WHERE conjuncts `inner = outer` (TiDB's decorrelation of a Selection
// with correlated equalities), the subquery without them, with the inner
// sides as extra columns (and as GROUP BY when the select list
// aggregates), runs once; its rows are hashed by those columns and each
// outer row looks up the rows whose keys equal its outer sides. That is a
// hash semi / anti / left-outer join in expression form, so it serves
// WHERE, the select list and HAVING alike, with the IN / ALL / ANY NULL
// rules applied to the matched rows. An aggregating subquery with no
// group for an outer value (COUNT is 0 there, not absent) falls back to
// running the correlated plan for that value, once: it has no HAVING and its
// select list names no outer column (decorrelate requires both) and its WHERE
// selects no row for such a value, so the answer, an aggregate over no
// rows, is the same for every value without a group (go-tpc's check
// 3.3.2.10 has 9,000 customers per warehouse without a delivered order).
type hashedSubquery struct {
	sq    *Subquery // the decorrelated query, uncorrelated
	width int       // the original subquery's columns
	outer []expr.Expr
	agg   bool
	// resid, when set, is the AND of the other correlated conjuncts
	// (`ol_delivery_d >= o_entry_d`: TiDB's semi join "other
	// conditions"), on the outer row followed by the inner columns it
	// reads, which the decorrelated query returns after its keys.
	resid     expr.Expr
	residFrom int // where those inner columns start in its rows
	outerW    int // the outer row's width the residual was compiled for
	buf       []types.Datum

	table map[string][][]types.Datum
	built bool
	key   []byte

	// empty is the agg subquery's answer for an outer value without a
	// group, once the correlated plan ran for one (emptyDone).
	empty     [][]types.Datum
	emptyDone bool
}

// lookup returns the subquery's rows for the outer row; ok is false when
// the correlated plan must run instead (an aggregate with no group).
func (h *hashedSubquery) lookup(row []types.Datum) ([][]types.Datum, bool, error) {
	if !h.built {
		rows, err := h.sq.result(nil)
		if err != nil {
			return nil, false, err
		}
		h.table = make(map[string][][]types.Datum)
		var key []byte
	rows:
		for _, r := range rows {
			key = key[:0]
			for _, v := range r[h.width : h.width+len(h.outer)] {
				if v.IsNull() {
					continue rows // `inner = outer` is never true
				}
				key = appendKey(key, v)
			}
			if h.resid == nil {
				r = r[:h.width]
			}
			h.table[string(key)] = append(h.table[string(key)], r)
		}
		h.built = true
	}
	key := h.key[:0]
	for _, o := range h.outer {
		v, err := o.Eval(row)
		if err != nil {
			return nil, false, err
		}
		if v.IsNull() {
			h.key = key
			return nil, !h.agg, nil
		}
		key = appendKey(key, v)
	}
	h.key = key
	rows, found := h.table[string(key)]
	if h.resid != nil && found {
		var kept [][]types.Datum
		for _, r := range rows {
			h.buf = append(append(h.buf[:0], row[:h.outerW]...), r[h.residFrom:]...)
			v, err := h.resid.Eval(h.buf)
			if err != nil {
				return nil, false, err
			}
			if t, null := expr.IsTrue(v); t && !null {
				kept = append(kept, r[:h.width])
			}
		}
		rows = kept
	}
	return rows, found || !h.agg, nil
}

// decorrelate returns the hash form of the correlated subquery q (planned
// as sp), or nil when q does not have that shape.
func (se *subqueryEnv) decorrelate(q ast.Node, sp *SelectPlan, scope *outerScope, c *expr.Ctx) *hashedSubquery {
	s, ok := q.(*ast.SelectStmt)
	if !ok || s.From == nil || s.Where == nil || s.GroupBy != nil || s.Having != nil || s.Limit != nil ||
		s.With != nil || len(s.WindowSpecs) > 0 || s.SelectIntoOpt != nil ||
		(s.LockInfo != nil && s.LockInfo.LockType != ast.SelectLockNone) {
		return nil
	}
	if refsOuter(s.Fields, scope) || (s.OrderBy != nil && refsOuter(s.OrderBy, scope)) {
		return nil
	}
	agg := hasAggregate(s.Fields)
	if agg && s.Distinct {
		return nil
	}
	var rest, innerK, outerK, resid []ast.ExprNode
	for _, cj := range conjuncts(s.Where, nil) {
		if !refsOuter(cj, scope) {
			rest = append(rest, cj)
			continue
		}
		b, ok := unparen(cj).(*ast.BinaryOperationExpr)
		if ok && b.Op == opcode.EQ {
			l, r := b.L, b.R
			if !onlyOuter(r, scope) {
				l, r = r, l
			}
			if onlyOuter(r, scope) && !refsOuter(l, scope) && hasColumn(l) {
				innerK, outerK = append(innerK, l), append(outerK, r)
				continue
			}
		}
		// Another correlated conjunct: checked on each matched row,
		// which an aggregate's groups cannot be.
		v := &outerNames{scope: scope}
		cj.Accept(v)
		if agg || v.other {
			return nil
		}
		resid = append(resid, cj)
	}
	if len(innerK) == 0 {
		return nil
	}
	// The inner columns the residual conjuncts read, returned after the
	// keys; a name both sides have would resolve differently there,
	// unless the inner one is qualified by a table the outer row does
	// not have (CH q21: l2.ol_delivery_d > l1.ol_delivery_d).
	var residCols []*ast.ColumnNameExpr
	for _, cj := range resid {
		v := &innerColumns{scope: scope}
		cj.Accept(v)
		residCols = append(residCols, v.cols...)
	}
	for _, rc := range residCols {
		for _, oc := range c.Columns {
			if strings.EqualFold(oc.Name, rc.Name.Name.O) &&
				(rc.Name.Table.O == "" || strings.EqualFold(oc.Table, rc.Name.Table.O)) {
				return nil
			}
		}
	}
	ns := *s
	ns.Where, ns.OrderBy = nil, nil
	for _, cj := range rest {
		if ns.Where == nil {
			ns.Where = cj
		} else {
			ns.Where = &ast.BinaryOperationExpr{Op: opcode.LogicAnd, L: ns.Where, R: cj}
		}
	}
	fields := append([]*ast.SelectField(nil), s.Fields.Fields...)
	for _, k := range innerK {
		fields = append(fields, &ast.SelectField{Expr: k})
	}
	for _, rc := range residCols {
		fields = append(fields, &ast.SelectField{Expr: rc})
	}
	ns.Fields = &ast.FieldList{Fields: fields}
	if agg {
		items := make([]*ast.ByItem, len(innerK))
		for i, k := range innerK {
			items[i] = &ast.ByItem{Expr: k, NullOrder: true}
		}
		ns.GroupBy = &ast.GroupByClause{Items: items}
	}
	// Planned in the enclosing env: what is left names no outer column.
	dp, err := se.pl.PlanQuery(se.ctx, &ns, se, false)
	if err != nil || len(dp.Columns) != len(sp.Columns)+len(innerK)+len(residCols) {
		return nil
	}
	h := &hashedSubquery{sq: &Subquery{Plan: dp}, width: len(sp.Columns), agg: agg}
	if len(resid) > 0 {
		h.residFrom, h.outerW = h.width+len(innerK), len(c.Columns)
		rc := *c
		rc.Columns = append([]expr.SchemaColumn(nil), c.Columns...)
		for i, col := range residCols {
			rc.Columns = append(rc.Columns, expr.SchemaColumn{Table: strings.ToLower(col.Name.Table.O),
				Name: col.Name.Name.O, Type: dp.Columns[h.residFrom+i].Type})
		}
		all := resid[0]
		for _, cj := range resid[1:] {
			all = &ast.BinaryOperationExpr{Op: opcode.LogicAnd, L: all, R: cj}
		}
		e, err := expr.Compile(all, &rc)
		if err != nil {
			return nil
		}
		h.resid = e
	}
	for i, k := range outerK {
		oe, err := expr.Compile(k, c)
		if err != nil {
			return nil
		}
		ic, oc := dp.Columns[h.width+i].Type.Class(), oe.Type().Class()
		if ic != oc || (ic != types.ClassInt && ic != types.ClassString) {
			return nil
		}
		h.outer = append(h.outer, oe)
	}
	se.add(h.sq)
	return h
}

// refsOuter reports whether n names a column the subquery of scope
// resolved outside it.
func refsOuter(n ast.Node, scope *outerScope) bool {
	v := &outerNames{scope: scope}
	n.Accept(v)
	return v.outer
}

// onlyOuter reports whether n is an expression of outer columns alone
// (at least one, no subquery or aggregate).
func onlyOuter(n ast.ExprNode, scope *outerScope) bool {
	v := &outerNames{scope: scope}
	n.Accept(v)
	return v.outer && !v.inner && !v.other
}

type outerNames struct {
	scope               *outerScope
	outer, inner, other bool
}

func (v *outerNames) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.ColumnNameExpr:
		if v.scope.refs[x.Name] {
			v.outer = true
		} else {
			v.inner = true
		}
		return n, true
	case *ast.SubqueryExpr, *ast.AggregateFuncExpr, *ast.WindowFuncExpr:
		v.other = true
	}
	return n, false
}

func (v *outerNames) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// innerColumns collects the column names a subquery resolves itself.
type innerColumns struct {
	scope *outerScope
	cols  []*ast.ColumnNameExpr
}

func (v *innerColumns) Enter(n ast.Node) (ast.Node, bool) {
	if x, ok := n.(*ast.ColumnNameExpr); ok {
		if !v.scope.refs[x.Name] {
			v.cols = append(v.cols, x)
		}
		return n, true
	}
	return n, false
}

func (v *innerColumns) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// hasAggregate reports whether the select list calls an aggregate (not
// inside a subquery of its own).
func hasAggregate(f *ast.FieldList) bool {
	return ContainsOutsideSubqueries(f, func(n ast.Node) bool { _, ok := n.(*ast.AggregateFuncExpr); return ok })
}
