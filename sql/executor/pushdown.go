package executor

import (
	"context"
	"fmt"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/stratadb/strata/kv/tablecodec"
	"github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/planner"
)

// partialAggOp is a HashAgg without GROUP BY whose TableReader child
// pushed the aggregates to the stores: one coprocessor request per region
// (in parallel, kv/client) answers each region's partial states, merged
// here into one row (p.Width NULLs, then the aggregate values). When the
// transaction must read directly (its own writes, READ COMMITTED) it
// aggregates the reader's rows itself, as an ordinary HashAgg.
type partialAggOp struct {
	rc     *runCtx
	p      *planner.HashAgg
	reader *planner.TableReader
	local  Operator // the fallback, while open
	result []datum
	done   bool
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

func (o *partialAggOp) Open(ctx context.Context) error {
	o.done, o.local = false, nil
	tid := o.reader.Scan.Src.Table.ID
	ranges := make([]*kvrpcpb.KeyRange, 0, len(o.reader.Scan.Ranges))
	dirty := false
	for _, r := range o.reader.Scan.Ranges {
		s, e := r.Keys(tid)
		ranges = append(ranges, &kvrpcpb.KeyRange{Start: s, End: e})
		dirty = dirty || readDirect(o.rc.tx, o.rc.txn, s, e)
	}
	if dirty {
		o.local = &hashAggOp{child: &tableReaderOp{rc: o.rc, scan: o.reader.Scan, conds: o.reader.Conds}, p: o.p}
		return o.local.Open(ctx)
	}
	dag, err := o.dag()
	if err != nil {
		return err
	}
	resps, err := o.rc.e.Store.Coprocessor(ctx, dag, ranges, o.rc.txn.StartTS())
	if err != nil {
		return err
	}
	states := make([]aggState, len(o.p.Aggs))
	n := 0
	for i := range o.p.Aggs {
		n += partialWidth(&o.p.Aggs[i])
	}
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = int64(i)
	}
	dec := tablecodec.NewRowDecoder(ids)
	part := make([]datum, n)
	for _, r := range resps {
		if len(r.GetAggRow()) == 0 {
			return fmt.Errorf("executor: coprocessor returned no partial aggregate")
		}
		// Absent values (never sent) decode as KindAbsent, which IsNull.
		if err := dec.Decode(r.GetAggRow(), part); err != nil {
			return fmt.Errorf("executor: decode partial aggregate: %w", err)
		}
		rest := part
		for i := range o.p.Aggs {
			rest = states[i].merge(&o.p.Aggs[i], rest)
		}
		part = make([]datum, n) // merged values may alias the previous row
	}
	o.result = make([]datum, o.width())
	for i := range o.p.Aggs {
		o.result[o.p.Width+i] = states[i].result(&o.p.Aggs[i])
	}
	return nil
}

func (o *partialAggOp) Next(ctx context.Context, ck *Chunk) error {
	if o.local != nil {
		return o.local.Next(ctx, ck)
	}
	ck.reset()
	if !o.done {
		copy(ck.alloc(), o.result)
		o.done = true
	}
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
	execs = append(execs, &coprocessorpb.Executor{Tp: coprocessorpb.ExecType_TypeAggregation, Aggregation: agg})
	return &coprocessorpb.DAGRequest{Executors: execs}, nil
}

var aggFuncPB = map[string]coprocessorpb.AggFuncType{
	ast.AggFuncCount: coprocessorpb.AggFuncType_Count, ast.AggFuncSum: coprocessorpb.AggFuncType_Sum,
	ast.AggFuncMin: coprocessorpb.AggFuncType_Min, ast.AggFuncMax: coprocessorpb.AggFuncType_Max, ast.AggFuncAvg: coprocessorpb.AggFuncType_Avg,
}
