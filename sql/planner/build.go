package planner

import (
	"context"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/stratadb/strata/sql/catalog"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/statistics"
	"github.com/stratadb/strata/sql/types"
)

// Planner builds plans against a catalog. Safe for concurrent use.
type Planner struct {
	Catalog *catalog.Catalog
	// System serves information_schema (nil: system schemas are ERROR 1235).
	System SystemSchema
	// Stats, when set, gives tables' statistics (nil: pseudo estimates).
	Stats interface {
		Get(tableID int64) *statistics.Table
		// Delta is the table's row count now (the analyzed count plus
		// the net rows added since, as of the last reload).
		Delta(tableID int64) (statistics.Delta, bool)
	}
}

// ResolveTable resolves a single-table FROM clause.
func (pl *Planner) ResolveTable(ctx context.Context, refs *ast.TableRefsClause, env expr.Env, what string) (*Source, error) {
	if refs == nil || refs.TableRefs == nil {
		return nil, errno.NotSupported(what + " without a table")
	}
	j := refs.TableRefs
	if j.Right != nil {
		return nil, errno.NotSupported("JOIN")
	}
	ts, ok := j.Left.(*ast.TableSource)
	if !ok {
		if _, isJoin := j.Left.(*ast.Join); isJoin {
			return nil, errno.NotSupported("JOIN")
		}
		return nil, errno.NotSupported("this FROM clause")
	}
	return pl.openSource(ctx, ts, env)
}

// openSource resolves one table of a FROM clause: a table or a derived
// table, under its alias.
func (pl *Planner) openSource(ctx context.Context, ts *ast.TableSource, env expr.Env) (*Source, error) {
	switch q := ts.Source.(type) {
	case *ast.SelectStmt, *ast.SetOprStmt:
		return pl.openDerived(ctx, q, ts.AsName, env)
	}
	tn, ok := ts.Source.(*ast.TableName)
	if !ok {
		return nil, errno.NotSupported("this FROM clause")
	}
	if d := lookupCTE(env, tn); d != nil {
		return pl.openCTE(ctx, d, ts.AsName)
	}
	s, err := pl.OpenTable(ctx, tn, ts.AsName.L, env)
	if err == nil {
		s.AliasO = ts.AsName.O
		if s.AliasO == "" {
			s.AliasO = tn.Name.O
		}
	}
	return s, err
}

// OpenTable resolves a table name (in the current database when not
// qualified) under alias (the table's name when empty).
func (pl *Planner) OpenTable(ctx context.Context, tn *ast.TableName, alias string, env expr.Env) (*Source, error) {
	dbName := tn.Schema.O
	if dbName == "" {
		dbName = env.CurrentDB()
	}
	if dbName == "" {
		return nil, errno.New(errno.ErrNoDB, "No database selected; run USE <database> or qualify the table name")
	}
	if pl.System != nil && pl.System.IsSystemDB(dbName) {
		return pl.openSystemTable(dbName, tn.Name.O, alias)
	}
	if strings.EqualFold(dbName, "information_schema") || strings.EqualFold(dbName, "mysql") || strings.EqualFold(dbName, "performance_schema") {
		return nil, errno.NotSupported("system schema " + dbName)
	}
	db, err := pl.Catalog.GetDB(ctx, dbName)
	if err != nil {
		return nil, err
	}
	tbl, err := pl.Catalog.GetTable(ctx, db, tn.Name.O)
	if err != nil {
		return nil, err
	}
	if alias == "" {
		alias = strings.ToLower(tn.Name.O)
	}
	if tbl.View != nil {
		return pl.openView(ctx, db, tbl, alias, "", env)
	}
	s := &Source{DB: db, Table: tbl, Alias: alias, Cols: tbl.Schema(), Hints: tn.IndexHints}
	if alias != strings.ToLower(tbl.Name) {
		s.Cols = tbl.BuildSchema(alias)
	}
	if pl.Stats != nil {
		s.Stats = pl.Stats.Get(tbl.ID)
		if d, ok := pl.Stats.Delta(tbl.ID); ok && s.Stats != nil {
			s.RealtimeCount = d.Count
		}
	}
	return s, nil
}

