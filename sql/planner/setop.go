package planner

import (
	"context"
	"math"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/types"
)

// Union returns its children's rows one child after the other (UNION ALL);
// a Distinct above it makes a UNION [DISTINCT]. Every child produces the
// union's columns.
type Union struct {
	BasePlan
}

func (p *Union) info() (string, string) { return "", "" }

// SubqueryScan reads a derived table (FROM (SELECT ...) AS a): the rows of
// its only child, the subquery's plan.
type SubqueryScan struct {
	BasePlan
	Src *Source
}

func (p *SubqueryScan) info() (string, string) { return "table:" + p.Src.Table.Name, "" }

// PlanQuery plans a query expression: a SELECT, a UNION, or a
// parenthesized list of them.
func (pl *Planner) PlanQuery(ctx context.Context, n ast.Node, env expr.Env, describe bool) (*SelectPlan, error) {
	switch x := n.(type) {
	case *ast.SelectStmt:
		return pl.PlanSelect(ctx, x, env, describe)
	case *ast.SetOprStmt:
		return pl.PlanSetOpr(ctx, x, env, describe)
	case *ast.SetOprSelectList:
		se, top := pl.withSubqueries(ctx, env)
		b := &builder{env: se}
		sp, err := pl.planSelectList(ctx, b, x, se, describe)
		if err == nil {
			sp, err = b.orderLimit(sp, x.OrderBy, x.Limit, describe)
		}
		if err == nil && top {
			sp.Subqueries = se.subs
		}
		return sp, err
	}
	return nil, errno.NotSupported("this query expression")
}

// PlanSetOpr plans s: UNION [ALL | DISTINCT] of its selects (left to right:
// a DISTINCT union removes the duplicates of everything to its left, as in
// MySQL), then its ORDER BY and LIMIT over the result columns. The columns
// are named after the first select's and typed by unifying every select's
// (mixed numbers give DOUBLE/DECIMAL, anything with strings VARCHAR).
func (pl *Planner) PlanSetOpr(ctx context.Context, s *ast.SetOprStmt, env expr.Env, describe bool) (*SelectPlan, error) {
	se, top := pl.withSubqueries(ctx, env)
	sp, err := pl.planSetOpr(ctx, s, se, describe)
	if err == nil && top {
		sp.Subqueries = se.subs
	}
	return sp, err
}

func (pl *Planner) planSetOpr(ctx context.Context, s *ast.SetOprStmt, env expr.Env, describe bool) (*SelectPlan, error) {
	if s.With != nil {
		var err error
		if env, err = pl.withCTEs(ctx, s.With, env); err != nil {
			return nil, err
		}
	}
	b := &builder{env: env}
	sp, err := pl.planSelectList(ctx, b, s.SelectList, env, describe)
	if err != nil {
		return nil, err
	}
	return b.orderLimit(sp, s.OrderBy, s.Limit, describe)
}

func setOperator(n ast.Node) *ast.SetOprType {
	switch x := n.(type) {
	case *ast.SelectStmt:
		return x.AfterSetOperator
	case *ast.SetOprSelectList:
		return x.AfterSetOperator
	case *ast.SetOprStmt:
		if x.SelectList != nil {
			return x.SelectList.AfterSetOperator
		}
	}
	return nil
}

func (pl *Planner) planSelectList(ctx context.Context, b *builder, l *ast.SetOprSelectList, env expr.Env, describe bool) (*SelectPlan, error) {
	if l.With != nil {
		var err error
		if env, err = pl.withCTEs(ctx, l.With, env); err != nil {
			return nil, err
		}
	}
	// INTERSECT binds tighter than UNION and EXCEPT (MySQL 8.0.31): runs
	// of INTERSECTs form terms, which combine left to right.
	var cur, term *SelectPlan
	termOp := ast.UnionAll
	for i, n := range l.Selects {
		op := setOperator(n)
		child, err := pl.PlanQuery(ctx, n, env, describe)
		if err != nil {
			return nil, err
		}
		b.renumber(child.Root)
		if i > 0 && op != nil && (*op == ast.Intersect || *op == ast.IntersectAll) {
			if term, err = b.setOp(term, child, *op); err != nil {
				return nil, err
			}
			continue
		}
		if term != nil && cur != nil {
			if cur, err = b.setOp(cur, term, termOp); err != nil {
				return nil, err
			}
		} else if term != nil {
			cur = term
		}
		term, termOp = child, ast.UnionAll
		if op != nil {
			termOp = *op
		}
	}
	if term == nil {
		return nil, errno.NotSupported("an empty UNION")
	}
	if cur == nil {
		return term, nil
	}
	return b.setOp(cur, term, termOp)
}

