package collate

import (
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// general_ci gives every character of the Basic Multilingual Plane one
// 16-bit weight: its upper case, with the accented Latin letters folded
// to their base letter (MySQL's plane tables); characters above U+FFFF
// all weigh U+FFFD, so two emoji compare equal, as in MySQL.
var generalTable = buildGeneral()

func buildGeneral() *[0x10000]uint16 {
	var t [0x10000]uint16
	for r := rune(0); r < 0x10000; r++ {
		t[r] = uint16(generalRule(r))
	}
	for r, w := range generalExceptions {
		t[r] = w
	}
	return &t
}

// generalRule is the weight of r before the exceptions.
func generalRule(r rune) rune {
	if r >= 0xD800 && r < 0xE000 {
		return 0xFFFD
	}
	if r >= 0xC0 && r < 0x500 || r >= 0x1E00 && r < 0x2000 {
		// Latin, Greek and Cyrillic letters with diacritics weigh as
		// their base letter.
		var b [utf8.UTFMax]byte
		d := norm.NFD.Bytes(b[:utf8.EncodeRune(b[:], r)])
		if base, n := utf8.DecodeRune(d); n < len(d) && base < 0x500 {
			return unicode.ToUpper(base)
		}
	}
	u := unicode.ToUpper(r)
	if u > 0xFFFF || (unicode.ToLower(u) != r && u != r && unicode.ToUpper(unicode.ToLower(u)) != u) {
		return r
	}
	return u
}

func generalWeight(r rune) uint16 {
	if r > 0xFFFF {
		return 0xFFFD
	}
	return generalTable[r]
}

// compareGeneral compares two strings by their general_ci weights.
func compareGeneral(a, b []byte) int {
	for len(a) > 0 && len(b) > 0 {
		ra, na := utf8.DecodeRune(a)
		rb, nb := utf8.DecodeRune(b)
		if wa, wb := generalWeight(ra), generalWeight(rb); wa != wb {
			if wa < wb {
				return -1
			}
			return 1
		}
		a, b = a[na:], b[nb:]
	}
	switch {
	case len(a) > 0:
		return 1
	case len(b) > 0:
		return -1
	}
	return 0
}
