package planner

import (
	"context"
	"math"
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	driver "github.com/pingcap/tidb/pkg/parser/test_driver"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/types"
)

// CachedPlan is the plan of a prepared SELECT, or the read plan of a
// prepared single-table UPDATE or DELETE, kept by a session's plan cache
// (TiDB's prepared plan cache, sql/executor PlanCache): planned once
// with its parameter markers compiled to constants the cache rebinds at
// each execution (expr.Constant.Rebind), and the key ranges, point keys
// and IN-list points of its access paths rebuilt from the bound values
// (Rebind; TiDB's RebuildPlan4CachedPlan). Per session, not safe for
// concurrent use: an execution updates the plan in place.
type CachedPlan struct {
	Plan *SelectPlan // a SELECT's plan (PlanPrepared)
	Scan *ScanPlan   // an UPDATE's or DELETE's read (PlanPreparedScan)
	// params holds, per marker order, the constants compiled from it.
	params [][]*expr.Constant
	// fixed are the parameters whose values the plan holds for only
	// (LIMIT ? and OFFSET ?, as TiDB keys a plan by them).
	fixed []fixedParam
	// specs are the access paths whose ranges or keys come from
	// parameters.
	specs []*rangeSpec
	// tables are the tables the plan reads, as the catalog gave them.
	tables []tableRef
	// joins are the index joins whose lookup constants come from
	// parameters.
	joins []*IndexJoin
}

// tableRef is a table a cached plan reads: the plan holds while the
// catalog still returns these objects (a schema change, DROP and CREATE
// load new ones).
type tableRef struct {
	db  *model.DBInfo
	tbl *model.TableInfo
}

// rangeSpec is how an access path of a cached plan rebuilds its ranges
// or keys: the conditions it detached and what detaching them gave at
// planning, which every execution's values must give again for the plan's
// shape to hold.
type rangeSpec struct {
	plan  Plan // the node whose ranges or keys it sets
	src   *Source
	conds []ast.ExprNode
	index *model.IndexInfo // nil: handle ranges
	cols  []int            // index columns (source offsets)
	// fast: conds[0] is `handle = constant` (fastPoint).
	fast bool
	d    detached
	// req, ordered: the order the statement wants and whether the index
	// ranges gave it.
	req     *orderReq
	ordered bool
}

// paramEnv is the Env a cacheable statement is planned in: it records the
// constants Compile makes of parameter markers (expr.ParamRecorder) and
// why the plan, if it must, holds only for this execution's values.
type paramEnv struct {
	expr.Env
	params [][]*expr.Constant
	fixed  []fixedParam
	reason string
}

// fixedParam is a parameter a cached plan holds for only with value v.
type fixedParam struct {
	order int
	v     types.Datum
}

// RecordParam implements expr.ParamRecorder.
func (pe *paramEnv) RecordParam(order int, k *expr.Constant) {
	for len(pe.params) <= order {
		pe.params = append(pe.params, nil)
	}
	pe.params[order] = append(pe.params[order], k)
}

// Unwrap implements expr.EnvWrapper.
func (pe *paramEnv) Unwrap() expr.Env { return pe.Env }

// CurrentUser forwards CURRENT_USER() to the session.
func (pe *paramEnv) CurrentUser() string {
	if cu, ok := pe.Env.(interface{ CurrentUser() string }); ok {
		return cu.CurrentUser()
	}
	return pe.Env.User()
}

// skipCache records, when env plans a statement for the plan cache, that
// its plan holds only for this execution's parameter values (TiDB's
// "skip plan-cache" reasons). n, when not nil, is the expression whose
// value planning used: without a parameter marker it is no reason.
func skipCache(env expr.Env, n ast.ExprNode, reason string) {
	if n != nil && !hasParam(n) {
		return
	}
	if pe := cachingEnv(env); pe != nil && pe.reason == "" {
		pe.reason = reason
	}
}

// fixParam records, when env plans a statement for the plan cache, that
// its plan holds only while n's value stays the one it has now: n must
// then be a parameter marker (a LIMIT or OFFSET operand), else reason
// says why the plan is not cached.
func fixParam(env expr.Env, n ast.ExprNode, reason string) {
	pe := cachingEnv(env)
	if pe == nil || !hasParam(n) {
		return
	}
	pm, ok := n.(*driver.ParamMarkerExpr)
	if !ok {
		skipCache(env, n, reason)
		return
	}
	v, _ := env.Param(pm.Order)
	pe.fixed = append(pe.fixed, fixedParam{order: pm.Order, v: v.Clone()})
}

// caching reports whether env plans a statement for the plan cache.
func caching(env expr.Env) bool { return cachingEnv(env) != nil }