// SetOp is INTERSECT or EXCEPT of its two children, ALL (as multisets)
// or DISTINCT; NULLs are equal.
type SetOp struct {
	BasePlan
	Except, All bool
}

func (p *SetOp) info() (string, string) {
	if p.All {
		return "", "all"
	}
	return "", "distinct"
}

// setOp combines cur and child with op: a Union (with a Distinct above
// for UNION DISTINCT, which removes the duplicates of everything to its
// left), or a SetOp. The columns are named after cur's and typed by
// unifying both.
func (b *builder) setOp(cur, child *SelectPlan, op ast.SetOprType) (*SelectPlan, error) {
	if len(child.Columns) != len(cur.Columns) {
		return nil, errno.New(1222, "The used SELECT statements have a different number of columns")
	}
	cols := make([]ResultColumn, len(cur.Columns))
	for j, c := range cur.Columns {
		ft := expr.UnifyTypes([]types.FieldType{c.Type, child.Columns[j].Type})
		ft.Flag &^= mysql.PriKeyFlag | mysql.UniqueKeyFlag | mysql.MultipleKeyFlag | mysql.AutoIncrementFlag
		if !c.Type.NotNull() || !child.Columns[j].Type.NotNull() {
			ft.Flag &^= mysql.NotNullFlag
		}
		cols[j] = ResultColumn{Name: c.Name, Type: ft}
	}
	est := cur.Root.Base().EstRows + child.Root.Base().EstRows
	left, right := b.asText(cur.Root, cur.Columns, cols), b.asText(child.Root, child.Columns, cols)
	var root Plan
	switch op {
	case ast.Intersect, ast.IntersectAll:
		root = &SetOp{BasePlan: b.base("Intersect", math.Min(cur.Root.Base().EstRows, child.Root.Base().EstRows), taskRoot, left, right), All: op == ast.IntersectAll}
	case ast.Except, ast.ExceptAll:
		root = &SetOp{BasePlan: b.base("Except", cur.Root.Base().EstRows, taskRoot, left, right), Except: true, All: op == ast.ExceptAll}
	default:
		root = &Union{BasePlan: b.base("Union", est, taskRoot, left, right)}
		if op == ast.Union {
			names := make([]ast.ExprNode, len(cols))
			for j, c := range cols {
				names[j] = &ast.ColumnNameExpr{Name: &ast.ColumnName{Name: ast.NewCIStr(c.Name)}}
			}
			root = &Distinct{BasePlan: b.base("HashAgg", est*selectionFactor, taskRoot, root), exprNodes: exprNodes{Nodes: names}}
		}
	}
	src := cur.Src
	if src == nil {
		src = child.Src
	}
	return &SelectPlan{Root: root, Columns: cols, Src: src}, nil
}

// renumber gives the nodes of a subplan ids that follow b's (each select
// was planned by its own builder).
func (b *builder) renumber(p Plan) {
	for _, c := range p.Base().Children {
		b.renumber(c)
	}
	b.nextID++
	p.Base().ID = b.nextID
}

