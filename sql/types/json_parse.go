package types

import (
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// JSONSyntaxError is text that is no JSON document: Msg is the reason as
// MySQL words it ("Invalid value."), Pos the byte offset it was found at.
// The caller wraps it as ERROR 3140 (a column) or 3141 (an argument).
type JSONSyntaxError struct {
	Msg string
	Pos int
}

func (e *JSONSyntaxError) Error() string {
	return "types: invalid JSON text: " + e.Msg + " at position " + strconv.Itoa(e.Pos)
}

// JSONError is a JSON error with its MySQL code (ERROR 3157 too deep,
// 3151 key too long, ...); it implements errno.Coded.
type JSONError struct {
	Code uint16
	Msg  string
}

func (e *JSONError) Error() string { return e.Msg }

// MySQLError implements errno.Coded.
func (e *JSONError) MySQLError() (uint16, string) { return e.Code, e.Msg }

// ErrJSONTooDeep is ERROR 3157.
var ErrJSONTooDeep = &JSONError{Code: 3157, Msg: "The JSON document exceeds the maximum depth."}

// errJSONKeyTooLong is ERROR 3151: a key longer than 65535 bytes.
var errJSONKeyTooLong = &JSONError{Code: 3151, Msg: "The JSON object contains a key name that is too long."}

// ParseJSON parses JSON text into its binary form. Bad text is a
// *JSONSyntaxError; nesting deeper than MaxJSONDepth is ErrJSONTooDeep.
func ParseJSON(text []byte) (JSON, error) {
	p := jsonParser{s: text}
	p.space()
	if p.i == len(p.s) {
		return JSON{}, p.fail("The document is empty.")
	}
	v, err := p.value(0)
	if err != nil {
		return JSON{}, err
	}
	p.space()
	if p.i != len(p.s) {
		return JSON{}, p.fail("The document root must not be followed by other values.")
	}
	return encodeJSON(v), nil
}

// ValidJSON is JSON_VALID of text.
func ValidJSON(text []byte) bool {
	_, err := ParseJSON(text)
	return err == nil
}

type jsonParser struct {
	s []byte
	i int
}

func (p *jsonParser) fail(msg string) error { return &JSONSyntaxError{Msg: msg, Pos: p.i} }

func (p *jsonParser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (any, error) {
	if p.i >= len(p.s) {
		return nil, p.fail("Invalid value.")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		s, err := p.str()
		return s, err
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	for _, lit := range []struct {
		word string
		v    any
	}{{"true", true}, {"false", false}, {"null", nil}} {
		if len(p.s)-p.i >= len(lit.word) && string(p.s[p.i:p.i+len(lit.word)]) == lit.word {
			p.i += len(lit.word)
			return lit.v, nil
		}
	}
	return nil, p.fail("Invalid value.")
}

func (p *jsonParser) array(depth int) (any, error) {
	if depth > MaxJSONDepth {
		return nil, ErrJSONTooDeep
	}
	p.i++ // [
	p.space()
	a := []any{}
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return a, nil
	}
	for {
		p.space()
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			return a, nil
		}
		return nil, p.fail("Missing a comma or ']' after an array element.")
	}
}

func (p *jsonParser) object(depth int) (any, error) {
	if depth > MaxJSONDepth {
		return nil, ErrJSONTooDeep
	}
	p.i++ // {
	p.space()
	o := &jsonObject{}
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return o, nil
	}
	for {
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return nil, p.fail("Missing a name for object member.")
		}
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		if len(k) > math.MaxUint16 {
			return nil, errJSONKeyTooLong
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, p.fail("Missing a colon after a name of object member.")
		}
		p.i++
		p.space()
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		o.set(k, v)
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return o, nil
		}
		return nil, p.fail("Missing a comma or '}' after an object member.")
	}
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// hex4 reads the four hex digits of a \u escape at p.i.
func (p *jsonParser) hex4() (rune, error) {
	if len(p.s)-p.i < 4 {
		return 0, p.fail("Incorrect hex digit after \\u escape in string.")
	}
	var r rune
	for k := range 4 {
		h := hexVal(p.s[p.i+k])
		if h < 0 {
			return 0, p.fail("Incorrect hex digit after \\u escape in string.")
		}
		r = r<<4 | rune(h)
	}
	p.i += 4
	return r, nil
}

// str reads a quoted string at p.i.
func (p *jsonParser) str() (string, error) {
	start := p.i
	p.i++ // "
	var b []byte
	for {
		if p.i >= len(p.s) {
			p.i = start
			return "", p.fail("Missing a closing quotation mark in string.")
		}
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return string(b), nil
		case c == '\\':
			if p.i+1 >= len(p.s) {
				p.i++
				return "", p.fail("Invalid escape character in string.")
			}
			esc := p.s[p.i+1]
			p.i += 2
			switch esc {
			case '"', '\\', '/':
				b = append(b, esc)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, err := p.hex4()
				if err != nil {
					return "", err
				}
				if utf16.IsSurrogate(r) {
					if r >= 0xDC00 || len(p.s)-p.i < 6 || p.s[p.i] != '\\' || p.s[p.i+1] != 'u' {
						return "", p.fail("The surrogate pair in string is invalid.")
					}
					p.i += 2
					r2, err := p.hex4()
					if err != nil {
						return "", err
					}
					if r = utf16.DecodeRune(r, r2); r == utf8.RuneError {
						return "", p.fail("The surrogate pair in string is invalid.")
					}
				}
				b = utf8.AppendRune(b, r)
			default:
				p.i -= 2
				return "", p.fail("Invalid escape character in string.")
			}
		case c < 0x20:
			return "", p.fail("Invalid encoding in string.")
		case c < utf8.RuneSelf:
			b = append(b, c)
			p.i++
		default:
			r, n := utf8.DecodeRune(p.s[p.i:])
			if r == utf8.RuneError && n <= 1 {
				return "", p.fail("Invalid encoding in string.")
			}
			b = append(b, p.s[p.i:p.i+n]...)
			p.i += n
		}
	}
}

// number reads a number: an integer that fits int64 (or uint64) stays
// one, anything else is a double.
func (p *jsonParser) number() (any, error) {
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.s[p.i] == '-' {
		p.i++
	}
	if p.i < len(p.s) && p.s[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return nil, p.fail("Invalid value.")
	}
	isInt := true
	if p.i < len(p.s) && p.s[p.i] == '.' {
		isInt = false
		p.i++
		if digits() == 0 {
			return nil, p.fail("Miss fraction part in number.")
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		isInt = false
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, p.fail("Miss exponent in number.")
		}
	}
	text := string(p.s[start:p.i])
	if isInt {
		if v, err := strconv.ParseInt(text, 10, 64); err == nil {
			return v, nil
		}
		if v, err := strconv.ParseUint(text, 10, 64); err == nil {
			return v, nil
		}
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(f, 0) {
		p.i = start
		return nil, p.fail("Number too big to be stored in double.")
	}
	return f, nil
}
