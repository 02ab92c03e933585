package expr

import (
	"math"

	"github.com/pingcap/tidb/pkg/parser/opcode"

	"github.com/stratadb/strata/sql/types"
)

// Bit operators (&, |, ^, <<, >>, ~), as MySQL evaluates them on numbers:
// each operand becomes a 64-bit unsigned integer (a negative one in two's
// complement, a fraction rounded, a string by its numeric prefix), the
// result is BIGINT UNSIGNED, a shift by 64 or more gives 0, and NULL
// gives NULL. (MySQL 8 also has a binary-string form for two binary
// string operands; here they are numbers too.) They are evaluated on the
// SQL node: ToPB does not know them, so no plan pushes them down.

type bitExpr struct {
	op   opcode.Op // And, Or, Xor, LeftShift, RightShift; BitNeg: r is nil
	l, r Expr
}

func (e *bitExpr) Type() types.FieldType { return types.Uint64Type }

func (e *bitExpr) Eval(row []types.Datum) (types.Datum, error) {
	a, err := e.l.Eval(row)
	if err != nil || a.IsNull() {
		return types.NullDatum, err
	}
	x := toUint64(a)
	if e.op == opcode.BitNeg {
		return types.NewUint(^x), nil
	}
	b, err := e.r.Eval(row)
	if err != nil || b.IsNull() {
		return types.NullDatum, err
	}
	y := toUint64(b)
	switch e.op {
	case opcode.And:
		x &= y
	case opcode.Or:
		x |= y
	case opcode.Xor:
		x ^= y
	case opcode.LeftShift, opcode.RightShift:
		switch {
		case y >= 64:
			x = 0
		case e.op == opcode.LeftShift:
			x <<= y
		default:
			x >>= y
		}
	}
	return types.NewUint(x), nil
}

// BitUint64 is the unsigned 64-bit integer a bit operator or BIT_AND,
// BIT_OR and BIT_XOR make of d.
func BitUint64(d types.Datum) uint64 { return toUint64(d) }

// toUint64 converts d to the unsigned 64-bit integer a bit operator or
// HEX(number) works on.
func toUint64(d types.Datum) uint64 {
	switch d.Kind() {
	case types.KindInt64:
		return uint64(d.Int64())
	case types.KindUint64:
		return d.Uint64()
	}
	f, _ := types.ToFloat(d)
	f = math.Round(f)
	switch {
	case f >= math.MaxUint64:
		return math.MaxUint64
	case f <= math.MinInt64:
		return 1 << 63
	case f < 0:
		return uint64(int64(f))
	}
	return uint64(f)
}
