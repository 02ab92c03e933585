package types

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// ConvErrKind says why a value does not fit a column.
type ConvErrKind uint8

// Conversion failures; the caller adds the column name and row number.
const (
	ConvOutOfRange  ConvErrKind = iota // 1264
	ConvTooLong                        // 1406
	ConvBadValue                       // 1366 (numbers) / 1292 (dates)
	ConvTruncated                      // 1265 (ENUM / SET members)
	ConvInvalidJSON                    // 3140 (Err says why)
)

// ConvError is returned by Convert.
type ConvError struct {
	Kind  ConvErrKind
	Value string // the offending value as text
	What  string // "integer", "double", "decimal", "datetime", "date"
	// Err is, for ConvInvalidJSON, the *JSONSyntaxError or a *JSONError
	// (too deep: ERROR 3157, which the caller returns as it is).
	Err error
}

func (e *ConvError) Error() string { return "cannot convert '" + e.Value + "' to " + e.What }

func intBounds(tp byte, unsigned bool) (lo int64, hi uint64) {
	var bits uint
	switch tp {
	case mysql.TypeTiny:
		bits = 8
	case mysql.TypeShort:
		bits = 16
	case mysql.TypeInt24:
		bits = 24
	case mysql.TypeLong:
		bits = 32
	default:
		bits = 64
	}
	if unsigned {
		if bits == 64 {
			return 0, math.MaxUint64
		}
		return 0, 1<<bits - 1
	}
	return -1 << (bits - 1), 1<<(bits-1) - 1
}

// Convert converts a non-NULL value into the column's storage form, applying
// strict-mode checks.
func (ft FieldType) Convert(d Datum) (Datum, error) {
	switch ft.Tp {
	case mysql.TypeBit:
		return ft.convertBit(d)
	case mysql.TypeYear:
		return ft.convertYear(d)
	case mysql.TypeDuration:
		return ft.convertDuration(d)
	case mysql.TypeEnum, mysql.TypeSet:
		return ft.convertEnum(d)
	case mysql.TypeJSON:
		return convertJSON(d)
	}
	switch ft.Class() {
	case ClassInt:
		return ft.convertInt(d)
	case ClassFloat:
		f, ok := ToFloat(d)
		if !ok {
			return d, &ConvError{Kind: ConvBadValue, Value: d.String(), What: "double"}
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return d, &ConvError{Kind: ConvOutOfRange, Value: d.String(), What: "double"}
		}
		if ft.Tp == mysql.TypeFloat {
			if math.Abs(f) > math.MaxFloat32 {
				return d, &ConvError{Kind: ConvOutOfRange, Value: d.String(), What: "float"}
			}
			f = float64(float32(f))
		}
		if ft.Unsigned() && f < 0 {
			return d, &ConvError{Kind: ConvOutOfRange, Value: d.String(), What: "double"}
		}
		return NewFloat(f), nil
	case ClassDecimal:
		return ft.convertDecimal(d)
	case ClassTime:
		return ft.convertTime(d)
	}
	// Strings and blobs.
	var b []byte
	if d.Kind() == KindBytes {
		b = d.Bytes()
	} else {
		b = AppendText(nil, d, nil)
	}
	if ft.Tp == mysql.TypeString && !ft.Binary() {
		b = bytes.TrimRight(b, " ")
	}
	if ft.Tp == mysql.TypeString && ft.Binary() && len(b) < ft.Flen {
		// BINARY(n) pads with 0x00 to n bytes.
		b = append(append(make([]byte, 0, ft.Flen), b...), make([]byte, ft.Flen-len(b))...)
	}
	n := len(b)
	if !ft.Binary() {
		n = utf8.RuneCount(b)
	}
	if ft.Flen >= 0 && n > ft.Flen {
		return d, &ConvError{Kind: ConvTooLong, Value: string(b)}
	}
	return NewBytes(b), nil
}

