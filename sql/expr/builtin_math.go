package expr

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"math"
	"strconv"

	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/types"
)

// Math functions. Integers and DECIMALs stay exact (ROUND rounds them
// half away from zero), everything else computes in DOUBLE; a domain
// error (SQRT(-1), LN(0)) is NULL, as MySQL returns.

var mathBuiltins = map[string]builtin{
	"round":    {1, 2, buildRound},
	"truncate": {2, 2, buildRound},
	"floor":    {1, 1, buildFloorCeil},
	"ceil":     {1, 1, buildFloorCeil},
	"ceiling":  {1, 1, buildFloorCeil},
	"pow":      {2, 2, buildFloatFn},
	"power":    {2, 2, buildFloatFn},
	"sqrt":     {1, 1, buildFloatFn},
	"exp":      {1, 1, buildFloatFn},
	"ln":       {1, 1, buildFloatFn},
	"log":      {1, 2, buildFloatFn},
	"log2":     {1, 1, buildFloatFn},
	"log10":    {1, 1, buildFloatFn},
	"radians":  {1, 1, buildFloatFn},
	"degrees":  {1, 1, buildFloatFn},
	"sin":      {1, 1, buildFloatFn},
	"cos":      {1, 1, buildFloatFn},
	"tan":      {1, 1, buildFloatFn},
	"asin":     {1, 1, buildFloatFn},
	"acos":     {1, 1, buildFloatFn},
	"atan":     {1, 2, buildFloatFn},
	"atan2":    {2, 2, buildFloatFn},
	"cot":      {1, 1, buildFloatFn},
	"sign":     {1, 1, buildSign},
	"pi":       {0, 0, buildPi},
	"greatest": {2, -1, buildGreatestLeast},
	"least":    {2, -1, buildGreatestLeast},
	"crc32":    {1, 1, buildCRC32},
	"format":   {2, 3, buildFormat},
}

// constInt is the value of a constant integer argument.
// (a literal, or a negated one: ROUND(x, -1)).
func constInt(e Expr) (int64, bool) {
	if n, ok := e.(*negExpr); ok {
		v, ok := constInt(n.e)
		return -v, ok
	}
	k, ok := e.(*Constant)
	if !ok || k.fold().Value.IsNull() {
		return 0, false
	}
	return intOf(k.Value), true
}

// buildRound compiles ROUND(x[, d]) and TRUNCATE(x, d). The result keeps
// x's class: integers stay integers, a DECIMAL gets scale d (clamped to
// 0..x's scale; x's scale when d is not a constant), anything else is a
// DOUBLE.
func buildRound(name string, args []Expr) (Expr, error) {
	trunc := name == "truncate"
	at := args[0].Type()
	ft := types.DoubleType
	class := at.Class()
	switch class {
	case types.ClassInt:
		ft = types.Int64Type
		if at.Unsigned() {
			ft = types.Uint64Type
		}
	case types.ClassDecimal:
		scale := max(at.Decimal, 0)
		if len(args) == 1 {
			scale = 0
		} else if d, ok := constInt(args[1]); ok {
			scale = int(min(max(d, 0), int64(scale)))
		}
		ft = types.DecimalResultType(at.Flen-max(at.Decimal, 0)+scale+1, scale)
	}
	return &funcExpr{name: name, args: args, ft: ft, fn: func(a []types.Datum) (types.Datum, error) {
		if anyNull(a) {
			return types.NullDatum, nil
		}
		d := int64(0)
		if len(a) == 2 {
			d = max(min(intOf(a[1]), 100), -100)
		}
		switch class {
		case types.ClassInt:
			if d >= 0 {
				return a[0], nil
			}
			v, _ := types.ToDecimal(a[0])
			v = roundDecimal(v, int(d), trunc)
			if ft.Unsigned() {
				if v.Sign() < 0 {
					return types.NewUint(0), nil
				}
				if r, ok := v.Int64(); ok {
					return types.NewUint(uint64(r)), nil
				}
				f, _ := types.ToFloat(v.Datum())
				return types.NewUint(uint64(f)), nil
			}
			r, ok := v.Int64()
			if !ok {
				return types.NullDatum, &RangeError{Msg: fmt.Sprintf("BIGINT value is out of range in '%s(%s,%d)'", name, a[0].String(), d)}
			}
			return types.NewInt(r), nil
		case types.ClassDecimal:
			if v, ok := types.ToDecimal(a[0]); ok {
				v = roundDecimal(v, int(d), trunc)
				return v.Round(ft.Decimal).Datum(), nil
			}
		}
		f, _ := types.ToFloat(a[0])
		return types.NewFloat(roundFloat(f, int(d), trunc)), nil
	}}, nil
}

