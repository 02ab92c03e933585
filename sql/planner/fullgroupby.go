package planner

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"

	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/model"
)

// MySQL's errors of sql_mode ONLY_FULL_GROUP_BY.
const (
	errFieldNotInGroupBy  uint16 = 1055 // ER_WRONG_FIELD_WITH_GROUP
	errMixOfGroupFuncCols uint16 = 1140 // ER_MIX_OF_GROUP_FUNC_AND_FIELDS
	errOrderNotSelected   uint16 = 3065 // ER_FIELD_IN_ORDER_NOT_SELECT
)

// onlyFullGroupBy reports whether the session's sql_mode has
// ONLY_FULL_GROUP_BY (MySQL 8.0's default, and Strata's).
func onlyFullGroupBy(env expr.Env) bool {
	for env != nil {
		if m, ok := env.(interface{ SQLMode() mysql.SQLMode }); ok {
			return m.SQLMode().HasOnlyFullGroupBy()
		}
		w, ok := env.(expr.EnvWrapper) // the planner's statement envs wrap the session
		if !ok {
			break
		}
		env = w.Unwrap()
	}
	return true
}

// checkFullGroupBy enforces ONLY_FULL_GROUP_BY on a grouped SELECT as
// MySQL 5.7+ does: an expression of the select list, HAVING or ORDER BY
// outside an aggregate (or ANY_VALUE) must be a GROUP BY expression or
// use only columns functionally dependent on the GROUP BY columns, else
// ERROR 1055. Dependent are the GROUP BY columns, the columns equal to
// one of them or to a constant (WHERE and inner join ON equalities; an
// outer join's ON equalities one way, from the preserved side), generated
// columns whose inputs are dependent, and every column of a table whose
// primary key or NOT NULL unique key is dependent. With aggregates but no GROUP BY, a bare column is ERROR 1140.
// A window function is evaluated on the groups: its arguments and its
// PARTITION BY / ORDER BY are checked too (aggregates inside it aside).
// Column references in subqueries are not checked.
func (lg *logical) checkFullGroupBy(s *ast.SelectStmt, env expr.Env) error {
	if lg.src == nil || !onlyFullGroupBy(env) {
		return nil
	}
	if err := lg.checkDistinctOrder(s); err != nil {
		return err
	}
	if len(lg.aggs) == 0 && s.GroupBy == nil {
		return nil
	}
	start := map[int]bool{}
	for _, g := range lg.groupBy {
		if c, ok := g.(*expr.Column); ok && c.Offset < lg.width {
			start[c.Offset] = true
		}
	}
	dep := lg.dependentColumns(s, start)
	grouped := map[string]bool{}
	for _, g := range lg.groupTx {
		grouped[exprKey(g)] = true
		gc, ok := unparen(g).(*ast.ColumnNameExpr)
		if !ok || gc.Name.Table.L != "" {
			continue
		}
		for _, f := range s.Fields.Fields { // GROUP BY a select alias
			if f.Expr != nil && f.AsName.L == gc.Name.Name.L {
				grouped[exprKey(f.Expr)] = true
			}
		}
	}
	check := func(n ast.ExprNode, what string, pos int) error {
		if s.GroupBy != nil && grouped[exprKey(n)] {
			return nil
		}
		var refs columnRefs
		n.Accept(&refs)
		for _, cn := range refs.cols {
			off := lg.src.columnOffset(cn.Name)
			if off < 0 || dep[off] { // an alias, an outer column, or dependent
				continue
			}
			if s.GroupBy == nil {
				return errno.New(errMixOfGroupFuncCols, "In aggregated query without GROUP BY, expression #%d of %s contains nonaggregated column '%s'; this is incompatible with sql_mode=only_full_group_by", pos, what, lg.src.colName(off))
			}
			return errno.New(errFieldNotInGroupBy, "Expression #%d of %s is not in GROUP BY clause and contains nonaggregated column '%s' which is not functionally dependent on columns in GROUP BY clause; this is incompatible with sql_mode=only_full_group_by", pos, what, lg.src.colName(off))
		}
		return nil
	}
	for i, f := range lg.fieldTx {
		if err := check(f, "SELECT list", i+1); err != nil {
			return err
		}
	}
	if s.Having != nil {
		if err := check(s.Having.Expr, "HAVING clause", 1); err != nil {
			return err
		}
	}
	for i, k := range lg.order {
		if k.Node == nil {
			continue
		}
		if s.OrderBy != nil && i < len(s.OrderBy.Items) {
			if _, ok := positionRef(s.OrderBy.Items[i].Expr); ok {
				continue // the select list item, checked above
			}
		}
		if err := check(k.Node, "ORDER BY clause", i+1); err != nil {
			return err
		}
	}
	return nil
}

