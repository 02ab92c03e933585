package planner

import (
	"math"
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
)

const (
	taskRoot = "root"
	taskCop  = "cop[tikv]"

	// TiDB's pseudo statistics (pkg/statistics/pseudo.go).
	pseudoRowCount    = 10000.0
	pseudoEqualRate   = 1000.0
	pseudoLessRate    = 3.0
	pseudoBetweenRate = 40.0
	selectionFactor   = 0.8

	// Costs per row read: a table row, an index entry, and the row get an
	// index lookup adds per entry (a second, random read).
	costTableRow  = 1.0
	costIndexRow  = 0.5
	costLookupRow = 1.5
	costSortRow   = 0.5
	// costIndexCol prefers, between equal ranges, the index with fewer
	// columns (smaller entries).
	costIndexCol = 0.01
)

// physical builds the physical plan of lg.
func (b *builder) physical(lg *logical) (Plan, error) {
	var p Plan
	ordered := false
	switch {
	case lg.src == nil:
		p = &TableDual{BasePlan: b.base("TableDual", 1, taskRoot), Rows: 1}
	case lg.dual:
		p = &TableDual{BasePlan: b.base("TableDual", 0, taskRoot), Width: lg.width}
	case lg.src.Join != nil:
		var err error
		if p, err = b.joinPhysical(lg); err != nil {
			return nil, err
		}
		lg.access = p
	case lg.src.Sub != nil:
		if lg.lock {
			return nil, errno.NotSupported("locking reads of a derived table")
		}
		p = &SubqueryScan{BasePlan: b.base("SubqueryScan", lg.src.Sub.Root.Base().EstRows, taskRoot, lg.src.Sub.Root), Src: lg.src}
		b.renumber(lg.src.Sub.Root)
		lg.access = p
		if len(lg.condE) > 0 {
			p = &Selection{BasePlan: b.base("Selection", p.Base().EstRows*selectionFactor, taskRoot, p), Conds: lg.condE, exprNodes: exprNodes{Src: lg.src, Nodes: lg.conds}}
		}
	case lg.src.Mem != nil:
		if lg.lock {
			return nil, ErrReadOnlySystemTable(b.env.User(), lg.src)
		}
		p = &MemTableScan{BasePlan: b.base("MemTableScan", pseudoRowCount, taskRoot), Src: lg.src, Env: baseEnv(b.env)}
		lg.access = p
		if len(lg.condE) > 0 {
			p = &Selection{BasePlan: b.base("Selection", pseudoRowCount*selectionFactor, taskRoot, p), Conds: lg.condE, exprNodes: exprNodes{Src: lg.src, Nodes: lg.conds}}
		}
	case lg.countOnly():
		scan := &TableScan{BasePlan: b.base("TableFullScan", pseudoRowCount, taskCop), Src: lg.src, Full: true, Ranges: []HandleRange{FullHandleRange}, CountOnly: true}
		cop := &HashAgg{BasePlan: b.base("HashAgg", 1, taskCop, scan), Aggs: []AggSpec{{Fn: ast.AggFuncCount}}}
		reader := &TableReader{BasePlan: b.base("TableReader", 1, taskRoot, cop), Scan: scan}
		root := &HashAgg{BasePlan: b.base("HashAgg", 1, taskRoot, reader), Aggs: lg.aggs, Width: lg.width, PushedCount: true}
		lg.access = reader
		return b.finish(lg, root, false)
	default:
		var req *orderReq
		if !lg.agg && len(lg.wins) == 0 {
			req = lg.orderReq()
		}
		// The access path may stop after limit rows only when no sort
		// comes between it and the LIMIT: no ORDER BY, or one a path can
		// provide (req; a path that does not provide it keeps its rows).
		limit := uint64(0)
		if lg.hasLimit && !lg.agg && !lg.distinct && len(lg.wins) == 0 && (len(lg.order) == 0 || req != nil) {
			limit = SatAdd(lg.offset, lg.count)
		}
		ap, err := b.bestAccess(lg.src, lg.conds, lg.condE, columnNeeds{s: lg.stmt, src: lg.src}, req, limit)
		if err != nil {
			return nil, err
		}
		p, ordered = ap.plan, ap.ordered
		lg.access = p
		if len(ap.residual) > 0 {
			b.pushSelection(p, lg, ap, req, limit)
		}
		if len(ap.residual) > 0 {
			sel := &Selection{BasePlan: b.base("Selection", ap.filteredRows, taskRoot, p), exprNodes: exprNodes{Src: lg.src}}
			for _, i := range ap.residual {
				sel.Conds = append(sel.Conds, lg.condE[i])
				sel.Nodes = append(sel.Nodes, lg.conds[i])
			}
			p = sel
		}
		if lg.lock {
			sl := b.selectLock(p, lg.access, lg.src, lg.where, lg.nowait)
			if limit > 0 && (len(lg.order) == 0 || ordered) && lg.having == nil {
				sl.Limit = limit
			}
			p = sl
		}
	}
	if lg.agg {
		est := 1.0
		if len(lg.groupBy) > 0 {
			est = math.Max(1, p.Base().EstRows*selectionFactor)
		}
		if r, ok := p.(*TableReader); ok && len(lg.rollup) == 0 && b.pushAgg(r, lg, est) {
			root := &HashAgg{BasePlan: b.base("HashAgg", est, taskRoot, r), GroupBy: lg.groupBy, Aggs: lg.aggs, Width: lg.width,
				PushedPartial: true, FirstRow: r.FirstRow, exprNodes: exprNodes{Src: lg.src, Nodes: lg.groupTx}}
			return b.finish(lg, root, false)
		}
		p = &HashAgg{BasePlan: b.base("HashAgg", est, taskRoot, p), GroupBy: lg.groupBy, Aggs: lg.aggs, Width: lg.width, exprNodes: exprNodes{Src: lg.src, Nodes: lg.groupTx}, Rollup: lg.rollup}
	}
	return b.finish(lg, p, ordered)
}

