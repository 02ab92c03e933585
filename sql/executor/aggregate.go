package executor

import (
	"math"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/stratadb/strata/kv/tablecodec"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/types"
)

type aggState struct {
	count   int64
	sumI    int64
	sumF    float64
	isFloat bool
	v       datum
	has     bool
	seen    map[string]struct{}
}

type group struct {
	first []datum
	aggs  []aggState
}

func (st *aggState) add(spec *aggSpec, row []datum, keyBuf []byte) ([]byte, error) {
	if spec.arg == nil {
		st.count++
		return keyBuf, nil
	}
	v, err := spec.arg.Eval(row)
	if err != nil || v.IsNull() {
		return keyBuf, err
	}
	if spec.distinct {
		if st.seen == nil {
			st.seen = map[string]struct{}{}
		}
		keyBuf = rowKey(keyBuf[:0], []datum{v})
		if _, dup := st.seen[string(keyBuf)]; dup {
			return keyBuf, nil
		}
		st.seen[string(keyBuf)] = struct{}{}
	}
	st.count++
	switch spec.fn {
	case ast.AggFuncSum, ast.AggFuncAvg:
		if !st.isFloat && v.Kind() == tablecodec.KindInt64 {
			s := st.sumI + v.Int64()
			if (s > st.sumI) == (v.Int64() > 0) {
				st.sumI = s
				return keyBuf, nil
			}
		}
		if !st.isFloat {
			st.isFloat, st.sumF = true, float64(st.sumI)
		}
		f, _ := types.ToFloat(v)
		st.sumF += f
	case ast.AggFuncMax, ast.AggFuncMin:
		byBytes := spec.arg.Type().Class() == types.ClassString || spec.arg.Type().Class() == types.ClassTime
		if !st.has {
			st.v, st.has = v, true
			return keyBuf, nil
		}
		c := expr.Compare(v, st.v, byBytes)
		if (spec.fn == ast.AggFuncMax && c > 0) || (spec.fn == ast.AggFuncMin && c < 0) {
			st.v = v
		}
	}
	return keyBuf, nil
}

func (st *aggState) result(spec *aggSpec) datum {
	switch spec.fn {
	case ast.AggFuncCount:
		return tablecodec.NewInt(st.count)
	case ast.AggFuncSum:
		if st.count == 0 {
			return tablecodec.NullDatum
		}
		if !st.isFloat && spec.ft.Class() != types.ClassFloat {
			return tablecodec.NewInt(st.sumI)
		}
		if st.isFloat {
			return tablecodec.NewFloat(st.sumF)
		}
		return tablecodec.NewFloat(float64(st.sumI))
	case ast.AggFuncAvg:
		if st.count == 0 {
			return tablecodec.NullDatum
		}
		s := st.sumF
		if !st.isFloat {
			s = float64(st.sumI)
		}
		r := s / float64(st.count)
		if math.IsNaN(r) {
			return tablecodec.NullDatum
		}
		return tablecodec.NewFloat(r)
	}
	if !st.has {
		return tablecodec.NullDatum
	}
	return st.v
}

// aggregate groups rows and returns one row per group: the group's first
// source row (width p.width) followed by the aggregate results.
func (p *selectPlan) aggregate(rows [][]datum) ([][]datum, error) {
	groups := map[string]*group{}
	var order []*group
	var keyBuf, scratch []byte
	gvals := make([]datum, len(p.groupBy))
	for _, r := range rows {
		for i, g := range p.groupBy {
			v, err := g.Eval(r)
			if err != nil {
				return nil, err
			}
			gvals[i] = v
		}
		keyBuf = rowKey(keyBuf[:0], gvals)
		gr, ok := groups[string(keyBuf)]
		if !ok {
			gr = &group{first: r, aggs: make([]aggState, len(p.aggs))}
			groups[string(keyBuf)] = gr
			order = append(order, gr)
		}
		for i := range p.aggs {
			var err error
			if scratch, err = gr.aggs[i].add(&p.aggs[i], r, scratch); err != nil {
				return nil, err
			}
		}
	}
	if len(order) == 0 && len(p.groupBy) == 0 {
		// Aggregates over no rows still produce one row.
		order = append(order, &group{first: make([]datum, p.width), aggs: make([]aggState, len(p.aggs))})
	}
	w := p.width + len(p.aggs)
	out := make([][]datum, len(order))
	slab := make([]datum, len(order)*w)
	for i, gr := range order {
		row := slab[i*w : (i+1)*w : (i+1)*w]
		copy(row, gr.first)
		for j := range p.aggs {
			row[p.width+j] = gr.aggs[j].result(&p.aggs[j])
		}
		out[i] = row
	}
	return out, nil
}