func (ft FieldType) convertInt(d Datum) (Datum, error) {
	lo, hi := intBounds(ft.Tp, ft.Unsigned())
	bad := func() (Datum, error) { return d, &ConvError{Kind: ConvBadValue, Value: d.String(), What: "integer"} }
	oor := func() (Datum, error) { return d, &ConvError{Kind: ConvOutOfRange, Value: d.String(), What: "integer"} }
	var neg bool
	var mag uint64 // absolute value
	switch d.Kind() {
	case KindInt64:
		v := d.Int64()
		neg = v < 0
		if neg {
			mag = uint64(-(v + 1)) + 1
		} else {
			mag = uint64(v)
		}
	case KindUint64:
		mag = d.Uint64()
	case KindFloat64:
		f := math.Round(d.Float64())
		if math.IsNaN(f) || f >= 18446744073709551616.0 || f < -9223372036854775808.0 {
			return oor()
		}
		neg = f < 0
		if neg {
			mag = uint64(-f)
		} else {
			mag = uint64(f)
		}
	case KindBytes:
		s := strings.TrimSpace(string(d.Bytes()))
		if v, err := strconv.ParseInt(s, 10, 64); err == nil {
			return ft.convertInt(NewInt(v))
		}
		if v, err := strconv.ParseUint(s, 10, 64); err == nil {
			return ft.convertInt(NewUint(v))
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return oor()
			}
			if num, _ := NumericPrefix(d.Bytes()); len(num) > 0 {
				// '12abc': MySQL's 1265 "Data truncated", not 1366.
				return d, &ConvError{Kind: ConvTruncated, Value: d.String(), What: "integer"}
			}
			return bad()
		}
		return ft.convertInt(NewFloat(f))
	default:
		return bad()
	}
	if neg {
		if mag > uint64(-(lo+1))+1 || (lo == 0 && mag > 0) {
			return oor()
		}
		return NewInt(-int64(mag-1) - 1), nil
	}
	if mag > hi {
		return oor()
	}
	if ft.Unsigned() {
		return NewUint(mag), nil
	}
	return NewInt(int64(mag)), nil
}

func (ft FieldType) convertDecimal(d Datum) (Datum, error) {
	v, ok := ToDecimal(d)
	if !ok {
		return d, &ConvError{Kind: ConvBadValue, Value: d.String(), What: "decimal"}
	}
	scale := max(ft.Decimal, 0)
	v = v.Round(scale)
	if v.IntDigits() > ft.Flen-scale || (ft.Unsigned() && v.Sign() < 0) {
		return d, &ConvError{Kind: ConvOutOfRange, Value: d.String(), What: "decimal"}
	}
	return v.Datum(), nil
}

var timeLayouts = []string{
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05",
	"2006-01-02T15:04:05",
	"2006-01-02 15:04",
	"2006-01-02",
	"20060102150405",
	"20060102",
}

// ParseTime parses the date/datetime literals MySQL accepts most often.
func ParseTime(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, true
		}
	}
	return parseLoose(s)
}

// FormatTime renders t as a DATE, or a DATETIME with fsp fractional digits.
func FormatTime(t time.Time, tp byte, fsp int) string {
	if IsDate(tp) {
		return t.Format("2006-01-02")
	}
	if tp == mysql.TypeDuration {
		us := int64(t.Hour())*3600e6 + int64(t.Minute())*60e6 + int64(t.Second())*1e6 + int64(t.Nanosecond()/1000)
		return FormatDuration(RoundDuration(us, fsp), fsp)
	}
	if fsp <= 0 {
		return t.Format("2006-01-02 15:04:05")
	}
	return t.Format("2006-01-02 15:04:05." + strings.Repeat("0", fsp))
}