// SelectPlan is a planned SELECT.
type SelectPlan struct {
	Root    Plan
	Columns []ResultColumn
	Src     *Source // nil without FROM
	// PointRead: the statement reads one key by handle and locks nothing,
	// so an autocommit statement may read the newest committed version.
	PointRead bool
	Lock      bool
	// Subqueries are the statement's subqueries (the executor sets their
	// Run before running Root).
	Subqueries []*Subquery
}

// builder holds one statement's planning state.
type builder struct {
	env expr.Env
	// caching: the statement is planned for the plan cache; access paths
	// keep what rebuilds their ranges (rangeSpec).
	caching bool
	nextID  int
	// hints are the statement's optimizer hints (/*+ ... */).
	hints []*ast.TableOptimizerHint
}

func (b *builder) base(tp string, est float64, task string, children ...Plan) BasePlan {
	b.nextID++
	return BasePlan{ID: b.nextID, Tp: tp, EstRows: est, Task: task, Children: children}
}

// PlanSelect plans s. describe: only the result columns are needed
// (prepare time, parameters unbound), so LIMIT values are not checked.
func (pl *Planner) PlanSelect(ctx context.Context, s *ast.SelectStmt, env expr.Env, describe bool) (*SelectPlan, error) {
	se, top := pl.withSubqueries(ctx, env)
	sp, err := pl.planSelect(ctx, s, se, describe)
	if err == nil && top {
		sp.Subqueries = se.subs
	}
	return sp, err
}

func (pl *Planner) planSelect(ctx context.Context, s *ast.SelectStmt, env expr.Env, describe bool) (*SelectPlan, error) {
	if s.With != nil {
		var err error
		if env, err = pl.withCTEs(ctx, s.With, env); err != nil {
			return nil, err
		}
	}
	switch {
	case s.SelectIntoOpt != nil:
		return nil, errno.NotSupported("SELECT ... INTO")
	}
	lg := &logical{distinct: s.Distinct}
	lg.fields, lg.fieldTx, lg.cols = lg.fieldBuf[:0], lg.fieldTxBuf[:0], lg.colBuf[:0]
	sp := &lg.plan
	if s.LockInfo != nil {
		switch s.LockInfo.LockType {
		case ast.SelectLockNone:
		case ast.SelectLockForUpdate, ast.SelectLockForShare:
			lg.lock = true
		case ast.SelectLockForUpdateNoWait, ast.SelectLockForShareNoWait:
			lg.lock, lg.nowait = true, true
		default:
			return nil, errno.NotSupported("SELECT ... " + s.LockInfo.LockType.String())
		}
	}
	lg.needW = lg.lock
	if s.From != nil {
		var src *Source
		var err error
		if isJoin(s.From) {
			if src, err = pl.openJoin(ctx, s.From.TableRefs, s.Where, env, s.SelectStmtOpts != nil && s.SelectStmtOpts.StraightJoin); err == nil && s.Where != nil {
				err = qualify(s.Where, src.Cols, env, "where clause")
			}
		} else {
			src, err = pl.ResolveTable(ctx, s.From, env, "SELECT")
		}
		if err != nil {
			return nil, err
		}
		lg.src = src
		sp.Src = src
	}
	if lg.lock && len(s.LockInfo.Tables) > 0 {
		if err := lg.lockOnly(s.LockInfo.Tables); err != nil {
			return nil, err
		}
	}
	if err := lg.resolve(s, env, describe); err != nil {
		return nil, err
	}
	sp.Columns = lg.cols
	sp.Lock = lg.lock && lg.src != nil
	b := &builder{env: env, hints: s.TableHints, caching: caching(env)}
	root, err := b.physical(lg)
	if err != nil {
		return nil, err
	}
	sp.Root = root
	if lg.src != nil && !sp.Lock {
		if _, ok := lg.access.(*PointGet); ok && lg.access.(*PointGet).Index == nil {
			sp.PointRead = true
		}
	}
	return sp, nil
}

