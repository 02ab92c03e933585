package executor

import (
	"math"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/stratadb/strata/kv/tablecodec"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/types"
)

// handleRange is an inclusive range of row handles [lo, hi] that contains
// every row a WHERE clause can match. It only narrows what is read: the full
// WHERE is still applied to each row.
type handleRange struct{ lo, hi int64 }

var fullRange = handleRange{lo: math.MinInt64, hi: math.MaxInt64}

func (r handleRange) empty() bool { return r.lo > r.hi }

func (r handleRange) point() (bool, int64) { return r.lo == r.hi, r.lo }

// keys returns the [start, end) row-key range covering r.
func (r handleRange) keys(tableID int64) (start, end []byte) {
	start, end = tablecodec.RecordRange(tableID)
	if r.lo != math.MinInt64 {
		start = tablecodec.RowKey(tableID, r.lo)
	}
	if r.hi != math.MaxInt64 {
		end = tablecodec.RowKey(tableID, r.hi+1)
	}
	return start, end
}

func conjuncts(where ast.ExprNode) []ast.ExprNode {
	var out []ast.ExprNode
	var split func(n ast.ExprNode)
	split = func(n ast.ExprNode) {
		n = unparen(n)
		if b, ok := n.(*ast.BinaryOperationExpr); ok && b.Op == opcode.LogicAnd {
			split(b.L)
			split(b.R)
			return
		}
		out = append(out, n)
	}
	split(where)
	return out
}

// rangeOfHandle derives the handle range from the conjuncts of where that
// compare the handle column with a constant (=, <, <=, >, >=, BETWEEN).
func rangeOfHandle(where ast.ExprNode, src *source, env expr.Env) handleRange {
	r := fullRange
	hOff := src.handleOffset()
	// Unsigned handles above MaxInt64 are stored as negative int64s, so
	// key order is not value order: only equality is usable.
	unsigned := src.cols[hOff].Type.Unsigned()
	isHandle := func(n ast.ExprNode) bool {
		cn, ok := unparen(n).(*ast.ColumnNameExpr)
		if !ok {
			return false
		}
		ce, err := expr.Compile(cn, &expr.Ctx{Columns: src.cols, Env: env})
		return err == nil && ce.(*expr.Column).Offset == hOff
	}
	constant := func(n ast.ExprNode) (float64, bool) {
		k, err := expr.Compile(n, &expr.Ctx{Env: env}) // fails on column references
		if err != nil {
			return 0, false
		}
		v, err := k.Eval(nil)
		if err != nil || v.IsNull() {
			return 0, false
		}
		switch v.Kind() {
		case tablecodec.KindInt64:
			return float64(v.Int64()), true
		case tablecodec.KindUint64:
			return float64(v.Uint64()), true
		}
		return types.ToFloat(v)
	}
	const two63 = 9223372036854775808.0 // 2^63, exactly representable
	setEmpty := func() { r.lo, r.hi = math.MaxInt64, math.MinInt64 }
	// lowerInt / upperInt apply exact integer bounds.
	lowerInt := func(v int64, strict bool) {
		if strict {
			if v == math.MaxInt64 {
				setEmpty()
				return
			}
			v++
		}
		r.lo = max(r.lo, v)
	}
	upperInt := func(v int64, strict bool) {
		if strict {
			if v == math.MinInt64 {
				setEmpty()
				return
			}
			v--
		}
		r.hi = min(r.hi, v)
	}
	// lower / upper apply non-integer constants (floats, decimals, strings).
	lower := func(f float64, strict bool) {
		c := math.Ceil(f)
		if strict && c == f {
			c++
		}
		switch {
		case c >= two63:
			setEmpty()
		case c > -two63:
			r.lo = max(r.lo, int64(c))
		}
	}
	upper := func(f float64, strict bool) {
		c := math.Floor(f)
		if strict && c == f {
			c--
		}
		switch {
		case c < -two63:
			setEmpty()
		case c < two63:
			r.hi = min(r.hi, int64(c))
		}
	}
	exact := func(n ast.ExprNode) (int64, bool) {
		k, err := expr.Compile(n, &expr.Ctx{Env: env})
		if err != nil {
			return 0, false
		}
		v, err := k.Eval(nil)
		if err != nil || v.Kind() != tablecodec.KindInt64 {
			return 0, false
		}
		return v.Int64(), true
	}
	for _, c := range conjuncts(where) {
		switch x := c.(type) {
		case *ast.BetweenExpr:
			if x.Not || unsigned || !isHandle(x.Expr) {
				continue
			}
			if v, ok := exact(x.Left); ok {
				lowerInt(v, false)
			} else if f, ok := constant(x.Left); ok {
				lower(f, false)
			}
			if v, ok := exact(x.Right); ok {
				upperInt(v, false)
			} else if f, ok := constant(x.Right); ok {
				upper(f, false)
			}
		case *ast.BinaryOperationExpr:
			op := x.Op
			var other ast.ExprNode
			switch {
			case isHandle(x.L):
				other = x.R
			case isHandle(x.R):
				other = x.L
				switch op { // c < h  is  h > c
				case opcode.LT:
					op = opcode.GT
				case opcode.LE:
					op = opcode.GE
				case opcode.GT:
					op = opcode.LT
				case opcode.GE:
					op = opcode.LE
				}
			default:
				continue
			}
			if op == opcode.EQ {
				if v, ok := exact(other); ok && !(unsigned && v < 0) {
					r.lo, r.hi = max(r.lo, v), min(r.hi, v)
					continue
				}
				if unsigned {
					continue
				}
			}
			if unsigned {
				continue
			}
			if v, ok := exact(other); ok {
				switch op {
				case opcode.GT, opcode.GE:
					lowerInt(v, op == opcode.GT)
				case opcode.LT, opcode.LE:
					upperInt(v, op == opcode.LT)
				}
				continue
			}
			f, ok := constant(other)
			if !ok {
				continue
			}
			switch op {
			case opcode.EQ:
				if f != math.Trunc(f) {
					setEmpty() // no integer equals it
					continue
				}
				lower(f, false)
				upper(f, false)
			case opcode.GT:
				lower(f, true)
			case opcode.GE:
				lower(f, false)
			case opcode.LT:
				upper(f, true)
			case opcode.LE:
				upper(f, false)
			}
		}
	}
	return r
}
