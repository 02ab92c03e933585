package types

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math"
	"strconv"
)

// JSON type codes: the first byte of a JSON datum's bytes. Scalars of the
// SQL types MySQL keeps inside JSON (DECIMAL, DATE, DATETIME, TIME) carry
// their canonical text, as strings do.
const (
	JSONObject   byte = 0x01
	JSONArray    byte = 0x03
	JSONLiteral  byte = 0x04 // null, true, false
	JSONInt      byte = 0x09
	JSONUint     byte = 0x0a
	JSONDouble   byte = 0x0b
	JSONString   byte = 0x0c
	JSONDecimal  byte = 0x0d
	JSONDate     byte = 0x0e
	JSONDatetime byte = 0x0f
	JSONTime     byte = 0x10
)

// JSON literal values (the one byte of a JSONLiteral).
const (
	jsonNullLit  byte = 0
	jsonTrueLit  byte = 1
	jsonFalseLit byte = 2
)

// MaxJSONDepth is MySQL's limit on nested arrays and objects (ERROR 3157).
const MaxJSONDepth = 100

// JSON is one JSON value in its binary form, read without decoding: a type
// code and the value's bytes (Val may extend past the value; each form
// knows its own length).
//
// Forms of Val: an int or uint is 8 bytes little endian, a double its 8
// IEEE bytes, a literal 1 byte, a string (and a decimal or temporal) a
// uvarint length and the bytes. An array is count uint32, size uint32 (of
// the whole Val), count entries (type byte, offset uint32), then the
// values. An object is count uint32, size uint32, count key entries
// (offset uint32, length uint16), count value entries (type byte, offset
// uint32), the keys, then the values; its keys are sorted as MySQL sorts
// them (shorter first, then bytewise) and unique, so a member is found by
// binary search. Offsets are from the start of Val.
type JSON struct {
	Tp  byte
	Val []byte
}

// NewJSONDatum returns a JSON datum holding j's encoding.
func NewJSONDatum(j JSON) Datum {
	b := make([]byte, 0, 1+j.size())
	b = append(b, j.Tp)
	return Datum{k: KindJSON, b: append(b, j.Val[:j.size()]...)}
}

// JSONFromBytes views the encoding in a JSON datum's bytes (b from
// Datum.Bytes of a KindJSON datum, or a row decoder).
func JSONFromBytes(b []byte) JSON {
	if len(b) == 0 {
		return JSON{Tp: JSONLiteral, Val: []byte{jsonNullLit}}
	}
	return JSON{Tp: b[0], Val: b[1:]}
}

// JSON returns the value of a KindJSON datum.
func (d Datum) JSON() JSON { return JSONFromBytes(d.b) }

func u32(b []byte) int { return int(binary.LittleEndian.Uint32(b)) }

// size is the length of j's value in Val.
func (j JSON) size() int {
	switch j.Tp {
	case JSONObject, JSONArray:
		return u32(j.Val[4:])
	case JSONLiteral:
		return 1
	case JSONInt, JSONUint, JSONDouble:
		return 8
	}
	l, n := binary.Uvarint(j.Val)
	return n + int(l)
}

// IsNull reports whether j is the JSON null literal.
func (j JSON) IsNull() bool { return j.Tp == JSONLiteral && j.Val[0] == jsonNullLit }

// Count is the number of elements of an array or members of an object.
func (j JSON) Count() int { return u32(j.Val) }

// ArrayElem is the i-th element of an array.
func (j JSON) ArrayElem(i int) JSON {
	e := j.Val[8+5*i:]
	return JSON{Tp: e[0], Val: j.Val[u32(e[1:]):]}
}

// ObjectKey is the i-th key of an object (in sorted order).
func (j JSON) ObjectKey(i int) []byte {
	e := j.Val[8+6*i:]
	off := u32(e)
	return j.Val[off : off+int(binary.LittleEndian.Uint16(e[4:]))]
}

// ObjectVal is the value of an object's i-th key.
func (j JSON) ObjectVal(i int) JSON {
	e := j.Val[8+6*j.Count()+5*i:]
	return JSON{Tp: e[0], Val: j.Val[u32(e[1:]):]}
}

// compareKeys orders object keys as MySQL stores them: by length, then
// bytewise.
func compareKeys(a, b []byte) int {
	if len(a) != len(b) {
		return cmp.Compare(len(a), len(b))
	}
	return bytes.Compare(a, b)
}

// Member finds key in an object.
func (j JSON) Member(key []byte) (JSON, bool) {
	lo, hi := 0, j.Count()
	for lo < hi {
		m := (lo + hi) / 2
		switch c := compareKeys(j.ObjectKey(m), key); {
		case c == 0:
			return j.ObjectVal(m), true
		case c < 0:
			lo = m + 1
		default:
			hi = m
		}
	}
	return JSON{}, false
}

// Int64 is the value of a JSONInt.
func (j JSON) Int64() int64 { return int64(binary.LittleEndian.Uint64(j.Val)) }

// Uint64 is the value of a JSONUint.
func (j JSON) Uint64() uint64 { return binary.LittleEndian.Uint64(j.Val) }