// logical is the logical plan of a single-table SELECT: DataSource →
// Selection → Aggregation → Selection(HAVING) → Sort → Limit →
// Projection (→ Distinct → Limit).
type logical struct {
	src      *Source
	width    int // source row width
	conds    []ast.ExprNode
	condE    []expr.Expr
	where    expr.Expr // every condition, for re-checks after locking
	dual     bool      // a condition folded to false or NULL
	needW    bool      // compile the whole WHERE (locking reads and DML re-check it)
	agg      bool
	groupBy  []expr.Expr
	groupTx  []ast.ExprNode
	rollup   []int // WITH ROLLUP: the source slots of the GROUP BY columns
	aggs     []AggSpec
	wins     []*windowItem // window functions, in slot order after aggs
	having   expr.Expr
	havingTx ast.ExprNode
	fields   []expr.Expr
	fieldTx  []ast.ExprNode
	cols     []ResultColumn
	order    []SortKey
	orderOff []int // per ORDER BY item: source column offset, or -1
	distinct bool
	offset   uint64
	count    uint64
	hasLimit bool
	lock     bool
	nowait   bool
	// lockOf, when set (FOR UPDATE OF), names the tables (by alias) a
	// locking read locks; the others are read as a plain SELECT reads.
	lockOf map[string]bool

	access Plan // the chosen data source plan

	// Inline storage for the common small statement (one allocation).
	plan       SelectPlan
	condBuf    [2]ast.ExprNode
	splitBuf   [2]ast.ExprNode
	condEBuf   [2]expr.Expr
	fieldBuf   [2]expr.Expr
	fieldTxBuf [2]ast.ExprNode
	colBuf     [2]ResultColumn
	stmt       *ast.SelectStmt
}

