package types

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// BIT(n) values are stored as Uint64 and sent (text and binary protocol
// alike) as ceil(n/8) big-endian bytes. YEAR is stored as Int64 (0 or
// 1901..2155). ENUM and SET values are stored as their text, spelled as the
// column defines its members (a SET's members in definition order).

// convertBit: integers keep their value, strings (and hex or bit literals)
// are read as big-endian bytes, as MySQL does; a value wider than n bits is
// ConvTooLong (1406).
func (ft FieldType) convertBit(d Datum) (Datum, error) {
	var v uint64
	switch d.Kind() {
	case KindInt64:
		v = uint64(d.Int64())
	case KindUint64:
		v = d.Uint64()
	case KindFloat64:
		f := math.Round(d.Float64())
		if f < 0 || f >= 18446744073709551616.0 {
			return d, &ConvError{Kind: ConvTooLong, Value: d.String()}
		}
		v = uint64(f)
	case KindBytes:
		b := d.Bytes()
		for len(b) > 0 && b[0] == 0 {
			b = b[1:]
		}
		if len(b) > 8 {
			return d, &ConvError{Kind: ConvTooLong, Value: d.String()}
		}
		for _, c := range b {
			v = v<<8 | uint64(c)
		}
	default:
		return d, &ConvError{Kind: ConvBadValue, Value: d.String(), What: "bit"}
	}
	if ft.Flen < 64 && v>>uint(ft.Flen) != 0 {
		return d, &ConvError{Kind: ConvTooLong, Value: d.String()}
	}
	return NewUint(v), nil
}

// appendBit appends a BIT(n) value as its ceil(n/8) big-endian bytes.
func appendBit(b []byte, v uint64, n int) []byte {
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], v)
	size := max((n+7)/8, 1)
	return append(b, buf[8-min(size, 8):]...)
}

// convertYear: 0 and 1901..2155 as they are; 1..69 are 2001..2069 and
// 70..99 are 1970..1999; the strings '0' and '00' are 2000.
func (ft FieldType) convertYear(d Datum) (Datum, error) {
	bad := &ConvError{Kind: ConvOutOfRange, Value: d.String(), What: "year"}
	var v int64
	str := false
	switch d.Kind() {
	case KindInt64:
		v = d.Int64()
	case KindUint64:
		if d.Uint64() > 9999 {
			return d, bad
		}
		v = int64(d.Uint64())
	case KindFloat64:
		v = int64(math.Round(d.Float64()))
	case KindBytes:
		s := strings.TrimSpace(string(d.Bytes()))
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			f, ferr := strconv.ParseFloat(s, 64)
			if ferr != nil {
				return d, &ConvError{Kind: ConvBadValue, Value: s, What: "year"}
			}
			n = int64(math.Round(f))
		}
		v, str = n, true
	default:
		return d, &ConvError{Kind: ConvBadValue, Value: d.String(), What: "year"}
	}
	switch {
	case v == 0 && str:
		v = 2000
	case v == 0:
	case v >= 1 && v <= 69:
		v += 2000
	case v >= 70 && v <= 99:
		v += 1900
	case v >= 1901 && v <= 2155:
	default:
		return d, bad
	}
	return NewInt(v), nil
}

// convertEnum: a member's text (case-insensitive, trailing spaces ignored)
// or its 1-based index; anything else is ConvTruncated (1265). A SET takes
// a comma-separated list of members or a bit mask of them.
func (ft FieldType) convertEnum(d Datum) (Datum, error) {
	bad := &ConvError{Kind: ConvTruncated, Value: d.String()}
	isSet := ft.Tp == mysql.TypeSet
	switch d.Kind() {
	case KindInt64, KindUint64, KindFloat64:
		f, _ := ToFloat(d)
		if f < 0 || f != math.Trunc(f) {
			return d, bad
		}
		n := uint64(f)
		if !isSet {
			if n == 0 || n > uint64(len(ft.Elems)) {
				return d, bad
			}
			return NewString(ft.Elems[n-1]), nil
		}
		if len(ft.Elems) < 64 && n>>uint(len(ft.Elems)) != 0 {
			return d, bad
		}
		var parts []string
		for i, e := range ft.Elems {
			if n&(1<<uint(i)) != 0 {
				parts = append(parts, e)
			}
		}
		return NewString(strings.Join(parts, ",")), nil
	case KindBytes:
	default:
		return d, bad
	}
	s := string(d.Bytes())
	find := func(v string) int {
		v = strings.TrimRight(v, " ")
		for i, e := range ft.Elems {
			if strings.EqualFold(strings.TrimRight(e, " "), v) {
				return i
			}
		}
		return -1
	}
	if !isSet {
		i := find(s)
		if i < 0 {
			if n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64); err == nil {
				return ft.convertEnum(NewUint(n))
			}
			return d, bad
		}
		return NewString(ft.Elems[i]), nil
	}
	var mask uint64
	if s != "" {
		for _, p := range strings.Split(s, ",") {
			i := find(p)
			if i < 0 {
				if n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64); err == nil && !strings.Contains(s, ",") {
					return ft.convertEnum(NewUint(n))
				}
				return d, bad
			}
			mask |= 1 << uint(i)
		}
	}
	return ft.convertEnum(NewUint(mask))
}

// EnumIndex is the position of an ENUM value among ft's members (-1 when
// it is not one).
func EnumIndex(ft FieldType, d Datum) int {
	if d.Kind() != KindBytes {
		return -1
	}
	v := string(d.Bytes())
	for i, e := range ft.Elems {
		if e == v {
			return i
		}
	}
	return -1
}
