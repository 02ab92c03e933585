package expr

import (
	"bytes"
	"fmt"
	"math"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/stratadb/strata/sql/collate"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/types"
)

// Expr is a compiled expression.
type Expr interface {
	// Eval computes the value for one row.
	Eval(row []types.Datum) (types.Datum, error)
	// Type is the static result type.
	Type() types.FieldType
}

var (
	trueD  = types.NewInt(1)
	falseD = types.NewInt(0)
	boolT  = types.FieldType{Tp: mysql.TypeLonglong, Flen: 1, Flag: mysql.BinaryFlag}
)

func boolDatum(b bool) types.Datum {
	if b {
		return trueD
	}
	return falseD
}

// Constant is a literal or a folded session value.
type Constant struct {
	Value types.Datum
	Ft    types.FieldType
	// folded: compilation chose something from Value (a canonical form,
	// a precision, a pattern), so the expression holds only for this
	// value. A plan that compiled a parameter marker's constant so is not
	// cached (ParamRecorder).
	folded bool
}

// Folded reports whether compilation made a choice from c's value (a
// parameter's constant folded so cannot be rebound: Rebind).
func (c *Constant) Folded() bool { return c.folded }

// Rebind gives a parameter marker's constant, compiled for a cached plan,
// the value of this execution (its type is ParamType's for the value, of
// the kind the plan was compiled for).
func (c *Constant) Rebind(v types.Datum) { c.Value, c.Ft = v, ParamType(v) }

// fold marks that compilation chose something from c's value.
func (c *Constant) fold() *Constant { c.folded = true; return c }

// Eval implements Expr.
func (c *Constant) Eval([]types.Datum) (types.Datum, error) { return c.Value, nil }

// Type implements Expr.
func (c *Constant) Type() types.FieldType { return c.Ft }

// Column reads row[Offset].
type Column struct {
	Offset int
	Ft     types.FieldType
	Name   string
}

// Eval implements Expr.
func (c *Column) Eval(row []types.Datum) (types.Datum, error) { return row[c.Offset], nil }

// Type implements Expr.
func (c *Column) Type() types.FieldType { return c.Ft }

// IsTrue evaluates d as a condition: (value, isNull).
func IsTrue(d types.Datum) (bool, bool) {
	switch d.Kind() {
	case types.KindInt64, types.KindUint64:
		return d.Uint64() != 0, false
	case types.KindFloat64:
		return d.Float64() != 0, false
	case types.KindBytes, types.KindJSON:
		f, _ := types.ToFloat(d)
		return f != 0, false
	}
	return false, true
}

func stringish(ft types.FieldType) bool {
	c := ft.Class()
	return c == types.ClassString || c == types.ClassTime || c == types.ClassNull
}

// Compare compares two non-NULL values. byBytes selects bytewise comparison.
func Compare(a, b types.Datum, byBytes bool) int {
	if a.Kind() == types.KindJSON || b.Kind() == types.KindJSON {
		// MySQL's JSON comparison; a SQL value on one side (a string is a
		// JSON string) is converted first. Compilation converts typed
		// operands (jsonOperands), so a DECIMAL stays a number.
		return types.CompareJSON(types.ToJSON(a, types.FieldType{}), types.ToJSON(b, types.FieldType{}))
	}
	if byBytes && a.Kind() == types.KindBytes && b.Kind() == types.KindBytes {
		return bytes.Compare(a.Bytes(), b.Bytes())
	}
	ak, bk := a.Kind(), b.Kind()
	switch {
	case ak == types.KindInt64 && bk == types.KindInt64:
		return cmp3(a.Int64() < b.Int64(), a.Int64() > b.Int64())
	case ak == types.KindUint64 && bk == types.KindUint64:
		return cmp3(a.Uint64() < b.Uint64(), a.Uint64() > b.Uint64())
	case ak == types.KindInt64 && bk == types.KindUint64:
		if a.Int64() < 0 {
			return -1
		}
		return cmp3(uint64(a.Int64()) < b.Uint64(), uint64(a.Int64()) > b.Uint64())
	case ak == types.KindUint64 && bk == types.KindInt64:
		return -Compare(b, a, byBytes)
	}
	if ak != types.KindFloat64 && bk != types.KindFloat64 {
		// Exact numbers (decimals, integers, numeric strings) compare
		// exactly: 1.10 = 1.1, and 20-digit values do not collapse.
		if x, ok := types.ToDecimal(a); ok {
			if y, ok := types.ToDecimal(b); ok {
				return x.Cmp(y)
			}
		}
	}
	fa, _ := types.ToFloat(a)
	fb, _ := types.ToFloat(b)
	return cmp3(fa < fb, fa > fb)
}