// orderLimit adds a query expression's ORDER BY (result columns by name or
// position) and LIMIT.
func (b *builder) orderLimit(sp *SelectPlan, order *ast.OrderByClause, limit *ast.Limit, describe bool) (*SelectPlan, error) {
	if order == nil && limit == nil {
		return sp, nil
	}
	schema := make([]expr.SchemaColumn, len(sp.Columns))
	for i, c := range sp.Columns {
		schema[i] = expr.SchemaColumn{Name: c.Name, Type: c.Type}
	}
	var keys []SortKey
	if order != nil {
		for _, item := range order.Items {
			var k expr.Expr
			if pos, ok := positionRef(item.Expr); ok {
				if pos < 1 || pos > len(schema) {
					return nil, errno.New(errno.ErrBadField, "Unknown column '%d' in 'order clause'", pos)
				}
				k = &expr.Column{Offset: pos - 1, Ft: schema[pos-1].Type, Name: schema[pos-1].Name}
			} else {
				var err error
				if k, err = expr.Compile(item.Expr, &expr.Ctx{Columns: schema, Env: b.env, Clause: "order clause"}); err != nil {
					return nil, err
				}
			}
			keys = append(keys, SortKey{E: k, Desc: item.Desc, Node: item.Expr})
		}
	}
	var offset, count uint64
	if limit != nil && !describe {
		var err error
		if count, err = limitValue(limit.Count, b.env); err != nil {
			return nil, err
		}
		if limit.Offset != nil {
			if offset, err = limitValue(limit.Offset, b.env); err != nil {
				return nil, err
			}
		}
	}
	p := sp.Root
	est := p.Base().EstRows
	switch {
	case len(keys) > 0 && limit != nil:
		p = &TopN{BasePlan: b.base("TopN", est, taskRoot, p), Keys: keys, Offset: offset, Count: count}
	case len(keys) > 0:
		p = &Sort{BasePlan: b.base("Sort", est, taskRoot, p), Keys: keys}
	default:
		p = &Limit{BasePlan: b.base("Limit", est, taskRoot, p), Offset: offset, Count: count}
	}
	out := *sp
	out.Root = p
	return &out, nil
}

// openDerived plans a derived table (FROM (query) AS alias) as a source:
// its columns are the query's result columns (ERROR 1060 on duplicate
// names), its rows the query's.
func (pl *Planner) openDerived(ctx context.Context, q ast.Node, alias ast.CIStr, env expr.Env) (*Source, error) {
	if alias.L == "" {
		return nil, errno.New(1248, "Every derived table must have its own alias")
	}
	sub, err := pl.PlanQuery(ctx, q, env, false)
	if err != nil {
		return nil, err
	}
	return derivedSource(sub, alias, nil)
}

// asText converts, over p, the columns that become strings in the union
// (a number unioned with a string is its text, so that the union's rows
// compare and sort as MySQL's do); p is returned when none does.
func (b *builder) asText(p Plan, have, want []ResultColumn) Plan {
	var exprs []expr.Expr
	for j := range want {
		ft := have[j].Type
		// A TIMESTAMP (UTC) in a column of another type is its wall clock
		// in the session time zone.
		local := ft.Tp == mysql.TypeTimestamp && want[j].Type.Tp != mysql.TypeTimestamp && expr.TimestampZone(b.env) != nil
		text := want[j].Type.Class() == types.ClassString && ft.Class() != types.ClassString && ft.Class() != types.ClassNull
		if !local && !text {
			continue
		}
		if exprs == nil {
			exprs = make([]expr.Expr, len(want))
			for k := range want {
				exprs[k] = &expr.Column{Offset: k, Ft: have[k].Type, Name: have[k].Name}
			}
		}
		if local {
			exprs[j] = expr.LocalTimestamp(exprs[j], b.env)
			ft = exprs[j].Type()
		}
		if text {
			exprs[j] = textExpr{e: exprs[j], ft: ft}
		}
	}
	if exprs == nil {
		return p
	}
	return &Projection{BasePlan: b.base("Projection", p.Base().EstRows, taskRoot, p), Exprs: exprs}
}

// textExpr is its argument as text (the text protocol's form).
type textExpr struct {
	e  expr.Expr
	ft types.FieldType
}

func (t textExpr) Eval(row []types.Datum) (types.Datum, error) {
	d, err := t.e.Eval(row)
	if err != nil || d.IsNull() {
		return d, err
	}
	return types.NewBytes(types.AppendText(nil, d, &t.ft)), nil
}

func (t textExpr) Type() types.FieldType { return types.VarcharType }
