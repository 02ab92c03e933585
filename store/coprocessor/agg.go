package coprocessor

import (
	"errors"
	"fmt"

	"github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/tablecodec"
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
	v       types.Datum
	has     bool
}

func (x *run) accumulate(states []aggState) error {
	for i, f := range x.p.aggs {
		st := &states[i]
		if f.arg == nil {
			st.count++
			continue
		}
		if f.tp == coprocessorpb.AggFuncType_FirstRow && st.has {
			continue
		}
		v, err := f.arg.Eval(x.row)
		if err != nil {
			return err
		}
		if f.tp == coprocessorpb.AggFuncType_FirstRow {
			st.v, st.has = cloneDatum(v), true
			continue
		}
		if v.IsNull() {
			continue
		}
		st.count++
		switch f.tp {
		case coprocessorpb.AggFuncType_Sum, coprocessorpb.AggFuncType_Avg:
			c := f.arg.Type().Class()
			if c == types.ClassInt && !st.has && v.Kind() == types.KindInt64 {
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
func (st *aggState) appendPartial(out []types.Datum, f aggFunc) []types.Datum {
	switch f.tp {
	case coprocessorpb.AggFuncType_Count:
		return append(out, types.NewInt(st.count))
	case coprocessorpb.AggFuncType_Sum:
		return append(out, st.sum())
	case coprocessorpb.AggFuncType_Avg:
		return append(out, types.NewInt(st.count), st.sum())
	}
	if !st.has {
		return append(out, types.NullDatum)
	}
	return append(out, st.v)
}

func (st *aggState) sum() types.Datum {
	switch {
	case st.count == 0:
		return types.NullDatum
	case st.isFloat:
		return types.NewFloat(st.sumF)
	case !st.has:
		return types.NewDecimal(st.sumI, 0).Datum()
	}
	return st.dec.Datum()
}

// maxGroups bounds the groups one request keeps (memory per request): a
// GROUP BY over a nearly unique key should stay on the SQL node, which
// the planner's estimate does not know; past it the request fails with
// ErrTooManyGroups rather than growing without bound.
const maxGroups = 1 << 20

// ErrTooManyGroups is returned when a partial GROUP BY meets more than
// maxGroups groups in one request.
var ErrTooManyGroups = errors.New("coprocessor: too many groups in one request")

// groupTable is a partial GROUP BY: the groups in the order their first
// row was scanned (so the SQL node, merging regions in key order, sees
// groups in the order a scan on the SQL node would) and an index by key
// (expr.AppendGroupKey, as the SQL node groups).
type groupTable struct {
	index  map[string]int
	keys   [][]types.Datum
	states [][]aggState
	vals   []types.Datum
	buf    []byte
}

// lookup returns the states of the current row's group, adding it.
func (g *groupTable) lookup(x *run, p *plan) ([]aggState, error) {
	if g.index == nil {
		g.index = make(map[string]int)
		g.vals = make([]types.Datum, len(p.group))
	}
	for i, e := range p.group {
		v, err := e.Eval(x.row)
		if err != nil {
			return nil, err
		}
		g.vals[i] = v
	}
	g.buf = expr.AppendGroupKeyColl(g.buf[:0], g.vals, p.groupColls)
	if i, ok := g.index[string(g.buf)]; ok {
		return g.states[i], nil
	}
	if len(g.keys) >= maxGroups {
		return nil, fmt.Errorf("%w (%d)", ErrTooManyGroups, maxGroups)
	}
	key := make([]types.Datum, len(g.vals))
	for i, v := range g.vals {
		key[i] = cloneDatum(v)
	}
	g.index[string(g.buf)] = len(g.keys)
	g.keys = append(g.keys, key)
	g.states = append(g.states, make([]aggState, len(p.aggs)))
	return g.states[len(g.states)-1], nil
}

// rows encodes each group as a row: its key values, then its states.
func (g *groupTable) rows(p *plan) []*coprocessorpb.Row {
	out := make([]*coprocessorpb.Row, len(g.keys))
	vals := make([]types.Datum, 0, len(p.group)+2*len(p.aggs))
	var ids []int64
	for i, key := range g.keys {
		vals = append(vals[:0], key...)
		for j, f := range p.aggs {
			vals = g.states[i][j].appendPartial(vals, f)
		}
		if len(ids) != len(vals) {
			ids = tablecodec.SeqColumnIDs(len(vals))
		}
		out[i] = &coprocessorpb.Row{Value: tablecodec.EncodeRow(nil, ids, vals)}
	}
	return out
}