// cachingEnv is the paramEnv env plans a cached statement in (nil: none).
func cachingEnv(env expr.Env) *paramEnv {
	for env != nil {
		if pe, ok := env.(*paramEnv); ok {
			return pe
		}
		w, ok := env.(expr.EnvWrapper)
		if !ok {
			return nil
		}
		env = w.Unwrap()
	}
	return nil
}

func hasParam(n ast.ExprNode) bool {
	return contains(n, func(n ast.Node) bool { _, ok := n.(*driver.ParamMarkerExpr); return ok })
}

// PlanPrepared plans s, a prepared SELECT, for the plan cache. The plan is
// always returned (run it for this execution); reason is empty when it may
// be cached, else why not: a statement whose plan would depend on the
// parameters' values beyond what Rebind rebuilds, or that reads session
// state planning folds (user and system variables, NOW(), DATABASE(),
// ...), or has a part Rebind does not rebuild: subqueries, CTEs, window
// functions, derived tables, views and system tables (not cached yet).
// Joins are cached, index joins too (a lookup constant from parameters
// is evaluated again by Rebind). A LIMIT or OFFSET parameter holds the
// plan to its value.
func (pl *Planner) PlanPrepared(ctx context.Context, s *ast.SelectStmt, env expr.Env) (*CachedPlan, string, error) {
	if reason := uncacheable(s); reason != "" {
		sp, err := pl.PlanSelect(ctx, s, env, false)
		return &CachedPlan{Plan: sp}, reason, err
	}
	pe := &paramEnv{Env: env}
	sp, err := pl.PlanSelect(ctx, s, pe, false)
	if err != nil {
		return nil, "", err
	}
	c := &CachedPlan{Plan: sp}
	return c, c.finish(pe, sp.Root, len(sp.Subqueries) > 0), nil
}

// PlanPreparedScan plans the read of a prepared single-table UPDATE or
// DELETE of src (PlanScan's arguments) for the plan cache, with
// PlanPrepared's rules: the plan is always returned, and reason is empty
// when it may be cached. The statement's assignments are not part of it
// (the executor compiles them at each execution).
func (pl *Planner) PlanPreparedScan(src *Source, where ast.ExprNode, order *ast.OrderByClause, limit *ast.Limit, env expr.Env) (*CachedPlan, string, error) {
	f := &cacheChecker{}
	if where != nil {
		where.Accept(f)
	}
	if order != nil {
		order.Accept(f)
	}
	if limit != nil {
		limit.Accept(f)
	}
	if f.reason != "" {
		sp, err := pl.PlanScan(src, where, order, limit, env)
		return &CachedPlan{Scan: sp}, f.reason, err
	}
	pe := &paramEnv{Env: env}
	sp, err := pl.PlanScan(src, where, order, limit, pe)
	if err != nil {
		return nil, "", err
	}
	c := &CachedPlan{Scan: sp}
	return c, c.finish(pe, sp.Root, false), nil
}

// finish takes what planning root in pe recorded and says why c is not
// cached ("" when it is); subqueries: the statement has some.
func (c *CachedPlan) finish(pe *paramEnv, root Plan, subqueries bool) string {
	c.params, c.fixed = pe.params, pe.fixed
	if pe.reason != "" {
		return pe.reason
	}
	for _, ks := range pe.params {
		for _, k := range ks {
			if k.Folded() {
				return "a parameter's value is folded into an expression"
			}
		}
	}
	if subqueries {
		return "subqueries"
	}
	return c.collect(root)
}

// collect finds the tables and rebuildable access paths of p, or says
// why a plan holding p is not cached.
func (c *CachedPlan) collect(p Plan) string {
	var src *Source
	var spec *rangeSpec
	switch x := p.(type) {
	case *Projection, *Selection, *HashAgg, *Sort, *TopN, *Limit, *Distinct, *TableReader, *IndexReader,
		*IndexLookUp, *CopIndexLookUp, *SelectLock, *HashJoin, *lookupShow:
	case *TableDual:
		spec = x.rebuild
	case *PointGet:
		src, spec = x.Src, x.rebuild
	case *BatchPointGet:
		src, spec = x.Src, x.rebuild
	case *TableScan:
		src, spec = x.Src, x.rebuild
	case *IndexScan:
		src, spec = x.Src, x.rebuild
	case *TableRowIDScan:
		src = x.Src
	case *IndexJoin:
		// Its lookup constants are evaluated again (rebindJoin); its
		// children are the plans EXPLAIN shows.
		src = x.Inner
		if len(x.constE) > 0 {
			c.joins = append(c.joins, x)
		}
	default:
		return "the plan has a " + p.Base().Tp
	}
	if src != nil {
		if src.Table == nil || src.DB == nil || src.Mem != nil || src.Sub != nil {
			return "the plan reads no base table"
		}
		ref := tableRef{db: src.DB, tbl: src.Table}
		if !slices.Contains(c.tables, ref) {
			c.tables = append(c.tables, ref)
		}
	}
	if spec != nil {
		spec.plan = p
		c.specs = append(c.specs, spec)
	}
	for _, ch := range p.Base().Children {
		if r := c.collect(ch); r != "" {
			return r
		}
	}
	return ""
}

