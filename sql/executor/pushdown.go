package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/stratadb/strata/kvclient/rpcstats"
	"github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/planner"
	"github.com/stratadb/strata/sql/tablecodec"
)

// partialAggOp is a HashAgg whose TableReader child pushed the
// aggregation to the stores: one coprocessor request per region (in
// parallel, kvclient) answers each region's partial states per group
// (coprocessorpb.Aggregation), merged here by group key in region order,
// so groups come out in the order a scan on the SQL node meets them. Each
// output row is p.Width source slots (the FirstRow columns' values, the
// others NULL) and then the aggregate values. When the transaction must
// read directly (its own writes, READ COMMITTED) it aggregates the
// reader's rows itself, as an ordinary HashAgg.
type partialAggOp struct {
	rc     *runCtx
	p      *planner.HashAgg
	reader *planner.TableReader
	local  Operator // the fallback, while open
	out    emitter
	cs     *copStats // EXPLAIN ANALYZE
}

func (o *partialAggOp) width() int { return o.p.Width + len(o.p.Aggs) }

func (o *partialAggOp) Close() error {
	if o.local != nil {
		err := o.local.Close()
		o.local = nil
		return err
	}
	return nil
}

// partialGroup is one group being merged: the first region's FirstRow
// values and the merged states.
type partialGroup struct {
	first []datum
	aggs  []aggState
}

func (o *partialAggOp) Open(ctx context.Context) error {
	o.out, o.local = emitter{}, nil
	ranges := make([]*kvrpcpb.KeyRange, 0, len(o.reader.Scan.Ranges))
	dirty := false
	for _, r := range o.reader.Scan.KeyRanges() {
		s, e := r[0], r[1]
		ranges = append(ranges, &kvrpcpb.KeyRange{Start: s, End: e})
		dirty = dirty || readDirect(o.rc.tx, o.rc.txn, s, e)
	}
	if dirty {
		o.local = &hashAggOp{child: &tableReaderOp{rc: o.rc, scan: o.reader.Scan, conds: o.reader.Conds}, p: o.p, rc: o.rc}
		return o.local.Open(ctx)
	}
	dag, err := o.dag()
	if err != nil {
		return err
	}
	resps, err := o.rc.coprocessor(ctx, dag, ranges, o.cs)
	if err != nil {
		return err
	}
	ng, nf := len(o.reader.GroupBy), len(o.reader.FirstRow)
	n := ng + nf
	for i := range o.p.Aggs {
		n += partialWidth(&o.p.Aggs[i])
	}
	dec := tablecodec.NewRowDecoder(tablecodec.SeqColumnIDs(n))
	groups := map[string]*partialGroup{}
	var order []*partialGroup
	var key []byte
	colls := expr.Collations(o.reader.GroupBy)
	add := func(v []byte) error {
		// Absent values (never sent) decode as KindAbsent, which IsNull.
		// Merged values may alias v: each row gets its own slice.
		part := make([]datum, n)
		if err := dec.Decode(v, part); err != nil {
			return fmt.Errorf("executor: decode partial aggregate: %w", err)
		}
		key = expr.AppendGroupKeyColl(key[:0], part[:ng], colls)
		g, ok := groups[string(key)]
		if !ok {
			g = &partialGroup{first: part[n-nf:], aggs: make([]aggState, len(o.p.Aggs))}
			groups[string(key)] = g
			order = append(order, g)
		}
		rest := part[ng:]
		for i := range o.p.Aggs {
			rest = g.aggs[i].merge(&o.p.Aggs[i], rest)
		}
		return nil
	}
	for _, r := range resps {
		if ng == 0 {
			if len(r.GetAggRow()) == 0 {
				return fmt.Errorf("executor: coprocessor returned no partial aggregate")
			}
			if err := add(r.GetAggRow()); err != nil {
				return err
			}
			continue
		}
		for _, row := range r.GetRows() {
			if err := add(row.GetValue()); err != nil {
				return err
			}
		}
	}
	if len(order) == 0 && ng == 0 {
		// Aggregates over no rows (or no region) still produce one row.
		order = append(order, &partialGroup{first: make([]datum, nf), aggs: make([]aggState, len(o.p.Aggs))})
	}
	w := o.width()
	slab := make([]datum, len(order)*w)
	o.out.rows = make([][]datum, len(order))
	for i, g := range order {
		row := slab[i*w : (i+1)*w : (i+1)*w]
		for j, c := range o.reader.FirstRow {
			row[c] = g.first[j]
		}
		for j := range o.p.Aggs {
			row[o.p.Width+j] = g.aggs[j].result(&o.p.Aggs[j])
		}
		warnCut(o.rc, g.aggs, i+1)
		o.out.rows[i] = row
	}
	return nil
}

