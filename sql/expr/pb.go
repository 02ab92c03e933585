package expr

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/pingcap/tidb/pkg/parser/opcode"
	pb "github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/sql/collate"
	"github.com/stratadb/strata/sql/types"
)

// ErrNotPushable is returned by ToPB for an expression the stores cannot
// evaluate (a scalar function, a cast: nodes whose behaviour lives in a Go
// closure rather than in the tree).
var ErrNotPushable = errors.New("expr: not pushable to the stores")

// ErrBadPB is returned by FromPB for a malformed tree.
var ErrBadPB = errors.New("expr: malformed serialized expression")

// Pushable reports whether ToPB can serialize e.
func Pushable(e Expr) bool {
	_, err := ToPB(e)
	return err == nil
}

// ToPB serializes a compiled expression for a coprocessor request. The
// tree FromPB rebuilds evaluates exactly as e does (same nodes, same static
// types), so the stores and the SQL node share one implementation.
func ToPB(e Expr) (*pb.Expr, error) {
	kids := func(es ...Expr) ([]*pb.Expr, error) {
		out := make([]*pb.Expr, len(es))
		for i, x := range es {
			p, err := ToPB(x)
			if err != nil {
				return nil, err
			}
			out[i] = p
		}
		return out, nil
	}
	var (
		n   = &pb.Expr{}
		err error
	)
	switch x := e.(type) {
	case *Constant:
		n.Tp, n.Val, n.Ft = pb.ExprType_ExprConstant, DatumToPB(x.Value), FieldTypeToPB(x.Ft)
	case *Column:
		n.Tp, n.Offset, n.Ft = pb.ExprType_ExprColumn, int64(x.Offset), FieldTypeToPB(x.Ft)
	case *collateExpr:
		// A column or constant under COLLATE travels as itself with the
		// new type; the comparisons over it carry their collation.
		switch k := x.e.(type) {
		case *Column:
			return ToPB(&Column{Offset: k.Offset, Ft: x.ft, Name: k.Name})
		case *Constant:
			return ToPB(&Constant{Value: k.Value, Ft: x.ft})
		}
		return nil, fmt.Errorf("%w: COLLATE of %T", ErrNotPushable, x.e)
	case *compareExpr:
		n.Tp, n.Op, n.ByBytes, n.Dur, n.Collation = pb.ExprType_ExprCompare, int32(x.op), x.byBytes, x.dur, collID(x.coll)
		n.Children, err = kids(x.l, x.r)
	case *logicExpr:
		n.Tp, n.Op = pb.ExprType_ExprLogic, int32(x.op)
		n.Children, err = kids(x.l, x.r)
	case *notExpr:
		n.Tp = pb.ExprType_ExprNot
		n.Children, err = kids(x.e)
	case *isNullExpr:
		n.Tp, n.Not = pb.ExprType_ExprIsNull, x.not
		n.Children, err = kids(x.e)
	case *isTruthExpr:
		n.Tp, n.Not, n.Truth = pb.ExprType_ExprIsTruth, x.not, x.truth
		n.Children, err = kids(x.e)
	case *inExpr:
		n.Tp, n.Not, n.ByBytes, n.Dur, n.Collation = pb.ExprType_ExprIn, x.not, x.byBytes, x.dur, collID(x.coll)
		n.Children, err = kids(append([]Expr{x.e}, x.list...)...)
	case *arithExpr:
		n.Tp, n.Op, n.Ft, n.Dec = pb.ExprType_ExprArith, int32(x.op), FieldTypeToPB(x.ft), x.dec
		n.Children, err = kids(x.l, x.r)
	case *negExpr:
		n.Tp = pb.ExprType_ExprNeg
		n.Children, err = kids(x.e)
	case *likeExpr:
		n.Tp, n.Not, n.Escape, n.Collation = pb.ExprType_ExprLike, x.not, uint32(x.escape), collID(x.coll)
		n.Children, err = kids(x.e, x.pat)
	case *caseExpr:
		n.Tp, n.Ft, n.ByBytes, n.Collation = pb.ExprType_ExprCase, FieldTypeToPB(x.ft), x.byBytes, collID(x.coll)
		list := []Expr{x.value}
		if x.value == nil {
			list[0] = &Constant{}
		}
		n.HasValue = x.value != nil
		for i := range x.whens {
			list = append(list, x.whens[i], x.thens[i])
		}
		if x.els != nil {
			n.HasElse = true
			list = append(list, x.els)
		}
		n.Children, err = kids(list...)
	default:
		return nil, fmt.Errorf("%w: %T", ErrNotPushable, e)
	}
	if err != nil {
		return nil, err
	}
	return n, nil
}

// FromPB rebuilds the expression ToPB serialized. width is the row width
// the expression will be evaluated on: a column offset outside it is
// ErrBadPB (never a panic on a store).
func FromPB(n *pb.Expr, width int) (Expr, error) { return FromPBWarn(n, width, nil) }