func (lg *logical) resolve(s *ast.SelectStmt, env expr.Env, describe bool) error {
	var srcCols []expr.SchemaColumn
	if lg.src != nil {
		srcCols = lg.src.Cols
	}
	lg.width = len(srcCols)
	if s.Where != nil {
		if err := lg.addWhere(s.Where, env); err != nil {
			return err
		}
	}
	aggHook := func(a *ast.AggregateFuncExpr) (expr.Expr, error) {
		spec, err := compileAgg(a, lg.src, srcCols, env)
		if err != nil {
			return nil, err
		}
		lg.agg = true
		lg.aggs = append(lg.aggs, spec)
		return &expr.Column{Offset: lg.width + len(lg.aggs) - 1, Ft: spec.Ft, Name: a.F}, nil
	}
	if s.GroupBy != nil {
		lg.agg = true
		for _, item := range s.GroupBy.Items {
			n := item.Expr
			if pos, ok := positionRef(n); ok {
				if pos < 1 || pos > len(s.Fields.Fields) || s.Fields.Fields[pos-1].WildCard != nil {
					return errno.New(errno.ErrBadField, "Unknown column '%d' in 'group statement'", pos)
				}
				n = s.Fields.Fields[pos-1].Expr
			}
			g, err := compileByItem(n, s.Fields.Fields, srcCols, env, "group statement", nil, nil)
			if err != nil {
				return err
			}
			lg.groupBy = append(lg.groupBy, g)
			lg.groupTx = append(lg.groupTx, n)
			if s.GroupBy.Rollup {
				c, ok := g.(*expr.Column)
				if !ok || c.Offset >= lg.width {
					return errno.NotSupported("WITH ROLLUP over an expression")
				}
				lg.rollup = append(lg.rollup, c.Offset)
			}
		}
	}
	var named map[string]*ast.WindowSpec
	if len(s.WindowSpecs) > 0 {
		var err error
		if named, err = namedWindows(s.WindowSpecs); err != nil {
			return err
		}
	}
	winHook := func(w *ast.WindowFuncExpr) (expr.Expr, error) {
		it, err := compileWindow(w, named, &expr.Ctx{Columns: srcCols, Env: env, Clause: "field list", Agg: aggHook})
		if err != nil {
			return nil, err
		}
		it.col = &expr.Column{Offset: -1, Ft: it.fn.Ft, Name: w.Name}
		lg.wins = append(lg.wins, it)
		return it.col, nil
	}
	fieldCtx := &expr.Ctx{Columns: srcCols, Env: env, Clause: "field list", Agg: aggHook, Window: winHook}
	for _, f := range s.Fields.Fields {
		if f.WildCard != nil {
			if lg.src == nil {
				return errno.New(1096, "No tables used")
			}
			if ji := lg.src.Join; ji != nil {
				fs, tx, rcs, err := ji.expandStar(f.WildCard, lg.src.Cols)
				if err != nil {
					return err
				}
				lg.fields, lg.fieldTx, lg.cols = append(lg.fields, fs...), append(lg.fieldTx, tx...), append(lg.cols, rcs...)
				continue
			}
			if t := f.WildCard.Table.L; t != "" && t != lg.src.Alias {
				return errno.New(errno.ErrBadTable, "Unknown table '%s'", f.WildCard.Table.O)
			}
			src := lg.src
			for i, c := range src.Table.Columns {
				lg.fields = append(lg.fields, &expr.Column{Offset: i, Ft: c.Type, Name: c.Name})
				lg.fieldTx = append(lg.fieldTx, &ast.ColumnNameExpr{Name: &ast.ColumnName{Name: ast.NewCIStr(c.Name)}})
				lg.cols = append(lg.cols, ResultColumn{DB: src.DB.Name, Table: src.DisplayName(), OrgTable: src.orgTable(), Name: c.Name, OrgName: c.Name, Type: c.Type})
			}
			continue
		}
		fe, err := expr.Compile(f.Expr, fieldCtx)
		if err != nil {
			return err
		}
		lg.fields = append(lg.fields, fe)
		lg.fieldTx = append(lg.fieldTx, f.Expr)
		rc := ResultColumn{Name: f.AsName.O, Type: fe.Type()}
		if cn, ok := unparen(f.Expr).(*ast.ColumnNameExpr); ok && lg.src != nil {
			if rc.Name == "" {
				rc.Name = cn.Name.Name.O
			}
			rc.DB, rc.Table, rc.OrgTable = lg.src.DB.Name, lg.src.DisplayName(), lg.src.orgTable()
			if col, ok := fe.(*expr.Column); ok {
				rc.OrgName = col.Name
				if ji := lg.src.Join; ji != nil {
					rc = ji.resultColumn(col.Offset, rc.Name, rc.Type)
				}
			}
		}
		if rc.Name == "" {
			rc.Name = fieldText(f)
		}
		lg.cols = append(lg.cols, rc)
	}
	if s.Having != nil {
		ctx := &expr.Ctx{Columns: srcCols, Env: env, Clause: "having clause", Agg: aggHook}
		ctx.Alias = havingAlias(s, ctx)
		h, err := expr.Compile(s.Having.Expr, ctx)
		if err != nil {
			return err
		}
		lg.having, lg.havingTx = h, s.Having.Expr
	}
	if s.OrderBy != nil {
		for _, item := range s.OrderBy.Items {
			var k expr.Expr
			var text ast.ExprNode
			if pos, ok := positionRef(item.Expr); ok {
				if pos < 1 || pos > len(lg.fields) {
					return errno.New(errno.ErrBadField, "Unknown column '%d' in 'order clause'", pos)
				}
				k, text = lg.fields[pos-1], lg.fieldTx[pos-1]
			} else {
				var err error
				if k, err = compileByItem(item.Expr, s.Fields.Fields, srcCols, env, "order clause", aggHook, winHook); err != nil {
					return err
				}
				text = item.Expr
			}
			lg.order = append(lg.order, SortKey{E: k, Desc: item.Desc, Node: text})
			off := -1
			if c, ok := k.(*expr.Column); ok && c.Offset < lg.width {
				off = c.Offset
			}
			lg.orderOff = append(lg.orderOff, off)
		}
	}
	if err := lg.checkFullGroupBy(s, env); err != nil { // fullgroupby.go
		return err
	}
	if s.Limit != nil && !describe {
		var err error
		lg.hasLimit = true
		if lg.count, err = limitValue(s.Limit.Count, env); err != nil {
			return err
		}
		if s.Limit.Offset != nil {
			if lg.offset, err = limitValue(s.Limit.Offset, env); err != nil {
				return err
			}
		}
	}
	lg.placeWindows()
	lg.stmt = s
	return nil
}

