package tablecodec

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/stratadb/strata/kv/codec"
	"github.com/stratadb/strata/sql/types"
)

// Handle identifies a row of its table: an int handle (an integer
// PRIMARY KEY, or the hidden _tidb_rowid) or a common handle, the
// encoded values of a clustered PRIMARY KEY of any other type or of
// several columns (AppendCommonHandle). The zero Handle is int handle 0.
// A Handle does not own its common bytes: they alias what it was built
// from.
type Handle struct {
	common []byte // nil: an int handle
	i      int64
}

// IntHandle is the handle of a row keyed by an int64.
func IntHandle(i int64) Handle { return Handle{i: i} }

// CommonHandle is the handle of a row keyed by encoded, the output of
// AppendCommonHandle (non-empty).
func CommonHandle(encoded []byte) Handle { return Handle{common: encoded} }

// IsInt reports whether h is an int handle.
func (h Handle) IsInt() bool { return h.common == nil }

// IntValue is an int handle's value (0 for a common handle).
func (h Handle) IntValue() int64 { return h.i }

// Encoded is what h appends to a row key: EncodeInt of an int handle, a
// common handle's bytes.
func (h Handle) Encoded() []byte {
	if h.common != nil {
		return h.common
	}
	return codec.EncodeInt(make([]byte, 0, 8), h.i)
}

// Equal reports whether h and o are the same handle.
func (h Handle) Equal(o Handle) bool {
	if h.common == nil || o.common == nil {
		return h.common == nil && o.common == nil && h.i == o.i
	}
	return bytes.Equal(h.common, o.common)
}

// Datum is h as the hidden handle slot of a decoded row holds it: an int
// for an int handle, the encoded bytes of a common one.
func (h Handle) Datum() types.Datum {
	if h.common != nil {
		return types.NewBytes(h.common)
	}
	return types.NewInt(h.i)
}

// HandleOfDatum is the handle a row's hidden handle slot holds (Datum's
// inverse; an unsigned integer key's value is its bits).
func HandleOfDatum(d types.Datum) Handle {
	switch d.Kind() {
	case types.KindBytes:
		return CommonHandle(d.Bytes())
	case types.KindUint64:
		return IntHandle(int64(d.Uint64()))
	}
	return IntHandle(d.Int64())
}

// Clone is h with its own copy of a common handle's bytes.
func (h Handle) Clone() Handle {
	if h.common != nil {
		h.common = bytes.Clone(h.common)
	}
	return h
}

// Compare orders handles as their row keys sort.
func (h Handle) Compare(o Handle) int {
	if h.common == nil && o.common == nil {
		switch {
		case h.i < o.i:
			return -1
		case h.i > o.i:
			return 1
		}
		return 0
	}
	return bytes.Compare(h.Encoded(), o.Encoded())
}

// String is an int handle's decimal value, or a common handle's values
// as DecodeCommonHandle gives them, joined by '-' (hex when they do not
// decode).
func (h Handle) String() string {
	if h.common == nil {
		return strconv.FormatInt(h.i, 10)
	}
	vals, err := DecodeCommonHandle(h.common)
	if err != nil {
		return fmt.Sprintf("%x", h.common)
	}
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = v.String()
	}
	return strings.Join(parts, "-")
}

// AppendHandleRowKey appends the key of the row with handle h:
// 't' + EncodeInt(tableID) + "_r" + h.Encoded(). For an int handle it is
// AppendRowKey's key.
func AppendHandleRowKey(b []byte, tableID int64, h Handle) []byte {
	if h.common == nil {
		return AppendRowKey(b, tableID, h.i)
	}
	return append(AppendRecordPrefix(b, tableID), h.common...)
}

// DecodeHandleRowKey splits a row key into its table id and handle, a
// common handle when common (the table's layout says which). The common
// handle aliases key.
func DecodeHandleRowKey(key []byte, common bool) (tableID int64, h Handle, err error) {
	if !common {
		tableID, i, err := DecodeRowKey(key)
		return tableID, IntHandle(i), err
	}
	const prefixLen = 1 + 8 + 2
	if len(key) <= prefixLen || key[0] != TablePrefix || key[9] != recordSep[0] || key[10] != recordSep[1] {
		return 0, Handle{}, fmt.Errorf("%w: %x", ErrInvalidKey, key)
	}
	_, tableID, _ = codec.DecodeInt(key[1:9])
	return tableID, CommonHandle(key[prefixLen:]), nil
}

// flagDecimal starts a DECIMAL value in a common handle (TiDB's flag).
const flagDecimal byte = 0x06