// FromPBWarn is FromPB whose expressions hand the conditions they raise
// (division by zero, a string operand that is not all a number) to w
// (nil: they say nothing): the stores collect them for the SQL node.
func FromPBWarn(n *pb.Expr, width int, w Warner) (Expr, error) {
	if n == nil {
		return nil, fmt.Errorf("%w: missing node", ErrBadPB)
	}
	ch := make([]Expr, len(n.Children))
	for i, c := range n.Children {
		e, err := FromPBWarn(c, width, w)
		if err != nil {
			return nil, err
		}
		ch[i] = e
	}
	arity := func(k int) error {
		if len(ch) != k {
			return fmt.Errorf("%w: %v with %d operands", ErrBadPB, n.Tp, len(ch))
		}
		return nil
	}
	op := opcode.Op(n.Op)
	switch n.Tp {
	case pb.ExprType_ExprConstant:
		d, err := DatumFromPB(n.Val)
		return &Constant{Value: d, Ft: FieldTypeFromPB(n.Ft)}, err
	case pb.ExprType_ExprColumn:
		if n.Offset < 0 || n.Offset >= int64(width) {
			return nil, fmt.Errorf("%w: column offset %d outside a row of %d", ErrBadPB, n.Offset, width)
		}
		return &Column{Offset: int(n.Offset), Ft: FieldTypeFromPB(n.Ft)}, nil
	case pb.ExprType_ExprCompare:
		switch op {
		case opcode.EQ, opcode.NE, opcode.LT, opcode.LE, opcode.GT, opcode.GE, opcode.NullEQ:
		default:
			return nil, fmt.Errorf("%w: comparison %v", ErrBadPB, op)
		}
		if err := arity(2); err != nil {
			return nil, err
		}
		coll, err := collFromPB(n)
		if err != nil {
			return nil, err
		}
		return &compareExpr{op: op, l: ch[0], r: ch[1], byBytes: n.ByBytes, dur: n.Dur,
			mixedTime: mixedTimeOperands(ch[0].Type(), ch[1].Type()), coll: coll}, nil
	case pb.ExprType_ExprLogic:
		if op != opcode.LogicAnd && op != opcode.LogicOr && op != opcode.LogicXor {
			return nil, fmt.Errorf("%w: logic operator %v", ErrBadPB, op)
		}
		if err := arity(2); err != nil {
			return nil, err
		}
		return &logicExpr{op: op, l: ch[0], r: ch[1]}, nil
	case pb.ExprType_ExprNot:
		if err := arity(1); err != nil {
			return nil, err
		}
		return &notExpr{e: ch[0]}, nil
	case pb.ExprType_ExprIsNull:
		if err := arity(1); err != nil {
			return nil, err
		}
		return &isNullExpr{e: ch[0], not: n.Not}, nil
	case pb.ExprType_ExprIsTruth:
		if err := arity(1); err != nil {
			return nil, err
		}
		return &isTruthExpr{e: ch[0], not: n.Not, truth: n.Truth}, nil
	case pb.ExprType_ExprIn:
		if len(ch) < 1 {
			return nil, fmt.Errorf("%w: IN without operand", ErrBadPB)
		}
		coll, err := collFromPB(n)
		if err != nil {
			return nil, err
		}
		return &inExpr{e: ch[0], list: ch[1:], not: n.Not, byBytes: n.ByBytes, dur: n.Dur, mixed: mixedTimeList(ch[0], ch[1:]), coll: coll}, nil
	case pb.ExprType_ExprArith:
		switch op {
		case opcode.Plus, opcode.Minus, opcode.Mul, opcode.Div, opcode.IntDiv, opcode.Mod:
		default:
			return nil, fmt.Errorf("%w: arithmetic operator %v", ErrBadPB, op)
		}
		if err := arity(2); err != nil {
			return nil, err
		}
		return &arithExpr{op: op, l: ch[0], r: ch[1], ft: FieldTypeFromPB(n.Ft), dec: n.Dec, warn: w}, nil
	case pb.ExprType_ExprNeg:
		if err := arity(1); err != nil {
			return nil, err
		}
		return &negExpr{e: ch[0]}, nil
	case pb.ExprType_ExprLike:
		if err := arity(2); err != nil {
			return nil, err
		}
		coll, err := collFromPB(n)
		if err != nil {
			return nil, err
		}
		return &likeExpr{e: ch[0], pat: ch[1], escape: byte(n.Escape), not: n.Not, coll: coll}, nil
	case pb.ExprType_ExprCase:
		if len(ch) < 1 || (len(ch)-1-b2i(n.HasElse))%2 != 0 || len(ch)-1-b2i(n.HasElse) < 0 {
			return nil, fmt.Errorf("%w: CASE with %d operands", ErrBadPB, len(ch))
		}
		coll, err := collFromPB(n)
		if err != nil {
			return nil, err
		}
		c := &caseExpr{ft: FieldTypeFromPB(n.Ft), byBytes: n.ByBytes, coll: coll}
		if n.HasValue {
			c.value = ch[0]
		}
		rest := ch[1:]
		if n.HasElse {
			c.els = rest[len(rest)-1]
			rest = rest[:len(rest)-1]
		}
		var ts []types.FieldType
		for i := 0; i < len(rest); i += 2 {
			c.whens = append(c.whens, rest[i])
			c.thens = append(c.thens, rest[i+1])
			ts = append(ts, rest[i+1].Type())
		}
		if c.els != nil {
			ts = append(ts, c.els.Type())
		}
		if c.value != nil {
			c.mixed = mixedTimeList(c.value, c.whens)
		}
		c.conv = convertsTo(c.ft, ts)
		return c, nil
	}
	return nil, fmt.Errorf("%w: node type %v", ErrBadPB, n.Tp)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// FieldTypeToPB converts a field type for the wire.
func FieldTypeToPB(ft types.FieldType) *pb.FieldType {
	return &pb.FieldType{Tp: uint32(ft.Tp), Flen: int64(ft.Flen), Decimal: int64(ft.Decimal), Flag: uint64(ft.Flag), Elems: ft.Elems, Collate: uint32(ft.Coll)}
}

// FieldTypeFromPB is the inverse of FieldTypeToPB (nil: the zero type).
func FieldTypeFromPB(p *pb.FieldType) types.FieldType {
	return types.FieldType{Tp: byte(p.GetTp()), Flen: int(p.GetFlen()), Decimal: int(p.GetDecimal()), Flag: uint(p.GetFlag()), Elems: p.GetElems(), Coll: uint16(p.GetCollate())}
}

// DatumToPB converts a datum for the wire.
func DatumToPB(d types.Datum) *pb.Datum {
	switch d.Kind() {
	case types.KindInt64, types.KindUint64:
		return &pb.Datum{Kind: uint32(d.Kind()), N: d.Uint64()}
	case types.KindFloat64:
		return &pb.Datum{Kind: uint32(d.Kind()), N: d.Uint64()}
	case types.KindBytes, types.KindJSON:
		b := d.Bytes()
		if b == nil {
			b = []byte{}
		}
		return &pb.Datum{Kind: uint32(d.Kind()), B: b}
	}
	return &pb.Datum{}
}

// DatumFromPB is the inverse of DatumToPB (nil: NULL).
func DatumFromPB(p *pb.Datum) (types.Datum, error) {
	switch types.Kind(p.GetKind()) {
	case types.KindNull:
		return types.NullDatum, nil
	case types.KindInt64:
		return types.NewInt(int64(p.GetN())), nil
	case types.KindUint64:
		return types.NewUint(p.GetN()), nil
	case types.KindFloat64:
		return types.NewFloat(math.Float64frombits(p.GetN())), nil
	case types.KindBytes:
		b := p.GetB()
		if b == nil {
			b = []byte{}
		}
		return types.NewBytes(b), nil
	case types.KindJSON:
		if len(p.GetB()) == 0 {
			return types.NullDatum, fmt.Errorf("%w: empty JSON datum", ErrBadPB)
		}
		return types.NewJSONBytes(p.GetB()), nil
	}
	return types.NullDatum, fmt.Errorf("%w: datum kind %d", ErrBadPB, p.GetKind())
}

// ReadsOnlyFrom reports whether e reads no column below offset from (it
// is serializable and every Column it holds is at from or after). An
// expression ToPB cannot serialize reports false.
func ReadsOnlyFrom(e Expr, from int) bool {
	n, err := ToPB(e)
	return err == nil && columnsFrom(n, int64(from))
}

// ColumnsBelow appends to cols the offsets below from that e reads (each
// once) and reports whether e serializes (false: cols is unchanged).
func ColumnsBelow(cols []int, e Expr, from int) ([]int, bool) {
	n, err := ToPB(e)
	if err != nil {
		return cols, false
	}
	var walk func(n *pb.Expr)
	walk = func(n *pb.Expr) {
		if n.Tp == pb.ExprType_ExprColumn && n.Offset < int64(from) && !slices.Contains(cols, int(n.Offset)) {
			cols = append(cols, int(n.Offset))
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(n)
	return cols, true
}

func columnsFrom(n *pb.Expr, from int64) bool {
	if n.Tp == pb.ExprType_ExprColumn && n.Offset < from {
		return false
	}
	for _, c := range n.Children {
		if !columnsFrom(c, from) {
			return false
		}
	}
	return true
}

// collID is a comparison's collation on the wire (0: bytewise).
func collID(c *collate.Collation) uint32 {
	if c == nil {
		return 0
	}
	return uint32(c.ID)
}

// collFromPB is the comparison collation of n (nil: bytewise); an id this
// node does not know is a malformed request, never a bytewise compare.
func collFromPB(n *pb.Expr) (*collate.Collation, error) {
	if n.Collation == 0 {
		return nil, nil
	}
	c := collate.ByID(uint16(n.Collation))
	if c == nil || n.Collation > 0xFFFF {
		return nil, fmt.Errorf("%w: unknown collation %d", ErrBadPB, n.Collation)
	}
	return c, nil
}