// addWhere splits where into conjuncts, compiles them and folds the
// constant ones (constant folding + predicate pushdown: every remaining
// conjunct goes to the data source).
func (lg *logical) addWhere(where ast.ExprNode, env expr.Env) error {
	var cols []expr.SchemaColumn
	if lg.src != nil {
		cols = lg.src.Cols
	}
	ctx := &expr.Ctx{Columns: cols, Env: env, Clause: "where clause"}
	if lg.needW {
		w, err := expr.Compile(where, ctx)
		if err != nil {
			return err
		}
		lg.where = w
	}
	lg.conds, lg.condE = lg.condBuf[:0], lg.condEBuf[:0]
	for _, c := range conjuncts(where, lg.splitBuf[:0]) {
		ce, err := expr.Compile(c, ctx)
		if err != nil {
			return err
		}
		if k, ok := ce.(*expr.Constant); ok || foldable(c) {
			skipCache(env, c, "a condition on parameters alone")
			var v types.Datum
			if ok {
				v = k.Value
			} else if v, err = ce.Eval(nil); err != nil {
				// Not foldable without a row (e.g. an error only some rows
				// hit): keep it as a filter.
				lg.conds, lg.condE = append(lg.conds, c), append(lg.condE, ce)
				continue
			}
			if t, null := expr.IsTrue(v); !t || null {
				lg.dual = true
			}
			continue
		}
		lg.conds, lg.condE = append(lg.conds, c), append(lg.condE, ce)
	}
	return nil
}

// conjuncts appends the AND-ed parts of where to out.
func conjuncts(where ast.ExprNode, out []ast.ExprNode) []ast.ExprNode {
	n := unparen(where)
	if b, ok := n.(*ast.BinaryOperationExpr); ok && b.Op == opcode.LogicAnd {
		return conjuncts(b.R, conjuncts(b.L, out))
	}
	return append(out, n)
}

// columnNeeds computes on demand (only when an index path is weighed) the
// columns a statement reads: column pruning.
type columnNeeds struct {
	s   *ast.SelectStmt // nil: every column (UPDATE, DELETE rewrite rows)
	src *Source
}

func (c columnNeeds) get() []bool {
	if c.s == nil {
		n := make([]bool, len(c.src.Cols))
		for i := range c.src.Table.Columns {
			n[i] = true
		}
		return n
	}
	return neededColumns(c.s, c.src)
}

// neededColumns is column pruning: the source columns the statement
// references (every column for *).
func neededColumns(s *ast.SelectStmt, src *Source) []bool {
	needed := make([]bool, len(src.Cols))
	v := &columnCollector{src: src, needed: needed}
	for _, f := range s.Fields.Fields {
		if f.WildCard != nil {
			for i := range src.Table.Columns {
				needed[i] = true
			}
			continue
		}
		f.Expr.Accept(v)
	}
	for _, n := range []ast.Node{s.Where, s.Having, s.GroupBy, s.OrderBy} {
		if n != nil && !isNilNode(n) {
			n.Accept(v)
		}
	}
	return needed
}

func isNilNode(n ast.Node) bool {
	switch x := n.(type) {
	case ast.ExprNode:
		return x == nil
	case *ast.HavingClause:
		return x == nil
	case *ast.GroupByClause:
		return x == nil
	case *ast.OrderByClause:
		return x == nil
	}
	return false
}

type columnCollector struct {
	src    *Source
	needed []bool
}

func (c *columnCollector) Enter(n ast.Node) (ast.Node, bool) {
	if cn, ok := n.(*ast.ColumnNameExpr); ok {
		if off := c.src.columnOffset(cn.Name); off >= 0 {
			c.needed[off] = true
		}
	}
	return n, false
}

func (c *columnCollector) Leave(n ast.Node) (ast.Node, bool) { return n, true }

func unparen(n ast.ExprNode) ast.ExprNode {
	for {
		pe, ok := n.(*ast.ParenthesesExpr)
		if !ok {
			return n
		}
		n = pe.Expr
	}
}

func fieldText(f *ast.SelectField) string {
	if t := strings.TrimSpace(f.Text()); t != "" {
		return t
	}
	if t := strings.TrimSpace(f.Expr.Text()); t != "" {
		return t
	}
	var sb strings.Builder
	f.Expr.Format(&sb)
	return sb.String()
}

func positionRef(n ast.ExprNode) (int, bool) {
	if pe, ok := n.(*ast.PositionExpr); ok && pe.P == nil {
		return pe.N, true
	}
	return 0, false
}

