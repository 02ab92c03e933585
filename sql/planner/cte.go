package planner

import (
	"context"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/types"
)

// Common table expressions (WITH), as MySQL 8 has them. A CTE is planned
// where a FROM clause names it, in the scope of its definition (the CTEs
// before it in its WITH, and those of enclosing queries): a non-recursive
// one is a derived table over its query, so each reference runs it. A
// recursive one (WITH RECURSIVE, its query a UNION whose later blocks name
// it) is a RecursiveCTE: the non-recursive blocks give the first rows,
// then the recursive blocks run again and again over the rows the
// previous round produced (a CTETable reads them) until a round produces
// none (UNION DISTINCT drops rows seen before); round
// cte_max_recursion_depth + 1 is ERROR 3636.

// cteDef is one CTE of a WITH clause.
type cteDef struct {
	name      string // lower case
	nameO     string
	query     ast.ResultSetNode
	cols      []ast.CIStr
	recursive bool
	env       *subqueryEnv // the scope it is planned in
	// working, while its recursive blocks are planned, is the table of
	// the previous round's rows they read.
	working *cteWorking
}

type cteWorking struct {
	storage *CTEStorage
	table   *model.TableInfo
}

// CTEStorage holds the rows of a recursive CTE's previous round while
// its recursive blocks run (set by the executor).
type CTEStorage struct {
	Rows [][]types.Datum
}

// RecursiveCTE produces a recursive CTE's rows: Children[0] is the seed
// (the non-recursive blocks), Children[1] the recursive blocks, run per
// round over Storage.
type RecursiveCTE struct {
	BasePlan
	Name     string
	Width    int
	Distinct bool
	MaxDepth uint64
	Storage  *CTEStorage
	// HasLimit: the CTE's LIMIT Count OFFSET Offset, which also ends the
	// rounds once enough rows exist.
	HasLimit      bool
	Offset, Count uint64
}

func (p *RecursiveCTE) info() (string, string) {
	s := "recursive, union all"
	if p.Distinct {
		s = "recursive, union distinct"
	}
	return "CTE:" + p.Name, s
}

// CTETable reads the previous round's rows of a recursive CTE.
type CTETable struct {
	BasePlan
	Name    string
	Width   int
	Storage *CTEStorage
}

func (p *CTETable) info() (string, string) { return "CTE:" + p.Name, "" }

// withCTEs returns env with the CTEs of w in scope.
func (pl *Planner) withCTEs(ctx context.Context, w *ast.WithClause, env expr.Env) (*subqueryEnv, error) {
	se, _ := pl.withSubqueries(ctx, env)
	child := *se
	child.ctes = append(se.ctes[:len(se.ctes):len(se.ctes)], make([]*cteDef, 0, len(w.CTEs))...)
	seen := map[string]bool{}
	for _, c := range w.CTEs {
		if seen[c.Name.L] {
			return nil, errno.New(1066, "Not unique table/alias: '%s'", c.Name.O)
		}
		seen[c.Name.L] = true
		d := &cteDef{name: c.Name.L, nameO: c.Name.O, query: c.Query.Query, cols: c.ColNameList, recursive: w.IsRecursive}
		scope := child
		scope.ctes = child.ctes[:len(child.ctes):len(child.ctes)]
		if d.recursive {
			scope.ctes = append(scope.ctes, d)
		}
		d.env = &scope
		child.ctes = append(child.ctes, d)
	}
	return &child, nil
}

// lookupCTE finds the CTE an unqualified table name means.
func lookupCTE(env expr.Env, tn *ast.TableName) *cteDef {
	se, ok := env.(*subqueryEnv)
	if !ok || tn.Schema.L != "" {
		return nil
	}
	for i := len(se.ctes) - 1; i >= 0; i-- {
		if se.ctes[i].name == tn.Name.L {
			return se.ctes[i]
		}
	}
	return nil
}

