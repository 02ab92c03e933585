package planner

import (
	"maps"
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"
)

// Constant filters into derived tables (TiDB's predicate pushdown through
// a Projection and an Aggregation on its group-by columns). A derived
// table of a join is planned before the join's conditions are placed, so
// a condition on it is otherwise a Selection over all of its rows. When
// the statement implies `t.c = k` for a derived table t, k a constant or
// a parameter, and c is a plain column of t's query that its GROUP BY
// groups on (or the query does not aggregate), `c = k` is added to the
// query's WHERE: the groups it keeps are the ones with c = k, unchanged.
// go-tpc's check 3.3.2.6 joins one warehouse's orders with the line
// count of every order of every warehouse; pushed, its GROUP BY reads a
// quarter of order_line.
//
// The statement implies `t.c = k` when its WHERE has the conjunct `t.c =
// k`, or `y = k` and `t.c = y`, or `y = k` with `t.c = y` in the ON clause
// of an inner join, or of an outer join whose inner side t is: the result
// rows all have t.c = k there, and an outer row whose ON fails is
// NULL-extended whatever t holds. Names are matched as written: t.c
// qualified by the derived table's alias, y as the WHERE spells it.

// derivedFilters returns, per derived table of the FROM clause j, the
// conjuncts to add to its query's WHERE (new nodes, on its own columns).
func derivedFilters(j *ast.Join, where ast.ExprNode) map[*ast.TableSource][]ast.ExprNode {
	derived := map[string]*ast.TableSource{}
	var ons []onConds
	collectDerived(j, derived, &ons)
	if len(derived) == 0 || where == nil {
		return nil
	}
	consts := map[string]ast.ExprNode{}
	type colEq struct{ a, b *ast.ColumnName }
	var eqs []colEq // usable equalities between two columns
	whereConds := conjuncts(where, nil)
	for _, c := range whereConds {
		x, ok := unparen(c).(*ast.BinaryOperationExpr)
		if !ok || x.Op != opcode.EQ {
			continue
		}
		l, lok := unparen(x.L).(*ast.ColumnNameExpr)
		r, rok := unparen(x.R).(*ast.ColumnNameExpr)
		switch {
		case lok && rok:
			eqs = append(eqs, colEq{l.Name, r.Name})
		case lok && isConstNode(x.R):
			consts[nameKey(l.Name)] = x.R
		case rok && isConstNode(x.L):
			consts[nameKey(r.Name)] = x.L
		}
	}
	for _, on := range ons {
		for _, c := range on.conds {
			x, ok := unparen(c).(*ast.BinaryOperationExpr)
			if !ok || x.Op != opcode.EQ {
				continue
			}
			l, lok := unparen(x.L).(*ast.ColumnNameExpr)
			r, rok := unparen(x.R).(*ast.ColumnNameExpr)
			if !lok || !rok {
				continue
			}
			for _, p := range [][2]*ast.ColumnName{{l.Name, r.Name}, {r.Name, l.Name}} {
				if on.inner == nil || on.inner[p[0].Table.L] {
					eqs = append(eqs, colEq{p[0], p[1]})
				}
			}
		}
	}
	out := map[*ast.TableSource][]ast.ExprNode{}
	done := map[string]bool{}
	add := func(n *ast.ColumnName, k ast.ExprNode) {
		ts := derived[n.Table.L]
		if ts == nil || n.Schema.L != "" || done[nameKey(n)] {
			return
		}
		if c := derivedColumn(ts.Source.(*ast.SelectStmt), n.Name.L); c != nil {
			done[nameKey(n)] = true
			ref := &ast.ColumnNameExpr{Name: &ast.ColumnName{Schema: c.Schema, Table: c.Table, Name: c.Name}}
			out[ts] = append(out[ts], &ast.BinaryOperationExpr{Op: opcode.EQ, L: ref, R: k})
		}
	}
	keys := slices.Sorted(maps.Keys(consts))
	for _, key := range keys {
		if t, c, ok := strings.Cut(key, "."); ok && !strings.Contains(c, ".") {
			add(&ast.ColumnName{Table: ast.NewCIStr(t), Name: ast.NewCIStr(c)}, consts[key])
		}
	}
	for _, e := range eqs {
		if k, ok := consts[nameKey(e.b)]; ok {
			add(e.a, k)
		}
		if k, ok := consts[nameKey(e.a)]; ok {
			add(e.b, k)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// onConds are the ON conjuncts of one join; inner is the set of aliases
// on the inner side of an outer join (nil: an inner join).
type onConds struct {
	conds []ast.ExprNode
	inner map[string]bool
}

func nameKey(n *ast.ColumnName) string {
	if n.Schema.L != "" {
		return n.Schema.L + "." + n.Table.L + "." + n.Name.L // never a derived table's
	}
	return n.Table.L + "." + n.Name.L
}

// collectDerived finds the derived tables (a SELECT with an alias) of a
// FROM clause, by alias, and every join's ON conjuncts.
func collectDerived(n ast.ResultSetNode, derived map[string]*ast.TableSource, ons *[]onConds) []string {
	switch x := n.(type) {
	case *ast.TableSource:
		if j, ok := x.Source.(*ast.Join); ok {
			return collectDerived(j, derived, ons)
		}
		if _, ok := x.Source.(*ast.SelectStmt); ok && x.AsName.L != "" {
			if _, dup := derived[x.AsName.L]; dup {
				derived[x.AsName.L] = nil // ambiguous: neither
			} else {
				derived[x.AsName.L] = x
			}
		}
		alias := x.AsName.L
		if tn, ok := x.Source.(*ast.TableName); ok && alias == "" {
			alias = tn.Name.L
		}
		return []string{alias}
	case *ast.Join:
		if x.Right == nil {
			return collectDerived(x.Left, derived, ons)
		}
		l := collectDerived(x.Left, derived, ons)
		r := collectDerived(x.Right, derived, ons)
		if x.On != nil && !x.NaturalJoin && len(x.Using) == 0 {
			oc := onConds{conds: conjuncts(x.On.Expr, nil)}
			switch x.Tp {
			case ast.LeftJoin:
				oc.inner = aliasSet(r)
			case ast.RightJoin:
				oc.inner = aliasSet(l)
			}
			*ons = append(*ons, oc)
		}
		return append(l, r...)
	}
	return nil
}

func aliasSet(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// derivedColumn returns the column of q's FROM that q's result column
// name is, when a condition on it may go into q's WHERE: a plain column
// (under its own name), q without LIMIT or window functions, and, when q
// aggregates, grouped on that column. nil otherwise.
func derivedColumn(q *ast.SelectStmt, name string) *ast.ColumnName {
	if q == nil || q.From == nil || q.Limit != nil || len(q.WindowSpecs) > 0 || q.Fields == nil || q.SelectIntoOpt != nil || hasWindow(q.Fields) {
		return nil
	}
	var col *ast.ColumnName
	for _, f := range q.Fields.Fields {
		if f.WildCard != nil {
			return nil
		}
		cn, ok := unparen(f.Expr).(*ast.ColumnNameExpr)
		out := f.AsName.L
		if out == "" && ok {
			out = cn.Name.Name.L
		}
		if out != name {
			continue
		}
		if col != nil || !ok || (f.AsName.L != "" && f.AsName.L != cn.Name.Name.L) {
			return nil // several, an expression, or renamed
		}
		col = cn.Name
	}
	if col == nil {
		return nil
	}
	if q.GroupBy == nil {
		if hasAggregate(q.Fields) {
			return nil
		}
		return col
	}
	for _, it := range q.GroupBy.Items {
		if g, ok := unparen(it.Expr).(*ast.ColumnNameExpr); ok && g.Name.Name.L == col.Name.L && g.Name.Table.L == col.Table.L {
			return col
		}
	}
	return nil
}