// selectLock locks the rows p reads of src through access (re-checked
// against where); a point get's key is locked even when no row has it.
func (b *builder) selectLock(p, access Plan, src *Source, where expr.Expr, nowait bool) *SelectLock {
	sl := &SelectLock{BasePlan: b.base("SelectLock", p.Base().EstRows, taskRoot, p), Src: src, Where: where, NoWait: nowait}
	if pg, ok := access.(*PointGet); ok && pg.ReadsRowKey() {
		sl.PointRow = pg // a cached plan's rebuild moves both
	} else if ok {
		sl.PointIndex = pg
	}
	return sl
}

// finish adds HAVING, ORDER BY, LIMIT, the projection and DISTINCT.
func (b *builder) finish(lg *logical, p Plan, ordered bool) (Plan, error) {
	if lg.having != nil {
		p = &Selection{BasePlan: b.base("Selection", p.Base().EstRows*selectionFactor, taskRoot, p), Conds: []expr.Expr{lg.having}, exprNodes: exprNodes{Src: lg.src, Nodes: []ast.ExprNode{lg.havingTx}}}
	}
	if len(lg.wins) > 0 {
		p, ordered = b.windows(lg, p), false
	}
	est := p.Base().EstRows
	limited := func() float64 { return math.Min(est, float64(lg.count)) }
	if len(lg.order) > 0 && !ordered {
		if lg.hasLimit && !lg.distinct {
			switch r := p.(type) {
			case *TableReader:
				b.pushTopN(r, lg)
			case *IndexReader:
				b.pushIndexTopN(r, lg)
			}
			p = &TopN{BasePlan: b.base("TopN", limited(), taskRoot, p), Keys: lg.order, Offset: lg.offset, Count: lg.count, Src: lg.src}
		} else {
			p = &Sort{BasePlan: b.base("Sort", est, taskRoot, p), Keys: lg.order, Src: lg.src}
		}
	} else if lg.hasLimit && !lg.distinct {
		p = &Limit{BasePlan: b.base("Limit", limited(), taskRoot, p), Offset: lg.offset, Count: lg.count}
	}
	p = &Projection{BasePlan: b.base("Projection", p.Base().EstRows, taskRoot, p), Exprs: lg.fields, exprNodes: exprNodes{Src: lg.src, Nodes: lg.fieldTx}}
	if lg.distinct {
		p = &Distinct{BasePlan: b.base("HashAgg", p.Base().EstRows*selectionFactor, taskRoot, p), exprNodes: exprNodes{Src: lg.src, Nodes: lg.fieldTx}}
		if lg.hasLimit {
			est = p.Base().EstRows
			p = &Limit{BasePlan: b.base("Limit", limited(), taskRoot, p), Offset: lg.offset, Count: lg.count}
		}
	}
	return p, nil
}

// countOnly: COUNT(*) over the whole table, counted by the stores.
func (lg *logical) countOnly() bool {
	return lg.src != nil && len(lg.conds) == 0 && !lg.lock && len(lg.groupBy) == 0 && lg.having == nil &&
		len(lg.aggs) == 1 && lg.aggs[0].Fn == ast.AggFuncCount && lg.aggs[0].Arg == nil && !lg.aggs[0].Distinct
}

// orderReq is the order a data source may provide so that no Sort is
// needed: ORDER BY on plain columns, all in one direction.
type orderReq struct {
	cols []int
	desc bool
}

func (lg *logical) orderReq() *orderReq {
	if len(lg.order) == 0 {
		return nil
	}
	r := &orderReq{desc: lg.order[0].Desc}
	for i, k := range lg.order {
		if lg.orderOff[i] < 0 || k.Desc != r.desc {
			return nil
		}
		r.cols = append(r.cols, lg.orderOff[i])
	}
	return r
}

// accessPath is a candidate way to read the data source.
type accessPath struct {
	plan         Plan
	cost         float64
	ordered      bool
	residual     []int // conditions left for a Selection
	filteredRows float64
}

// hintSet is the effect of USE / FORCE / IGNORE INDEX.
type hintSet struct {
	restricted bool            // USE or FORCE named the candidates
	allowed    map[string]bool // lower-case index names; "primary" is the table path
	forced     bool
	ignored    map[string]bool
}

func (h *hintSet) tableAllowed() bool {
	if h.ignored["primary"] {
		return false
	}
	return !h.forced || h.allowed["primary"]
}

func (h *hintSet) indexAllowed(name string) bool {
	n := strings.ToLower(name)
	if h.ignored[n] {
		return false
	}
	return !h.restricted || h.allowed[n]
}

// noHints is the hint set of a table without hints (read only).
var noHints = &hintSet{}

func hints(src *Source) (*hintSet, error) {
	if len(src.Hints) == 0 {
		return noHints, nil
	}
	h := &hintSet{allowed: map[string]bool{}, ignored: map[string]bool{}}
	for _, hint := range src.Hints {
		for _, n := range hint.IndexNames {
			if n.L != "primary" {
				if ix := src.Table.FindIndex(n.O); ix == nil || !ix.Public() {
					return nil, errno.New(1176, "Key '%s' doesn't exist in table '%s'", n.O, src.Table.Name)
				}
			}
			switch hint.HintType {
			case ast.HintUse, ast.HintForce:
				h.allowed[n.L] = true
			case ast.HintIgnore:
				h.ignored[n.L] = true
			}
		}
		switch hint.HintType {
		case ast.HintUse:
			h.restricted = true
		case ast.HintForce:
			h.restricted, h.forced = true, true
		}
	}
	return h, nil
}