// Float64 is the value of a JSONDouble.
func (j JSON) Float64() float64 { return math.Float64frombits(binary.LittleEndian.Uint64(j.Val)) }

// Bool is the value of a true or false literal.
func (j JSON) Bool() bool { return j.Val[0] == jsonTrueLit }

// Text is the bytes of a string, decimal or temporal value.
func (j JSON) Text() []byte {
	l, n := binary.Uvarint(j.Val)
	return j.Val[n : n+int(l)]
}

// TypeName is JSON_TYPE's answer for j.
func (j JSON) TypeName() string {
	switch j.Tp {
	case JSONObject:
		return "OBJECT"
	case JSONArray:
		return "ARRAY"
	case JSONLiteral:
		if j.IsNull() {
			return "NULL"
		}
		return "BOOLEAN"
	case JSONInt:
		return "INTEGER"
	case JSONUint:
		return "UNSIGNED INTEGER"
	case JSONDouble:
		return "DOUBLE"
	case JSONString:
		return "STRING"
	case JSONDecimal:
		return "DECIMAL"
	case JSONDate:
		return "DATE"
	case JSONDatetime:
		return "DATETIME"
	case JSONTime:
		return "TIME"
	}
	return "OPAQUE"
}

// String is j's text as MySQL prints it.
func (j JSON) String() string { return string(j.AppendText(nil)) }

// AppendText appends j's text as MySQL prints JSON: `{"a": 1, "b": [1,
// 2]}`, strings quoted and escaped.
func (j JSON) AppendText(b []byte) []byte {
	switch j.Tp {
	case JSONObject:
		b = append(b, '{')
		for i := range j.Count() {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendJSONString(b, j.ObjectKey(i))
			b = append(b, ": "...)
			b = j.ObjectVal(i).AppendText(b)
		}
		return append(b, '}')
	case JSONArray:
		b = append(b, '[')
		for i := range j.Count() {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = j.ArrayElem(i).AppendText(b)
		}
		return append(b, ']')
	case JSONLiteral:
		switch j.Val[0] {
		case jsonTrueLit:
			return append(b, "true"...)
		case jsonFalseLit:
			return append(b, "false"...)
		}
		return append(b, "null"...)
	case JSONInt:
		return strconv.AppendInt(b, j.Int64(), 10)
	case JSONUint:
		return strconv.AppendUint(b, j.Uint64(), 10)
	case JSONDouble:
		return appendJSONDouble(b, j.Float64())
	case JSONDecimal:
		return append(b, j.Text()...)
	}
	return appendJSONString(b, j.Text())
}

