package types

import (
	"strconv"
	"unicode"
	"unicode/utf8"
)

// JSONPath is a parsed MySQL JSON path: $ followed by legs (.key,
// ."quoted key", .*, [n], [last-n], [m to n], [*], **).
type JSONPath struct {
	legs []pathLeg
	// wild: the path has *, ** or a range and may match several values.
	wild bool
}

type legKind uint8

const (
	legKey legKind = iota
	legKeyWild
	legIndex
	legIndexWild
	legRange
	legAnywhere // **
)

// arrayIdx is an array position: n, or last-n when fromEnd.
type arrayIdx struct {
	n       int
	fromEnd bool
}

// resolve is the 0-based position in an array of count elements (may be
// out of range: negative or >= count).
func (a arrayIdx) resolve(count int) int {
	if a.fromEnd {
		return count - 1 - a.n
	}
	return a.n
}

type pathLeg struct {
	kind   legKind
	key    string
	idx    arrayIdx
	idxEnd arrayIdx // legRange's upper bound
}

// ErrJSONPathWildcard is ERROR 3149: a path with * or ** where one value
// is changed.
var ErrJSONPathWildcard = &JSONError{Code: 3149, Msg: "In this situation, path expressions may not contain the * and ** tokens."}

// ErrJSONVacuousPath is ERROR 3153 (JSON_REMOVE of '$').
var ErrJSONVacuousPath = &JSONError{Code: 3153, Msg: "The path expression '$' is not allowed in this context."}

func pathError(pos int) error {
	return &JSONError{Code: 3143, Msg: "Invalid JSON path expression. The error is around character position " + strconv.Itoa(pos) + "."}
}

// ParseJSONPath parses a path; a bad one is ERROR 3143 naming the
// character position where parsing failed.
func ParseJSONPath(s []byte) (JSONPath, error) {
	var p JSONPath
	i := 0
	space := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
			i++
		}
	}
	space()
	if i >= len(s) || s[i] != '$' {
		return p, pathError(i)
	}
	i++
	for {
		space()
		if i >= len(s) {
			break
		}
		switch s[i] {
		case '.':
			i++
			space()
			if i >= len(s) {
				return p, pathError(i)
			}
			switch {
			case s[i] == '*':
				i++
				p.legs = append(p.legs, pathLeg{kind: legKeyWild})
				p.wild = true
			case s[i] == '"':
				end := i + 1
				for end < len(s) && s[end] != '"' {
					if s[end] == '\\' {
						end++
					}
					end++
				}
				if end >= len(s) {
					return p, pathError(i)
				}
				v, err := ParseJSON(s[i : end+1])
				if err != nil || v.Tp != JSONString {
					return p, pathError(i)
				}
				p.legs = append(p.legs, pathLeg{kind: legKey, key: string(v.Text())})
				i = end + 1
			default:
				start := i
				for i < len(s) {
					r, n := utf8.DecodeRune(s[i:])
					if r == '$' || r == '_' || unicode.IsLetter(r) || (i > start && (unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r) || unicode.Is(unicode.Pc, r))) {
						i += n
						continue
					}
					break
				}
				if i == start {
					return p, pathError(i)
				}
				p.legs = append(p.legs, pathLeg{kind: legKey, key: string(s[start:i])})
			}
		case '[':
			i++
			space()
			if i < len(s) && s[i] == '*' {
				i++
				space()
				if i >= len(s) || s[i] != ']' {
					return p, pathError(i)
				}
				i++
				p.legs = append(p.legs, pathLeg{kind: legIndexWild})
				p.wild = true
				continue
			}
			lo, ok := parseArrayIdx(s, &i)
			if !ok {
				return p, pathError(i)
			}
			space()
			leg := pathLeg{kind: legIndex, idx: lo}
			if i+2 < len(s) && string(s[i:i+2]) == "to" && (s[i+2] == ' ' || s[i+2] == '\t') {
				i += 2
				space()
				hi, ok := parseArrayIdx(s, &i)
				if !ok {
					return p, pathError(i)
				}
				space()
				leg.kind, leg.idxEnd = legRange, hi
				p.wild = true
			}
			if i >= len(s) || s[i] != ']' {
				return p, pathError(i)
			}
			i++
			p.legs = append(p.legs, leg)
		case '*':
			if i+1 >= len(s) || s[i+1] != '*' {
				return p, pathError(i)
			}
			i += 2
			p.legs = append(p.legs, pathLeg{kind: legAnywhere})
			p.wild = true
		default:
			return p, pathError(i)
		}
	}
	if n := len(p.legs); n > 0 && p.legs[n-1].kind == legAnywhere {
		return p, pathError(len(s))
	}
	return p, nil
}

