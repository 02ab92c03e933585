package types

import (
	"bytes"
	"cmp"

	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// jsonRank orders JSON types as MySQL compares values of different types
// (a higher rank is greater); numbers of all kinds share one rank.
func jsonRank(j JSON) int {
	switch j.Tp {
	case JSONLiteral:
		if j.IsNull() {
			return 0
		}
		return 5
	case JSONInt, JSONUint, JSONDouble, JSONDecimal:
		return 1
	case JSONString:
		return 2
	case JSONObject:
		return 3
	case JSONArray:
		return 4
	case JSONDate:
		return 6
	case JSONTime:
		return 7
	case JSONDatetime:
		return 8
	}
	return 9
}

// jsonNumber is a JSON number as a Datum Compare-able value.
func jsonNumber(j JSON) Datum {
	switch j.Tp {
	case JSONInt:
		return NewInt(j.Int64())
	case JSONUint:
		return NewUint(j.Uint64())
	case JSONDouble:
		return NewFloat(j.Float64())
	}
	return NewBytes(j.Text())
}

// compareNumbers compares two JSON numbers exactly where both are exact.
func compareNumbers(a, b JSON) int {
	x, y := jsonNumber(a), jsonNumber(b)
	switch {
	case a.Tp == JSONInt && b.Tp == JSONInt:
		return cmp.Compare(x.Int64(), y.Int64())
	case a.Tp == JSONUint && b.Tp == JSONUint:
		return cmp.Compare(x.Uint64(), y.Uint64())
	case a.Tp != JSONDouble && b.Tp != JSONDouble:
		if dx, ok := ToDecimal(x); ok {
			if dy, ok := ToDecimal(y); ok {
				return dx.Cmp(dy)
			}
		}
	}
	fx, _ := ToFloat(x)
	fy, _ := ToFloat(y)
	return cmp.Compare(fx, fy)
}

// CompareJSON compares two JSON values as MySQL does: values of different
// types by type precedence (NULL < numbers < strings < objects < arrays <
// booleans < dates < times < datetimes), numbers numerically, strings
// bytewise, arrays element by element then by length, objects by size,
// then keys, then values.
func CompareJSON(a, b JSON) int {
	ra, rb := jsonRank(a), jsonRank(b)
	if ra != rb {
		return cmp.Compare(ra, rb)
	}
	switch a.Tp {
	case JSONInt, JSONUint, JSONDouble, JSONDecimal:
		return compareNumbers(a, b)
	case JSONLiteral:
		return cmp.Compare(int(b.Val[0]), int(a.Val[0])) // false (2) < true (1)
	case JSONArray:
		n, m := a.Count(), b.Count()
		for i := range min(n, m) {
			if c := CompareJSON(a.ArrayElem(i), b.ArrayElem(i)); c != 0 {
				return c
			}
		}
		return cmp.Compare(n, m)
	case JSONObject:
		n, m := a.Count(), b.Count()
		if n != m {
			return cmp.Compare(n, m)
		}
		for i := range n {
			if c := compareKeys(a.ObjectKey(i), b.ObjectKey(i)); c != 0 {
				return c
			}
		}
		for i := range n {
			if c := CompareJSON(a.ObjectVal(i), b.ObjectVal(i)); c != 0 {
				return c
			}
		}
		return 0
	}
	return bytes.Compare(a.Text(), b.Text())
}

// JSONContains is JSON_CONTAINS(target, candidate): a scalar contains an
// equal scalar, an array contains a value that some element contains (an
// array candidate: every element of it), an object contains an object
// whose every member it has with a containing value.
func JSONContains(target, cand JSON) bool {
	switch target.Tp {
	case JSONArray:
		if cand.Tp == JSONArray {
			for i := range cand.Count() {
				if !JSONContains(target, cand.ArrayElem(i)) {
					return false
				}
			}
			return true
		}
		for i := range target.Count() {
			if JSONContains(target.ArrayElem(i), cand) {
				return true
			}
		}
		return false
	case JSONObject:
		if cand.Tp != JSONObject {
			return false
		}
		for i := range cand.Count() {
			v, ok := target.Member(cand.ObjectKey(i))
			if !ok || !JSONContains(v, cand.ObjectVal(i)) {
				return false
			}
		}
		return true
	}
	if cand.Tp == JSONArray || cand.Tp == JSONObject {
		return false
	}
	return CompareJSON(target, cand) == 0
}

// JSONMergePreserve is JSON_MERGE_PRESERVE (and JSON_MERGE) of docs:
// arrays concatenate, objects merge (a shared key's values merge in
// turn), anything else is wrapped in an array first.
func JSONMergePreserve(docs []JSON) JSON { return mergeDocs(docs, mergePreserve) }

// mergeDocs folds docs left to right with merge.
func mergeDocs(docs []JSON, merge func(a, b any) any) JSON {
	v := docs[0].tree()
	for _, d := range docs[1:] {
		v = merge(v, d.tree())
	}
	return encodeJSON(v)
}

func mergePreserve(a, b any) any {
	oa, aObj := a.(*jsonObject)
	ob, bObj := b.(*jsonObject)
	if aObj && bObj {
		for i, k := range ob.keys {
			if j, ok := oa.find(k); ok {
				oa.vals[j] = mergePreserve(oa.vals[j], ob.vals[i])
			} else {
				oa.set(k, ob.vals[i])
			}
		}
		return oa
	}
	aa, ok := a.([]any)
	if !ok {
		aa = []any{a}
	}
	if ab, ok := b.([]any); ok {
		return append(aa, ab...)
	}
	return append(aa, b)
}

// JSONMergePatch is JSON_MERGE_PATCH (RFC 7396) of docs.
func JSONMergePatch(docs []JSON) JSON { return mergeDocs(docs, mergePatch) }

func mergePatch(target, patch any) any {
	op, ok := patch.(*jsonObject)
	if !ok {
		return patch
	}
	ot, ok := target.(*jsonObject)
	if !ok {
		ot = &jsonObject{}
	}
	for i, k := range op.keys {
		if j, ok := op.vals[i].(JSON); ok && j.IsNull() {
			if at, found := ot.find(k); found {
				ot.remove(at)
			}
			continue
		}
		var cur any
		if at, found := ot.find(k); found {
			cur = ot.vals[at]
		}
		ot.set(k, mergePatch(cur, op.vals[i]))
	}
	return ot
}

// CheckJSONDepth is ERROR 3157 for a value nested deeper than
// MaxJSONDepth (a result of JSON_SET or JSON_ARRAY can grow so).
func CheckJSONDepth(j JSON) error {
	if j.Depth() > MaxJSONDepth {
		return ErrJSONTooDeep
	}
	return nil
}

// ToJSON converts a non-JSON SQL value of type ft to JSON as MySQL does
// for function arguments and comparisons: numbers stay numbers (DECIMAL
// keeps its digits), dates and times keep their type, strings are JSON
// strings (not parsed), NULL is null.
func ToJSON(d Datum, ft FieldType) JSON {
	switch d.Kind() {
	case KindNull, KindAbsent:
		return JSONNull
	case KindJSON:
		return d.JSON()
	case KindInt64:
		if ft.Tp == mysql.TypeLonglong && ft.Flen == 1 { // TRUE, FALSE, a comparison's result
			return encodeJSON(d.Int64() != 0)
		}
		return encodeJSON(d.Int64())
	case KindUint64:
		return encodeJSON(d.Uint64())
	case KindFloat64:
		return encodeJSON(d.Float64())
	}
	text := string(d.Bytes())
	switch ft.Tp {
	case mysql.TypeNewDecimal:
		return encodeJSON(jsonText{tp: JSONDecimal, text: text})
	case mysql.TypeDate:
		return encodeJSON(jsonText{tp: JSONDate, text: text})
	case mysql.TypeDatetime, mysql.TypeTimestamp:
		if len(text) == 19 {
			text += ".000000"
		}
		return encodeJSON(jsonText{tp: JSONDatetime, text: text})
	case mysql.TypeDuration:
		if len(text) > 0 && !bytes.ContainsRune([]byte(text), '.') {
			text += ".000000"
		}
		return encodeJSON(jsonText{tp: JSONTime, text: text})
	}
	return encodeJSON(text)
}

// JSONToFloat converts a JSON scalar to a number as CAST(j AS DOUBLE)
// does: booleans are 1 and 0, strings by their numeric prefix; ok is false
// for arrays, objects and null.
func JSONToFloat(j JSON) (float64, bool) {
	switch j.Tp {
	case JSONInt:
		return float64(j.Int64()), true
	case JSONUint:
		return float64(j.Uint64()), true
	case JSONDouble:
		return j.Float64(), true
	case JSONLiteral:
		if j.IsNull() {
			return 0, false
		}
		if j.Bool() {
			return 1, true
		}
		return 0, true
	case JSONDecimal, JSONString:
		return ToFloat(NewBytes(j.Text()))
	}
	return 0, false
}

// JSONToDatum is j as a plain SQL value for numeric and temporal contexts
// (CAST(j AS SIGNED / DOUBLE / DATE ...)): numbers as numbers, true and
// false as 1 and 0, strings and temporals as their unquoted text,
// anything else as its JSON text.
func JSONToDatum(j JSON) Datum {
	switch j.Tp {
	case JSONInt:
		return NewInt(j.Int64())
	case JSONUint:
		return NewUint(j.Uint64())
	case JSONDouble:
		return NewFloat(j.Float64())
	case JSONLiteral:
		if j.IsNull() {
			return NewString("null")
		}
		if j.Bool() {
			return NewInt(1)
		}
		return NewInt(0)
	}
	return NewBytes(j.Unquoted())
}

// JSONOverlaps is JSON_OVERLAPS: two arrays share an element, two objects
// a member (key and value), an array holds a scalar, or two scalars are
// equal.
func JSONOverlaps(a, b JSON) bool {
	switch {
	case a.Tp != JSONArray && b.Tp == JSONArray:
		a, b = b, a
	case a.Tp == JSONObject && b.Tp == JSONObject:
		for i := range b.Count() {
			if v, ok := a.Member(b.ObjectKey(i)); ok && CompareJSON(v, b.ObjectVal(i)) == 0 {
				return true
			}
		}
		return false
	}
	if a.Tp != JSONArray {
		return CompareJSON(a, b) == 0
	}
	for i := range a.Count() {
		if b.Tp != JSONArray {
			if CompareJSON(a.ArrayElem(i), b) == 0 {
				return true
			}
			continue
		}
		for k := range b.Count() {
			if CompareJSON(a.ArrayElem(i), b.ArrayElem(k)) == 0 {
				return true
			}
		}
	}
	return false
}

// AppendPretty appends JSON_PRETTY's text of j: one member or element a
// line, indented by two spaces a level.
func (j JSON) AppendPretty(b []byte, indent int) []byte {
	n := 0
	if j.Tp == JSONArray || j.Tp == JSONObject {
		n = j.Count()
	}
	if n == 0 {
		return j.AppendText(b)
	}
	open, closing := byte('['), byte(']')
	if j.Tp == JSONObject {
		open, closing = '{', '}'
	}
	b = append(b, open)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '\n')
		b = append(b, bytes.Repeat([]byte("  "), indent+1)...)
		if j.Tp == JSONObject {
			b = appendJSONString(b, j.ObjectKey(i))
			b = append(b, ": "...)
			b = j.ObjectVal(i).AppendPretty(b, indent+1)
		} else {
			b = j.ArrayElem(i).AppendPretty(b, indent+1)
		}
	}
	b = append(b, '\n')
	b = append(b, bytes.Repeat([]byte("  "), indent)...)
	return append(b, closing)
}