// appendJSONDouble formats f as MySQL prints a JSON double: an integral
// value keeps a ".0" (1.0), large and small ones use an exponent (1e20).
func appendJSONDouble(b []byte, f float64) []byte {
	start := len(b)
	b = AppendFloat(b, f, 64)
	if bytes.IndexAny(b[start:], ".eE") < 0 {
		b = append(b, ".0"...)
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s quoted as a JSON string.
func appendJSONString(b []byte, s []byte) []byte {
	b = append(b, '"')
	for _, c := range s {
		switch c {
		case '"':
			b = append(b, '\\', '"')
		case '\\':
			b = append(b, '\\', '\\')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		default:
			if c < 0x20 {
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
				continue
			}
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// QuoteJSON is JSON_QUOTE: s as a JSON string literal.
func QuoteJSON(s []byte) []byte { return appendJSONString(nil, s) }

// Unquoted is j's text with a string's quotes and escapes removed
// (JSON_UNQUOTE, ->>, CAST(json AS CHAR) of a string keeps the quotes).
func (j JSON) Unquoted() []byte {
	switch j.Tp {
	case JSONString, JSONDate, JSONDatetime, JSONTime:
		return j.Text()
	}
	return j.AppendText(nil)
}

// Depth is JSON_DEPTH: 1 for a scalar or an empty container.
func (j JSON) Depth() int {
	d := 0
	switch j.Tp {
	case JSONArray:
		for i := range j.Count() {
			d = max(d, j.ArrayElem(i).Depth())
		}
	case JSONObject:
		for i := range j.Count() {
			d = max(d, j.ObjectVal(i).Depth())
		}
	default:
		return 1
	}
	return d + 1
}

// --- building ---------------------------------------------------------

// A JSON value under construction (parsing, JSON_SET, merging) is a Go
// tree: nil is null, then bool, int64, uint64, float64, string, jsonText
// (a decimal or temporal scalar), []any, and *jsonObject.

// jsonText is a scalar carried as text with its type code.
type jsonText struct {
	tp   byte
	text string
}

// jsonObject is an object under construction, keys in MySQL's order.
type jsonObject struct {
	keys []string
	vals []any
}

func (o *jsonObject) find(k string) (int, bool) {
	lo, hi := 0, len(o.keys)
	for lo < hi {
		m := (lo + hi) / 2
		switch c := compareKeys([]byte(o.keys[m]), []byte(k)); {
		case c == 0:
			return m, true
		case c < 0:
			lo = m + 1
		default:
			hi = m
		}
	}
	return lo, false
}

// set puts k: v, replacing an existing member (last value wins, as in
// MySQL 8.0).
func (o *jsonObject) set(k string, v any) {
	i, ok := o.find(k)
	if ok {
		o.vals[i] = v
		return
	}
	o.keys = append(o.keys, "")
	o.vals = append(o.vals, nil)
	copy(o.keys[i+1:], o.keys[i:])
	copy(o.vals[i+1:], o.vals[i:])
	o.keys[i], o.vals[i] = k, v
}

func (o *jsonObject) remove(i int) {
	o.keys = append(o.keys[:i], o.keys[i+1:]...)
	o.vals = append(o.vals[:i], o.vals[i+1:]...)
}

// encodeJSON encodes a tree.
func encodeJSON(v any) JSON {
	tp, val := appendJSONValue(nil, v)
	return JSON{Tp: tp, Val: val}
}

func putU32(b []byte, v int) { binary.LittleEndian.PutUint32(b, uint32(v)) }

// appendJSONValue appends v's Val form to b and returns v's type code.
func appendJSONValue(b []byte, v any) (byte, []byte) {
	switch x := v.(type) {
	case nil:
		return JSONLiteral, append(b, jsonNullLit)
	case bool:
		if x {
			return JSONLiteral, append(b, jsonTrueLit)
		}
		return JSONLiteral, append(b, jsonFalseLit)
	case int64:
		return JSONInt, binary.LittleEndian.AppendUint64(b, uint64(x))
	case uint64:
		return JSONUint, binary.LittleEndian.AppendUint64(b, x)
	case float64:
		return JSONDouble, binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	case string:
		return JSONString, append(binary.AppendUvarint(b, uint64(len(x))), x...)
	case jsonText:
		return x.tp, append(binary.AppendUvarint(b, uint64(len(x.text))), x.text...)
	case JSON:
		return x.Tp, append(b, x.Val[:x.size()]...)
	case []any:
		start := len(b)
		b = append(b, make([]byte, 8+5*len(x))...)
		putU32(b[start:], len(x))
		for i, e := range x {
			off := len(b) - start
			var tp byte
			tp, b = appendJSONValue(b, e)
			b[start+8+5*i] = tp
			putU32(b[start+8+5*i+1:], off)
		}
		putU32(b[start+4:], len(b)-start)
		return JSONArray, b
	case *jsonObject:
		n := len(x.keys)
		start := len(b)
		b = append(b, make([]byte, 8+11*n)...)
		putU32(b[start:], n)
		for i, k := range x.keys {
			putU32(b[start+8+6*i:], len(b)-start)
			binary.LittleEndian.PutUint16(b[start+8+6*i+4:], uint16(len(k)))
			b = append(b, k...)
		}
		for i, e := range x.vals {
			off := len(b) - start
			var tp byte
			tp, b = appendJSONValue(b, e)
			b[start+8+6*n+5*i] = tp
			putU32(b[start+8+6*n+5*i+1:], off)
		}
		putU32(b[start+4:], len(b)-start)
		return JSONObject, b
	}
	panic("types: bad JSON tree node") // unreachable: trees are built here
}

// tree decodes j into a tree whose containers may be changed; scalars
// stay as JSON views.
func (j JSON) tree() any {
	switch j.Tp {
	case JSONArray:
		a := make([]any, j.Count())
		for i := range a {
			a[i] = j.ArrayElem(i).tree()
		}
		return a
	case JSONObject:
		o := &jsonObject{keys: make([]string, j.Count()), vals: make([]any, j.Count())}
		for i := range o.keys {
			o.keys[i] = string(j.ObjectKey(i))
			o.vals[i] = j.ObjectVal(i).tree()
		}
		return o
	}
	return j
}

// JSONNull, JSONTrue and JSONFalse are the literals.
var (
	JSONNull  = encodeJSON(nil)
	JSONTrue  = encodeJSON(true)
	JSONFalse = encodeJSON(false)
)

// JSONFromString is a JSON string scalar.
func JSONFromString(s []byte) JSON { return encodeJSON(string(s)) }

// JSONFromInt, JSONFromUint and JSONFromFloat are number scalars.
func JSONFromInt(v int64) JSON { return encodeJSON(v) }

// JSONFromUint is an unsigned number scalar.
func JSONFromUint(v uint64) JSON { return encodeJSON(v) }

// JSONFromFloat is a double scalar.
func JSONFromFloat(v float64) JSON { return encodeJSON(v) }

// JSONArrayOf is an array of vals.
func JSONArrayOf(vals []JSON) JSON {
	a := make([]any, len(vals))
	for i, v := range vals {
		a[i] = v
	}
	return encodeJSON(a)
}

// JSONObjectBuilder collects members for JSON_OBJECT and JSON_OBJECTAGG
// (a repeated key keeps its last value).
type JSONObjectBuilder struct{ o jsonObject }

// Add puts key: v.
func (b *JSONObjectBuilder) Add(key []byte, v JSON) { b.o.set(string(key), v) }

// Build returns the object.
func (b *JSONObjectBuilder) Build() JSON { return encodeJSON(&b.o) }
