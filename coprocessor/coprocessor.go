package coprocessor

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
)

// ErrUnsupported is returned for DAG shapes this store cannot execute.
var ErrUnsupported = errors.New("coprocessor: unsupported executor chain")

// Range is one user key range [Start, End); an empty End means unbounded.
type Range struct {
	Start, End []byte
}

// RangesFromProto converts request ranges.
func RangesFromProto(rs []*kvrpcpb.KeyRange) []Range {
	out := make([]Range, len(rs))
	for i, r := range rs {
		out[i] = Range{Start: r.GetStart(), End: r.GetEnd()}
	}
	return out
}

// plan is a validated executor chain.
type plan struct {
	desc  bool
	limit int // 0 = none
	agg   []coprocessorpb.AggFuncType
	isAgg bool
}

func buildPlan(dag *coprocessorpb.DAGRequest) (plan, error) {
	var p plan
	execs := dag.GetExecutors()
	if len(execs) == 0 || execs[0].GetTp() != coprocessorpb.ExecType_TypeTableScan {
		return p, fmt.Errorf("%w: the first executor must be a TableScan", ErrUnsupported)
	}
	p.desc = execs[0].GetTblScan().GetDesc()
	for i, e := range execs[1:] {
		switch e.GetTp() {
		case coprocessorpb.ExecType_TypeLimit:
			if p.isAgg {
				return p, fmt.Errorf("%w: Limit after Aggregation", ErrUnsupported)
			}
			// Several limits: the smallest wins; LIMIT 0 (-1 here) reads nothing.
			switch l := int(e.GetLimit().GetLimit()); {
			case l == 0:
				p.limit = -1
			case p.limit == 0 || (p.limit > 0 && l < p.limit):
				p.limit = l
			}
		case coprocessorpb.ExecType_TypeAggregation:
			if p.isAgg {
				return p, fmt.Errorf("%w: two Aggregations", ErrUnsupported)
			}
			for _, f := range e.GetAggregation().GetAggFunc() {
				if f != coprocessorpb.AggFuncType_Count {
					return p, fmt.Errorf("%w: aggregate function %v", ErrUnsupported, f)
				}
			}
			p.isAgg = true
			p.agg = e.GetAggregation().GetAggFunc()
		default:
			return p, fmt.Errorf("%w: executor %d type %v", ErrUnsupported, i+1, e.GetTp())
		}
	}
	return p, nil
}

// Scanner reads the live keys of a range at the request's timestamp
// (*mvcc.SnapshotReader): fn gets each key and value (nil with keyOnly),
// valid only during the call, in ascending order or with reverse
// descending, until it returns false. A lock that blocks the read ends the
// scan with its error (*mvcc.KeyError).
type Scanner interface {
	Scan(start, end []byte, keyOnly, reverse bool, fn func(key, value []byte) bool) error
}

// Execute runs dag over ranges (in ascending key order, non-overlapping)
// read through r and returns the SelectResponse. An error from r (a lock
// met) is returned wrapped.
func Execute(r Scanner, dag *coprocessorpb.DAGRequest, ranges []Range) (*coprocessorpb.SelectResponse, error) {
	p, err := buildPlan(dag)
	if err != nil {
		return nil, err
	}
	resp := &coprocessorpb.SelectResponse{}
	var count int64
	done := p.limit < 0
	visit := func(k, v []byte) bool {
		count++
		if !p.isAgg {
			resp.Rows = append(resp.Rows, &coprocessorpb.Row{Key: bytes.Clone(k), Value: bytes.Clone(v)})
		}
		if p.limit > 0 && count >= int64(p.limit) {
			done = true
			return false
		}
		return true
	}
	n := len(ranges)
	for i := 0; i < n && !done; i++ {
		rg := ranges[i]
		if p.desc {
			rg = ranges[n-1-i]
		}
		err = r.Scan(rg.Start, rg.End, p.isAgg, p.desc, visit)
		if err != nil {
			return nil, fmt.Errorf("coprocessor: table scan: %w", err)
		}
	}
	if p.isAgg {
		resp.AggValues = make([]int64, len(p.agg))
		for i := range p.agg {
			resp.AggValues[i] = count // Count is the only function so far.
		}
	}
	return resp, nil
}
