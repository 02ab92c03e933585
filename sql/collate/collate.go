package collate

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	xcollate "golang.org/x/text/collate"
	"golang.org/x/text/language"
)

// kind is how a collation compares.
type kind uint8

const (
	kindBinary  kind = iota // bytewise
	kindGeneral             // one 16-bit weight per character (general_ci)
	kindUnicode             // UCA 4.0.0 weights per character (unicode_ci)
	kindUCA                 // x/text's UCA (CLDR root), primary strength (0900_ai_ci)
)

// Collation is one MySQL collation. Collations are immutable and shared;
// every method is safe for concurrent use.
type Collation struct {
	ID      uint16
	Name    string
	Charset string
	// Default: the charset's default collation (SHOW COLLATION's Default).
	Default bool
	// Sortlen is SHOW COLLATION's Sortlen.
	Sortlen int
	// NoPad: trailing spaces are significant (the 0900 collations and
	// binary). PAD SPACE collations compare as if the shorter string were
	// padded with spaces.
	NoPad bool
	kind  kind
	pool  *sync.Pool // of *ucaState, for kindUCA
}

// Binary reports whether c compares strings bytewise: the SQL layer keeps
// such strings on its plain bytes.Compare path and stores them in index
// keys as they are.
func (c *Collation) Binary() bool { return c.kind == kindBinary }

// PadAttribute is information_schema.COLLATIONS' PAD_ATTRIBUTE.
func (c *Collation) PadAttribute() string {
	if c.NoPad {
		return "NO PAD"
	}
	return "PAD SPACE"
}

// trim drops the trailing spaces a PAD SPACE collation ignores.
func (c *Collation) trim(s []byte) []byte {
	if c.NoPad {
		return s
	}
	return bytes.TrimRight(s, " ")
}

// Compare compares a and b under c: negative, zero or positive.
func (c *Collation) Compare(a, b []byte) int {
	switch c.kind {
	case kindGeneral:
		return compareGeneral(c.trim(a), c.trim(b))
	case kindUnicode:
		return compareUnicode(c.trim(a), c.trim(b))
	case kindUCA:
		st := c.pool.Get().(*ucaState)
		defer c.pool.Put(st)
		st.buf.Reset()
		ka := st.coll.Key(&st.buf, c.trim(a))
		kb := st.coll.Key(&st.buf, c.trim(b))
		return bytes.Compare(ka, kb)
	}
	return bytes.Compare(a, b)
}

// Key appends s's sort key to dst: two strings compare under c as their
// keys compare bytewise, and are equal under c exactly when their keys are
// equal. Index entries of a column under c hold Key of its value.
func (c *Collation) Key(dst, s []byte) []byte {
	switch c.kind {
	case kindGeneral:
		s = c.trim(s)
		for len(s) > 0 {
			r, n := utf8.DecodeRune(s)
			w := generalWeight(r)
			dst = append(dst, byte(w>>8), byte(w))
			s = s[n:]
		}
		return dst
	case kindUnicode:
		return unicodeKey(dst, c.trim(s))
	case kindUCA:
		st := c.pool.Get().(*ucaState)
		defer c.pool.Put(st)
		st.buf.Reset()
		return append(dst, st.coll.Key(&st.buf, c.trim(s))...)
	}
	return append(dst, s...)
}

// KeyText renders a sort key for a message (a duplicate-key error met
// where only the index key is known): under general_ci the weights are
// characters (upper case, accents folded: 'résumé' shows as RESUME);
// other keys show as hex.
func (c *Collation) KeyText(key []byte) string {
	if c.kind == kindBinary {
		return string(key)
	}
	if c.kind == kindGeneral && len(key)%2 == 0 {
		var b strings.Builder
		for i := 0; i < len(key); i += 2 {
			b.WriteRune(rune(key[i])<<8 | rune(key[i+1]))
		}
		return b.String()
	}
	return fmt.Sprintf("0x%X", key)
}

// runeEqual reports whether two characters are equal under c (LIKE
// compares character by character, as MySQL does: 'ß' LIKE 'ss' is 0).
func (c *Collation) runeEqual(a, b rune) bool {
	if a == b {
		return true
	}
	switch c.kind {
	case kindGeneral:
		return generalWeight(a) == generalWeight(b)
	case kindUnicode:
		return unicodeRuneEqual(a, b)
	case kindUCA:
		st := c.pool.Get().(*ucaState)
		defer c.pool.Put(st)
		st.buf.Reset()
		var x, y [utf8.UTFMax]byte
		ka := st.coll.Key(&st.buf, x[:utf8.EncodeRune(x[:], a)])
		kb := st.coll.Key(&st.buf, y[:utf8.EncodeRune(y[:], b)])
		return bytes.Equal(ka, kb)
	}
	return false
}

