package executor

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/kv/tablecodec"
	"github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/sql"
	"github.com/stratadb/strata/sql/catalog"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/types"
)

// Executor runs DML statements. Safe for concurrent use.
type Executor struct {
	Store   sql.Storage
	Catalog *catalog.Catalog
	IDs     *IDAllocator
}

// New returns an Executor.
func New(store sql.Storage, cat *catalog.Catalog) *Executor {
	return &Executor{Store: store, Catalog: cat, IDs: NewIDAllocator(store)}
}

type datum = types.Datum

// source is the table a statement reads, with its row layout.
type source struct {
	db    *catalog.DBInfo
	tbl   *catalog.TableInfo
	alias string
	cols  []expr.SchemaColumn // table columns, then the handle
}

func (e *Executor) resolveTable(ctx context.Context, refs *ast.TableRefsClause, env expr.Env, what string) (*source, error) {
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
	tn, ok := ts.Source.(*ast.TableName)
	if !ok {
		return nil, errno.NotSupported("subqueries in FROM")
	}
	return e.openTable(ctx, tn, ts.AsName.L, env)
}

func (e *Executor) openTable(ctx context.Context, tn *ast.TableName, alias string, env expr.Env) (*source, error) {
	dbName := tn.Schema.O
	if dbName == "" {
		dbName = env.CurrentDB()
	}
	if dbName == "" {
		return nil, errno.New(errno.ErrNoDB, "No database selected; run USE <database> or qualify the table name")
	}
	if strings.EqualFold(dbName, "information_schema") || strings.EqualFold(dbName, "mysql") || strings.EqualFold(dbName, "performance_schema") {
		return nil, errno.NotSupported("system schema " + dbName)
	}
	db, err := e.Catalog.GetDB(ctx, dbName)
	if err != nil {
		return nil, err
	}
	tbl, err := e.Catalog.GetTable(ctx, db, tn.Name.O)
	if err != nil {
		return nil, err
	}
	if alias == "" {
		alias = strings.ToLower(tn.Name.O)
	}
	s := &source{db: db, tbl: tbl, alias: alias, cols: tbl.Schema()}
	if alias != strings.ToLower(tbl.Name) {
		s.cols = tbl.BuildSchema(alias)
	}
	return s, nil
}

// handleOffset is the row slot that holds the handle.
func (s *source) handleOffset() int {
	if s.tbl.PKIsHandle {
		return s.tbl.HandleOffset
	}
	return len(s.tbl.Columns)
}

type aggSpec struct {
	fn       string
	arg      expr.Expr // nil: COUNT(*)
	distinct bool
	ft       types.FieldType
}

type sortKey struct {
	e    expr.Expr
	desc bool
}

type selectPlan struct {
	src       *source // nil: no FROM
	width     int     // source row width
	where     expr.Expr
	point     bool
	handle    int64
	hr        handleRange // valid when !point
	agg       bool
	groupBy   []expr.Expr
	aggs      []aggSpec
	having    expr.Expr
	fields    []expr.Expr
	cols      []ResultColumn
	order     []sortKey
	distinct  bool
	offset    uint64
	count     uint64
	hasLimit  bool
	countOnly bool // COUNT(*) pushed down
	lock      bool // SELECT ... FOR UPDATE / LOCK IN SHARE MODE
	nowait    bool
}

// Select runs a SELECT in tx's transaction. FOR UPDATE and LOCK IN SHARE
// MODE lock the rows read (both take an exclusive lock: Strata has no
// shared locks) and, in pessimistic mode, return their latest committed
// values.
func (e *Executor) Select(ctx context.Context, s *ast.SelectStmt, env expr.Env, tx TxnSource) (*Result, error) {
	p, err := e.planSelect(ctx, s, env, false)
	if err != nil {
		return nil, err
	}
	return e.runSelect(ctx, p, tx)
}

// SelectColumns plans s (with whatever parameters env binds) and returns its
// result columns without reading any rows; used to describe prepared
// statements.
func (e *Executor) SelectColumns(ctx context.Context, s *ast.SelectStmt, env expr.Env) ([]ResultColumn, error) {
	p, err := e.planSelect(ctx, s, env, true)
	if err != nil {
		return nil, err
	}
	return p.cols, nil
}

