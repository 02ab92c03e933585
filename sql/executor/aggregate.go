package executor

import (
	"math"

	"github.com/pingcap/tidb/pkg/parser/ast"
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
	// WITH ROLLUP: the GROUP BY values and how many of them the group
	// keeps (the rest are rolled up).
	vals  []datum
	level int
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
	st.addValue(spec, v)
	return keyBuf, nil
}

// addValue adds one non-NULL argument value.
func (st *aggState) addValue(spec *planner.AggSpec, v datum) {
	st.count++
	switch spec.Fn {
	case ast.AggFuncSum, ast.AggFuncAvg:
		if !st.isFloat && !st.isDec && v.Kind() == types.KindInt64 {
			s := st.sumI + v.Int64()
			if (s > st.sumI) == (v.Int64() > 0) {
				st.sumI = s
				return
			}
		}
		if spec.Ft.Class() == types.ClassDecimal {
			if !st.isDec {
				st.isDec, st.dec = true, types.NewDecimal(st.sumI, 0)
			}
			if x, ok := types.ToDecimal(v); ok {
				st.dec = st.dec.Add(x)
			}
			return
		}
		if !st.isFloat {
			st.isFloat, st.sumF = true, float64(st.sumI)
		}
		f, _ := types.ToFloat(v)
		st.sumF += f
	case ast.AggFuncMax, ast.AggFuncMin:
		if !st.has {
			st.v, st.has = v, true
			return
		}
		c := expr.CompareAs(v, st.v, spec.Arg.Type())
		if (spec.Fn == ast.AggFuncMax && c > 0) || (spec.Fn == ast.AggFuncMin && c < 0) {
			st.v = v
		}
	}
}

// merge adds the partial states a store computed for spec
// (coprocessorpb.Aggregation: COUNT → count, SUM → sum or NULL, MIN/MAX →
// the value or NULL, AVG → count and sum) and returns the rest of part.
func (st *aggState) merge(spec *planner.AggSpec, part []datum) []datum {
	switch spec.Fn {
	case ast.AggFuncCount:
		st.count += part[0].Int64()
		return part[1:]
	case ast.AggFuncAvg:
		if n := part[0].Int64(); n > 0 && !part[1].IsNull() {
			st.addValue(spec, part[1])
			st.count += n - 1
		}
		return part[2:]
	}
	if !part[0].IsNull() {
		st.addValue(spec, part[0])
	}
	return part[1:]
}

// partialWidth is how many values the partial state of spec takes.
func partialWidth(spec *planner.AggSpec) int {
	if spec.Fn == ast.AggFuncAvg {
		return 2
	}
	return 1
}

func (st *aggState) result(spec *planner.AggSpec) datum {
	switch spec.Fn {
	case ast.AggFuncCount:
		return types.NewInt(st.count)
	case ast.AggFuncSum:
		if st.count == 0 {
			return types.NullDatum
		}
		if st.isDec {
			return st.dec.Round(spec.Ft.Decimal).Datum()
		}
		if !st.isFloat && spec.Ft.Class() != types.ClassFloat {
			return types.NewInt(st.sumI)
		}
		if st.isFloat {
			return types.NewFloat(st.sumF)
		}
		return types.NewFloat(float64(st.sumI))
	case ast.AggFuncAvg:
		if st.count == 0 {
			return types.NullDatum
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
			return types.NullDatum
		}
		return types.NewFloat(r)
	}
	if !st.has {
		return types.NullDatum
	}
	return st.v
}