// CompareAs compares two non-NULL values of type ft (ORDER BY keys,
// MIN/MAX): TIME values as durations (their text does not order negative
// or 100+ hour values), ENUM values by member position as MySQL sorts
// them, strings of a non-binary collation under it; everything else as
// Compare with ft's byBytes.
func CompareAs(a, b types.Datum, ft types.FieldType) int {
	if ft.Coll != 0 && a.Kind() == types.KindBytes && b.Kind() == types.KindBytes {
		if c := Collation(ft); c != nil {
			return c.Compare(a.Bytes(), b.Bytes())
		}
	}
	switch ft.Tp {
	case mysql.TypeDuration:
		if x, ok := types.ParseDuration(string(types.AppendText(nil, a, nil))); ok {
			if y, ok := types.ParseDuration(string(types.AppendText(nil, b, nil))); ok {
				return cmp3(x < y, x > y)
			}
		}
	case mysql.TypeEnum:
		if x, y := types.EnumIndex(ft, a), types.EnumIndex(ft, b); x >= 0 && y >= 0 {
			return cmp3(x < y, x > y)
		}
	}
	return Compare(a, b, stringish(ft))
}

func cmp3(lt, gt bool) int {
	if lt {
		return -1
	}
	if gt {
		return 1
	}
	return 0
}

// compareHow compares two non-NULL values as a compiled comparison says:
// as durations (dur), as times of mixed shapes (mixed), two strings under
// coll when it is set (a non-binary collation), else with Compare.
func compareHow(a, b types.Datum, byBytes, dur, mixed bool, coll *collate.Collation) int {
	switch {
	case dur:
		return CompareAs(a, b, types.FieldType{Tp: mysql.TypeDuration})
	case mixed:
		return compareWidened(a, b)
	case coll != nil && a.Kind() == types.KindBytes && b.Kind() == types.KindBytes:
		return coll.Compare(a.Bytes(), b.Bytes())
	}
	return Compare(a, b, byBytes)
}

// compareWidened compares two non-NULL DATE, DATETIME or TIMESTAMP values
// of mixed shapes (mixedTimeOperands) as times.
func compareWidened(a, b types.Datum) int {
	if a.Kind() != types.KindBytes || b.Kind() != types.KindBytes {
		return Compare(a, b, true)
	}
	var x, y [26]byte
	return bytes.Compare(widenTime(x[:0], a.Bytes()), widenTime(y[:0], b.Bytes()))
}

// widenTime appends the canonical text of a DATE, DATETIME or TIMESTAMP
// value widened to a DATETIME(6)'s ("2024-01-02" is "2024-01-02
// 00:00:00.000000", "…10:00:00.5" is "…10:00:00.500000"), so that
// values of mixed types and precisions compare bytewise as times do
// (MySQL compares a DATE with a DATETIME as a DATETIME at midnight).
func widenTime(dst, t []byte) []byte {
	const full = "0000-00-00 00:00:00.000000"
	dst = append(dst, t...)
	switch {
	case len(t) == 10:
		dst = append(dst, full[10:]...)
	case len(t) == 19:
		dst = append(dst, full[19:]...)
	case len(t) > 20 && len(t) < len(full):
		dst = append(dst, full[len(t):]...)
	}
	return dst
}

// Compare is a comparison operator.
type compareExpr struct {
	op      opcode.Op
	l, r    Expr
	byBytes bool
	dur     bool // a TIME compared with a TIME or a string: as durations
	// mixedTime: DATE, DATETIME and TIMESTAMP operands of different types
	// or precisions: their texts are widened to one length first.
	mixedTime bool
	coll      *collate.Collation // strings compare under it (nil: bytewise)
}

func (e *compareExpr) Type() types.FieldType { return boolT }

// evalOperands evaluates both operands of a binary operator, left first.
func evalOperands(l, r Expr, row []types.Datum) (a, b types.Datum, err error) {
	if a, err = l.Eval(row); err != nil {
		return a, b, err
	}
	b, err = r.Eval(row)
	return a, b, err
}