// bestAccess chooses how to read src for conds (the conjuncts of WHERE,
// compiled in condE), needing the columns needed, in order req when not
// nil, of which the first limit rows are wanted (0: all).
func (b *builder) bestAccess(src *Source, conds []ast.ExprNode, condE []expr.Expr, needed columnNeeds, req *orderReq, limit uint64) (*accessPath, error) {
	rg := &ranger{src: src, env: b.env}
	if len(src.Hints) == 0 {
		if ap := b.fastPoint(rg, src, conds); ap != nil {
			return ap, nil
		}
	}
	h, err := hints(src)
	if err != nil {
		return nil, err
	}
	var best *accessPath
	var neededCols []bool
	consider := func(ap *accessPath) {
		if best == nil || ap.cost < best.cost {
			best = ap
		}
	}
	if h.tableAllowed() {
		ap := b.tablePath(rg, src, conds, req, limit)
		if _, point := ap.plan.(*PointGet); point {
			return ap, nil
		}
		if _, batch := ap.plan.(*BatchPointGet); batch {
			return ap, nil
		}
		if _, dual := ap.plan.(*TableDual); dual {
			return ap, nil
		}
		consider(ap)
	}
	for _, ix := range src.Table.Indices {
		if !ix.Public() || !h.indexAllowed(ix.Name) {
			continue
		}
		forced := h.restricted && h.allowed[strings.ToLower(ix.Name)]
		if neededCols == nil {
			neededCols = needed.get()
		}
		ap := b.indexPath(rg, src, ix, conds, neededCols, req, limit, forced)
		if ap == nil {
			continue
		}
		switch ap.plan.(type) {
		case *PointGet, *BatchPointGet, *TableDual:
			return ap, nil
		}
		consider(ap)
	}
	if best == nil { // every path hinted away: scan the whole table
		best = b.fullScan(src, conds, req, limit)
	}
	// Ids in plan order: the chosen path was built last for EXPLAIN.
	return best, nil
}

// fastPoint plans `handle = constant`, the only condition, as a PointGet
// without building ranges (TiDB's fast plan for point gets).
func (b *builder) fastPoint(rg *ranger, src *Source, conds []ast.ExprNode) *accessPath {
	if len(conds) != 1 {
		return nil
	}
	x, ok := conds[0].(*ast.BinaryOperationExpr)
	if !ok || x.Op != opcode.EQ {
		return nil
	}
	hOff := src.HandleOffset()
	other := x.R
	if !rg.isColumn(x.L, hOff) {
		if !rg.isColumn(x.R, hOff) {
			return nil
		}
		other = x.L
	}
	v, _, ok := rg.constant(other)
	if !ok {
		return nil
	}
	h, ok := handleOf(src, v)
	if !ok {
		return nil
	}
	pg := &PointGet{BasePlan: b.base("Point_Get", 1, taskRoot), Src: src, Handle: h}
	if b.caching {
		pg.rebuild = &rangeSpec{src: src, conds: slices.Clone(conds), fast: true}
	}
	return &accessPath{plan: pg, cost: 1, filteredRows: 1}
}

// residualOf returns the conditions not represented by access.
func residualOf(access []bool) []int {
	var out []int
	for i, a := range access {
		if !a {
			out = append(out, i)
		}
	}
	return out
}

// condRate is a pseudo selectivity of one condition.
func condRate(c ast.ExprNode) float64 {
	switch x := unparen(c).(type) {
	case *ast.BinaryOperationExpr:
		switch x.Op {
		case opcode.EQ, opcode.NullEQ:
			return 1 / pseudoEqualRate
		case opcode.LT, opcode.LE, opcode.GT, opcode.GE:
			return 1 / pseudoLessRate
		}
	case *ast.BetweenExpr:
		if !x.Not {
			return 1 / pseudoBetweenRate
		}
	case *ast.PatternInExpr:
		if !x.Not {
			return math.Min(1, float64(len(x.List))/pseudoEqualRate)
		}
	case *ast.IsNullExpr:
		if !x.Not {
			return 1 / pseudoEqualRate
		}
	}
	return selectionFactor
}

func (b *builder) filtered(src *Source, rows float64, conds []ast.ExprNode, residual []int) float64 {
	for _, i := range residual {
		rows *= condSel(src, conds[i], b.env)
	}
	return rows
}

func hasNull(vals []types.Datum) bool {
	for _, v := range vals {
		if v.IsNull() {
			return true
		}
	}
	return false
}

// orderCost adjusts a path's cost for the order and limit wanted.
func orderCost(cost, rows, filteredRows float64, ordered bool, req *orderReq, limit uint64) float64 {
	if req != nil && !ordered {
		return cost + rows*costSortRow
	}
	if limit > 0 && filteredRows > 0 && (req == nil || ordered) {
		frac := float64(limit) / filteredRows
		if frac < 1 {
			return cost * frac
		}
	}
	return cost
}

func (b *builder) tablePath(rg *ranger, src *Source, conds []ast.ExprNode, req *orderReq, limit uint64) *accessPath {
	hOff := src.HandleOffset()
	d := rg.detach(conds, []int{hOff})
	ap := b.tableAccess(src, d, conds, req, limit)
	if b.caching {
		spec := &rangeSpec{src: src, conds: slices.Clone(conds), d: d}
		switch p := ap.plan.(type) {
		case *TableDual:
			p.rebuild = spec
		case *PointGet:
			p.rebuild = spec
		case *BatchPointGet:
			p.rebuild = spec
		case *TableReader:
			p.Scan.rebuild = spec
		}
	}
	return ap
}