// Rebind readies c for an execution with env's parameters: a LIMIT or
// OFFSET parameter must have the value it was planned with, every table
// it reads must still be the catalog's, each parameter's constants take
// this execution's value, every access path rebuilds its ranges or keys
// and every index join its lookup constants. It reports false when the
// plan does not hold for this execution (another LIMIT, a table changed,
// or the values give an access path another shape: a range that became
// one point, a point that became empty, an IN list with a NULL on a
// unique index, a NULL lookup constant, ...); the caller then plans the
// statement again.
func (pl *Planner) Rebind(ctx context.Context, c *CachedPlan, env expr.Env) bool {
	for _, f := range c.fixed {
		if v, _ := env.Param(f.order); !sameValue(v, f.v) {
			return false
		}
	}
	for _, t := range c.tables {
		db, err := pl.Catalog.GetDB(ctx, t.db.Name)
		if err != nil || db != t.db {
			return false // planning again reports the error
		}
		if tbl, err := pl.Catalog.GetTable(ctx, db, t.tbl.Name); err != nil || tbl != t.tbl {
			return false
		}
	}
	for order, ks := range c.params {
		v, _ := env.Param(order)
		for _, k := range ks {
			k.Rebind(v)
		}
	}
	for _, spec := range c.specs {
		if !spec.rebuild(env) {
			return false
		}
	}
	for _, ij := range c.joins {
		if !rebindJoin(ij) {
			return false
		}
	}
	return true
}

// rebindJoin evaluates the lookup constants of ij for this execution's
// parameters; false when one is not a value the lookup can use (NULL: as
// planning, constantFilter, would not have used it).
func rebindJoin(ij *IndexJoin) bool {
	for i, e := range ij.constE {
		v, err := e.Eval(nil)
		if err != nil || v.IsNull() {
			return false
		}
		ij.Consts[i] = v
	}
	return true
}

// sameValue reports whether a and b are the same value of the same kind.
func sameValue(a, b types.Datum) bool {
	if a.Kind() != b.Kind() {
		return false
	}
	if a.IsNull() {
		return true
	}
	return a.Uint64() == b.Uint64() && string(a.Bytes()) == string(b.Bytes())
}

// sameShape reports whether detaching the same conditions for other values
// gave what d gave: the same conditions represented by the ranges and the
// same columns bounded.
func (d detached) sameShape(o detached) bool {
	return d.eqCols == o.eqCols && d.usedCols == o.usedCols && slices.Equal(d.access, o.access)
}

// rebuild sets the ranges or keys of the plan node spec belongs to from
// env's parameters; false when they give the path another shape.
func (spec *rangeSpec) rebuild(env expr.Env) bool {
	rg := &ranger{src: spec.src, env: env}
	if spec.fast {
		return spec.rebuildFast(rg)
	}
	cols := spec.cols
	if spec.index == nil {
		cols = []int{spec.src.HandleOffset()}
	}
	d := rg.detachIndex(spec.conds, cols, spec.index)
	if !d.sameShape(spec.d) {
		return false
	}
	var shape accessShape
	var handles []int64
	var points [][]types.Datum
	if spec.index == nil {
		shape, handles = handleShape(spec.src, d)
	} else {
		shape, points = indexShape(spec.index, cols, d)
	}
	switch p := spec.plan.(type) {
	case *TableDual:
		return shape == shapeDual
	case *PointGet:
		if shape != shapePoint {
			return false
		}
		if p.Index == nil {
			p.Handle = handles[0]
		} else {
			p.Values = points[0]
		}
	case *BatchPointGet:
		if shape != shapeBatch {
			return false
		}
		if p.Index == nil {
			p.Handles = handles
		} else {
			p.Values = points
		}
	case *TableScan:
		if spec.index != nil { // a clustered PRIMARY KEY's ranges (pkReader)
			if shape != shapeRanges {
				return false
			}
			if spec.req != nil {
				if ordered, _ := indexOrdered(spec.req, cols, d, spec.src); ordered != spec.ordered {
					return false
				}
			}
			if d.usedCols == 0 || p.Full {
				return d.usedCols == 0 && p.Full
			}
			p.PKRanges = d.ranges
			return true
		}
		if shape == shapeFull {
			return p.Full
		}
		if shape != shapeRanges || p.Full {
			return false
		}
		p.Ranges = handleRanges(d.ranges)
	case *IndexScan:
		if shape != shapeRanges {
			return false
		}
		if spec.req != nil {
			if ordered, _ := indexOrdered(spec.req, cols, d, spec.src); ordered != spec.ordered {
				return false
			}
		}
		if d.usedCols == 0 {
			d.ranges = []Range{{}}
		}
		p.Ranges = d.ranges
	}
	return true
}