func (e *compareExpr) Eval(row []types.Datum) (types.Datum, error) {
	a, b, err := evalOperands(e.l, e.r, row)
	if err != nil {
		return types.NullDatum, err
	}
	if a.IsNull() || b.IsNull() {
		if e.op == opcode.NullEQ {
			return boolDatum(a.IsNull() && b.IsNull()), nil
		}
		return types.NullDatum, nil
	}
	c := compareHow(a, b, e.byBytes, e.dur, e.mixedTime, e.coll)
	switch e.op {
	case opcode.EQ, opcode.NullEQ:
		return boolDatum(c == 0), nil
	case opcode.NE:
		return boolDatum(c != 0), nil
	case opcode.LT:
		return boolDatum(c < 0), nil
	case opcode.LE:
		return boolDatum(c <= 0), nil
	case opcode.GT:
		return boolDatum(c > 0), nil
	case opcode.GE:
		return boolDatum(c >= 0), nil
	}
	return types.NullDatum, fmt.Errorf("expr: bad comparison %s", e.op)
}

type logicExpr struct {
	op   opcode.Op
	l, r Expr
}

func (e *logicExpr) Type() types.FieldType { return boolT }

func (e *logicExpr) Eval(row []types.Datum) (types.Datum, error) {
	a, err := e.l.Eval(row)
	if err != nil {
		return a, err
	}
	av, an := IsTrue(a)
	switch e.op {
	case opcode.LogicAnd:
		if !an && !av {
			return falseD, nil
		}
	case opcode.LogicOr:
		if !an && av {
			return trueD, nil
		}
	}
	b, err := e.r.Eval(row)
	if err != nil {
		return b, err
	}
	bv, bn := IsTrue(b)
	switch e.op {
	case opcode.LogicAnd:
		if !bn && !bv {
			return falseD, nil
		}
		if an || bn {
			return types.NullDatum, nil
		}
		return trueD, nil
	case opcode.LogicOr:
		if !bn && bv {
			return trueD, nil
		}
		if an || bn {
			return types.NullDatum, nil
		}
		return falseD, nil
	default: // xor
		if an || bn {
			return types.NullDatum, nil
		}
		return boolDatum(av != bv), nil
	}
}

type notExpr struct{ e Expr }

func (e *notExpr) Type() types.FieldType { return boolT }

func (e *notExpr) Eval(row []types.Datum) (types.Datum, error) {
	a, err := e.e.Eval(row)
	if err != nil {
		return a, err
	}
	v, n := IsTrue(a)
	if n {
		return types.NullDatum, nil
	}
	return boolDatum(!v), nil
}

type isNullExpr struct {
	e   Expr
	not bool
}

func (e *isNullExpr) Type() types.FieldType { return boolT }

func (e *isNullExpr) Eval(row []types.Datum) (types.Datum, error) {
	a, err := e.e.Eval(row)
	if err != nil {
		return a, err
	}
	return boolDatum(a.IsNull() != e.not), nil
}

type isTruthExpr struct {
	e     Expr
	not   bool
	truth bool
}

func (e *isTruthExpr) Type() types.FieldType { return boolT }

func (e *isTruthExpr) Eval(row []types.Datum) (types.Datum, error) {
	a, err := e.e.Eval(row)
	if err != nil {
		return a, err
	}
	v, n := IsTrue(a)
	res := !n && v == e.truth
	return boolDatum(res != e.not), nil
}

type inExpr struct {
	e       Expr
	list    []Expr
	not     bool
	byBytes bool
	dur     bool   // a TIME against TIMEs or strings: as durations
	mixed   []bool // items compared as mixedTimeOperands (nil: none)
	coll    *collate.Collation
}

func (e *inExpr) Type() types.FieldType { return boolT }

func (e *inExpr) Eval(row []types.Datum) (types.Datum, error) {
	a, err := e.e.Eval(row)
	if err != nil || a.IsNull() {
		return types.NullDatum, err
	}
	sawNull := false
	for i, x := range e.list {
		b, err := x.Eval(row)
		if err != nil {
			return b, err
		}
		if b.IsNull() {
			sawNull = true
			continue
		}
		if compareHow(a, b, e.byBytes, e.dur, e.mixed != nil && e.mixed[i], e.coll) == 0 {
			return boolDatum(!e.not), nil
		}
	}
	if sawNull {
		return types.NullDatum, nil
	}
	return boolDatum(e.not), nil
}