func (o *partialAggOp) Next(ctx context.Context, ck *Chunk) error {
	if o.local != nil {
		return o.local.Next(ctx, ck)
	}
	o.out.emit(ck)
	return nil
}

// dag is the request: the scan (with the schema), the pushed conditions,
// and the partial aggregation.
func (o *partialAggOp) dag() (*coprocessorpb.DAGRequest, error) {
	info, err := tableInfoPB(o.reader.Scan.Src.Table)
	if err != nil {
		return nil, err
	}
	execs := []*coprocessorpb.Executor{{Tp: coprocessorpb.ExecType_TypeTableScan,
		TblScan: &coprocessorpb.TableScan{TableId: o.reader.Scan.Src.Table.ID, TableInfo: info}}}
	if len(o.reader.Conds) > 0 {
		sel, err := selectionPB(o.reader.Conds)
		if err != nil {
			return nil, err
		}
		execs = append(execs, sel)
	}
	agg := &coprocessorpb.Aggregation{}
	for _, g := range o.reader.GroupBy {
		pg, err := expr.ToPB(g)
		if err != nil {
			return nil, fmt.Errorf("executor: pushed GROUP BY: %w", err)
		}
		agg.GroupBy = append(agg.GroupBy, pg)
	}
	for _, a := range o.p.Aggs {
		f := &coprocessorpb.AggFunc{Tp: aggFuncPB[a.Fn]}
		if a.Arg != nil {
			pa, err := expr.ToPB(a.Arg)
			if err != nil {
				return nil, fmt.Errorf("executor: pushed aggregate: %w", err)
			}
			f.Arg = pa
		}
		agg.Funcs = append(agg.Funcs, f)
	}
	cols := o.reader.Scan.Src.Cols
	for _, c := range o.reader.FirstRow {
		col := &expr.Column{Offset: c, Ft: cols[c].Type}
		pa, err := expr.ToPB(col)
		if err != nil {
			return nil, fmt.Errorf("executor: pushed first row: %w", err)
		}
		agg.Funcs = append(agg.Funcs, &coprocessorpb.AggFunc{Tp: coprocessorpb.AggFuncType_FirstRow, Arg: pa})
	}
	execs = append(execs, &coprocessorpb.Executor{Tp: coprocessorpb.ExecType_TypeAggregation, Aggregation: agg})
	// Pages bounded in time: each answers its part's partial states (one
	// row, or one per group met), merged above as regions' are.
	return &coprocessorpb.DAGRequest{Executors: execs, PageMs: copPageMs}, nil
}

// copPageMs is the time budget of one coprocessor page (DAGRequest.page_ms)
// for the readers whose requests may end early: a store answers what it
// computed so far and where to resume, so no RPC of a large region outlives
// its timeout on a loaded machine and none is retried whole.
const copPageMs = 1000

var rpcsPerStatement = promauto.NewHistogram(prometheus.HistogramOpts{
	Name:    "strata_distsql_rpcs_per_statement",
	Help:    "Coprocessor RPCs one statement sent to the stores (a store-batched RPC carrying several regions' tasks counts once), for statements that sent any.",
	Buckets: prometheus.ExponentialBuckets(1, 2, 14),
})

// observeRPCs records the statement's coprocessor RPCs, if it sent any.
func (rc *runCtx) observeRPCs() {
	if n := rc.rpcs.Cop(); n > 0 {
		rpcsPerStatement.Observe(float64(n))
	}
}

var aggFuncPB = map[string]coprocessorpb.AggFuncType{
	ast.AggFuncCount: coprocessorpb.AggFuncType_Count, ast.AggFuncSum: coprocessorpb.AggFuncType_Sum,
	ast.AggFuncMin: coprocessorpb.AggFuncType_Min, ast.AggFuncMax: coprocessorpb.AggFuncType_Max, ast.AggFuncAvg: coprocessorpb.AggFuncType_Avg,
}

// coprocessor sends dag over ranges at the statement's start_ts (the
// storage splits them by region and queries the regions in parallel).
// With cs (EXPLAIN ANALYZE) the stores return execution summaries, added
// to cs.
func (rc *runCtx) coprocessor(ctx context.Context, dag *coprocessorpb.DAGRequest, ranges []*kvrpcpb.KeyRange, cs *copStats) ([]*coprocessorpb.SelectResponse, error) {
	dag.CollectSummaries = cs != nil
	start := time.Now()
	resps, err := rc.e.dom.Store().Coprocessor(rpcstats.With(ctx, &rc.rpcs), dag, ranges, rc.txn.StartTS())
	if cs != nil && err == nil {
		cs.add(resps, time.Since(start))
	}
	if err == nil {
		err = rc.storeWarnings(resps)
	}
	return resps, err
}