// openCTE opens a reference to d under alias.
func (pl *Planner) openCTE(ctx context.Context, d *cteDef, alias ast.CIStr) (*Source, error) {
	if alias.L == "" {
		alias = ast.NewCIStr(d.nameO)
	}
	if w := d.working; w != nil { // the recursive blocks' own reference
		sub := &SelectPlan{Root: &CTETable{BasePlan: BasePlan{Tp: "CTETable", EstRows: pseudoRowCount, Task: taskRoot}, Name: d.nameO, Width: len(w.table.Columns), Storage: w.storage}}
		for _, c := range w.table.Columns {
			sub.Columns = append(sub.Columns, ResultColumn{Name: c.Name, Type: c.Type})
		}
		return &Source{DB: &model.DBInfo{}, Table: w.table, Alias: alias.L, AliasO: alias.O, Cols: w.table.BuildSchema(alias.L), Sub: sub}, nil
	}
	if d.recursive {
		if sp, err := pl.planRecursive(ctx, d); sp != nil || err != nil {
			if err != nil {
				return nil, err
			}
			return derivedSource(sp, alias, d.cols)
		}
	}
	sp, err := pl.PlanQuery(ctx, d.query, d.env, false)
	if err != nil {
		return nil, err
	}
	return derivedSource(sp, alias, d.cols)
}

// derivedSource is the Source of a derived table or CTE over sp, its
// columns named by names when given (1353 when the counts differ) and
// else by sp's (1060 on duplicates).
func derivedSource(sub *SelectPlan, alias ast.CIStr, names []ast.CIStr) (*Source, error) {
	t, err := derivedTable(sub.Columns, alias, names)
	if err != nil {
		return nil, err
	}
	return &Source{DB: &model.DBInfo{}, Table: t, Alias: alias.L, AliasO: alias.O, Cols: t.Schema(), Sub: sub}, nil
}

func derivedTable(cols []ResultColumn, alias ast.CIStr, names []ast.CIStr) (*model.TableInfo, error) {
	if len(names) > 0 && len(names) != len(cols) {
		return nil, errno.New(1353, "In definition of view, derived table or common table expression, SELECT list and column names list have different column counts")
	}
	t := &model.TableInfo{Name: alias.O, HandleOffset: -1, AutoIncOffset: -1}
	seen := map[string]bool{}
	for i, c := range cols {
		name := c.Name
		if len(names) > 0 {
			name = names[i].O
		}
		if seen[strings.ToLower(name)] {
			return nil, errno.New(errno.ErrDupFieldName, "Duplicate column name '%s'", name)
		}
		seen[strings.ToLower(name)] = true
		ft := c.Type
		ft.Flag &^= mysql.PriKeyFlag | mysql.UniqueKeyFlag | mysql.MultipleKeyFlag | mysql.AutoIncrementFlag
		t.Columns = append(t.Columns, &model.ColumnInfo{ID: int64(i + 1), Name: name, Type: ft})
	}
	t.Init()
	return t, nil
}