// compileByItem compiles a GROUP BY / ORDER BY expression: a bare name
// matching a select-list alias refers to that field's expression, except
// in GROUP BY when a column of the table has the name too (MySQL takes
// the column there, with a warning).
func compileByItem(n ast.ExprNode, fields []*ast.SelectField, cols []expr.SchemaColumn, env expr.Env, clause string,
	agg func(*ast.AggregateFuncExpr) (expr.Expr, error), win func(*ast.WindowFuncExpr) (expr.Expr, error)) (expr.Expr, error) {
	if cn, ok := unparen(n).(*ast.ColumnNameExpr); ok && cn.Name.Table.L == "" &&
		!(clause == "group statement" && isSourceColumn(cols, cn.Name.Name.L)) {
		for _, f := range fields {
			if f.AsName.L != "" && f.AsName.L == cn.Name.Name.L {
				return expr.Compile(f.Expr, &expr.Ctx{Columns: cols, Env: env, Clause: clause, Agg: agg, Window: win})
			}
		}
	}
	return expr.Compile(n, &expr.Ctx{Columns: cols, Env: env, Clause: clause, Agg: agg, Window: win})
}

// havingAlias resolves HAVING's names as MySQL does: a select-list alias
// stands for its expression anywhere in the condition (HAVING c > 1 for
// COUNT(*) AS c), unless a GROUP BY column of the table has the name (MySQL prefers the
// standard's meaning then); inside an aggregate's argument names are
// columns (compileAgg does not ask). ctx compiles the alias's expression,
// without aliases, so `a + 1 AS a` refers to column a.
func havingAlias(s *ast.SelectStmt, ctx *expr.Ctx) func(*ast.ColumnName) (expr.Expr, error) {
	return func(n *ast.ColumnName) (expr.Expr, error) {
		if s.GroupBy != nil {
			for _, g := range s.GroupBy.Items {
				if cn, ok := unparen(g.Expr).(*ast.ColumnNameExpr); ok && cn.Name.Name.L == n.Name.L && isSourceColumn(ctx.Columns, n.Name.L) {
					return nil, nil
				}
			}
		}
		for _, f := range s.Fields.Fields {
			if f.AsName.L != "" && f.AsName.L == n.Name.L {
				plain := *ctx
				plain.Alias = nil
				return expr.Compile(f.Expr, &plain)
			}
		}
		return nil, nil
	}
}

// isSourceColumn reports whether a column of cols has the (lower-case)
// name.
func isSourceColumn(cols []expr.SchemaColumn, name string) bool {
	for _, c := range cols {
		if !c.Redundant && strings.EqualFold(c.Name, name) {
			return true
		}
	}
	return false
}

// LimitValue evaluates a LIMIT / OFFSET operand (ERROR 1210 when it is not
// a non-negative integer).
func LimitValue(n ast.ExprNode, env expr.Env) (uint64, error) { return limitValue(n, env) }

func limitValue(n ast.ExprNode, env expr.Env) (uint64, error) {
	fixParam(env, n, "LIMIT ?")
	k, err := expr.Compile(n, &expr.Ctx{Env: env})
	if err != nil {
		return 0, err
	}
	d, err := k.Eval(nil)
	if err != nil {
		return 0, err
	}
	switch d.Kind() {
	case types.KindInt64:
		if d.Int64() >= 0 {
			return uint64(d.Int64()), nil
		}
	case types.KindUint64:
		return d.Uint64(), nil
	}
	return 0, errno.New(1210, "Incorrect arguments to LIMIT")
}