// tableAccess is the path tablePath builds from the handle's ranges d.
func (b *builder) tableAccess(src *Source, d detached, conds []ast.ExprNode, req *orderReq, limit uint64) *accessPath {
	residual := residualOf(d.access)
	switch shape, handles := handleShape(src, d); shape {
	case shapeDual:
		return &accessPath{plan: &TableDual{BasePlan: b.base("TableDual", 0, taskRoot), Width: len(src.Cols)}, residual: residual}
	case shapePoint:
		return &accessPath{plan: &PointGet{BasePlan: b.base("Point_Get", 1, taskRoot), Src: src, Handle: handles[0]},
			residual: residual, filteredRows: b.filtered(src, 1, conds, residual), cost: 1}
	case shapeBatch:
		return &accessPath{plan: &BatchPointGet{BasePlan: b.base("Batch_Point_Get", float64(len(handles)), taskRoot), Src: src, Handles: handles},
			residual: residual, filteredRows: b.filtered(src, float64(len(handles)), conds, residual), cost: float64(len(handles))}
	case shapeFull:
		return b.fullScan(src, conds, req, limit)
	}
	hOff := src.HandleOffset()
	return b.tableReader(src, handleRanges(d.ranges), rangeRows(src, []int{hOff}, nil, d.ranges, false), conds, residual, req, limit)
}

// accessShape is the kind of plan an access path's ranges make: its
// shape holds for other parameter values only when the ranges they make
// have the same shape (rebuild).
type accessShape int8

const (
	shapeRanges accessShape = iota // a range scan
	shapeFull                      // a full scan
	shapeDual                      // no row can match
	shapePoint                     // one key
	shapeBatch                     // several keys
)

// handleShape is the shape of the handle ranges d, with the handles of a
// point or batch (ascending and distinct for a batch).
func handleShape(src *Source, d detached) (accessShape, []int64) {
	if d.usedCols > 0 && len(d.ranges) == 0 {
		return shapeDual, nil
	}
	if d.usedCols > 0 && d.eqCols == 1 {
		handles := make([]int64, 0, len(d.ranges))
		for _, r := range d.ranges {
			if r.Low[0].IsNull() {
				continue // IS NULL: handles never are
			}
			handles = append(handles, r.Low[0].Int64()) // uint64 handles are stored as their bits
		}
		switch len(handles) {
		case 0:
			return shapeDual, nil
		case 1:
			return shapePoint, handles
		}
		slices.Sort(handles)
		return shapeBatch, slices.Compact(handles)
	}
	if d.usedCols == 0 || src.Cols[src.HandleOffset()].Type.Unsigned() { // unsigned handles: key order is not value order
		return shapeFull, nil
	}
	return shapeRanges, nil
}

// indexShape is the shape of the ranges d of index ix (on cols), with the
// values of a point or batch.
func indexShape(ix *model.IndexInfo, cols []int, d detached) (accessShape, [][]types.Datum) {
	if d.usedCols > 0 && len(d.ranges) == 0 {
		return shapeDual, nil
	}
	if ix.Unique && d.usedCols > 0 && d.eqCols == len(cols) {
		pointRows := make([][]types.Datum, 0, len(d.ranges))
		for _, r := range d.ranges {
			if !hasNull(r.Low) {
				pointRows = append(pointRows, r.Low)
			}
		}
		if len(pointRows) == len(d.ranges) {
			if len(pointRows) == 1 {
				return shapePoint, pointRows
			}
			return shapeBatch, pointRows
		}
	}
	return shapeRanges, nil
}

// fullScan reads the whole table, every condition a filter.
func (b *builder) fullScan(src *Source, conds []ast.ExprNode, req *orderReq, limit uint64) *accessPath {
	return b.tableReader(src, nil, tableRows(src), conds, residualOf(make([]bool, len(conds))), req, limit)
}

// tableReader reads handle ranges (nil: the whole table).
func (b *builder) tableReader(src *Source, ranges []HandleRange, rows float64, conds []ast.ExprNode, residual []int, req *orderReq, limit uint64) *accessPath {
	hOff := src.HandleOffset()
	unsigned := src.Cols[hOff].Type.Unsigned()
	scan := &TableScan{Src: src, Ranges: ranges, Full: ranges == nil}
	if scan.Full {
		scan.Ranges = []HandleRange{FullHandleRange}
	}
	if req != nil && len(req.cols) == 1 && req.cols[0] == hOff && !unsigned {
		scan.KeepOrder, scan.Desc = true, req.desc
	}
	return b.readerPath(scan, rows, conds, residual, req, limit)
}

// readerPath is the TableReader path over scan (its ranges and order
// set), which yields rows rows.
func (b *builder) readerPath(scan *TableScan, rows float64, conds []ast.ExprNode, residual []int, req *orderReq, limit uint64) *accessPath {
	if len(residual) == 0 && limit > 0 && (req == nil || scan.KeepOrder) {
		scan.Limit = limit
	}
	tp := "TableRangeScan"
	if scan.Full {
		tp = "TableFullScan"
	}
	scan.BasePlan = b.base(tp, rows, taskCop)
	reader := &TableReader{BasePlan: b.base("TableReader", rows, taskRoot, scan), Scan: scan}
	fr := b.filtered(scan.Src, rows, conds, residual)
	cost := orderCost(rows*costTableRow, rows, fr, scan.KeepOrder, req, limit)
	return &accessPath{plan: reader, cost: cost, ordered: scan.KeepOrder, residual: residual, filteredRows: fr}
}

// sortable reports whether index order on the column is the order ORDER BY
// compares it in.
// sortable reports whether an index's key order is the column's ORDER BY
// order (not for ENUM, which sorts by member position).
func sortable(ft types.FieldType) bool { return ft.Tp != mysql.TypeEnum && domainOf(ft) != domainNone }