// describe: only the result columns are needed (prepare time, parameters
// unbound), so LIMIT values are not checked.
func (e *Executor) planSelect(ctx context.Context, s *ast.SelectStmt, env expr.Env, describe bool) (*selectPlan, error) {
	switch {
	case s.With != nil:
		return nil, errno.NotSupported("WITH")
	case s.SelectIntoOpt != nil:
		return nil, errno.NotSupported("SELECT ... INTO")
	case len(s.WindowSpecs) > 0:
		return nil, errno.NotSupported("window functions")
	case s.GroupBy != nil && s.GroupBy.Rollup:
		return nil, errno.NotSupported("WITH ROLLUP")
	}
	p := &selectPlan{distinct: s.Distinct, hr: fullRange}
	if s.LockInfo != nil {
		switch s.LockInfo.LockType {
		case ast.SelectLockNone:
		case ast.SelectLockForUpdate, ast.SelectLockForShare:
			p.lock = true
		case ast.SelectLockForUpdateNoWait, ast.SelectLockForShareNoWait:
			p.lock, p.nowait = true, true
		default:
			return nil, errno.NotSupported("SELECT ... " + s.LockInfo.LockType.String())
		}
		if len(s.LockInfo.Tables) > 0 {
			return nil, errno.NotSupported("SELECT ... FOR UPDATE OF")
		}
	}
	var srcCols []expr.SchemaColumn
	if s.From != nil {
		src, err := e.resolveTable(ctx, s.From, env, "SELECT")
		if err != nil {
			return nil, err
		}
		p.src, srcCols = src, src.cols
	}
	p.width = len(srcCols)
	if s.Where != nil {
		w, err := expr.Compile(s.Where, &expr.Ctx{Columns: srcCols, Env: env, Clause: "where clause"})
		if err != nil {
			return nil, err
		}
		p.where = w
		if p.src != nil {
			p.hr = rangeOfHandle(s.Where, p.src, env)
			p.point, p.handle = p.hr.point()
		}
	}
	// Aggregates: any aggregate call in the fields, HAVING or ORDER BY (or
	// a GROUP BY) switches to aggregation. Post-aggregation rows are the
	// group's first source row followed by the aggregate values.
	aggHook := func(a *ast.AggregateFuncExpr) (expr.Expr, error) {
		spec, err := compileAgg(a, srcCols, env)
		if err != nil {
			return nil, err
		}
		p.agg = true
		p.aggs = append(p.aggs, spec)
		return &expr.Column{Offset: p.width + len(p.aggs) - 1, Ft: spec.ft, Name: a.F}, nil
	}
	if s.GroupBy != nil {
		p.agg = true
		for _, item := range s.GroupBy.Items {
			if pos, ok := positionRef(item.Expr); ok {
				if pos < 1 || pos > len(s.Fields.Fields) || s.Fields.Fields[pos-1].WildCard != nil {
					return nil, errno.New(errno.ErrBadField, "Unknown column '%d' in 'group statement'", pos)
				}
				item = &ast.ByItem{Expr: s.Fields.Fields[pos-1].Expr}
			}
			g, err := compileByItem(item.Expr, s.Fields.Fields, srcCols, env, "group statement", nil)
			if err != nil {
				return nil, err
			}
			p.groupBy = append(p.groupBy, g)
		}
	}
	fieldCtx := &expr.Ctx{Columns: srcCols, Env: env, Clause: "field list", Agg: aggHook}
	for _, f := range s.Fields.Fields {
		if f.WildCard != nil {
			if p.src == nil {
				return nil, errno.New(1096, "No tables used")
			}
			if t := f.WildCard.Table.L; t != "" && t != p.src.alias {
				return nil, errno.New(errno.ErrBadTable, "Unknown table '%s'", f.WildCard.Table.O)
			}
			for i, c := range p.src.tbl.Columns {
				p.fields = append(p.fields, &expr.Column{Offset: i, Ft: c.Type, Name: c.Name})
				p.cols = append(p.cols, ResultColumn{DB: p.src.db.Name, Table: p.src.alias, OrgTable: p.src.tbl.Name, Name: c.Name, OrgName: c.Name, Type: c.Type})
			}
			continue
		}
		fe, err := expr.Compile(f.Expr, fieldCtx)
		if err != nil {
			return nil, err
		}
		p.fields = append(p.fields, fe)
		rc := ResultColumn{Name: f.AsName.O, Type: fe.Type()}
		if cn, ok := unparen(f.Expr).(*ast.ColumnNameExpr); ok && p.src != nil {
			if rc.Name == "" {
				rc.Name = cn.Name.Name.O
			}
			rc.DB, rc.Table, rc.OrgTable = p.src.db.Name, p.src.alias, p.src.tbl.Name
			if col, ok := fe.(*expr.Column); ok {
				rc.OrgName = col.Name
			}
		}
		if rc.Name == "" {
			rc.Name = fieldText(f)
		}
		p.cols = append(p.cols, rc)
	}
	if s.Having != nil {
		h, err := compileByItem(s.Having.Expr, s.Fields.Fields, srcCols, env, "having clause", aggHook)
		if err != nil {
			return nil, err
		}
		p.having = h
	}
	if s.OrderBy != nil {
		for _, item := range s.OrderBy.Items {
			var k expr.Expr
			if pos, ok := positionRef(item.Expr); ok {
				if pos < 1 || pos > len(p.fields) {
					return nil, errno.New(errno.ErrBadField, "Unknown column '%d' in 'order clause'", pos)
				}
				k = p.fields[pos-1]
			} else {
				var err error
				if k, err = compileByItem(item.Expr, s.Fields.Fields, srcCols, env, "order clause", aggHook); err != nil {
					return nil, err
				}
			}
			p.order = append(p.order, sortKey{e: k, desc: item.Desc})
		}
	}
	if p.having != nil && !p.agg {
		p.agg = true // HAVING without aggregates: one group over everything
	}
	if s.Limit != nil && !describe {
		var err error
		p.hasLimit = true
		if p.count, err = limitValue(s.Limit.Count, env); err != nil {
			return nil, err
		}
		if s.Limit.Offset != nil {
			if p.offset, err = limitValue(s.Limit.Offset, env); err != nil {
				return nil, err
			}
		}
	}
	// COUNT(*) over the whole table is pushed down.
	if p.src != nil && p.where == nil && len(p.groupBy) == 0 && p.having == nil && len(p.aggs) == 1 &&
		p.aggs[0].fn == ast.AggFuncCount && p.aggs[0].arg == nil && !p.aggs[0].distinct {
		p.countOnly = true
	}
	return p, nil
}

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