// Sign classes of an encoded decimal: negatives, zero, positives.
const (
	decNeg  byte = 0x00
	decZero byte = 0x01
	decPos  byte = 0x02
)

// AppendCommonHandle appends the common handle of a clustered key's
// values, in key order. Each value is an index value (model.IndexDatum:
// a collation's sort key for a string of a non-binary collation, so equal
// keys under the collation collide) written as AppendMemComparable does,
// except a DECIMAL (decimal[i]; its value is the decimal's text), which
// is written in an order-preserving numeric form: flagDecimal, a sign
// class, then for a positive value EncodeInt(exponent) and EncodeBytes of
// its significant digits (value = 0.digits × 10^exponent, no leading or
// trailing zeros), for a negative one the same bytes of its absolute
// value inverted. Equal decimals of different scales (1.5, 1.50) encode
// alike. A key value is never NULL. Errors: a DECIMAL value that is not
// a decimal.
func AppendCommonHandle(b []byte, vals []types.Datum, decimal []bool) ([]byte, error) {
	for i, v := range vals {
		if !decimal[i] || v.IsNull() {
			b = AppendMemComparable(b, v)
			continue
		}
		var err error
		if b, err = appendDecimal(b, v); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func appendDecimal(b []byte, v types.Datum) ([]byte, error) {
	d, ok := types.ToDecimal(v)
	if !ok {
		return nil, fmt.Errorf("tablecodec: %s is not a decimal", v.String())
	}
	b = append(b, flagDecimal)
	if d.Sign() == 0 {
		return append(b, decZero), nil
	}
	text := d.String()
	neg := text[0] == '-'
	text = strings.TrimPrefix(text, "-")
	intPart, frac, _ := strings.Cut(text, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	exp := int64(len(intPart)) - int64(len(intPart+frac)-len(digits))
	digits = strings.TrimRight(digits, "0")
	if !neg {
		b = append(b, decPos)
		b = codec.EncodeInt(b, exp)
		return codec.EncodeBytes(b, []byte(digits)), nil
	}
	b = append(b, decNeg)
	start := len(b)
	b = codec.EncodeInt(b, exp)
	b = codec.EncodeBytes(b, []byte(digits))
	for i := start; i < len(b); i++ {
		b[i] = ^b[i]
	}
	return b, nil
}

// DecodeCommonHandle decodes the values of a common handle: what
// AppendCommonHandle was given, except that a string of a non-binary
// collation comes back as its sort key and a DECIMAL as its shortest
// text (1.50 as 1.5). Byte values are copied.
func DecodeCommonHandle(h []byte) ([]types.Datum, error) {
	var vals []types.Datum
	for len(h) > 0 {
		var d types.Datum
		var err error
		if h[0] == flagDecimal {
			h, d, err = decodeDecimal(h[1:])
		} else {
			h, d, err = DecodeMemComparable(h)
		}
		if err != nil {
			return nil, err
		}
		vals = append(vals, d)
	}
	return vals, nil
}

func decodeDecimal(b []byte) ([]byte, types.Datum, error) {
	if len(b) == 0 {
		return b, types.NullDatum, codec.ErrInsufficientBytes
	}
	class, b := b[0], b[1:]
	switch class {
	case decZero:
		return b, types.NewString("0"), nil
	case decPos, decNeg:
	default:
		return b, types.NullDatum, fmt.Errorf("%w: decimal sign class %#x", codec.ErrInvalidEncoding, class)
	}
	src := b
	if class == decNeg {
		// The inverted bytes run to the end of the encoded digits, whose
		// length only the un-inverted form tells: invert a copy of the rest.
		src = make([]byte, len(b))
		for i, c := range b {
			src[i] = ^c
		}
	}
	rest, exp, err := codec.DecodeInt(src)
	if err != nil {
		return b, types.NullDatum, err
	}
	rest, digits, err := codec.DecodeBytes(rest, nil)
	if err != nil {
		return b, types.NullDatum, err
	}
	used := len(src) - len(rest)
	var sb strings.Builder
	if class == decNeg {
		sb.WriteByte('-')
	}
	switch n := int(exp); {
	case n <= 0:
		sb.WriteString("0.")
		sb.WriteString(strings.Repeat("0", -n))
		sb.Write(digits)
	case n >= len(digits):
		sb.Write(digits)
		sb.WriteString(strings.Repeat("0", n-len(digits)))
	default:
		sb.Write(digits[:n])
		sb.WriteByte('.')
		sb.Write(digits[n:])
	}
	return b[used:], types.NewString(sb.String()), nil
}