func (b *builder) indexPath(rg *ranger, src *Source, ix *model.IndexInfo, conds []ast.ExprNode, needed []bool, req *orderReq, limit uint64, forced bool) *accessPath {
	cols := make([]int, len(ix.Columns))
	for i, c := range ix.Columns {
		cols[i] = c.Offset
	}
	d := rg.detachIndex(conds, cols, ix)
	residual := residualOf(d.access)
	ordered := false
	desc := false
	if req != nil {
		// A prefix key part orders only the prefixes: the index gives
		// the order of the columns before it.
		ocols := cols
		for i, c := range ix.Columns {
			if c.Length > 0 {
				ocols = cols[:i]
				break
			}
		}
		ordered, desc = indexOrdered(req, ocols, d, src)
	}
	if d.usedCols == 0 && !forced && !ordered {
		return nil
	}
	var spec *rangeSpec
	if b.caching {
		spec = &rangeSpec{src: src, conds: slices.Clone(conds), index: ix, cols: cols, d: d, req: req, ordered: ordered}
	}
	shape, pointRows := indexShape(ix, cols, d)
	switch shape {
	case shapeDual:
		return &accessPath{plan: &TableDual{BasePlan: b.base("TableDual", 0, taskRoot), Width: len(src.Cols), rebuild: spec}, residual: residual}
	case shapePoint, shapeBatch:
		fr := b.filtered(src, float64(len(pointRows)), conds, residual)
		if shape == shapePoint {
			return &accessPath{plan: &PointGet{BasePlan: b.base("Point_Get", 1, taskRoot), Src: src, Index: ix, Values: pointRows[0], rebuild: spec},
				residual: residual, filteredRows: fr, cost: 1.5}
		}
		return &accessPath{plan: &BatchPointGet{BasePlan: b.base("Batch_Point_Get", float64(len(pointRows)), taskRoot), Src: src, Index: ix, Values: pointRows, rebuild: spec},
			residual: residual, filteredRows: fr, cost: 1.5 * float64(len(pointRows))}
	}
	if src.Table.Clustered(ix) {
		return b.pkReader(src, ix, cols, d, conds, residual, req, limit, ordered, desc, spec)
	}
	if d.usedCols == 0 {
		d.ranges = []Range{{}}
	}
	rows := rangeRows(src, cols, ix, d.ranges, ix.Unique)
	if d.usedCols == 0 {
		rows = tableRows(src)
	}
	tp := "IndexRangeScan"
	scan := &IndexScan{Src: src, Index: ix, Ranges: d.ranges, KeepOrder: ordered, Desc: desc, rebuild: spec}
	if len(residual) == 0 && limit > 0 && (req == nil || ordered) {
		scan.Limit = limit
	}
	if scan.Full() {
		tp = "IndexFullScan"
	}
	covering := true
	inIndex := make([]bool, len(src.Cols))
	for i, c := range cols {
		// An index of a column of a non-binary collation holds its sort
		// key, not its value, and a prefix key part a prefix: neither
		// can give the value back.
		inIndex[c] = expr.Collation(src.Cols[c].Type) == nil && ix.Columns[i].Length == 0
	}
	inIndex[len(src.Table.Columns)] = true // the handle
	for off := range src.Table.Columns {
		inIndex[off] = inIndex[off] || src.Table.HandleRestores(off)
	}
	for i, n := range needed {
		if n && !inIndex[i] {
			covering = false
		}
	}
	fr := b.filtered(src, rows, conds, residual)
	var p Plan
	var cost float64
	if covering {
		scan.BasePlan = b.base(tp, rows, taskCop)
		p = &IndexReader{BasePlan: b.base("IndexReader", rows, taskRoot, scan), Scan: scan}
		cost = rows * (costIndexRow + costIndexCol*float64(len(cols)))
	} else {
		scan.BasePlan = b.base(tp, rows, taskCop)
		scan.Label = "Build"
		tbl := &TableRowIDScan{BasePlan: b.base("TableRowIDScan", rows, taskCop), Src: src}
		tbl.Label = "Probe"
		il := &IndexLookUp{Index: scan, Table: tbl, Pushed: b.lookupPushdown(src, ix)}
		if il.Pushed {
			cop := &CopIndexLookUp{BasePlan: b.base("IndexLookUp", rows, taskCop, scan, tbl)}
			il.BasePlan = b.base("IndexLookUp", rows, taskRoot, cop)
		} else {
			il.BasePlan = b.base("IndexLookUp", rows, taskRoot, scan, tbl)
		}
		p = il
		cost = rows * (costIndexRow + costIndexCol*float64(len(cols)) + costLookupRow)
	}
	cost = orderCost(cost, rows, fr, ordered, req, limit)
	return &accessPath{plan: p, cost: cost, ordered: ordered, residual: residual, filteredRows: fr}
}

// pkReader reads the rows of a clustered PRIMARY KEY's ranges d (over
// cols) directly: its entries are the rows, so a range scan of the key is
// a range scan of the table, which covers every column.
func (b *builder) pkReader(src *Source, ix *model.IndexInfo, cols []int, d detached, conds []ast.ExprNode, residual []int, req *orderReq, limit uint64, ordered, desc bool, spec *rangeSpec) *accessPath {
	scan := &TableScan{Src: src, Full: d.usedCols == 0, KeepOrder: ordered, Desc: desc, rebuild: spec}
	rows := tableRows(src)
	if scan.Full {
		scan.Ranges = []HandleRange{FullHandleRange}
	} else {
		scan.PKRanges = d.ranges
		rows = rangeRows(src, cols, ix, d.ranges, true)
	}
	return b.readerPath(scan, rows, conds, residual, req, limit)
}

