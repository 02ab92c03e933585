package executor

import (
	"math"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/stratadb/strata/kv/tablecodec"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/planner"
	"github.com/stratadb/strata/sql/types"
)

type aggState struct {
	count   int64
	sumI    int64
	sumF    float64
	isFloat bool
	isDec   bool          // dec holds the sum (exact SUM/AVG)
	dec     types.Decimal // of a DECIMAL result
	v       datum
	has     bool
	seen    map[string]struct{}
}

type group struct {
	first []datum
	aggs  []aggState
}

func (st *aggState) add(spec *planner.AggSpec, row []datum, keyBuf []byte) ([]byte, error) {
	if spec.Arg == nil {
		st.count++
		return keyBuf, nil
	}
	v, err := spec.Arg.Eval(row)
	if err != nil || v.IsNull() {
		return keyBuf, err
	}
	if spec.Distinct {
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
	switch spec.Fn {
	case ast.AggFuncSum, ast.AggFuncAvg:
		if !st.isFloat && !st.isDec && v.Kind() == tablecodec.KindInt64 {
			s := st.sumI + v.Int64()
			if (s > st.sumI) == (v.Int64() > 0) {
				st.sumI = s
				return keyBuf, nil
			}
		}
		if spec.Ft.Class() == types.ClassDecimal {
			if !st.isDec {
				st.isDec, st.dec = true, types.NewDecimal(st.sumI, 0)
			}
			if x, ok := types.ToDecimal(v); ok {
				st.dec = st.dec.Add(x)
			}
			return keyBuf, nil
		}
		if !st.isFloat {
			st.isFloat, st.sumF = true, float64(st.sumI)
		}
		f, _ := types.ToFloat(v)
		st.sumF += f
	case ast.AggFuncMax, ast.AggFuncMin:
		if !st.has {
			st.v, st.has = v, true
			return keyBuf, nil
		}
		c := expr.CompareAs(v, st.v, spec.Arg.Type())
		if (spec.Fn == ast.AggFuncMax && c > 0) || (spec.Fn == ast.AggFuncMin && c < 0) {
			st.v = v
		}
	}
	return keyBuf, nil
}

func (st *aggState) result(spec *planner.AggSpec) datum {
	switch spec.Fn {
	case ast.AggFuncCount:
		return tablecodec.NewInt(st.count)
	case ast.AggFuncSum:
		if st.count == 0 {
			return tablecodec.NullDatum
		}
		if st.isDec {
			return st.dec.Round(spec.Ft.Decimal).Datum()
		}
		if !st.isFloat && spec.Ft.Class() != types.ClassFloat {
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
		if spec.Ft.Class() == types.ClassDecimal {
			sum := st.dec
			if !st.isDec {
				sum = types.NewDecimal(st.sumI, 0)
			}
			avg, _ := sum.Div(types.NewDecimal(st.count, 0), types.DivPrecisionIncr)
			return avg.Round(spec.Ft.Decimal).Datum()
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