type arithExpr struct {
	op   opcode.Op
	l, r Expr
	ft   types.FieldType
	dec  bool   // evaluate exactly in DECIMAL
	warn Warner // division by zero, a string operand that is no number (nil: nothing said)
}

// byZero is the result of dividing by zero: NULL (warning 1365), or the
// Env's error.
func (e *arithExpr) byZero() (types.Datum, error) {
	return raise(e.warn, types.NullDatum, &Condition{Code: errno.ErrDivisionByZero, Msg: "Division by 0"})
}

// floatOperand is an operand of a DOUBLE operator as a float64: a string
// by its numeric prefix, with warning 1292 when that is not all of it.
func (e *arithExpr) floatOperand(d types.Datum) (float64, error) {
	f, _ := types.ToFloat(d)
	if e.warn != nil && d.Kind() == types.KindBytes {
		if _, whole := types.NumericPrefix(d.Bytes()); !whole {
			if _, err := raise(e.warn, d, truncatedWarning("DOUBLE", d.Bytes())); err != nil {
				return 0, err
			}
		}
	}
	return f, nil
}

func (e *arithExpr) Type() types.FieldType { return e.ft }

func isInt(d types.Datum) bool {
	return d.Kind() == types.KindInt64 || d.Kind() == types.KindUint64
}

func (e *arithExpr) Eval(row []types.Datum) (types.Datum, error) {
	if e.dec {
		return e.evalDecimal(row)
	}
	a, b, err := evalOperands(e.l, e.r, row)
	if err != nil {
		return types.NullDatum, err
	}
	if a.IsNull() || b.IsNull() {
		return types.NullDatum, nil
	}
	if isInt(a) && isInt(b) && e.op != opcode.Div {
		x, y := a.Int64(), b.Int64()
		if a.Kind() == types.KindInt64 && b.Kind() == types.KindInt64 {
			switch e.op {
			case opcode.Plus:
				if s := x + y; (s > x) == (y > 0) {
					return types.NewInt(s), nil
				}
			case opcode.Minus:
				if s := x - y; (s < x) == (y > 0) {
					return types.NewInt(s), nil
				}
			case opcode.Mul:
				if x == 0 || y == 0 {
					return types.NewInt(0), nil
				}
				if s := x * y; s/y == x && !(x == -1 && y == math.MinInt64) && !(y == -1 && x == math.MinInt64) {
					return types.NewInt(s), nil
				}
			case opcode.IntDiv:
				if y == 0 {
					return e.byZero()
				}
				if !(x == math.MinInt64 && y == -1) {
					return types.NewInt(x / y), nil
				}
			case opcode.Mod:
				if y == 0 {
					return e.byZero()
				}
				if y == -1 {
					return types.NewInt(0), nil
				}
				return types.NewInt(x % y), nil
			}
			return types.NullDatum, outOfRange(e, a, b)
		}
	}
	fa, err := e.floatOperand(a)
	if err != nil {
		return types.NullDatum, err
	}
	fb, err := e.floatOperand(b)
	if err != nil {
		return types.NullDatum, err
	}
	var r float64
	switch e.op {
	case opcode.Plus:
		r = fa + fb
	case opcode.Minus:
		r = fa - fb
	case opcode.Mul:
		r = fa * fb
	case opcode.Div:
		if fb == 0 {
			return e.byZero()
		}
		r = fa / fb
	case opcode.IntDiv:
		if fb == 0 {
			return e.byZero()
		}
		q := math.Trunc(fa / fb)
		if q > math.MaxInt64 || q < math.MinInt64 {
			return types.NullDatum, outOfRange(e, a, b)
		}
		return types.NewInt(int64(q)), nil
	case opcode.Mod:
		if fb == 0 {
			return e.byZero()
		}
		r = math.Mod(fa, fb)
	}
	if math.IsInf(r, 0) || math.IsNaN(r) {
		return types.NullDatum, outOfRange(e, a, b)
	}
	if e.ft.Class() == types.ClassInt {
		return types.NewInt(int64(r)), nil
	}
	return types.NewFloat(r), nil
}

// decRangeError is ERROR 1690 for a DECIMAL result beyond 65 digits.
func decRangeError(x, y types.Decimal) error {
	return &RangeError{Msg: fmt.Sprintf("DECIMAL value is out of range in '(%s, %s)'", x.String(), y.String())}
}