// parseArrayIdx reads n, last or last-n at *i.
func parseArrayIdx(s []byte, i *int) (arrayIdx, bool) {
	num := func() (int, bool) {
		start := *i
		for *i < len(s) && s[*i] >= '0' && s[*i] <= '9' {
			*i++
		}
		if *i == start || *i-start > 9 {
			return 0, false
		}
		n, _ := strconv.Atoi(string(s[start:*i]))
		return n, true
	}
	if len(s)-*i >= 4 && string(s[*i:*i+4]) == "last" {
		*i += 4
		j := *i
		for j < len(s) && s[j] == ' ' {
			j++
		}
		if j < len(s) && s[j] == '-' {
			j++
			for j < len(s) && s[j] == ' ' {
				j++
			}
			*i = j
			n, ok := num()
			return arrayIdx{n: n, fromEnd: true}, ok
		}
		return arrayIdx{fromEnd: true}, true
	}
	n, ok := num()
	return arrayIdx{n: n}, ok
}

// Wild reports whether the path may match several values.
func (p JSONPath) Wild() bool { return p.wild }

// IsRoot reports whether the path is $ alone.
func (p JSONPath) IsRoot() bool { return len(p.legs) == 0 }

// Extract returns the values the path matches in j, in document order.
func (p JSONPath) Extract(j JSON) []JSON {
	var out []JSON
	var seen map[*byte]bool
	if p.wild {
		seen = map[*byte]bool{}
	}
	extractLegs(j, p.legs, &out, seen)
	return out
}

func extractLegs(j JSON, legs []pathLeg, out *[]JSON, seen map[*byte]bool) {
	if len(legs) == 0 {
		if seen != nil {
			if seen[&j.Val[0]] {
				return
			}
			seen[&j.Val[0]] = true
		}
		*out = append(*out, j)
		return
	}
	l, rest := legs[0], legs[1:]
	switch l.kind {
	case legKey:
		if j.Tp == JSONObject {
			if v, ok := j.Member([]byte(l.key)); ok {
				extractLegs(v, rest, out, seen)
			}
		}
	case legKeyWild:
		if j.Tp == JSONObject {
			for i := range j.Count() {
				extractLegs(j.ObjectVal(i), rest, out, seen)
			}
		}
	case legIndex, legRange, legIndexWild:
		n, elem := 1, func(int) JSON { return j } // a scalar or object is a one-element array
		if j.Tp == JSONArray {
			n, elem = j.Count(), j.ArrayElem
		}
		lo, hi := 0, n-1
		switch l.kind {
		case legIndex:
			lo = l.idx.resolve(n)
			hi = lo
		case legRange:
			lo, hi = max(l.idx.resolve(n), 0), min(l.idxEnd.resolve(n), n-1)
		case legIndexWild:
			if j.Tp != JSONArray {
				return
			}
		}
		for i := max(lo, 0); i <= hi && i < n; i++ {
			extractLegs(elem(i), rest, out, seen)
		}
	case legAnywhere:
		extractLegs(j, rest, out, seen)
		switch j.Tp {
		case JSONArray:
			for i := range j.Count() {
				extractLegs(j.ArrayElem(i), legs, out, seen)
			}
		case JSONObject:
			for i := range j.Count() {
				extractLegs(j.ObjectVal(i), legs, out, seen)
			}
		}
	}
}

// JSONModify says what JSONSet does where the path leads.
type JSONModify uint8

// JSON_SET, JSON_INSERT and JSON_REPLACE.
const (
	JSONModifySet     JSONModify = iota // replace or add
	JSONModifyInsert                    // add only
	JSONModifyReplace                   // replace only
)

// JSONSet applies JSON_SET / JSON_INSERT / JSON_REPLACE's changes to doc:
// paths[i] gets vals[i], in order. A path with wildcards is ERROR 3149.
func JSONSet(doc JSON, paths []JSONPath, vals []JSON, mode JSONModify) (JSON, error) {
	root := doc.tree()
	for i, p := range paths {
		if p.wild {
			return JSON{}, ErrJSONPathWildcard
		}
		root = setLegs(root, p.legs, vals[i].tree(), mode)
	}
	return encodeJSON(root), nil
}

func setLegs(node any, legs []pathLeg, v any, mode JSONModify) any {
	if len(legs) == 0 {
		if mode == JSONModifyInsert {
			return node
		}
		return v
	}
	l, last := legs[0], len(legs) == 1
	switch l.kind {
	case legKey:
		o, ok := node.(*jsonObject)
		if !ok {
			return node
		}
		i, found := o.find(l.key)
		switch {
		case found:
			o.vals[i] = setLegs(o.vals[i], legs[1:], v, mode)
		case last && mode != JSONModifyReplace:
			o.set(l.key, v)
		}
		return o
	case legIndex:
		a, isArr := node.([]any)
		if !isArr {
			// A non-array is a one-element array here (autowrap).
			switch idx := l.idx.resolve(1); {
			case idx == 0:
				return setLegs(node, legs[1:], v, mode)
			case idx > 0 && last && mode != JSONModifyReplace:
				return []any{node, v}
			}
			return node
		}
		switch idx := l.idx.resolve(len(a)); {
		case idx >= 0 && idx < len(a):
			a[idx] = setLegs(a[idx], legs[1:], v, mode)
		case idx >= len(a) && last && mode != JSONModifyReplace:
			a = append(a, v)
		}
		return a
	}
	return node
}

