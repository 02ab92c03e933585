package types

import (
	"math"
	"strings"
	"unicode/utf8"

	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// ConvertLenient is Convert as MySQL stores a value outside strict mode
// (or under INSERT IGNORE): a value that does not fit is adjusted and the
// ConvError that strict mode would have raised is returned beside it, for
// the caller to report as a warning. Numbers out of range are clipped to
// the type's bounds; a string with a numeric prefix becomes that prefix
// (Kind ConvTruncated, MySQL's 1265), one without becomes 0 (ConvBadValue,
// 1366); strings too long are cut to the column's length (ConvTruncated,
// 1265). For other classes (dates and times, ENUM, SET, BIT, YEAR) the
// value is not adjusted: ok is false and the error stands.
func (ft FieldType) ConvertLenient(d Datum) (out Datum, warn *ConvError, ok bool) {
	v, err := ft.Convert(d)
	if err == nil {
		return v, nil, true
	}
	ce, isConv := err.(*ConvError)
	if !isConv {
		return d, nil, false
	}
	switch ft.Tp {
	case mysql.TypeBit, mysql.TypeYear, mysql.TypeDuration, mysql.TypeEnum, mysql.TypeSet, mysql.TypeJSON:
		return d, ce, false
	}
	switch ft.Class() {
	case ClassInt, ClassFloat, ClassDecimal:
		return ft.lenientNumber(d, ce)
	case ClassString:
		if ce.Kind != ConvTooLong {
			return d, ce, false
		}
		b := []byte(ce.Value)
		if ft.Binary() {
			b = b[:ft.Flen]
		} else {
			n := 0
			for range ft.Flen {
				_, size := utf8.DecodeRune(b[n:])
				n += size
			}
			b = b[:n]
		}
		v, err := ft.Convert(NewBytes(b))
		if err != nil {
			return d, ce, false
		}
		return v, &ConvError{Kind: ConvTruncated, Value: ce.Value, What: ce.What}, true
	}
	return d, ce, false
}

// lenientNumber adjusts a number that Convert refused: its value (a
// string's numeric prefix, 0 without one) clipped to the type's bounds.
func (ft FieldType) lenientNumber(d Datum, ce *ConvError) (Datum, *ConvError, bool) {
	warn := ce
	f, numeric := ToFloat(d)
	if ce.Kind == ConvBadValue {
		if numeric && d.Kind() == KindBytes {
			warn = &ConvError{Kind: ConvTruncated, Value: ce.Value, What: ce.What} // '12abc'
		} else {
			f = 0
		}
	}
	if math.IsNaN(f) {
		f = 0
	}
	var lo, hi Datum
	switch ft.Class() {
	case ClassInt:
		l, h := intBounds(ft.Tp, ft.Unsigned())
		lo, hi = NewInt(l), NewInt(int64(h))
		if ft.Unsigned() {
			hi = NewUint(h)
		}
	case ClassFloat:
		limit := math.MaxFloat64
		if ft.Tp == mysql.TypeFloat {
			limit = math.MaxFloat32
		}
		lo, hi = NewFloat(-limit), NewFloat(limit)
		if ft.Unsigned() {
			lo = NewFloat(0)
		}
	case ClassDecimal:
		scale := max(ft.Decimal, 0)
		nines := strings.Repeat("9", max(ft.Flen-scale, 1))
		if ft.Flen-scale <= 0 {
			nines = "0"
		}
		if scale > 0 {
			nines += "." + strings.Repeat("9", scale)
		}
		h, _ := ParseDecimal([]byte(nines))
		lo, hi = h.Neg().Datum(), h.Datum()
		if ft.Unsigned() {
			lo = NewInt(0)
		}
	}
	loF, _ := ToFloat(lo)
	hiF, _ := ToFloat(hi)
	v := NewFloat(f)
	switch {
	case f <= loF:
		v = lo
	case f >= hiF:
		v = hi
	}
	out, err := ft.Convert(v)
	if err != nil {
		return d, ce, false
	}
	return out, warn, true
}
