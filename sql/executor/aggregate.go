package executor

import (
	"fmt"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/stratadb/strata/sql/collate"
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
	// variance is VAR_POP's and STDDEV's sum of squared deviations so far
	// (sumF the values' sum; Youngs and Cramer's update, as TiDB).
	variance float64
	bits     uint64 // BIT_AND, BIT_OR, BIT_XOR
	seen     map[string]struct{}
	concat   *concatState  // GROUP_CONCAT
	json     *jsonAggState // JSON_ARRAYAGG, JSON_OBJECTAGG
}

// jsonAggState is a JSON_ARRAYAGG's elements or a JSON_OBJECTAGG's
// members so far (their own copies: input rows are reused).
type jsonAggState struct {
	elems []types.JSON
	obj   types.JSONObjectBuilder
}

// addJSON adds a row to JSON_ARRAYAGG (its value, NULL as null) or
// JSON_OBJECTAGG (a NULL key is ERROR 3158, a repeated key keeps the last
// value).
func (st *aggState) addJSON(spec *planner.AggSpec, row []datum) error {
	var buf [2]datum
	vals := buf[:0]
	for _, a := range spec.Args {
		v, err := a.Eval(row)
		if err != nil {
			return err
		}
		vals = append(vals, v)
	}
	if st.json == nil {
		st.json = &jsonAggState{}
	}
	st.count++
	last := len(vals) - 1
	v := types.NewJSONDatum(types.ToJSON(vals[last], spec.Args[last].Type())).JSON() // a copy
	if v.Depth() >= types.MaxJSONDepth {
		return types.ErrJSONTooDeep // the result would nest one level deeper
	}
	if spec.Fn == ast.AggFuncJsonArrayagg {
		st.json.elems = append(st.json.elems, v)
		return nil
	}
	if vals[0].IsNull() {
		return errJSONNullKey
	}
	key := types.AppendText(nil, vals[0], nil)
	if vals[0].Kind() == types.KindJSON {
		key = vals[0].JSON().Unquoted()
	}
	st.json.obj.Add(key, v)
	return nil
}

var errJSONNullKey = &types.JSONError{Code: 3158, Msg: "JSON documents may not contain NULL member names."}

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
	if spec.Fn == ast.AggFuncJsonArrayagg || spec.Fn == ast.AggFuncJsonObjectAgg {
		return keyBuf, st.addJSON(spec, row)
	}
	if spec.Args != nil {
		return st.addArgs(spec, row, keyBuf)
	}
	v, err := spec.Arg.Eval(row)
	if err != nil || v.IsNull() {
		return keyBuf, err
	}
	if spec.Distinct {
		var dup bool
		var colls []*collate.Collation
		if c := expr.Collation(spec.Arg.Type()); c != nil {
			colls = []*collate.Collation{c}
		}
		if keyBuf, dup = st.seenBefore(keyBuf, []datum{v}, colls); dup {
			return keyBuf, nil
		}
	}
	st.addValue(spec, v)
	return keyBuf, nil
}

// seenBefore records vals in the DISTINCT set and reports whether they
// were there already.
func (st *aggState) seenBefore(keyBuf []byte, vals []datum, colls []*collate.Collation) ([]byte, bool) {
	if st.seen == nil {
		st.seen = map[string]struct{}{}
	}
	keyBuf = expr.AppendGroupKeyColl(keyBuf[:0], vals, colls)
	if _, dup := st.seen[string(keyBuf)]; dup {
		return keyBuf, true
	}
	st.seen[string(keyBuf)] = struct{}{}
	return keyBuf, false
}