// decOperand evaluates an operand of an exact operator as a Decimal; a
// nested exact operator is computed without a text round trip.
func decOperand(x Expr, row []types.Datum) (v types.Decimal, null bool, err error) {
	if ae, ok := x.(*arithExpr); ok && ae.dec && ae.op != opcode.IntDiv {
		return ae.evalDec(row)
	}
	d, err := x.Eval(row)
	if err != nil || d.IsNull() {
		return v, true, err
	}
	if v, ok := types.ToDecimal(d); ok {
		return v, false, nil
	}
	f, _ := types.ToFloat(d) // not reached for typed operands; be lenient
	v, _ = types.ToDecimal(types.NewFloat(f))
	return v, false, nil
}

// evalDec computes a DECIMAL result exactly, rounded half up to the static
// result scale so the text matches the column metadata; null for NULL
// operands and division by zero.
func (e *arithExpr) evalDec(row []types.Datum) (r types.Decimal, null bool, err error) {
	x, null, err := decOperand(e.l, row)
	if err != nil || null {
		return r, true, err
	}
	y, null, err := decOperand(e.r, row)
	if err != nil || null {
		return r, true, err
	}
	ok := true
	switch e.op {
	case opcode.Plus:
		r = x.Add(y)
	case opcode.Minus:
		r = x.Sub(y)
	case opcode.Mul:
		r = x.Mul(y)
	case opcode.Div:
		r, ok = x.Div(y, types.DivPrecisionIncr)
	case opcode.Mod:
		r, ok = x.Mod(y)
	case opcode.IntDiv:
		r, ok = x.IntDiv(y)
	}
	if !ok { // division by zero
		_, err := e.byZero()
		return r, true, err
	}
	r = r.Round(max(e.ft.Decimal, 0))
	if r.Overflows() {
		return r, true, decRangeError(x, y)
	}
	return r, false, nil
}

func (e *arithExpr) evalDecimal(row []types.Datum) (types.Datum, error) {
	r, null, err := e.evalDec(row)
	if err != nil || null {
		return types.NullDatum, err
	}
	if e.op == opcode.IntDiv {
		if v, fits := r.Int64(); fits {
			return types.NewInt(v), nil
		}
		return types.NullDatum, &RangeError{Msg: fmt.Sprintf("BIGINT value is out of range in '%s'", r.String())}
	}
	return r.Datum(), nil
}

type negExpr struct{ e Expr }

func (e *negExpr) Type() types.FieldType { return e.e.Type() }

func (e *negExpr) Eval(row []types.Datum) (types.Datum, error) {
	a, err := e.e.Eval(row)
	if err != nil || a.IsNull() {
		return a, err
	}
	switch a.Kind() {
	case types.KindInt64:
		if a.Int64() == math.MinInt64 {
			return types.NullDatum, outOfRange(e, a, a)
		}
		return types.NewInt(-a.Int64()), nil
	case types.KindUint64:
		if a.Uint64() <= 1<<63 {
			return types.NewInt(-int64(a.Uint64())), nil
		}
		return types.NullDatum, outOfRange(e, a, a)
	}
	if e.e.Type().Class() == types.ClassDecimal {
		if v, ok := types.ToDecimal(a); ok {
			return v.Neg().Datum(), nil
		}
	}
	f, _ := types.ToFloat(a)
	return types.NewFloat(-f), nil
}

type likeExpr struct {
	e, pat Expr
	escape byte
	not    bool
	coll   *collate.Collation // characters compare under it (nil: bytewise)
}

func (e *likeExpr) Type() types.FieldType { return boolT }

func (e *likeExpr) Eval(row []types.Datum) (types.Datum, error) {
	a, err := e.e.Eval(row)
	if err != nil || a.IsNull() {
		return types.NullDatum, err
	}
	p, err := e.pat.Eval(row)
	if err != nil || p.IsNull() {
		return types.NullDatum, err
	}
	s := types.AppendText(nil, a, nil)
	pat := types.AppendText(nil, p, nil)
	if e.coll != nil {
		return boolDatum(e.coll.Like(s, pat, rune(e.escape)) != e.not), nil
	}
	return boolDatum(Like(s, pat, e.escape) != e.not), nil
}

