package coprocessor

import (
	"github.com/stratadb/strata/kv/tablecodec"
	"github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/types"
)

// aggState is one aggregate's partial state on a store. Sums of exact
// values (integers, DECIMAL, numeric strings are not: they sum as DOUBLE as
// MySQL does) are kept as an exact DECIMAL so that no region's partial sum
// overflows; the SQL node converts the merged sum to the result type.
type aggState struct {
	count   int64
	sumI    int64 // integer sum while it fits (has: moved to dec)
	isFloat bool
	sumF    float64
	dec     types.Decimal
	v       expr.Datum
	has     bool
}

func (x *run) accumulate() error {
	for i, f := range x.p.aggs {
		st := &x.states[i]
		if f.arg == nil {
			st.count++
			continue
		}
		v, err := f.arg.Eval(x.row)
		if err != nil {
			return err
		}
		if v.IsNull() {
			continue
		}
		st.count++
		switch f.tp {
		case coprocessorpb.AggFuncType_Sum, coprocessorpb.AggFuncType_Avg:
			c := f.arg.Type().Class()
			if c == types.ClassInt && !st.has && v.Kind() == tablecodec.KindInt64 {
				// Integers sum in an int64 until it would overflow.
				if s := st.sumI + v.Int64(); (s > st.sumI) == (v.Int64() > 0) {
					st.sumI = s
					continue
				}
			}
			if c == types.ClassInt || c == types.ClassDecimal {
				if d, ok := types.ToDecimal(v); ok {
					if !st.has {
						st.dec, st.has = types.NewDecimal(st.sumI, 0), true
					}
					st.dec = st.dec.Add(d)
					continue
				}
			}
			st.isFloat = true
			fv, _ := types.ToFloat(v)
			st.sumF += fv
		case coprocessorpb.AggFuncType_Min, coprocessorpb.AggFuncType_Max:
			if !st.has {
				st.v, st.has = cloneDatum(v), true
				continue
			}
			c := expr.CompareAs(v, st.v, f.arg.Type())
			if (f.tp == coprocessorpb.AggFuncType_Max && c > 0) || (f.tp == coprocessorpb.AggFuncType_Min && c < 0) {
				st.v = cloneDatum(v)
			}
		}
	}
	return nil
}

// appendPartial appends the partial state of f (see coprocessorpb.Aggregation).
func (st *aggState) appendPartial(out []expr.Datum, f aggFunc) []expr.Datum {
	switch f.tp {
	case coprocessorpb.AggFuncType_Count:
		return append(out, tablecodec.NewInt(st.count))
	case coprocessorpb.AggFuncType_Sum:
		return append(out, st.sum())
	case coprocessorpb.AggFuncType_Avg:
		return append(out, tablecodec.NewInt(st.count), st.sum())
	}
	if !st.has {
		return append(out, tablecodec.NullDatum)
	}
	return append(out, st.v)
}

func (st *aggState) sum() expr.Datum {
	switch {
	case st.count == 0:
		return tablecodec.NullDatum
	case st.isFloat:
		return tablecodec.NewFloat(st.sumF)
	case !st.has:
		return types.NewDecimal(st.sumI, 0).Datum()
	}
	return st.dec.Datum()
}