// ucaState is one goroutine's x/text collator and key buffer (a
// Collator is not safe for concurrent use).
type ucaState struct {
	coll *xcollate.Collator
	buf  xcollate.Buffer
}

func ucaPool() *sync.Pool {
	return &sync.Pool{New: func() any {
		// Primary strength: accents, case and width are ignored.
		return &ucaState{coll: xcollate.New(language.Und, xcollate.Loose)}
	}}
}

// All collations Strata knows, by id; byName indexes them (and the
// utf8mb3_ aliases MySQL 8.0 prints for utf8_).
var (
	all = []*Collation{
		{ID: 63, Name: "binary", Charset: "binary", Default: true, Sortlen: 1, NoPad: true},
		{ID: 65, Name: "ascii_bin", Charset: "ascii", Default: true, Sortlen: 1},
		{ID: 47, Name: "latin1_bin", Charset: "latin1", Default: true, Sortlen: 1},
		{ID: 83, Name: "utf8_bin", Charset: "utf8", Default: true, Sortlen: 1},
		{ID: 33, Name: "utf8_general_ci", Charset: "utf8", Sortlen: 1, kind: kindGeneral},
		{ID: 192, Name: "utf8_unicode_ci", Charset: "utf8", Sortlen: 8, kind: kindUnicode},
		{ID: 46, Name: "utf8mb4_bin", Charset: "utf8mb4", Default: true, Sortlen: 1},
		{ID: 45, Name: "utf8mb4_general_ci", Charset: "utf8mb4", Sortlen: 1, kind: kindGeneral},
		{ID: 224, Name: "utf8mb4_unicode_ci", Charset: "utf8mb4", Sortlen: 8, kind: kindUnicode},
		{ID: 255, Name: "utf8mb4_0900_ai_ci", Charset: "utf8mb4", Sortlen: 0, NoPad: true, kind: kindUCA},
		{ID: 309, Name: "utf8mb4_0900_bin", Charset: "utf8mb4", Sortlen: 1, NoPad: true},
	}
	byID   [310]*Collation
	byName = index()
)

func index() map[string]*Collation {
	m := map[string]*Collation{}
	for _, c := range all {
		if c.kind == kindUCA {
			c.pool = ucaPool()
		}
		byID[c.ID] = c
		m[c.Name] = c
		if rest, ok := strings.CutPrefix(c.Name, "utf8_"); ok {
			m["utf8mb3_"+rest] = c
		}
	}
	return m
}

// All returns every collation, in SHOW COLLATION's order (by charset, then
// name). The slice must not be modified.
func All() []*Collation { return sorted }

var sorted = func() []*Collation {
	s := append([]*Collation(nil), all...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && (s[j].Charset < s[j-1].Charset || s[j].Charset == s[j-1].Charset && s[j].Name < s[j-1].Name); j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}()

// ByName returns the collation named name (case-insensitive), or nil.
func ByName(name string) *Collation { return byName[strings.ToLower(name)] }

// ByID returns the collation with MySQL id id, or nil.
func ByID(id uint16) *Collation {
	if int(id) < len(byID) {
		return byID[id]
	}
	return nil
}

// Of returns the collation with MySQL id id, or Default (utf8mb4_bin)
// for an id this node does not know (a type written by a newer one):
// for names and messages, never nil.
func Of(id uint16) *Collation {
	if c := ByID(id); c != nil {
		return c
	}
	return Default
}

// Charset is one character set (SHOW CHARACTER SET).
type Charset struct {
	Name, Desc string
	Default    *Collation
	Maxlen     int
}

var charsets = []*Charset{
	{Name: "ascii", Desc: "US ASCII", Maxlen: 1},
	{Name: "binary", Desc: "binary", Maxlen: 1},
	{Name: "latin1", Desc: "Latin1", Maxlen: 1},
	{Name: "utf8", Desc: "UTF-8 Unicode", Maxlen: 3},
	{Name: "utf8mb4", Desc: "UTF-8 Unicode", Maxlen: 4},
}

func init() {
	for _, cs := range charsets {
		for _, c := range all {
			if c.Charset == cs.Name && c.Default {
				cs.Default = c
			}
		}
	}
}

// Charsets returns every character set, by name. The slice must not be
// modified.
func Charsets() []*Charset { return charsets }

// CharsetByName returns the named character set (case-insensitive;
// utf8mb3 is utf8), or nil.
func CharsetByName(name string) *Charset {
	name = strings.ToLower(name)
	if name == "utf8mb3" {
		name = "utf8"
	}
	for _, cs := range charsets {
		if cs.Name == name {
			return cs
		}
	}
	return nil
}

// Default is the collation of a string without one (TiDB's default,
// utf8mb4_bin).
var Default = ByName("utf8mb4_bin")