// compileByItem compiles a GROUP BY / HAVING / ORDER BY expression: a bare
// name matching a select-list alias refers to that field's expression.
func compileByItem(n ast.ExprNode, fields []*ast.SelectField, cols []expr.SchemaColumn, env expr.Env, clause string,
	agg func(*ast.AggregateFuncExpr) (expr.Expr, error)) (expr.Expr, error) {
	if cn, ok := unparen(n).(*ast.ColumnNameExpr); ok && cn.Name.Table.L == "" {
		for _, f := range fields {
			if f.AsName.L != "" && f.AsName.L == cn.Name.Name.L {
				return expr.Compile(f.Expr, &expr.Ctx{Columns: cols, Env: env, Clause: clause, Agg: agg})
			}
		}
	}
	return expr.Compile(n, &expr.Ctx{Columns: cols, Env: env, Clause: clause, Agg: agg})
}

func limitValue(n ast.ExprNode, env expr.Env) (uint64, error) {
	k, err := expr.Compile(n, &expr.Ctx{Env: env})
	if err != nil {
		return 0, err
	}
	d, err := k.Eval(nil)
	if err != nil {
		return 0, err
	}
	switch d.Kind() {
	case tablecodec.KindInt64:
		if d.Int64() >= 0 {
			return uint64(d.Int64()), nil
		}
	case tablecodec.KindUint64:
		return d.Uint64(), nil
	}
	return 0, errno.New(1210, "Incorrect arguments to LIMIT")
}