// rebuildFast binds fastPoint's `handle = constant`.
func (spec *rangeSpec) rebuildFast(rg *ranger) bool {
	x := spec.conds[0].(*ast.BinaryOperationExpr)
	other := x.R
	if !rg.isColumn(x.L, spec.src.HandleOffset()) {
		other = x.L
	}
	v, _, ok := rg.constant(other)
	if !ok {
		return false
	}
	h, ok := handleOf(spec.src, v)
	if !ok {
		return false
	}
	spec.plan.(*PointGet).Handle = h
	return true
}

// uncacheable says why a statement's plan is never cached ("" when it
// may be): it reads session state that compiles to constants, or has a
// part Rebind cannot rebuild.
func uncacheable(s *ast.SelectStmt) string {
	if s.With != nil {
		return "WITH"
	}
	if s.SelectIntoOpt != nil {
		return "SELECT INTO"
	}
	if len(s.WindowSpecs) > 0 {
		return "window functions"
	}
	f := &cacheChecker{}
	s.Accept(f)
	return f.reason
}

// uncacheableFuncs are the functions compiled to a constant of the
// session or the clock (as TiDB's list of functions that make a plan
// uncacheable), or evaluated per call in ways a reused plan must not
// share.
var uncacheableFuncs = map[string]bool{
	"database": true, "schema": true, "current_user": true, "user": true, "session_user": true, "system_user": true,
	"connection_id": true, "last_insert_id": true, "row_count": true, "found_rows": true, "version": true,
	"now": true, "current_timestamp": true, "sysdate": true, "localtime": true, "localtimestamp": true,
	"curdate": true, "current_date": true, "curtime": true, "current_time": true, "utc_date": true,
	"utc_time": true, "utc_timestamp": true, "unix_timestamp": true, "from_unixtime": true, "rand": true, "uuid": true, "uuid_short": true,
	"sleep": true, "get_lock": true, "release_lock": true, "release_all_locks": true, "is_free_lock": true,
	"is_used_lock": true, "benchmark": true, "coercibility": true, "collation": true, "charset": true,
	"tidb_version": true, "current_role": true, "get_format": true, "nextval": true, "lastval": true, "setval": true,
}

// cacheChecker walks a statement for what makes it uncacheable.
type cacheChecker struct{ reason string }

func (f *cacheChecker) Enter(n ast.Node) (ast.Node, bool) {
	if f.reason != "" {
		return n, true
	}
	switch x := n.(type) {
	case *ast.VariableExpr:
		f.reason = "a variable"
	case *ast.SubqueryExpr, *ast.ExistsSubqueryExpr, *ast.CompareSubqueryExpr:
		f.reason = "subqueries"
	case *ast.WindowFuncExpr:
		f.reason = "window functions"
	case *ast.FuncCallExpr:
		if uncacheableFuncs[x.FnName.L] {
			f.reason = "function " + strings.ToUpper(x.FnName.O)
		}
	case *ast.DefaultExpr:
		f.reason = "DEFAULT"
	case *ast.TableSource:
		if _, ok := x.Source.(*ast.TableName); !ok {
			f.reason = "a derived table"
		}
	case *ast.TableName:
		switch strings.ToLower(x.Schema.O) {
		case "information_schema", "mysql", "performance_schema", "metrics_schema":
			f.reason = "a system table"
		}
	}
	return n, f.reason != ""
}

func (f *cacheChecker) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// handleOf converts an integer parameter to a handle of src.
func handleOf(src *Source, v types.Datum) (int64, bool) {
	unsigned := src.Cols[src.HandleOffset()].Type.Unsigned()
	switch {
	case v.Kind() == types.KindInt64 && (!unsigned || v.Int64() >= 0):
		return v.Int64(), true
	case v.Kind() == types.KindUint64 && (unsigned || v.Uint64() <= math.MaxInt64):
		return int64(v.Uint64()), true
	}
	return 0, false
}