func compileAgg(a *ast.AggregateFuncExpr, src *Source, cols []expr.SchemaColumn, env expr.Env) (AggSpec, error) {
	fn := strings.ToLower(a.F)
	distinct := a.Distinct
	if fn == ast.AggFuncApproxCountDistinct {
		// TiDB's estimate of COUNT(DISTINCT ...): the exact count is an
		// estimate without error (one SQL-node DISTINCT set per group).
		fn, distinct = ast.AggFuncCount, true
	}
	spec := AggSpec{Fn: fn, Distinct: distinct, Node: a}
	argCtx := &expr.Ctx{Columns: cols, Env: env, Clause: "field list"}
	switch fn {
	case ast.AggFuncGroupConcat:
		return compileGroupConcat(a, argCtx)
	case ast.AggFuncJsonArrayagg, ast.AggFuncJsonObjectAgg:
		// JSON_ARRAYAGG(v) and JSON_OBJECTAGG(k, v): every row counts
		// (NULL values are JSON nulls); never pushed to the stores.
		want := map[string]int{ast.AggFuncJsonArrayagg: 1, ast.AggFuncJsonObjectAgg: 2}[fn]
		if len(a.Args) != want || a.Distinct {
			return spec, errno.New(errno.ErrWrongParamCount, "Incorrect parameter count in the call to native function '%s'", fn)
		}
		args, err := compileArgs(a.Args, argCtx)
		if err != nil {
			return spec, err
		}
		localArgs(args, env)
		spec.Args, spec.Arg, spec.Ft = args, args[0], types.JSONType
		return spec, nil
	case ast.AggFuncCount, ast.AggFuncSum, ast.AggFuncAvg, ast.AggFuncMax, ast.AggFuncMin:
	default:
		if !statAgg(fn) {
			return spec, errno.NotSupported("aggregate function " + strings.ToUpper(fn))
		}
	}
	if len(a.Args) != 1 && (fn != ast.AggFuncCount || !distinct) {
		return spec, errno.NotSupported(strings.ToUpper(fn) + " with several arguments")
	}
	args, err := compileArgs(a.Args, argCtx)
	if err != nil {
		return spec, err
	}
	if fn == ast.AggFuncSum || fn == ast.AggFuncAvg {
		localArgs(args, env)
	}
	out := aggSpec(fn, args[0], distinct)
	if len(args) > 1 { // COUNT(DISTINCT a, b, ...)
		out.Args = args
	}
	out.Node = a
	return out, nil
}

// localArgs reads the TIMESTAMP arguments of an aggregate that takes them
// as text or numbers (GROUP_CONCAT, SUM, JSON_ARRAYAGG) in the session
// time zone; MIN, MAX and COUNT keep the instants (expr.LocalTimestamp).
func localArgs(args []expr.Expr, env expr.Env) {
	for i, a := range args {
		args[i] = expr.LocalTimestamp(a, env)
	}
}