// storeWarnings hands the conditions the stores' expressions raised to
// the statement, as if the SQL node had evaluated them: its Warner (the
// session) makes each a warning, nothing, or the statement's error, as
// sql_mode says; without one they are warnings.
func (rc *runCtx) storeWarnings(resps []*coprocessorpb.SelectResponse) error {
	w, _ := rc.tx.(expr.Warner)
	for _, r := range resps {
		for _, c := range r.GetWarnings() {
			if w == nil {
				rc.warn(uint16(c.GetCode()), c.GetMsg())
				continue
			}
			if err := w.Warn(uint16(c.GetCode()), c.GetMsg()); err != nil {
				return err
			}
		}
	}
	return nil
}

// copStats are a reader's coprocessor tasks as EXPLAIN ANALYZE shows them
// (TiDB's cop_task on the reader, tikv_task on each pushed operator): the
// stores' ExecutorSummary per task, summed per executor of the DAG.
type copStats struct {
	calls int           // Coprocessor calls (a page or a fan-out each)
	wait  time.Duration // their wall time on the SQL node
	tasks []time.Duration
	execs []copExecStats // by DAG executor, executors[0] (the scan) first
}

type copExecStats struct {
	rows, iters uint64
	tasks       int
	max         time.Duration
	sum         time.Duration
}

func (cs *copStats) add(resps []*coprocessorpb.SelectResponse, wall time.Duration) {
	cs.calls++
	cs.wait += wall
	for _, r := range resps {
		sums := r.GetSummaries()
		if len(sums) == 0 {
			continue
		}
		// Summaries are inclusive: the last executor's time is the task's.
		cs.tasks = append(cs.tasks, time.Duration(sums[len(sums)-1].GetTimeProcessedNs()))
		for len(cs.execs) < len(sums) {
			cs.execs = append(cs.execs, copExecStats{})
		}
		for i, s := range sums {
			e := &cs.execs[i]
			e.rows += s.GetNumProducedRows()
			e.iters += s.GetNumIterations()
			e.tasks++
			d := time.Duration(s.GetTimeProcessedNs())
			e.sum += d
			e.max = max(e.max, d)
		}
	}
}

// taskInfo is the reader's cop_task execution info.
func (cs *copStats) taskInfo() string {
	if len(cs.tasks) == 0 {
		return fmt.Sprintf("cop_task: {num: 0, rpc_num: %d, rpc_time: %s}", cs.calls, cs.wait.Round(time.Microsecond))
	}
	mx, mn, sum := cs.tasks[0], cs.tasks[0], time.Duration(0)
	for _, d := range cs.tasks {
		mx, mn, sum = max(mx, d), min(mn, d), sum+d
	}
	return fmt.Sprintf("cop_task: {num: %d, max: %s, min: %s, avg: %s, tot_proc: %s, rpc_num: %d, rpc_time: %s}",
		len(cs.tasks), mx.Round(time.Microsecond), mn.Round(time.Microsecond), (sum / time.Duration(len(cs.tasks))).Round(time.Microsecond),
		sum.Round(time.Microsecond), cs.calls, cs.wait.Round(time.Microsecond))
}

// execInfo is executor i's actRows and tikv_task execution info.
func (cs *copStats) execInfo(i int) (int64, string) {
	if i < 0 || i >= len(cs.execs) {
		return 0, "tikv_task:{tasks:0}"
	}
	e := cs.execs[i]
	return int64(e.rows), fmt.Sprintf("tikv_task:{proc max:%s, avg:%s, iters:%d, tasks:%d}",
		e.max.Round(time.Microsecond), (e.sum / time.Duration(max(e.tasks, 1))).Round(time.Microsecond), e.iters, e.tasks)
}

// copStatsOp is an operator that sends coprocessor requests; EXPLAIN
// ANALYZE gives it a copStats to fill.
type copStatsOp interface{ setCopStats(*copStats) }

func (o *partialAggOp) setCopStats(cs *copStats)  { o.cs = cs }
func (o *tableReaderOp) setCopStats(cs *copStats) { o.pager.cs = cs }
func (o *indexReaderOp) setCopStats(cs *copStats) { o.pager.cs = cs }
func (o *indexLookUpOp) setCopStats(cs *copStats) { o.idx.pager.cs = cs }