// roundDecimal rounds v half away from zero (or truncates) to d
// fractional digits; a negative d rounds to tens, hundreds, ...
func roundDecimal(v types.Decimal, d int, trunc bool) types.Decimal {
	if d >= v.Scale() {
		return v
	}
	r := v.Round(d)
	if trunc {
		// Round went away from zero: step one unit back toward it.
		if v.Sign() >= 0 && r.Cmp(v) > 0 {
			r = r.Sub(types.NewDecimal(1, d))
		} else if v.Sign() < 0 && r.Cmp(v) < 0 {
			r = r.Add(types.NewDecimal(1, d))
		}
	}
	if d < 0 {
		r = r.Add(types.NewDecimal(0, 0)) // back to scale 0: 1234 -> 1200
	}
	return r
}

// roundFloat is MySQL's my_double_round: half to even on the scaled value
// (ROUND(2.5e0) = 2), or truncation toward zero.
func roundFloat(f float64, d int, trunc bool) float64 {
	p := math.Pow(10, math.Abs(float64(d)))
	var x float64
	if d < 0 {
		x = f / p
	} else {
		x = f * p
	}
	if math.IsInf(x, 0) {
		return f // more digits than a double has: unchanged
	}
	if trunc {
		x = math.Trunc(x)
	} else {
		x = math.RoundToEven(x)
	}
	if d < 0 {
		return x * p
	}
	return x / p
}

// buildFloorCeil compiles FLOOR(x) and CEIL(x): an integer for integers
// and DECIMALs of up to 18 integer digits, a DECIMAL(p,0) for wider ones,
// a DOUBLE otherwise.
func buildFloorCeil(name string, args []Expr) (Expr, error) {
	ceil := name != "floor"
	at := args[0].Type()
	ft := types.DoubleType
	class := at.Class()
	switch class {
	case types.ClassInt:
		ft = at
		if at.Unsigned() {
			ft = types.Uint64Type
		} else {
			ft = types.Int64Type
		}
	case types.ClassDecimal:
		ft = types.Int64Type
		if at.Flen-max(at.Decimal, 0) >= 18 {
			ft = types.DecimalResultType(at.Flen-max(at.Decimal, 0)+1, 0)
		}
	}
	return &funcExpr{name: name, args: args, ft: ft, fn: func(a []types.Datum) (types.Datum, error) {
		if a[0].IsNull() {
			return types.NullDatum, nil
		}
		switch class {
		case types.ClassInt:
			return a[0], nil
		case types.ClassDecimal:
			if v, ok := types.ToDecimal(a[0]); ok {
				r := roundDecimal(v, 0, true)
				if ceil && r.Cmp(v) < 0 {
					r = r.Add(types.NewDecimal(1, 0))
				} else if !ceil && r.Cmp(v) > 0 {
					r = r.Sub(types.NewDecimal(1, 0))
				}
				r = r.Round(0)
				if ft.Class() == types.ClassInt {
					n, _ := r.Int64()
					return types.NewInt(n), nil
				}
				return r.Datum(), nil
			}
		}
		f, _ := types.ToFloat(a[0])
		if ceil {
			return types.NewFloat(math.Ceil(f)), nil
		}
		return types.NewFloat(math.Floor(f)), nil
	}}, nil
}

