package types

import "math"

// isSpace is the whitespace MySQL skips around a number in a string.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// NumericPrefix finds the number a string is read as in a numeric
// context (MySQL's my_strntod): after leading whitespace, an optional
// sign, digits with an optional fraction and an optional exponent. num is
// that number's text (empty when the string starts with none); whole
// reports whether nothing but whitespace follows it, that is whether the
// conversion loses nothing: '12abc' is 12 and not whole (warning 1292
// "Truncated incorrect DOUBLE value"), ' 12 ' and the empty string are.
func NumericPrefix(b []byte) (num []byte, whole bool) {
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	start := i
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		i++
	}
	digits := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i, digits = i+1, digits+1
	}
	if i < len(b) && b[i] == '.' {
		j := i + 1
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j, digits = j+1, digits+1
		}
		if digits > 0 {
			i = j
		}
	}
	if digits == 0 {
		return nil, start == len(b)
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		j := i + 1
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		k := j
		for k < len(b) && b[k] >= '0' && b[k] <= '9' {
			k++
		}
		if k > j {
			i = k
		}
	}
	num = b[start:i]
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return num, i == len(b)
}

// IntPrefix reads the integer a string starts with, as CAST(s AS SIGNED)
// does (MySQL's my_strtoll10): leading whitespace, an optional sign, then
// digits; mag is the magnitude, saturated at MaxUint64. whole is false
// when anything follows the digits (a fraction, an exponent, trailing
// spaces, other text), when there is no digit, or when mag saturated:
// warning 1292 "Truncated incorrect INTEGER value".
func IntPrefix(b []byte) (mag uint64, neg, whole bool) {
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	start, over := i, false
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		d := uint64(b[i] - '0')
		if mag > (math.MaxUint64-d)/10 {
			mag, over = math.MaxUint64, true
			continue
		}
		if !over {
			mag = mag*10 + d
		}
	}
	return mag, neg, i > start && i == len(b) && !over
}