func (ft FieldType) convertTime(d Datum) (Datum, error) {
	what := "datetime"
	if ft.Tp == mysql.TypeDate {
		what = "date"
	}
	var s string
	switch d.Kind() {
	case KindBytes:
		s = string(d.Bytes())
	case KindInt64, KindUint64:
		s = d.String()
	default:
		return d, &ConvError{Kind: ConvBadValue, Value: d.String(), What: what}
	}
	t, ok := ParseTime(s)
	if !ok {
		// A zero date or one with a zero month or day: stored as it is
		// (the writer checks NO_ZERO_DATE / NO_ZERO_IN_DATE).
		if p, ok := ParseDateParts(s); ok {
			return NewString(p.Format(ft.Tp, ft.Decimal)), nil
		}
		return d, &ConvError{Kind: ConvBadValue, Value: s, What: what}
	}
	if ft.Decimal > 0 {
		t = t.Round(time.Duration(math.Pow10(9 - ft.Decimal)))
	} else {
		t = t.Round(time.Second)
	}
	return NewString(FormatTime(t, ft.Tp, ft.Decimal)), nil
}

// ToFloat converts a numeric-ish value to float64 the way MySQL does in a
// numeric context (strings: the longest numeric prefix; ok=false if none).
func ToFloat(d Datum) (float64, bool) {
	switch d.Kind() {
	case KindInt64:
		return float64(d.Int64()), true
	case KindUint64:
		return float64(d.Uint64()), true
	case KindFloat64:
		return d.Float64(), true
	case KindJSON:
		return JSONToFloat(d.JSON())
	case KindBytes:
		// The longest numeric prefix, as MySQL reads '12abc'.
		num, _ := NumericPrefix(d.Bytes())
		if len(num) == 0 {
			return 0, false
		}
		f, _ := strconv.ParseFloat(string(num), 64) // ±Inf past the range
		return f, true
	}
	return 0, false
}

// AppendText appends the text-protocol form of d (ft may be nil). NULL
// appends nothing; the caller encodes NULL separately.
func AppendText(b []byte, d Datum, ft *FieldType) []byte {
	if ft != nil && ft.Tp == mysql.TypeBit && (d.Kind() == KindUint64 || d.Kind() == KindInt64) {
		return appendBit(b, d.Uint64(), ft.Flen)
	}
	switch d.Kind() {
	case KindInt64:
		return strconv.AppendInt(b, d.Int64(), 10)
	case KindUint64:
		return strconv.AppendUint(b, d.Uint64(), 10)
	case KindFloat64:
		bits := 64
		if ft != nil && ft.Tp == mysql.TypeFloat {
			bits = 32
		}
		if ft != nil && ft.Decimal > 0 && ft.Decimal < 31 {
			return strconv.AppendFloat(b, d.Float64(), 'f', ft.Decimal, bits)
		}
		return AppendFloat(b, d.Float64(), bits)
	case KindBytes:
		return append(b, d.Bytes()...)
	case KindJSON:
		return d.JSON().AppendText(b)
	}
	return b
}

// convertJSON stores a value in a JSON column: JSON as it is, a string
// parsed as JSON text; anything else is ERROR 3140 ("not a JSON text, may
// need CAST"), as in MySQL.
func convertJSON(d Datum) (Datum, error) {
	switch d.Kind() {
	case KindJSON:
		return d, nil
	case KindBytes:
		j, err := ParseJSON(d.Bytes())
		if err != nil {
			return d, &ConvError{Kind: ConvInvalidJSON, Value: string(d.Bytes()), What: "json", Err: err}
		}
		return NewJSONDatum(j), nil
	}
	return d, &ConvError{Kind: ConvInvalidJSON, Value: d.String(), What: "json", Err: &JSONSyntaxError{Msg: "not a JSON text, may need CAST"}}
}

// AppendFloat formats f like MySQL: plain notation for moderate magnitudes,
// exponent form (without '+') for very large or small ones.
func AppendFloat(b []byte, f float64, bits int) []byte {
	a := math.Abs(f)
	if a == 0 || (a >= 1e-4 && a < 1e15) {
		return strconv.AppendFloat(b, f, 'f', -1, bits)
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, 'g', -1, bits)
	if i := bytes.IndexByte(b[start:], '+'); i >= 0 {
		b = append(b[:start+i], b[start+i+1:]...)
	}
	return b
}