// buildFloatFn compiles the DOUBLE functions (POW, SQRT, LN, trig...).
func buildFloatFn(name string, args []Expr) (Expr, error) {
	var f1 func(x float64) float64
	var f2 func(x, y float64) float64
	switch name {
	case "pow", "power":
		f2 = math.Pow
	case "sqrt":
		f1 = math.Sqrt
	case "exp":
		f1 = math.Exp
	case "ln":
		f1 = logOf(math.Log)
	case "log":
		f1 = logOf(math.Log)
		f2 = func(b, x float64) float64 {
			if b <= 0 || b == 1 || x <= 0 {
				return math.NaN()
			}
			return math.Log(x) / math.Log(b)
		}
	case "log2":
		f1 = logOf(math.Log2)
	case "log10":
		f1 = logOf(math.Log10)
	case "radians":
		f1 = func(x float64) float64 { return x * math.Pi / 180 }
	case "degrees":
		f1 = func(x float64) float64 { return x * 180 / math.Pi }
	case "sin":
		f1 = math.Sin
	case "cos":
		f1 = math.Cos
	case "tan":
		f1 = math.Tan
	case "asin":
		f1 = math.Asin
	case "acos":
		f1 = math.Acos
	case "atan", "atan2":
		f1, f2 = math.Atan, math.Atan2
	case "cot":
		f1 = func(x float64) float64 { return 1 / math.Tan(x) }
	}
	if len(args) == 1 && f1 == nil || len(args) == 2 && f2 == nil {
		return nil, errParamCount(name)
	}
	return &funcExpr{name: name, args: args, ft: types.DoubleType, fn: func(a []types.Datum) (types.Datum, error) {
		if anyNull(a) {
			return types.NullDatum, nil
		}
		x, _ := types.ToFloat(a[0])
		var r float64
		if len(a) == 2 {
			y, _ := types.ToFloat(a[1])
			r = f2(x, y)
		} else {
			r = f1(x)
		}
		if math.IsNaN(r) {
			return types.NullDatum, nil
		}
		if math.IsInf(r, 0) {
			return types.NullDatum, &RangeError{Msg: fmt.Sprintf("DOUBLE value is out of range in '%s(%s)'", name, a[0].String())}
		}
		return types.NewFloat(r), nil
	}}, nil
}

// logOf: logarithms of x <= 0 are NULL.
func logOf(f func(float64) float64) func(float64) float64 {
	return func(x float64) float64 {
		if x <= 0 {
			return math.NaN()
		}
		return f(x)
	}
}

func buildSign(name string, args []Expr) (Expr, error) {
	ft := types.FieldType{Tp: mysql.TypeLonglong, Flen: 2, Flag: mysql.BinaryFlag}
	return &funcExpr{name: name, args: args, ft: ft, fn: func(a []types.Datum) (types.Datum, error) {
		switch a[0].Kind() {
		case types.KindNull, types.KindAbsent:
			return types.NullDatum, nil
		case types.KindInt64:
			return types.NewInt(int64(cmp3(a[0].Int64() < 0, a[0].Int64() > 0))), nil
		case types.KindUint64:
			return types.NewInt(int64(cmp3(false, a[0].Uint64() > 0))), nil
		}
		if v, ok := types.ToDecimal(a[0]); ok {
			return types.NewInt(int64(v.Sign())), nil
		}
		f, _ := types.ToFloat(a[0])
		return types.NewInt(int64(cmp3(f < 0, f > 0))), nil
	}}, nil
}

func buildPi(string, []Expr) (Expr, error) {
	ft := types.DoubleType
	ft.Flen, ft.Decimal = 8, 6 // PI() shows 3.141593
	return &Constant{Value: types.NewFloat(math.Pi), Ft: ft}, nil
}

// buildGreatestLeast compiles GREATEST / LEAST: NULL if any argument is;
// numbers compare as numbers (in the widest class), a mix with strings
// as strings, and the result has the unified type.
func buildGreatestLeast(name string, args []Expr) (Expr, error) {
	greatest := name == "greatest"
	ts := make([]types.FieldType, len(args))
	numeric := true
	for i, a := range args {
		ts[i] = a.Type()
		if c := ts[i].Class(); c != types.ClassNull && !ts[i].Numeric() {
			numeric = false
		}
	}
	ft := unify(ts)
	switch {
	case !numeric && ft.Class() != types.ClassTime:
		flen := 0
		for _, a := range args {
			flen = max(flen, argFlen(a))
		}
		ft = strType(flen)
	case numeric && ft.Class() == types.ClassFloat:
		ft = exactUnion(ts, ft)
	}
	return &funcExpr{name: name, args: args, ft: ft, fn: func(a []types.Datum) (types.Datum, error) {
		if anyNull(a) {
			return types.NullDatum, nil
		}
		best := a[0]
		for _, d := range a[1:] {
			var c int
			if numeric {
				c = Compare(d, best, false)
			} else {
				c = bytes.Compare(textOf(d), textOf(best))
			}
			if (greatest && c > 0) || (!greatest && c < 0) {
				best = d
			}
		}
		return castResult(best, ft), nil
	}}, nil
}