func compileAgg(a *ast.AggregateFuncExpr, cols []expr.SchemaColumn, env expr.Env) (aggSpec, error) {
	fn := strings.ToLower(a.F)
	spec := aggSpec{fn: fn, distinct: a.Distinct}
	switch fn {
	case ast.AggFuncCount, ast.AggFuncSum, ast.AggFuncAvg, ast.AggFuncMax, ast.AggFuncMin:
	default:
		return spec, errno.NotSupported("aggregate function " + strings.ToUpper(fn))
	}
	if len(a.Args) != 1 {
		return spec, errno.NotSupported(strings.ToUpper(fn) + " with several arguments")
	}
	argCtx := &expr.Ctx{Columns: cols, Env: env, Clause: "field list"}
	if fn == ast.AggFuncCount {
		spec.ft = types.Int64Type
		// COUNT(*) and COUNT(<non-null constant>) count rows.
		if k, err := expr.Compile(a.Args[0], argCtx); err == nil {
			if c, ok := k.(*expr.Constant); ok && !c.Value.IsNull() && !a.Distinct {
				return spec, nil
			}
			spec.arg = k
			return spec, nil
		} else {
			return spec, err
		}
	}
	arg, err := expr.Compile(a.Args[0], argCtx)
	if err != nil {
		return spec, err
	}
	spec.arg = arg
	switch fn {
	case ast.AggFuncSum:
		if arg.Type().Class() == types.ClassInt {
			spec.ft = types.DecimalType(41, 0)
		} else {
			spec.ft = types.DoubleType
		}
	case ast.AggFuncAvg:
		spec.ft = types.DoubleType
	default:
		spec.ft = arg.Type()
		spec.ft.Flag &^= mysql.NotNullFlag | mysql.PriKeyFlag | mysql.AutoIncrementFlag
	}
	return spec, nil
}

func (e *Executor) runSelect(ctx context.Context, p *selectPlan, tx TxnSource) (*Result, error) {
	var rows [][]datum
	if p.src == nil {
		rows = [][]datum{{}}
	} else {
		// An autocommit point get may read the newest committed version
		// (no TSO round trip): the leader serves it after a ReadIndex and
		// checks locks, so it sees every write acknowledged before the
		// statement began, exactly as a fresh start_ts would.
		txn, err := tx.Txn(ctx, p.point && !p.lock)
		if err != nil {
			return nil, err
		}
		if p.countOnly && !p.lock {
			n, err := e.countRows(ctx, tx, txn, p.src.tbl.ID)
			if err != nil {
				return nil, err
			}
			rows = [][]datum{make([]datum, p.width+1)}
			rows[0][p.width] = tablecodec.NewInt(n)
			return e.finish(p, rows)
		}
		if p.point {
			rows, err = e.pointGet(ctx, p.src, p.handle, txn)
		} else {
			limit := uint64(0)
			if p.hasLimit && p.where == nil && !p.agg && len(p.order) == 0 && !p.distinct {
				limit = p.offset + p.count
			}
			rows, err = e.scanRows(ctx, p.src, p.hr, tx, txn, limit)
		}
		if err != nil {
			return nil, err
		}
		if p.lock {
			if rows, err = e.lockSelected(ctx, p, tx, txn, rows); err != nil {
				return nil, err
			}
		}
	}
	if p.where != nil {
		var err error
		if rows, err = filterRows(p.where, rows); err != nil {
			return nil, err
		}
	}
	if p.agg {
		var err error
		if rows, err = p.aggregate(rows); err != nil {
			return nil, err
		}
	}
	return e.finish(p, rows)
}

// lockSelected locks the rows a SELECT ... FOR UPDATE read (a point get
// locks its key even when the snapshot has no row there, so a concurrent
// insert of it waits) and, in pessimistic mode, replaces them with their
// latest values: the statement then reads what it locked.
func (e *Executor) lockSelected(ctx context.Context, p *selectPlan, tx TxnSource, txn sql.Txn, rows [][]datum) ([][]datum, error) {
	var keys [][]byte
	if p.point {
		keys = [][]byte{tablecodec.RowKey(p.src.tbl.ID, p.handle)}
	} else {
		if p.where != nil {
			var err error
			if rows, err = filterRows(p.where, rows); err != nil {
				return nil, err
			}
		}
		keys = rowKeys(p.src, rows)
	}
	vals, pess, err := e.lockKeys(ctx, tx, txn, p.nowait, keys)
	if err != nil || !pess {
		return rows, err
	}
	return decodeLatest(p.src, keys, vals)
}

