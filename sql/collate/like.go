package collate

import "unicode/utf8"

// Like matches s against a LIKE pattern (% any run, _ one character,
// escape quoting the next character) comparing characters under c, one
// by one as MySQL does ('ß' LIKE 'ss' is false under every collation).
// LIKE ignores PAD SPACE: 'a ' LIKE 'a' is false.
func (c *Collation) Like(s, p []byte, escape rune) bool {
	for len(p) > 0 {
		pr, pn := utf8.DecodeRune(p)
		switch {
		case pr == escape && pn < len(p):
			er, en := utf8.DecodeRune(p[pn:])
			if len(s) == 0 {
				return false
			}
			sr, sn := utf8.DecodeRune(s)
			if !c.charEqual(sr, er) {
				return false
			}
			s, p = s[sn:], p[pn+en:]
		case pr == '%':
			for len(p) > 0 && p[0] == '%' {
				p = p[1:]
			}
			if len(p) == 0 {
				return true
			}
			for i := 0; i <= len(s); {
				if c.Like(s[i:], p, escape) {
					return true
				}
				if i == len(s) {
					break
				}
				_, n := utf8.DecodeRune(s[i:])
				i += n
			}
			return false
		case pr == '_':
			if len(s) == 0 {
				return false
			}
			_, sn := utf8.DecodeRune(s)
			s, p = s[sn:], p[pn:]
		default:
			if len(s) == 0 {
				return false
			}
			sr, sn := utf8.DecodeRune(s)
			if !c.charEqual(sr, pr) {
				return false
			}
			s, p = s[sn:], p[pn:]
		}
	}
	return len(s) == 0
}

func (c *Collation) charEqual(a, b rune) bool {
	if c.kind == kindBinary {
		return a == b
	}
	return c.runeEqual(a, b)
}