// exactUnion is the DECIMAL type holding every one of ts when they are
// all integers and DECIMALs (unify gives DOUBLE for a mix); else ft.
func exactUnion(ts []types.FieldType, ft types.FieldType) types.FieldType {
	intDigits, scale := 0, 0
	for _, t := range ts {
		switch t.Class() {
		case types.ClassInt:
			intDigits = max(intDigits, t.Flen)
		case types.ClassDecimal:
			intDigits = max(intDigits, t.Flen-max(t.Decimal, 0))
			scale = max(scale, t.Decimal)
		case types.ClassNull:
		default:
			return ft
		}
	}
	return types.DecimalResultType(intDigits+scale, scale)
}

// castResult converts d (a non-NULL value of one argument) to the class
// of a function's unified result type.
func castResult(d types.Datum, ft types.FieldType) types.Datum {
	switch ft.Class() {
	case types.ClassFloat:
		if d.Kind() != types.KindFloat64 {
			f, _ := types.ToFloat(d)
			return types.NewFloat(f)
		}
	case types.ClassDecimal:
		if d.Kind() != types.KindBytes {
			if v, ok := types.ToDecimal(d); ok {
				return v.Round(max(ft.Decimal, 0)).Datum()
			}
		}
		if v, ok := types.ToDecimal(d); ok && v.Scale() != ft.Decimal {
			return v.Round(max(ft.Decimal, 0)).Datum()
		}
	case types.ClassString, types.ClassTime:
		if d.Kind() != types.KindBytes {
			return types.NewBytes(textOf(d))
		}
	}
	return d
}

func buildCRC32(name string, args []Expr) (Expr, error) {
	ft := types.Uint64Type
	ft.Flen = 10
	return &funcExpr{name: name, args: args, ft: ft, fn: func(a []types.Datum) (types.Datum, error) {
		if a[0].IsNull() {
			return types.NullDatum, nil
		}
		return types.NewUint(uint64(crc32.ChecksumIEEE(textOf(a[0])))), nil
	}}, nil
}

// maxFormatDecimals is MySQL's bound on FORMAT's decimals.
const maxFormatDecimals = 30

// buildFormat compiles FORMAT(x, d[, locale]): x rounded to d decimals
// (0 to 30) with ',' between groups of three integer digits and '.'
// before the decimals. Integers and DECIMALs round exactly, half away
// from zero; anything else as a DOUBLE (ROUND's rule). The locale is
// accepted and ignored: every locale formats as en_US, where MySQL would
// use e.g. de_DE's '.' and ','.
func buildFormat(name string, args []Expr) (Expr, error) {
	class := args[0].Type().Class()
	exact := class == types.ClassInt || class == types.ClassDecimal
	return &funcExpr{name: name, args: args, ft: strType(-1), fn: func(a []types.Datum) (types.Datum, error) {
		if a[0].IsNull() || a[1].IsNull() {
			return types.NullDatum, nil
		}
		d := int(max(min(intOf(a[1]), maxFormatDecimals), 0))
		var num []byte
		if v, ok := types.ToDecimal(a[0]); ok && exact {
			num = v.Round(d).Append(nil)
		} else {
			f, _ := types.ToFloat(a[0])
			num = strconv.AppendFloat(nil, roundFloat(f, d, false), 'f', d, 64)
		}
		return types.NewBytes(groupThousands(num)), nil
	}}, nil
}

// groupThousands puts ',' between groups of three digits of num's integer
// part ("-1234567.5" is "-1,234,567.5").
func groupThousands(num []byte) []byte {
	sign := 0
	if len(num) > 0 && num[0] == '-' {
		sign = 1
	}
	end := bytes.IndexByte(num, '.')
	if end < 0 {
		end = len(num)
	}
	digits := end - sign
	if digits <= 3 {
		return num
	}
	out := make([]byte, 0, len(num)+digits/3)
	out = append(out, num[:sign]...)
	for i := sign; i < end; i++ {
		if i > sign && (end-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, num[i])
	}
	return append(out, num[end:]...)
}
