package tablecodec

import (
	"bytes"
	"errors"
	"fmt"
	"math"

	"github.com/stratadb/strata/kv/codec"
	"github.com/stratadb/strata/sql/types"
)

// Memcomparable datum flags: the first byte of every value in an index key.
// NULL sorts first, as in MySQL. The values match TiDB's codec flags.
const (
	flagNull  byte = 0x00
	flagBytes byte = 0x01
	flagInt   byte = 0x03
	flagUint  byte = 0x04
	flagFloat byte = 0x05
)

// indexPrefixLen is len('t' + table id + "_i" + index id).
const indexPrefixLen = 1 + 8 + 2 + 8

// ErrInvalidIndexKey is returned when a key is not an index key.
var ErrInvalidIndexKey = errors.New("tablecodec: not an index key")

// AppendMemComparable appends d so that the encodings of datums of one
// kind sort as the values do (bytes compare as binary strings, which is
// the utf8mb4_bin order) and NULL sorts before everything.
func AppendMemComparable(b []byte, d types.Datum) []byte {
	switch d.Kind() {
	case types.KindInt64:
		return codec.EncodeInt(append(b, flagInt), d.Int64())
	case types.KindUint64:
		return codec.EncodeUint(append(b, flagUint), d.Uint64())
	case types.KindFloat64:
		f := d.Float64()
		if f == 0 {
			f = 0 // -0 == 0
		}
		u := math.Float64bits(f)
		if u&(1<<63) == 0 {
			u |= 1 << 63
		} else {
			u = ^u
		}
		return codec.EncodeUint(append(b, flagFloat), u)
	case types.KindBytes, types.KindJSON:
		// A JSON value (never in an index: statistics' samples) by its
		// binary form.
		return codec.EncodeBytes(append(b, flagBytes), d.Bytes())
	}
	return append(b, flagNull)
}

// DecodeMemComparable decodes one datum written by AppendMemComparable and
// returns the rest of b. Byte values are copied.
func DecodeMemComparable(b []byte) ([]byte, types.Datum, error) {
	if len(b) == 0 {
		return b, types.NullDatum, codec.ErrInsufficientBytes
	}
	flag, b := b[0], b[1:]
	switch flag {
	case flagNull:
		return b, types.NullDatum, nil
	case flagInt:
		rest, v, err := codec.DecodeInt(b)
		return rest, types.NewInt(v), err
	case flagUint:
		rest, v, err := codec.DecodeUint(b)
		return rest, types.NewUint(v), err
	case flagFloat:
		rest, u, err := codec.DecodeUint(b)
		if u&(1<<63) != 0 {
			u &^= 1 << 63
		} else {
			u = ^u
		}
		return rest, types.NewFloat(math.Float64frombits(u)), err
	case flagBytes:
		rest, v, err := codec.DecodeBytes(b, nil)
		return rest, types.NewBytes(v), err
	}
	return b, types.NullDatum, fmt.Errorf("%w: unknown datum flag %#x", codec.ErrInvalidEncoding, flag)
}

// AppendIndexKey appends the key of an index entry:
//
//	't' + EncodeInt(tableID) + "_i" + EncodeInt(indexID) + values... [+ EncodeInt(handle)]
//
// The handle (h.Encoded()) is appended when withHandle (non-unique
// indexes, and unique ones whose values contain a NULL, which never
// conflict).
func AppendIndexKey(b []byte, tableID, indexID int64, values []types.Datum, withHandle bool, h Handle) []byte {
	b = AppendIndexPrefix(b, tableID, indexID)
	for _, d := range values {
		b = AppendMemComparable(b, d)
	}
	if withHandle {
		if h.common != nil {
			return append(b, h.common...)
		}
		b = codec.EncodeInt(b, h.i)
	}
	return b
}

// IndexRange returns the [start, end) range holding every entry of an index.
func IndexRange(tableID, indexID int64) (start, end []byte) {
	start = AppendIndexPrefix(make([]byte, 0, indexPrefixLen), tableID, indexID)
	return start, PrefixNext(start)
}

// DecodeIndexKey splits an index key into its table id, index id, ncols
// values and, when the key carries one (hasHandle), the handle: a common
// handle (aliasing key) when common, the table's layout says which.
func DecodeIndexKey(key []byte, ncols int, common bool) (tableID, indexID int64, values []types.Datum, h Handle, hasHandle bool, err error) {
	if len(key) < indexPrefixLen || key[0] != TablePrefix || key[9] != indexSep[0] || key[10] != indexSep[1] {
		return 0, 0, nil, Handle{}, false, fmt.Errorf("%w: %x", ErrInvalidIndexKey, key)
	}
	_, tableID, _ = codec.DecodeInt(key[1:9])
	_, indexID, _ = codec.DecodeInt(key[11:19])
	rest := key[19:]
	values = make([]types.Datum, ncols)
	for i := range values {
		if rest, values[i], err = DecodeMemComparable(rest); err != nil {
			return 0, 0, nil, Handle{}, false, fmt.Errorf("%w: %x: %v", ErrInvalidIndexKey, key, err)
		}
	}
	switch {
	case len(rest) == 0:
	case common:
		h, hasHandle = CommonHandle(rest), true
	case len(rest) == 8:
		_, i, _ := codec.DecodeInt(rest)
		h, hasHandle = IntHandle(i), true
	default:
		return 0, 0, nil, Handle{}, false, fmt.Errorf("%w: %x: %d trailing bytes", ErrInvalidIndexKey, key, len(rest))
	}
	return tableID, indexID, values, h, hasHandle, nil
}

// IsIndexKey reports whether key lies in an index's key space.
func IsIndexKey(key []byte) bool {
	return len(key) >= indexPrefixLen && key[0] == TablePrefix && key[9] == indexSep[0] && key[10] == indexSep[1]
}

// IndexIDOf returns the index id of an index key (IsIndexKey must hold).
func IndexIDOf(key []byte) int64 {
	_, id, _ := codec.DecodeInt(key[11:19])
	return id
}

// Index entry values. A unique entry without the handle in its key stores
// the handle (h.Encoded(): 8 bytes for an int handle); every other entry
// stores the single byte '0', as TiDB does (an empty value would read as
// a delete).
var nonUniqueValue = []byte{'0'}

// IndexValue returns the value of an index entry: the handle for a key
// without it, else a shared constant the caller must not modify.
func IndexValue(withHandle bool, h Handle) []byte {
	if withHandle {
		return nonUniqueValue
	}
	if h.common != nil {
		return bytes.Clone(h.common)
	}
	return codec.EncodeInt(make([]byte, 0, 8), h.i)
}

// DecodeIndexHandle returns the handle of an index entry from its key
// (when the key carries it) or its value: a common handle (aliasing
// value) when common.
func DecodeIndexHandle(keyHandle Handle, hasHandle bool, value []byte, common bool) (Handle, error) {
	if hasHandle {
		return keyHandle, nil
	}
	if common {
		if len(value) == 0 {
			return Handle{}, fmt.Errorf("%w: empty index value", ErrInvalidIndexKey)
		}
		return CommonHandle(value), nil
	}
	if len(value) != 8 {
		return Handle{}, fmt.Errorf("%w: index value of %d bytes", ErrInvalidIndexKey, len(value))
	}
	_, h, _ := codec.DecodeInt(value)
	return IntHandle(h), nil
}

// TableIDOf returns the table id of a row or index key, and false for a
// key outside every table.
func TableIDOf(key []byte) (int64, bool) {
	if len(key) < 9 || key[0] != TablePrefix {
		return 0, false
	}
	_, id, _ := codec.DecodeInt(key[1:9])
	return id, true
}