func compileArgs(ns []ast.ExprNode, c *expr.Ctx) ([]expr.Expr, error) {
	out := make([]expr.Expr, len(ns))
	for i, n := range ns {
		e, err := expr.Compile(n, c)
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

// compileGroupConcat compiles GROUP_CONCAT([DISTINCT] expr, ... [ORDER BY
// ...] [SEPARATOR 's']); the parser passes the separator as the last
// argument. The result is a VARCHAR of group_concat_max_len bytes (MySQL
// reports a TEXT type above 512), and GROUP_CONCAT is never pushed to
// the stores. An ORDER BY position names an argument, as in MySQL.
func compileGroupConcat(a *ast.AggregateFuncExpr, c *expr.Ctx) (AggSpec, error) {
	spec := AggSpec{Fn: ast.AggFuncGroupConcat, Distinct: a.Distinct, Node: a}
	args, err := compileArgs(a.Args, c) // at least one, and the separator
	if err != nil {
		return spec, err
	}
	localArgs(args, c.Env)
	sep, _ := args[len(args)-1].Eval(nil)
	spec.Sep = types.AppendText(nil, sep, nil)
	spec.Args, spec.Arg = args[:len(args)-1], args[0]
	if a.Order != nil {
		for _, item := range a.Order.Items {
			if pos, ok := positionRef(item.Expr); ok {
				if pos < 1 || pos > len(spec.Args) {
					return spec, errno.New(errno.ErrBadField, "Unknown column '%d' in 'order clause'", pos)
				}
				spec.Order = append(spec.Order, SortKey{E: spec.Args[pos-1], Desc: item.Desc, Node: item.Expr})
				continue
			}
			k, err := expr.Compile(item.Expr, c)
			if err != nil {
				return spec, err
			}
			spec.Order = append(spec.Order, SortKey{E: k, Desc: item.Desc, Node: item.Expr})
		}
	}
	spec.MaxLen = 1024
	if d, _, err := c.Env.SysVar("group_concat_max_len", false); err == nil {
		if v, ok := types.ToDecimal(d); ok {
			if n, ok := v.Int64(); ok && n > 0 {
				spec.MaxLen = int(min(n, 1<<30))
			}
		}
	}
	spec.Ft = types.VarcharType
	spec.Ft.Flen = spec.MaxLen
	return spec, nil
}

// aggSpec is the aggregate fn over arg: its result type, and COUNT of a
// non-NULL constant counts rows.
func aggSpec(fn string, arg expr.Expr, distinct bool) AggSpec {
	spec := AggSpec{Fn: fn, Distinct: distinct}
	if fn == ast.AggFuncCount {
		spec.Ft = types.Int64Type
		// COUNT(*) and COUNT(<non-null constant>) count rows.
		if c, ok := arg.(*expr.Constant); ok && !c.Value.IsNull() && !distinct {
			return spec
		}
		spec.Arg = arg
		return spec
	}
	spec.Arg = arg
	switch fn {
	case ast.AggFuncSum, ast.AggFuncAvg:
		spec.Ft = aggSumAvgType(fn, arg.Type())
	case ast.AggFuncVarPop, ast.AggFuncVarSamp, ast.AggFuncStddevPop, ast.AggFuncStddevSamp:
		spec.Ft = types.DoubleType
	case ast.AggFuncBitAnd, ast.AggFuncBitOr, ast.AggFuncBitXor:
		spec.Ft = types.Uint64Type
		spec.Ft.Flag |= mysql.NotNullFlag // an empty set gives all ones or 0
	default:
		spec.Ft = arg.Type()
		spec.Ft.Flag &^= mysql.NotNullFlag | mysql.PriKeyFlag | mysql.AutoIncrementFlag
	}
	return spec
}

// statAgg reports whether fn is one of the aggregates of one numeric
// argument that the SQL node computes and never pushes down: VAR_POP
// (VARIANCE), VAR_SAMP, STDDEV_POP (STD, STDDEV), STDDEV_SAMP (DOUBLE
// results) and BIT_AND, BIT_OR, BIT_XOR (BIGINT UNSIGNED).
func statAgg(fn string) bool {
	switch fn {
	case ast.AggFuncVarPop, ast.AggFuncVarSamp, ast.AggFuncStddevPop, ast.AggFuncStddevSamp,
		ast.AggFuncBitAnd, ast.AggFuncBitOr, ast.AggFuncBitXor:
		return true
	}
	return false
}

// aggSumAvgType is MySQL's result type of SUM/AVG: exact arguments give a
// DECIMAL (SUM keeps the scale, AVG adds div_precision_increment), others
// a DOUBLE.
func aggSumAvgType(fn string, arg types.FieldType) types.FieldType {
	var p, s int
	switch arg.Class() {
	case types.ClassInt:
		p = max(arg.Flen, 1)
	case types.ClassDecimal:
		p, s = arg.Flen, max(arg.Decimal, 0)
	default:
		return types.DoubleType
	}
	if fn == ast.AggFuncSum {
		return types.DecimalResultType(p+22, s)
	}
	return types.DecimalResultType(p+types.DivPrecisionIncr, s+types.DivPrecisionIncr)
}

// lockOnly restricts a locking read to the tables FOR UPDATE OF names,
// each the alias of a table of the FROM clause (ERROR 3568 otherwise).
func (lg *logical) lockOnly(names []*ast.TableName) error {
	var leaves []*Source
	switch {
	case lg.src == nil:
	case lg.src.Join != nil:
		leaves, _ = lg.src.Join.Leaves()
	default:
		leaves = []*Source{lg.src}
	}
	lg.lockOf = map[string]bool{}
	for _, n := range names {
		found := false
		for _, l := range leaves {
			if l.Alias == n.Name.L && (n.Schema.L == "" || (l.DB != nil && strings.EqualFold(l.DB.Name, n.Schema.O))) {
				found = true
				break
			}
		}
		if !found {
			return errno.New(3568, "Unresolved name '%s' for FOR UPDATE OF clause", n.Name.O)
		}
		lg.lockOf[n.Name.L] = true
	}
	return nil
}

// locks reports whether a locking read locks the rows it reads of src.
func (lg *logical) locks(src *Source) bool {
	return lg.lock && (lg.lockOf == nil || lg.lockOf[src.Alias])
}
