package types

import (
	"math"
	"strconv"
)

// Kind is the storage kind of a Datum.
type Kind uint8

// Datum kinds. KindAbsent is only produced by decoding, for a requested
// column the row value does not contain.
const (
	KindNull Kind = iota
	KindInt64
	KindUint64
	KindFloat64
	KindBytes
	KindAbsent
	// KindJSON holds a JSON value's binary form (json.go): its type code,
	// then the value.
	KindJSON
)

// String names the kind for errors and tests.
func (k Kind) String() string {
	switch k {
	case KindNull:
		return "null"
	case KindInt64:
		return "int64"
	case KindUint64:
		return "uint64"
	case KindFloat64:
		return "float64"
	case KindBytes:
		return "bytes"
	case KindAbsent:
		return "absent"
	case KindJSON:
		return "json"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Datum is one SQL value in its storage form: a small tagged union that is
// copied by value. Integers, unsigned integers and floats share one 8-byte
// slot; strings, decimals and temporal values (stored in canonical text form)
// are bytes. The zero Datum is NULL.
type Datum struct {
	k Kind
	n uint64
	b []byte
}

// NullDatum is SQL NULL.
var NullDatum = Datum{}

// AbsentDatum stands for a requested column the row value does not contain
// (tablecodec's row decoding produces it).
var AbsentDatum = Datum{k: KindAbsent}

// NewInt returns a signed integer datum.
func NewInt(v int64) Datum { return Datum{k: KindInt64, n: uint64(v)} }

// NewUint returns an unsigned integer datum.
func NewUint(v uint64) Datum { return Datum{k: KindUint64, n: v} }

// NewFloat returns a float datum.
func NewFloat(v float64) Datum { return Datum{k: KindFloat64, n: math.Float64bits(v)} }

// NewBytes returns a bytes datum aliasing b.
func NewBytes(b []byte) Datum { return Datum{k: KindBytes, b: b} }

// NewString returns a bytes datum holding s.
func NewString(s string) Datum { return Datum{k: KindBytes, b: []byte(s)} }

// Kind reports the datum's kind.
func (d Datum) Kind() Kind { return d.k }

// IsNull reports whether d is NULL (absent counts as NULL).
func (d Datum) IsNull() bool { return d.k == KindNull || d.k == KindAbsent }

// Int64 returns the value of an int64 datum (or the bits of a uint64 one).
func (d Datum) Int64() int64 { return int64(d.n) }

// Uint64 returns the value of a uint64 datum (or the bits of an int64 one).
func (d Datum) Uint64() uint64 { return d.n }

// Float64 returns the value of a float64 datum.
func (d Datum) Float64() float64 { return math.Float64frombits(d.n) }

// HasBytes reports whether d's value is its Bytes (a bytes or JSON datum),
// which may alias a decoded row: callers keeping d copy them.
func (d Datum) HasBytes() bool { return d.k == KindBytes || d.k == KindJSON }

// Clone returns d with its bytes copied.
func (d Datum) Clone() Datum {
	if d.HasBytes() {
		d.b = append(make([]byte, 0, len(d.b)), d.b...)
	}
	return d
}

// NewJSONBytes returns a JSON datum aliasing b, a JSON datum's Bytes (row
// decoding, spilling).
func NewJSONBytes(b []byte) Datum { return Datum{k: KindJSON, b: b} }

// Bytes returns the value of a bytes datum (the encoding of a JSON
// datum); it may alias a decoded row.
func (d Datum) Bytes() []byte { return d.b }

// String renders the datum for debugging and error messages.
func (d Datum) String() string {
	switch d.k {
	case KindInt64:
		return strconv.FormatInt(d.Int64(), 10)
	case KindUint64:
		return strconv.FormatUint(d.n, 10)
	case KindFloat64:
		return strconv.FormatFloat(d.Float64(), 'g', -1, 64)
	case KindBytes:
		return string(d.b)
	case KindJSON:
		return d.JSON().String()
	}
	return "NULL"
}