// indexOrdered reports whether reading ranges of an index on cols yields
// rows in the order req wants (and whether backwards).
func indexOrdered(req *orderReq, cols []int, d detached, src *Source) (bool, bool) {
	for _, c := range req.cols {
		if !sortable(src.Cols[c].Type) {
			return false, false
		}
	}
	for j := 0; j <= d.eqCols && j < len(cols); j++ {
		if j > 0 && len(d.ranges) > 1 {
			break // several values of the leading columns: not one order
		}
		if j+len(req.cols) > len(cols) {
			break
		}
		match := true
		for i, c := range req.cols {
			if cols[j+i] != c {
				match = false
				break
			}
		}
		if match {
			return true, req.desc
		}
	}
	return false, false
}

// ScanPlan is the plan of the rows an UPDATE or DELETE reads.
type ScanPlan struct {
	Root  Plan // reader, with a Selection of the conditions it does not apply
	Where expr.Expr
	// PointRow: the plan reads one row key (PointGet.RowKey, locked even
	// when no row exists).
	PointRow *PointGet
}

// PlanScan plans the read of an UPDATE or DELETE of src filtered by where
// (nil: every row), in the order of order and limited by limit when given.
func (pl *Planner) PlanScan(src *Source, where ast.ExprNode, order *ast.OrderByClause, limit *ast.Limit, env expr.Env) (*ScanPlan, error) {
	lg := &logical{src: src, width: len(src.Cols), needW: true}
	if where != nil {
		if err := lg.addWhere(where, env); err != nil {
			return nil, err
		}
	}
	if order != nil {
		for _, item := range order.Items {
			if _, ok := positionRef(item.Expr); ok {
				return nil, errno.NotSupported("a position in the ORDER BY of UPDATE or DELETE")
			}
			k, err := expr.Compile(item.Expr, &expr.Ctx{Columns: src.Cols, Env: env, Clause: "order clause"})
			if err != nil {
				return nil, err
			}
			lg.order = append(lg.order, SortKey{E: k, Desc: item.Desc, Node: item.Expr})
			off := -1
			if c, ok := k.(*expr.Column); ok {
				off = c.Offset
			}
			lg.orderOff = append(lg.orderOff, off)
		}
	}
	if limit != nil {
		var err error
		lg.hasLimit = true
		if lg.count, err = limitValue(limit.Count, env); err != nil {
			return nil, err
		}
		if limit.Offset != nil {
			if lg.offset, err = limitValue(limit.Offset, env); err != nil {
				return nil, err
			}
		}
	}
	b := &builder{env: env, caching: caching(env)}
	sp := &ScanPlan{Where: lg.where}
	if lg.dual {
		sp.Root = &TableDual{BasePlan: b.base("TableDual", 0, taskRoot), Width: lg.width}
		return sp, nil
	}
	// As for SELECT: the limit reaches the access path only when no sort
	// comes between them.
	var lim uint64
	req := lg.orderReq()
	if lg.hasLimit && (len(lg.order) == 0 || req != nil) {
		lim = SatAdd(lg.offset, lg.count)
	}
	ap, err := b.bestAccess(src, lg.conds, lg.condE, columnNeeds{src: src}, req, lim)
	if err != nil {
		return nil, err
	}
	var p Plan = ap.plan
	if pg, ok := ap.plan.(*PointGet); ok && pg.ReadsRowKey() {
		sp.PointRow = pg
	}
	if len(ap.residual) > 0 {
		sel := &Selection{BasePlan: b.base("Selection", ap.filteredRows, taskRoot, ap.plan), exprNodes: exprNodes{Src: src}}
		for _, i := range ap.residual {
			sel.Conds = append(sel.Conds, lg.condE[i])
			sel.Nodes = append(sel.Nodes, lg.conds[i])
		}
		p = sel
	}
	est := p.Base().EstRows
	switch {
	case len(lg.order) > 0 && !ap.ordered && lg.hasLimit:
		p = &TopN{BasePlan: b.base("TopN", math.Min(est, float64(lg.count)), taskRoot, p), Keys: lg.order, Offset: lg.offset, Count: lg.count, Src: src}
	case len(lg.order) > 0 && !ap.ordered:
		p = &Sort{BasePlan: b.base("Sort", est, taskRoot, p), Keys: lg.order, Src: src}
	case lg.hasLimit:
		p = &Limit{BasePlan: b.base("Limit", math.Min(est, float64(lg.count)), taskRoot, p), Offset: lg.offset, Count: lg.count}
	}
	sp.Root = p
	return sp, nil
}

// ExplainDML wraps the read plan of an UPDATE or DELETE in its root.
func ExplainDML(tp string, read Plan) Plan {
	b := &builder{nextID: maxID(read)}
	if tp == "Update" {
		return &Update{BasePlan: b.base("Update", 0, taskRoot, read)}
	}
	return &Delete{BasePlan: b.base("Delete", 0, taskRoot, read)}
}

func maxID(p Plan) int {
	m := p.Base().ID
	for _, c := range p.Base().Children {
		m = max(m, maxID(c))
	}
	return m
}

var opNames = map[opcode.Op]string{
	opcode.EQ: "eq", opcode.NE: "ne", opcode.LT: "lt", opcode.LE: "le", opcode.GT: "gt", opcode.GE: "ge",
	opcode.NullEQ: "nulleq", opcode.LogicAnd: "and", opcode.LogicOr: "or", opcode.LogicXor: "xor",
	opcode.Plus: "plus", opcode.Minus: "minus", opcode.Mul: "mul", opcode.Div: "div", opcode.IntDiv: "intdiv", opcode.Mod: "mod",
}