// JSONRemove is JSON_REMOVE: each path's value is removed in turn. $ is
// ERROR 3153, a wildcard 3149.
func JSONRemove(doc JSON, paths []JSONPath) (JSON, error) {
	root := doc.tree()
	for _, p := range paths {
		if p.wild {
			return JSON{}, ErrJSONPathWildcard
		}
		if len(p.legs) == 0 {
			return JSON{}, ErrJSONVacuousPath
		}
		root = removeLegs(root, p.legs)
	}
	return encodeJSON(root), nil
}

func removeLegs(node any, legs []pathLeg) any {
	l, last := legs[0], len(legs) == 1
	switch l.kind {
	case legKey:
		o, ok := node.(*jsonObject)
		if !ok {
			return node
		}
		if i, found := o.find(l.key); found {
			if last {
				o.remove(i)
			} else {
				o.vals[i] = removeLegs(o.vals[i], legs[1:])
			}
		}
		return o
	case legIndex:
		a, isArr := node.([]any)
		if !isArr {
			if !last && l.idx.resolve(1) == 0 {
				return removeLegs(node, legs[1:])
			}
			return node
		}
		if idx := l.idx.resolve(len(a)); idx >= 0 && idx < len(a) {
			if last {
				return append(a[:idx], a[idx+1:]...)
			}
			a[idx] = removeLegs(a[idx], legs[1:])
		}
		return a
	}
	return node
}

// ErrJSONNotArrayCell is ERROR 3165 (JSON_ARRAY_INSERT's path must end in
// an array position).
var ErrJSONNotArrayCell = &JSONError{Code: 3165, Msg: "A path expression is not a path to a cell in an array."}

// applyAt replaces the value legs lead to in node (a non-array is a
// one-element array for [0]) with fn of it; nothing when there is none.
func applyAt(node any, legs []pathLeg, fn func(any) any) any {
	if len(legs) == 0 {
		return fn(node)
	}
	l := legs[0]
	switch l.kind {
	case legKey:
		if o, ok := node.(*jsonObject); ok {
			if i, found := o.find(l.key); found {
				o.vals[i] = applyAt(o.vals[i], legs[1:], fn)
			}
		}
	case legIndex:
		a, isArr := node.([]any)
		if !isArr {
			if l.idx.resolve(1) == 0 {
				return applyAt(node, legs[1:], fn)
			}
			return node
		}
		if i := l.idx.resolve(len(a)); i >= 0 && i < len(a) {
			a[i] = applyAt(a[i], legs[1:], fn)
		}
	}
	return node
}

// JSONArrayAppend is JSON_ARRAY_APPEND: vals[i] is appended to the array
// paths[i] selects (a non-array value becomes an array of it first).
func JSONArrayAppend(doc JSON, paths []JSONPath, vals []JSON) (JSON, error) {
	root := doc.tree()
	for i, p := range paths {
		if p.wild {
			return JSON{}, ErrJSONPathWildcard
		}
		v := vals[i].tree()
		root = applyAt(root, p.legs, func(cur any) any {
			if a, ok := cur.([]any); ok {
				return append(a, v)
			}
			return []any{cur, v}
		})
	}
	return encodeJSON(root), nil
}

// JSONArrayInsert is JSON_ARRAY_INSERT: vals[i] is inserted at the array
// position paths[i] ends in (past the end: appended).
func JSONArrayInsert(doc JSON, paths []JSONPath, vals []JSON) (JSON, error) {
	root := doc.tree()
	for i, p := range paths {
		if p.wild {
			return JSON{}, ErrJSONPathWildcard
		}
		n := len(p.legs)
		if n == 0 || p.legs[n-1].kind != legIndex {
			return JSON{}, ErrJSONNotArrayCell
		}
		v, at := vals[i].tree(), p.legs[n-1].idx
		root = applyAt(root, p.legs[:n-1], func(cur any) any {
			a, ok := cur.([]any)
			if !ok {
				return cur
			}
			k := min(max(at.resolve(len(a)), 0), len(a))
			return append(a[:k], append([]any{v}, a[k:]...)...)
		})
	}
	return encodeJSON(root), nil
}