// addArgs adds a row to an aggregate of several arguments
// (COUNT(DISTINCT a, b), GROUP_CONCAT): rows with a NULL argument are
// skipped.
func (st *aggState) addArgs(spec *planner.AggSpec, row []datum, keyBuf []byte) ([]byte, error) {
	var buf [4]datum
	vals := buf[:0]
	for _, a := range spec.Args {
		v, err := a.Eval(row)
		if err != nil || v.IsNull() {
			return keyBuf, err
		}
		vals = append(vals, v)
	}
	if spec.Distinct {
		var dup bool
		if keyBuf, dup = st.seenBefore(keyBuf, vals, expr.Collations(spec.Args)); dup {
			return keyBuf, nil
		}
	}
	st.count++
	if spec.Fn != ast.AggFuncGroupConcat {
		return keyBuf, nil
	}
	if st.concat == nil {
		st.concat = &concatState{}
	}
	return keyBuf, st.concat.add(spec, vals, row)
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
	case ast.AggFuncVarPop, ast.AggFuncVarSamp, ast.AggFuncStddevPop, ast.AggFuncStddevSamp:
		f, _ := types.ToFloat(v)
		st.sumF += f
		if st.count > 1 {
			n := float64(st.count)
			t := n*f - st.sumF
			st.variance += t * t / (n * (n - 1))
		}
	case ast.AggFuncBitAnd:
		if st.count == 1 {
			st.bits = expr.BitUint64(v)
		} else {
			st.bits &= expr.BitUint64(v)
		}
	case ast.AggFuncBitOr:
		st.bits |= expr.BitUint64(v)
	case ast.AggFuncBitXor:
		st.bits ^= expr.BitUint64(v)
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

// cut reports whether result cut a GROUP_CONCAT at group_concat_max_len.
func (st *aggState) cut() bool { return st.concat != nil && st.concat.cut }

// warnCut adds MySQL's warning 1260 for a GROUP_CONCAT of result row
// rowNum (1-based) that result cut.
func warnCut(rc *runCtx, aggs []aggState, rowNum int) {
	for i := range aggs {
		if aggs[i].cut() {
			rc.warn(errCutGroupConcat, fmt.Sprintf("Row %d was cut by GROUP_CONCAT()", rowNum))
			return
		}
	}
}

// errCutGroupConcat is ER_CUT_VALUE_GROUP_CONCAT.
const errCutGroupConcat = 1260

func (st *aggState) result(spec *planner.AggSpec) datum {
	switch spec.Fn {
	case ast.AggFuncGroupConcat:
		if st.concat == nil {
			return types.NullDatum
		}
		return st.concat.result(spec)
	case ast.AggFuncJsonArrayagg, ast.AggFuncJsonObjectAgg:
		switch {
		case st.json == nil:
			return types.NullDatum
		case spec.Fn == ast.AggFuncJsonArrayagg:
			return types.NewJSONDatum(types.JSONArrayOf(st.json.elems))
		}
		return types.NewJSONDatum(st.json.obj.Build())
	case ast.AggFuncCount:
		return types.NewInt(st.count)
	case ast.AggFuncVarPop, ast.AggFuncVarSamp, ast.AggFuncStddevPop, ast.AggFuncStddevSamp:
		n := st.count
		if spec.Fn == ast.AggFuncVarSamp || spec.Fn == ast.AggFuncStddevSamp {
			n-- // a sample of one row has no variance: NULL
		}
		if n <= 0 {
			return types.NullDatum
		}
		r := st.variance / float64(n)
		if spec.Fn == ast.AggFuncStddevPop || spec.Fn == ast.AggFuncStddevSamp {
			r = math.Sqrt(r)
		}
		return types.NewFloat(r)
	case ast.AggFuncBitAnd:
		if st.count == 0 {
			return types.NewUint(math.MaxUint64)
		}
		return types.NewUint(st.bits)
	case ast.AggFuncBitOr, ast.AggFuncBitXor:
		return types.NewUint(st.bits)
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

// concatState is a GROUP_CONCAT group's text: built as rows come without
// ORDER BY (and no longer once past group_concat_max_len), else every
// row's text and sort keys, sorted at the end.
type concatState struct {
	text []byte
	rows []concatRow
	cut  bool // result cut the text at group_concat_max_len
}

type concatRow struct {
	text []byte
	keys []datum
}

func (c *concatState) add(spec *planner.AggSpec, vals, row []datum) error {
	if len(spec.Order) == 0 {
		if len(c.text) > spec.MaxLen {
			return nil // cut at the end anyway
		}
		if c.text != nil {
			c.text = append(c.text, spec.Sep...)
		}
		c.text = appendConcat(c.text, vals)
		return nil
	}
	r := concatRow{text: appendConcat(nil, vals), keys: make([]datum, len(spec.Order))}
	for i, k := range spec.Order {
		v, err := k.E.Eval(row)
		if err != nil {
			return err
		}
		r.keys[i] = v
	}
	c.rows = append(c.rows, r)
	return nil
}

// appendConcat appends the text of vals, one after the other.
func appendConcat(b []byte, vals []datum) []byte {
	if b == nil {
		b = []byte{}
	}
	for _, v := range vals {
		b = types.AppendText(b, v, nil)
	}
	return b
}

func (c *concatState) result(spec *planner.AggSpec) datum {
	text := c.text
	if len(spec.Order) > 0 {
		kts := make([]types.FieldType, len(spec.Order))
		for i, k := range spec.Order {
			kts[i] = k.E.Type()
		}
		slices.SortStableFunc(c.rows, func(a, b concatRow) int { return compareKeys(spec.Order, kts, a.keys, b.keys) })
		for i, r := range c.rows {
			if i > 0 {
				text = append(text, spec.Sep...)
			}
			text = append(text, r.text...)
			if len(text) > spec.MaxLen {
				break
			}
		}
	}
	if len(text) > spec.MaxLen {
		// Cut at group_concat_max_len bytes, not inside a character.
		c.cut = true
		n := spec.MaxLen
		for n > 0 && !utf8.RuneStart(text[n]) {
			n--
		}
		text = text[:n]
	}
	return types.NewBytes(text)
}