// exprText renders n as TiDB's EXPLAIN does: eq(test.t.k, 1).
func exprText(n ast.ExprNode, src *Source) string {
	switch x := unparen(n).(type) {
	case *ast.ColumnNameExpr:
		if src != nil {
			if off := src.columnOffset(x.Name); off >= 0 {
				return src.colName(off)
			}
		}
		return x.Name.Name.L
	case *ast.BinaryOperationExpr:
		if name, ok := opNames[x.Op]; ok {
			return name + "(" + exprText(x.L, src) + ", " + exprText(x.R, src) + ")"
		}
	case *ast.BetweenExpr:
		s := "and(ge(" + exprText(x.Expr, src) + ", " + exprText(x.Left, src) + "), le(" + exprText(x.Expr, src) + ", " + exprText(x.Right, src) + "))"
		if x.Not {
			return "not(" + s + ")"
		}
		return s
	case *ast.PatternInExpr:
		if x.Sel == nil {
			parts := []string{exprText(x.Expr, src)}
			for _, it := range x.List {
				parts = append(parts, exprText(it, src))
			}
			s := "in(" + strings.Join(parts, ", ") + ")"
			if x.Not {
				return "not(" + s + ")"
			}
			return s
		}
	case *ast.IsNullExpr:
		s := "isnull(" + exprText(x.Expr, src) + ")"
		if x.Not {
			return "not(" + s + ")"
		}
		return s
	case *ast.AggregateFuncExpr:
		args, tail := x.Args, ""
		if strings.EqualFold(x.F, ast.AggFuncGroupConcat) && len(args) > 1 { // the separator is last
			if x.Order != nil {
				keys := make([]string, len(x.Order.Items))
				for i, it := range x.Order.Items {
					keys[i] = exprText(it.Expr, src)
					if it.Desc {
						keys[i] += " desc"
					}
				}
				tail = " order by " + strings.Join(keys, ", ")
			}
			tail += " separator " + exprText(args[len(args)-1], src)
			args = args[:len(args)-1]
		}
		parts := make([]string, len(args))
		for i, a := range args {
			parts[i] = exprText(a, src)
		}
		d := ""
		if x.Distinct {
			d = "distinct "
		}
		return strings.ToLower(x.F) + "(" + d + strings.Join(parts, ", ") + tail + ")"
	case *ast.FuncCallExpr:
		parts := make([]string, len(x.Args))
		for i, a := range x.Args {
			parts[i] = exprText(a, src)
		}
		return x.FnName.L + "(" + strings.Join(parts, ", ") + ")"
	case ast.ValueExpr:
		if v := x.GetValue(); v == nil {
			return "NULL"
		}
		if d, ok := x.GetValue().(string); ok {
			return `"` + d + `"`
		}
	}
	var sb strings.Builder
	if err := n.Restore(format.NewRestoreCtx(format.DefaultRestoreFlags, &sb)); err != nil {
		return n.Text()
	}
	return strings.ReplaceAll(sb.String(), "`", "")
}

// keysOfPoint is the unique index key of values.
func keysOfPoint(src *Source, ix *model.IndexInfo, vals []types.Datum) []byte {
	return tablecodec.AppendIndexKey(nil, src.Table.ID, ix.ID, vals, false, tablecodec.Handle{})
}

// UniqueKey returns the key of a unique index entry with vals (none NULL):
// the row key of a clustered PRIMARY KEY's.
func UniqueKey(src *Source, ix *model.IndexInfo, vals []types.Datum) []byte {
	if src.Table.Clustered(ix) {
		return src.Table.CommonHandleKey(tablecodec.AppendRecordPrefix(nil, src.Table.ID), vals)
	}
	return keysOfPoint(src, ix, vals)
}

// SatAdd is a+b, or MaxUint64 when that overflows (LIMIT 5,
// 18446744073709551615 means every row after the fifth).
func SatAdd(a, b uint64) uint64 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxUint64
}

// AllowPushdownVar is the session variable that switches pushing
// operators to the stores (ON by default); OFF keeps every operator on the
// SQL node, for comparison and as an escape hatch.
const AllowPushdownVar = "strata_allow_pushdown"

// pushdown reports whether operators may run on the stores.
func (b *builder) pushdown() bool {
	d, _, err := b.env.SysVar(AllowPushdownVar, false)
	if err != nil {
		return true
	}
	v, null := expr.IsTrue(d)
	return v || null
}

// IndexLookupPushdownVar is the session variable that switches index
// lookup pushdown (ON by default): an IndexLookUp's stores read the rows
// they lead in the index scan's request. The hints INDEX_LOOKUP_PUSHDOWN(t
// [idx...]) and NO_INDEX_LOOKUP_PUSHDOWN(t [idx...]) override it per
// table (and index); strata_allow_pushdown=0 turns it off too.
const IndexLookupPushdownVar = "strata_index_lookup_pushdown"

// lookupPushdown decides whether an IndexLookUp of src through ix runs
// its lookups on the stores.
func (b *builder) lookupPushdown(src *Source, ix *model.IndexInfo) bool {
	if !b.pushdown() {
		return false
	}
	for i := len(b.hints) - 1; i >= 0; i-- { // the last hint wins
		h := b.hints[i]
		var on bool
		switch h.HintName.L {
		case "index_lookup_pushdown":
			on = true
		case "no_index_lookup_pushdown":
		default:
			continue
		}
		if hintNames(h, src, ix) {
			return on
		}
	}
	d, _, err := b.env.SysVar(IndexLookupPushdownVar, false)
	if err != nil {
		return true
	}
	v, null := expr.IsTrue(d)
	return v || null
}