// checkDistinctOrder is ONLY_FULL_GROUP_BY's rule for SELECT DISTINCT
// ... ORDER BY, as MySQL 5.7.5+: an ORDER BY expression that is not a
// select list item (by position, alias or the same expression) may use
// only columns of the select list or functionally dependent on them (as
// for GROUP BY), else ERROR 3065; aggregates in it are left alone.
func (lg *logical) checkDistinctOrder(s *ast.SelectStmt) error {
	if !s.Distinct || s.OrderBy == nil {
		return nil
	}
	start, selected := map[int]bool{}, map[string]bool{}
	for _, f := range lg.fieldTx {
		selected[exprKey(f)] = true
		if off := lg.slotOf(f); off >= 0 {
			start[off] = true
		}
	}
	var dep map[int]bool
	for i, item := range s.OrderBy.Items {
		if _, ok := positionRef(item.Expr); ok || selected[exprKey(item.Expr)] {
			continue
		}
		if cn, ok := unparen(item.Expr).(*ast.ColumnNameExpr); ok && cn.Name.Table.L == "" && selectAlias(s, cn.Name.Name.L) {
			continue
		}
		var refs columnRefs
		item.Expr.Accept(&refs)
		for _, cn := range refs.cols {
			off := lg.src.columnOffset(cn.Name)
			if off < 0 {
				continue // an alias or an outer column
			}
			if dep == nil {
				dep = lg.dependentColumns(s, start)
			}
			if !dep[off] {
				return errno.New(errOrderNotSelected, "Expression #%d of ORDER BY clause is not in SELECT list, references column '%s' which is not in SELECT list; this is incompatible with DISTINCT", i+1, lg.src.colName(off))
			}
		}
	}
	return nil
}

// selectAlias reports whether a select list item is named name.
func selectAlias(s *ast.SelectStmt, name string) bool {
	for _, f := range s.Fields.Fields {
		if f.Expr != nil && f.AsName.L == name {
			return true
		}
	}
	return false
}