// Like matches s against a LIKE pattern (% and _, with escape), bytewise.
func Like(s, p []byte, escape byte) bool {
	for len(p) > 0 {
		c := p[0]
		switch {
		case c == escape && len(p) > 1:
			if len(s) == 0 || s[0] != p[1] {
				return false
			}
			s, p = s[1:], p[2:]
		case c == '%':
			p = p[1:]
			for len(p) > 0 && p[0] == '%' {
				p = p[1:]
			}
			if len(p) == 0 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if Like(s[i:], p, escape) {
					return true
				}
			}
			return false
		case c == '_':
			if len(s) == 0 {
				return false
			}
			_, n := decodeRune(s)
			s, p = s[n:], p[1:]
		default:
			if len(s) == 0 || s[0] != c {
				return false
			}
			s, p = s[1:], p[1:]
		}
	}
	return len(s) == 0
}

func decodeRune(s []byte) (rune, int) {
	if s[0] < 0x80 {
		return rune(s[0]), 1
	}
	r := []rune(string(s[:min(len(s), 4)]))
	n := len(string(r[0]))
	return r[0], n
}

func outOfRange(e Expr, a, b types.Datum) error {
	return &RangeError{Msg: fmt.Sprintf("BIGINT value is out of range in '(%s, %s)'", a.String(), b.String())}
}

// RangeError is an arithmetic overflow (ERROR 1690).
type RangeError struct{ Msg string }

func (e *RangeError) Error() string { return e.Msg }

// MySQLError implements errno.Coded: ERROR 1690 (22003).
func (e *RangeError) MySQLError() (uint16, string) { return 1690, e.Msg }

type caseExpr struct {
	value   Expr // nil for searched CASE
	whens   []Expr
	thens   []Expr
	els     Expr
	ft      types.FieldType
	byBytes bool
	conv    bool   // results are converted to ft (INT branches of a DECIMAL CASE)
	mixed   []bool // whens compared with value as mixedTimeOperands (nil: none)
	coll    *collate.Collation
}

func (e *caseExpr) Type() types.FieldType { return e.ft }

func (e *caseExpr) result(v types.Datum, err error) (types.Datum, error) {
	if err != nil || !e.conv || v.IsNull() {
		return v, err
	}
	return e.ft.Convert(v)
}

func (e *caseExpr) Eval(row []types.Datum) (types.Datum, error) {
	var v types.Datum
	var err error
	if e.value != nil {
		if v, err = e.value.Eval(row); err != nil {
			return v, err
		}
	}
	for i, w := range e.whens {
		c, err := w.Eval(row)
		if err != nil {
			return c, err
		}
		var hit bool
		if e.value != nil {
			hit = !v.IsNull() && !c.IsNull() && compareHow(v, c, e.byBytes, false, e.mixed != nil && e.mixed[i], e.coll) == 0
		} else {
			t, n := IsTrue(c)
			hit = t && !n
		}
		if hit {
			return e.result(e.thens[i].Eval(row))
		}
	}
	if e.els != nil {
		return e.result(e.els.Eval(row))
	}
	return types.NullDatum, nil
}

// funcExpr is a scalar function evaluated per row.
type funcExpr struct {
	name string
	args []Expr
	ft   types.FieldType
	fn   func(args []types.Datum) (types.Datum, error)
	// warn receives the Conditions fn raises (nil: they say nothing).
	warn Warner
}

func (e *funcExpr) Type() types.FieldType { return e.ft }

func (e *funcExpr) Eval(row []types.Datum) (types.Datum, error) {
	var buf [4]types.Datum
	vals := buf[:0]
	for _, a := range e.args {
		v, err := a.Eval(row)
		if err != nil {
			return v, err
		}
		vals = append(vals, v)
	}
	d, err := e.fn(vals)
	if c, ok := err.(*Condition); ok {
		return raise(e.warn, d, c)
	}
	return d, err
}

func concatFn(args []types.Datum) (types.Datum, error) {
	var b []byte
	for _, a := range args {
		if a.IsNull() {
			return types.NullDatum, nil
		}
		b = types.AppendText(b, a, nil)
	}
	if b == nil {
		b = []byte{}
	}
	return types.NewBytes(b), nil
}

func lowerUpper(upper bool) func([]types.Datum) (types.Datum, error) {
	return func(args []types.Datum) (types.Datum, error) {
		if args[0].IsNull() {
			return types.NullDatum, nil
		}
		s := string(types.AppendText(nil, args[0], nil))
		if upper {
			return types.NewString(strings.ToUpper(s)), nil
		}
		return types.NewString(strings.ToLower(s)), nil
	}
}