// hintNames reports whether table hint h names src (by alias) and, when
// it lists indexes, ix.
func hintNames(h *ast.TableOptimizerHint, src *Source, ix *model.IndexInfo) bool {
	named := false
	for _, t := range h.Tables {
		if strings.EqualFold(t.TableName.O, src.Alias) && (t.DBName.L == "" || strings.EqualFold(t.DBName.O, src.DB.Name)) {
			named = true
		}
	}
	if !named {
		return false
	}
	if len(h.Indexes) == 0 {
		return true
	}
	for _, n := range h.Indexes {
		if strings.EqualFold(n.O, ix.Name) {
			return true
		}
	}
	return false
}

// pushSelection moves the residual conditions of a table read into the
// reader's cop task when the stores can evaluate every one of them (a
// Selection between the scan and the reader, as TiDB draws it); a LIMIT
// without a sort then goes down too. A covering IndexReader pushes its conditions the same way (they read
// only the index's columns and the handle).
func (b *builder) pushSelection(p Plan, lg *logical, ap *accessPath, req *orderReq, limit uint64) {
	var (
		scan      Plan
		conds     *[]expr.Expr
		scanLimit *uint64
		keepOrder bool
	)
	switch r := p.(type) {
	case *TableReader:
		scan, conds, scanLimit, keepOrder = r.Scan, &r.Conds, &r.Scan.Limit, r.Scan.KeepOrder
	case *IndexReader:
		scan, conds, scanLimit, keepOrder = r.Scan, &r.Conds, &r.Scan.Limit, r.Scan.KeepOrder
	default:
		return
	}
	if !b.pushdown() {
		return
	}
	cs := make([]expr.Expr, 0, len(ap.residual))
	nodes := make([]ast.ExprNode, 0, len(ap.residual))
	for _, i := range ap.residual {
		if !expr.Pushable(lg.condE[i]) {
			return
		}
		cs = append(cs, lg.condE[i])
		nodes = append(nodes, lg.conds[i])
	}
	ap.residual = nil
	sel := &Selection{BasePlan: b.base("Selection", ap.filteredRows, taskCop, scan), Conds: cs, exprNodes: exprNodes{Src: lg.src, Nodes: nodes}}
	r := p.Base()
	r.Children = []Plan{sel}
	*conds = cs
	r.EstRows = ap.filteredRows
	if limit > 0 && (req == nil || keepOrder) {
		*scanLimit = limit
	}
}

// pushAgg moves an aggregation under r into the stores as partial
// aggregates (each region's COUNT/SUM/MIN/MAX/AVG states per group; the
// SQL node merges them by group) when every argument and GROUP BY key is
// pushable (COUNT(DISTINCT) is not: it stays on the SQL node). The source
// columns the expressions above the aggregation read from the group's
// first row travel as FirstRow values, so the result is the same as the
// root aggregation's, whose first row is the first scanned too.
func (b *builder) pushAgg(r *TableReader, lg *logical, est float64) bool {
	if !b.pushdown() || lg.lock || r.Scan.Limit > 0 {
		return false
	}
	for _, g := range lg.groupBy {
		if !expr.Pushable(g) {
			return false
		}
	}
	for _, a := range lg.aggs {
		if a.Distinct || (a.Arg != nil && !expr.Pushable(a.Arg)) {
			return false
		}
		switch a.Fn {
		case ast.AggFuncCount, ast.AggFuncSum, ast.AggFuncAvg, ast.AggFuncMax, ast.AggFuncMin:
		default:
			return false
		}
	}
	above := slices.Clone(lg.fields)
	if lg.having != nil {
		above = append(above, lg.having)
	}
	for _, k := range lg.order {
		above = append(above, k.E)
	}
	var first []int
	for _, e := range above {
		var ok bool
		if first, ok = expr.ColumnsBelow(first, e, lg.width); !ok {
			return false
		}
	}
	slices.Sort(first)
	cop := &HashAgg{BasePlan: b.base("HashAgg", est, taskCop, r.Children[0]), GroupBy: lg.groupBy, Aggs: lg.aggs, Width: lg.width,
		FirstRow: first, exprNodes: exprNodes{Src: lg.src, Nodes: lg.groupTx}}
	r.Children = []Plan{cop}
	r.Aggs, r.GroupBy, r.FirstRow = lg.aggs, lg.groupBy, first
	r.EstRows = est
	return true
}

// maxPushedTopN bounds the rows a pushed-down TopN asks of every region
// (offset + count): beyond it the SQL node sorts the pages itself.
const maxPushedTopN = 8192

// pushTopN gives r a cop[tikv] TopN of the first offset+count rows in
// ORDER BY order per region when every key serializes; the root TopN
// merges the regions' rows and applies the offset.
func (b *builder) pushTopN(r *TableReader, lg *logical) {
	if r.Scan.Limit > 0 || r.Aggs != nil {
		return
	}
	if top := b.copTopN(lg, &r.BasePlan); top != nil {
		r.TopN = top
	}
}

// pushIndexTopN is pushTopN for a covering index read.
func (b *builder) pushIndexTopN(r *IndexReader, lg *logical) {
	if r.Scan.Limit > 0 {
		return
	}
	if top := b.copTopN(lg, &r.BasePlan); top != nil {
		r.TopN = top
	}
}

// copTopN puts a cop[tikv] TopN of lg's ORDER BY and offset+count rows
// between reader r and its child when pushdown is on and every key
// serializes, and returns it (nil when not).
func (b *builder) copTopN(lg *logical, r *BasePlan) *TopN {
	n := SatAdd(lg.offset, lg.count)
	if !b.pushdown() || n > maxPushedTopN {
		return nil
	}
	for _, k := range lg.order {
		if !expr.Pushable(k.E) {
			return nil
		}
	}
	top := &TopN{BasePlan: b.base("TopN", math.Min(r.EstRows, float64(n)), taskCop, r.Children[0]), Keys: lg.order, Count: n, Src: lg.src}
	r.Children = []Plan{top}
	r.EstRows = top.EstRows
	return top
}