// dependentColumns is the set of source slots functionally dependent on
// the slots in start (the GROUP BY columns, or a DISTINCT select list's;
// see checkFullGroupBy). start becomes the set.
func (lg *logical) dependentColumns(s *ast.SelectStmt, start map[int]bool) map[int]bool {
	dep := start
	// Equalities that hold on every row of the result: WHERE conjuncts
	// and the ON conditions of inner joins.
	var conds []ast.ExprNode
	if s.Where != nil {
		conds = conjuncts(s.Where, conds)
	}
	// An outer join's ON equalities hold where a row matched: one between
	// a preserved-side column and an inner-side one makes the inner column
	// depend on the preserved one (a null-extended row has NULL there),
	// one between two inner-side columns holds both ways, as MySQL's.
	type outerOn struct {
		cond   ast.ExprNode
		lo, hi int // the inner side's slots
	}
	var outer []outerOn
	leaves, base := []*Source{lg.src}, []int{0}
	if ji := lg.src.Join; ji != nil {
		leaves, base = ji.Leaves()
		var walk func(n *joinNode)
		walk = func(n *joinNode) {
			if n == nil || n.leaf != nil {
				return
			}
			inner := n.right
			switch n.tp {
			case InnerJoin:
				for _, on := range n.on {
					conds = conjuncts(on, conds)
				}
			case RightOuterJoin:
				inner = n.left
				fallthrough
			default:
				for _, on := range n.on {
					for _, c := range conjuncts(on, nil) {
						outer = append(outer, outerOn{c, inner.lo, inner.hi})
					}
				}
			}
			walk(n.left)
			walk(n.right)
		}
		walk(ji.root)
	}
	// pair: a determines b, and b determines a unless oneWay.
	type pair struct {
		a, b   int
		oneWay bool
	}
	var eqs []pair
	colEq := func(c ast.ExprNode) (l, r int, lconst, rconst, ok bool) {
		b, isBin := c.(*ast.BinaryOperationExpr)
		if !isBin || b.Op != opcode.EQ {
			return -1, -1, false, false, false
		}
		_, lconst = unparen(b.L).(ast.ValueExpr)
		_, rconst = unparen(b.R).(ast.ValueExpr)
		return lg.slotOf(b.L), lg.slotOf(b.R), lconst, rconst, true
	}
	for _, c := range conds {
		l, r, lconst, rconst, ok := colEq(c)
		switch {
		case !ok:
		case l >= 0 && r >= 0:
			eqs = append(eqs, pair{a: l, b: r})
		case l >= 0 && rconst:
			dep[l] = true
		case r >= 0 && lconst:
			dep[r] = true
		}
	}
	for _, o := range outer {
		l, r, _, _, ok := colEq(o.cond)
		if !ok || l < 0 || r < 0 {
			continue
		}
		lIn, rIn := l >= o.lo && l < o.hi, r >= o.lo && r < o.hi
		switch {
		case lIn && rIn:
			eqs = append(eqs, pair{a: l, b: r})
		case rIn:
			eqs = append(eqs, pair{a: l, b: r, oneWay: true})
		case lIn:
			eqs = append(eqs, pair{a: r, b: l, oneWay: true})
		}
	}
	for grew := true; grew; {
		grew = false
		add := func(off int) {
			if !dep[off] {
				dep[off], grew = true, true
			}
		}
		for _, e := range eqs {
			if dep[e.a] {
				add(e.b)
			}
			if dep[e.b] && !e.oneWay {
				add(e.a)
			}
		}
		for i, leaf := range leaves {
			if leaf.Sub != nil || leaf.Mem != nil || leaf.Table == nil {
				continue
			}
			if keyDependent(leaf, base[i], dep) {
				for off := range leaf.Table.Columns {
					add(base[i] + off)
				}
				continue
			}
			// A generated column depends on the columns it reads.
			for off, c := range leaf.Table.Columns {
				if c.Generated != nil && !dep[base[i]+off] && generatedDependent(leaf.Table, c, base[i], dep) {
					add(base[i] + off)
				}
			}
		}
	}
	return dep
}

// generatedDependent reports whether every column generated column c
// of t reads is in dep.
func generatedDependent(t *model.TableInfo, c *model.ColumnInfo, base int, dep map[int]bool) bool {
	for _, name := range c.Generated.Deps {
		off := t.FindColumn(name)
		if off < 0 || !dep[base+off] {
			return false
		}
	}
	return true
}

// keyDependent reports whether a primary key or NOT NULL unique key of
// leaf (whose columns start at slot base) has every column in dep.
func keyDependent(leaf *Source, base int, dep map[int]bool) bool {
	t := leaf.Table
	if t.PKIsHandle && dep[base+t.HandleOffset] {
		return true
	}
	for _, ix := range t.Indices {
		if !ix.Unique || !ix.Public() {
			continue
		}
		all := true
		for _, c := range ix.Columns {
			if !dep[base+c.Offset] || (!ix.Primary && !t.Columns[c.Offset].Type.NotNull()) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// slotOf is the source slot a column reference names (-1: not a column
// of the source).
func (lg *logical) slotOf(n ast.ExprNode) int {
	cn, ok := unparen(n).(*ast.ColumnNameExpr)
	if !ok {
		return -1
	}
	return lg.src.columnOffset(cn.Name)
}

// columnRefs collects the column references of an expression outside
// aggregates, ANY_VALUE() and subqueries (a window function's arguments
// and window are walked).
type columnRefs struct{ cols []*ast.ColumnNameExpr }

func (v *columnRefs) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.AggregateFuncExpr, *ast.SubqueryExpr:
		return n, true
	case *ast.FuncCallExpr:
		if x.FnName.L == "any_value" {
			return n, true
		}
	case *ast.ColumnNameExpr:
		v.cols = append(v.cols, x)
	}
	return n, false
}

func (v *columnRefs) Leave(n ast.Node) (ast.Node, bool) { return n, true }