// planRecursive plans d as a RecursiveCTE; nil, nil when its query does
// not name it (an ordinary CTE).
func (pl *Planner) planRecursive(ctx context.Context, d *cteDef) (*SelectPlan, error) {
	var blocks []ast.Node
	var limit *ast.Limit
	switch q := d.query.(type) {
	case *ast.SetOprStmt:
		if q.With != nil || q.SelectList == nil || q.SelectList.With != nil {
			if namesTable(q, d.name) {
				return nil, errno.NotSupported("WITH inside a recursive Common Table Expression")
			}
			return nil, nil
		}
		for _, s := range q.SelectList.Selects {
			blocks = append(blocks, s)
		}
		if namesTable(q, d.name) && q.OrderBy != nil {
			return nil, errno.NotSupported("ORDER BY over UNION in recursive Common Table Expression")
		}
		limit = q.Limit
	default:
		if namesTable(q, d.name) {
			return nil, errno.New(3573, "Recursive Common Table Expression '%s' should contain a UNION", d.nameO)
		}
		return nil, nil
	}
	nSeed := 0
	for nSeed < len(blocks) && !namesTable(blocks[nSeed], d.name) {
		nSeed++
	}
	if nSeed == len(blocks) {
		return nil, nil
	}
	if nSeed == 0 {
		return nil, errno.New(3574, "Recursive Common Table Expression '%s' should have one or more non-recursive query blocks followed by one or more recursive ones", d.nameO)
	}
	rec := blocks[nSeed:]
	distinct := false
	for i, b := range rec {
		if op := setOperator(b); op != nil && *op == ast.Union {
			distinct = true
		} else if op != nil && *op != ast.UnionAll {
			return nil, errno.NotSupported(strings.ToUpper(op.String()) + " in a recursive Common Table Expression")
		}
		s, ok := b.(*ast.SelectStmt)
		if !ok {
			return nil, errno.NotSupported("a parenthesized recursive query block")
		}
		if s.GroupBy != nil || hasAggregate(s.Fields) || len(s.WindowSpecs) > 0 || hasWindow(s.Fields) {
			return nil, errno.New(3575, "Recursive Common Table Expression '%s' can contain neither aggregation nor window functions in recursive query block", d.nameO)
		}
		if s.OrderBy != nil || s.Limit != nil || s.Distinct {
			return nil, errno.NotSupported("ORDER BY / LIMIT / SELECT DISTINCT in recursive query block of Common Table Expression")
		}
		if i == 0 {
			c := *s
			c.AfterSetOperator = nil
			rec[0] = &c
		}
		if namesTableIn(b, d.name, true) {
			return nil, errno.New(3577, "In recursive query block of Recursive Common Table Expression '%s', the recursive table must be referenced only once, and not in any subquery", d.nameO)
		}
	}
	seed, err := pl.PlanQuery(ctx, &ast.SetOprStmt{SelectList: &ast.SetOprSelectList{Selects: blocks[:nSeed]}}, d.env, false)
	if err != nil {
		return nil, err
	}
	t, err := derivedTable(seed.Columns, ast.NewCIStr(d.nameO), d.cols)
	if err != nil {
		return nil, err
	}
	storage := &CTEStorage{}
	d.working = &cteWorking{storage: storage, table: t}
	recPlan, err := pl.PlanQuery(ctx, &ast.SetOprStmt{SelectList: &ast.SetOprSelectList{Selects: rec}}, d.env, false)
	d.working = nil
	if err != nil {
		return nil, err
	}
	if len(recPlan.Columns) != len(seed.Columns) {
		return nil, errno.New(1222, "The used SELECT statements have a different number of columns")
	}
	depth := uint64(1000)
	if v, _, err := d.env.SysVar("cte_max_recursion_depth", false); err == nil && !v.IsNull() {
		if f, ok := types.ToFloat(v); ok {
			depth = uint64(max(f, 0)) // MySQL clamps a negative setting to 0
		}
	}
	cols := make([]ResultColumn, len(t.Columns))
	for i, c := range t.Columns {
		cols[i] = ResultColumn{Name: c.Name, Type: c.Type}
	}
	b := &builder{env: d.env}
	b.renumber(seed.Root)
	b.renumber(recPlan.Root)
	root := &RecursiveCTE{BasePlan: b.base("CTE", seed.Root.Base().EstRows*2, taskRoot, seed.Root, recPlan.Root),
		Name: d.nameO, Width: len(cols), Distinct: distinct, MaxDepth: depth, Storage: storage}
	if distinct {
		// The seed's own duplicates go too (UNION DISTINCT over every
		// block); the executor drops rows seen in earlier rounds.
		root.Children[0] = &Distinct{BasePlan: b.base("HashAgg", seed.Root.Base().EstRows, taskRoot, seed.Root)}
	}
	if limit != nil { // MySQL 8.0.19: rounds stop once LIMIT has its rows
		root.HasLimit = true
		if root.Count, err = limitValue(limit.Count, d.env); err != nil {
			return nil, err
		}
		if limit.Offset != nil {
			if root.Offset, err = limitValue(limit.Offset, d.env); err != nil {
				return nil, err
			}
		}
	}
	return &SelectPlan{Root: root, Columns: cols}, nil
}

// namesTable reports whether n names the unqualified table name anywhere
// (subqueries too).
func namesTable(n ast.Node, name string) bool {
	v := &tableNamer{name: name}
	n.Accept(v)
	return v.n > 0
}

// namesTableIn reports whether n names the table more than once, or
// (sub) inside a subquery.
func namesTableIn(n ast.Node, name string, sub bool) bool {
	v := &tableNamer{name: name}
	n.Accept(v)
	return v.n > 1 || (sub && v.inSub > 0)
}

type tableNamer struct {
	name     string
	n, inSub int
	depth    int
}

func (v *tableNamer) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.SubqueryExpr:
		v.depth++
	case *ast.TableName:
		if x.Schema.L == "" && x.Name.L == v.name {
			v.n++
			if v.depth > 0 {
				v.inSub++
			}
		}
	}
	return n, false
}

func (v *tableNamer) Leave(n ast.Node) (ast.Node, bool) {
	if _, ok := n.(*ast.SubqueryExpr); ok {
		v.depth--
	}
	return n, true
}

// hasWindow reports whether the select list calls a window function.
func hasWindow(f *ast.FieldList) bool {
	return ContainsOutsideSubqueries(f, func(n ast.Node) bool { _, ok := n.(*ast.WindowFuncExpr); return ok })
}