// rowKeys returns the record keys of rows read from src.
func rowKeys(src *source, rows [][]datum) [][]byte {
	hOff := len(src.tbl.Columns)
	keys := make([][]byte, len(rows))
	for i, r := range rows {
		keys[i] = tablecodec.RowKey(src.tbl.ID, r[hOff].Int64())
	}
	return keys
}

// decodeLatest decodes the values LockKeys returned (nil: the row is gone).
func decodeLatest(src *source, keys, vals [][]byte) ([][]datum, error) {
	w := src.tbl.RowWidth()
	out := make([][]datum, 0, len(keys))
	for i, v := range vals {
		if v == nil {
			continue
		}
		row := make([]datum, w)
		if err := src.tbl.DecodeRow(keys[i], v, row); err != nil {
			return nil, fmt.Errorf("decode row of %s: %w", src.tbl.Name, err)
		}
		out = append(out, row)
	}
	return out, nil
}

func filterRows(w expr.Expr, rows [][]datum) ([][]datum, error) {
	kept := rows[:0]
	for _, r := range rows {
		ok, err := cond(w, r)
		if err != nil {
			return nil, err
		}
		if ok {
			kept = append(kept, r)
		}
	}
	return kept, nil
}

func cond(e expr.Expr, row []datum) (bool, error) {
	d, err := e.Eval(row)
	if err != nil {
		return false, err
	}
	t, null := expr.IsTrue(d)
	return t && !null, nil
}

// finish applies HAVING, ORDER BY, projection, DISTINCT and LIMIT.
func (e *Executor) finish(p *selectPlan, rows [][]datum) (*Result, error) {
	if p.having != nil {
		kept := rows[:0]
		for _, r := range rows {
			ok, err := cond(p.having, r)
			if err != nil {
				return nil, err
			}
			if ok {
				kept = append(kept, r)
			}
		}
		rows = kept
	}
	if len(p.order) > 0 && len(rows) > 1 {
		type keyed struct {
			row  []datum
			keys []datum
		}
		ks := make([]keyed, len(rows))
		keySlab := make([]datum, len(rows)*len(p.order))
		for i, r := range rows {
			ks[i].row, ks[i].keys = r, keySlab[i*len(p.order):(i+1)*len(p.order)]
			for j, o := range p.order {
				v, err := o.e.Eval(r)
				if err != nil {
					return nil, err
				}
				ks[i].keys[j] = v
			}
		}
		byBytes := make([]bool, len(p.order))
		for j, o := range p.order {
			c := o.e.Type().Class()
			byBytes[j] = c == types.ClassString || c == types.ClassTime
		}
		slices.SortStableFunc(ks, func(a, b keyed) int {
			for j, o := range p.order {
				x, y := a.keys[j], b.keys[j]
				var c int
				switch {
				case x.IsNull() && y.IsNull():
				case x.IsNull():
					c = -1
				case y.IsNull():
					c = 1
				default:
					c = expr.Compare(x, y, byBytes[j])
				}
				if o.desc {
					c = -c
				}
				if c != 0 {
					return c
				}
			}
			return 0
		})
		for i := range ks {
			rows[i] = ks[i].row
		}
	}
	// Without DISTINCT the limit applies before projection (less work).
	if !p.distinct && p.hasLimit {
		rows = applyLimit(rows, p.offset, p.count)
	}
	nf := len(p.fields)
	out := make([][]datum, 0, len(rows))
	slab := make([]datum, len(rows)*nf)
	var seen map[string]struct{}
	var keyBuf []byte
	if p.distinct {
		seen = make(map[string]struct{}, len(rows))
	}
	for i, r := range rows {
		o := slab[i*nf : (i+1)*nf : (i+1)*nf]
		for j, f := range p.fields {
			v, err := f.Eval(r)
			if err != nil {
				return nil, err
			}
			o[j] = v
		}
		if seen != nil {
			keyBuf = rowKey(keyBuf[:0], o)
			if _, dup := seen[string(keyBuf)]; dup {
				continue
			}
			seen[string(keyBuf)] = struct{}{}
		}
		out = append(out, o)
	}
	if p.distinct && p.hasLimit {
		out = applyLimit(out, p.offset, p.count)
	}
	return &Result{Columns: p.cols, Rows: out}, nil
}

