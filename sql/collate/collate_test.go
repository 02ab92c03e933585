package collate

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCompareAndKey(t *testing.T) {
	for _, tc := range []struct {
		coll string
		a, b string
		want int
	}{
		{"utf8mb4_general_ci", "Ann", "ann", 0},
		{"utf8mb4_general_ci", "a@x.com", "A@X.COM", 0},
		{"utf8mb4_general_ci", "ann", "ann  ", 0}, // PAD SPACE
		{"utf8mb4_general_ci", "résumé", "RESUME", 0},
		{"utf8mb4_general_ci", "ß", "s", 0},
		{"utf8mb4_general_ci", "ß", "ss", -1},
		{"utf8mb4_general_ci", "Ø", "ø", 0},
		{"utf8mb4_general_ci", "Ø", "o", 1}, // Ø is a letter of its own
		{"utf8mb4_general_ci", "å", "a", 0},
		{"utf8mb4_general_ci", "æ", "ae", 1},
		{"utf8mb4_general_ci", "😀", "😺", 0}, // every supplementary character weighs U+FFFD
		{"utf8mb4_general_ci", "a", "b", -1},
		{"utf8mb4_general_ci", "B", "a", 1},
		{"utf8mb4_unicode_ci", "ß", "ss", 0},
		{"utf8mb4_unicode_ci", "Straße", "STRASSE", 0},
		{"utf8mb4_unicode_ci", "résumé", "resume", 0},
		{"utf8mb4_unicode_ci", "ann ", "ANN", 0},
		{"utf8mb4_unicode_ci", "a", "b", -1},
		{"utf8mb4_unicode_ci", "Øre", "ore", 1}, // UCA 4.0.0: Ø is a letter after O
		{"utf8mb4_unicode_ci", "Ærø", "aero", 1},
		{"utf8mb4_unicode_ci", "😀", "😺", 0},   // every supplementary character weighs 0xFFFD
		{"utf8mb4_unicode_ci", "😀", "zzz", 1}, // ... after every letter
		{"utf8mb4_unicode_ci", "你", "好", -1},  // implicit weights: code point order
		{"utf8_unicode_ci", "Müller", "muller", 0},
		{"utf8mb4_0900_ai_ci", "ann ", "ann", 1}, // NO PAD
		{"utf8mb4_0900_ai_ci", "Åsa", "asa", 0},
		{"utf8mb4_0900_ai_ci", "ß", "ss", 0},
		{"utf8mb4_0900_ai_ci", "😀", "😺", -1}, // distinct weights since UCA 9.0.0
		{"utf8mb4_bin", "Ann", "ann", -1},
		{"binary", "a ", "a", 1},
		{"utf8mb4_0900_bin", "a", "A", 1},
	} {
		c := ByName(tc.coll)
		require.NotNil(t, c, tc.coll)
		got := c.Compare([]byte(tc.a), []byte(tc.b))
		require.Equal(t, tc.want, sign(got), "%s: %q vs %q", tc.coll, tc.a, tc.b)
		ka, kb := c.Key(nil, []byte(tc.a)), c.Key(nil, []byte(tc.b))
		require.Equal(t, tc.want, bytes.Compare(ka, kb), "%s keys: %q vs %q", tc.coll, tc.a, tc.b)
	}
}

func sign(c int) int {
	switch {
	case c < 0:
		return -1
	case c > 0:
		return 1
	}
	return 0
}

func TestLike(t *testing.T) {
	for _, tc := range []struct {
		coll, s, p string
		want       bool
	}{
		{"utf8mb4_general_ci", "Ann", "a%", true},
		{"utf8mb4_general_ci", "Ann", "_NN", true},
		{"utf8mb4_general_ci", "Ännchen", "an%", true},
		{"utf8mb4_general_ci", "ß", "ss", false},
		{"utf8mb4_general_ci", "a ", "a", false},
		{"utf8mb4_general_ci", "50%", "50\\%", true},
		{"utf8mb4_general_ci", "500", "50\\%", false},
		{"utf8mb4_unicode_ci", "Émile", "e%", true},
		{"utf8mb4_0900_ai_ci", "ÅSA", "%s_", true},
		{"utf8mb4_bin", "Ann", "a%", false},
	} {
		c := ByName(tc.coll)
		require.Equal(t, tc.want, c.Like([]byte(tc.s), []byte(tc.p), '\\'), "%s: %q LIKE %q", tc.coll, tc.s, tc.p)
	}
}

func TestNames(t *testing.T) {
	require.Same(t, ByName("utf8_bin"), ByName("UTF8MB3_BIN"))
	require.Equal(t, uint16(45), ByName("utf8mb4_general_ci").ID)
	require.Same(t, ByID(224), ByName("utf8mb4_unicode_ci"))
	require.Nil(t, ByName("utf8mb4_nope"))
	require.Equal(t, "utf8mb4_bin", CharsetByName("utf8mb4").Default.Name)
	require.Equal(t, "utf8_bin", CharsetByName("utf8mb3").Default.Name)
	require.Equal(t, "utf8mb4_bin", Default.Name)
	require.Same(t, Default, Of(300)) // an id this node does not know
	require.Same(t, ByName("binary"), Of(63))
}

func TestKeyText(t *testing.T) {
	g := ByName("utf8mb4_general_ci")
	require.Equal(t, "RESUME", g.KeyText(g.Key(nil, []byte("résumé  "))))
	u := ByName("utf8mb4_unicode_ci")
	require.Equal(t, "0x0E33", u.KeyText(u.Key(nil, []byte("a"))))
	require.Equal(t, "Ann", Default.KeyText([]byte("Ann")))
}

// TestUCA0900 pins utf8mb4_0900_ai_ci to MySQL 8.0's documented behaviour
// (MariaDB, which the differential test runs, has no 0900 collation):
// accent- and case-insensitive, NO PAD, ß = ss, expansions of ligatures,
// and emoji with weights of their own (the "sushi = beer" problem of the
// pre-0900 collations is gone).
func TestUCA0900(t *testing.T) {
	c := ByName("utf8mb4_0900_ai_ci")
	require.True(t, c.NoPad)
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"a", "A", 0},
		{"a", "á", 0},
		{"A", "à", 0},
		{"résumé", "RESUME", 0},
		{"a ", "a", 1}, // NO PAD
		{"ß", "ss", 0},
		{"Æ", "AE", 0},
		{"Ø", "O", 0},
		{"Å", "A", 0},
		{"🍣", "🍺", -1}, // U+1F363 before U+1F37A
		{"a", "b", -1},
		{"Z", "a", 1},
		{"10", "9", -1}, // strings, not numbers
	} {
		require.Equal(t, tc.want, sign(c.Compare([]byte(tc.a), []byte(tc.b))), "%q vs %q", tc.a, tc.b)
		require.Equal(t, tc.want, bytes.Compare(c.Key(nil, []byte(tc.a)), c.Key(nil, []byte(tc.b))), "keys %q vs %q", tc.a, tc.b)
	}
	u := ByName("utf8mb4_unicode_ci") // before 0900: every emoji weighs the same
	require.Zero(t, u.Compare([]byte("🍣"), []byte("🍺")))
}