func applyLimit(rows [][]datum, offset, count uint64) [][]datum {
	if offset >= uint64(len(rows)) {
		return rows[:0]
	}
	rows = rows[offset:]
	if count < uint64(len(rows)) {
		rows = rows[:count]
	}
	return rows
}

// rowKey encodes values for grouping / DISTINCT (NULL distinct from "").
func rowKey(b []byte, vals []datum) []byte {
	for _, v := range vals {
		if v.IsNull() {
			b = append(b, 0)
			continue
		}
		switch v.Kind() {
		case tablecodec.KindInt64, tablecodec.KindUint64, tablecodec.KindFloat64:
			b = append(b, 1)
			f, _ := types.ToFloat(v)
			if v.Kind() != tablecodec.KindFloat64 && (f > 1<<53 || f < -(1<<53)) {
				b = types.AppendText(b, v, nil)
			} else {
				b = types.AppendFloat(b, f, 64)
			}
		default:
			b = append(b, 2)
			b = append(b, v.Bytes()...)
		}
		b = append(b, 0xFF, 0)
	}
	return b
}

func (e *Executor) pointGet(ctx context.Context, src *source, handle int64, txn sql.Txn) ([][]datum, error) {
	key := tablecodec.RowKey(src.tbl.ID, handle)
	val, found, err := txn.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, nil
	}
	row := make([]datum, src.tbl.RowWidth())
	if err := src.tbl.DecodeRow(key, val, row); err != nil {
		return nil, fmt.Errorf("decode row of %s: %w", src.tbl.Name, err)
	}
	return [][]datum{row}, nil
}

// scanRows reads the rows of src in hr: through the coprocessor at the
// transaction's start_ts, or through the transaction itself when it has
// written there (the coprocessor cannot see its buffer) or reads a fresh
// snapshot per statement.
func (e *Executor) scanRows(ctx context.Context, src *source, hr handleRange, tx TxnSource, txn sql.Txn, limit uint64) ([][]datum, error) {
	if hr.empty() {
		return nil, nil
	}
	start, end := hr.keys(src.tbl.ID)
	if readDirect(tx, txn, start, end) {
		return e.scanDirect(ctx, src, txn, start, end, limit)
	}
	dag := &coprocessorpb.DAGRequest{Executors: []*coprocessorpb.Executor{{
		Tp: coprocessorpb.ExecType_TypeTableScan, TblScan: &coprocessorpb.TableScan{TableId: src.tbl.ID},
	}}}
	if limit > 0 {
		dag.Executors = append(dag.Executors, &coprocessorpb.Executor{Tp: coprocessorpb.ExecType_TypeLimit, Limit: &coprocessorpb.Limit{Limit: limit}})
	}
	resps, err := e.Store.Coprocessor(ctx, dag, []*kvrpcpb.KeyRange{{Start: start, End: end}}, txn.StartTS())
	if err != nil {
		return nil, err
	}
	n := 0
	for _, r := range resps {
		n += len(r.Rows)
	}
	if limit > 0 && uint64(n) > limit {
		n = int(limit)
	}
	w := src.tbl.RowWidth()
	slab := make([]datum, n*w)
	rows := make([][]datum, 0, n)
	for _, r := range resps {
		for _, kv := range r.Rows {
			if len(rows) == n {
				break
			}
			row := slab[len(rows)*w : (len(rows)+1)*w : (len(rows)+1)*w]
			if err := src.tbl.DecodeRow(kv.Key, kv.Value, row); err != nil {
				return nil, fmt.Errorf("decode row of %s: %w", src.tbl.Name, err)
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}
