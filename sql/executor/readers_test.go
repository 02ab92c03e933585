package executor

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDisjoint: the ranges a coprocessor page sends are sorted and
// disjoint; overlapping or repeated ones (an empty end is +infinity) are
// merged, empty ones are kept for the client to drop.
func TestDisjoint(t *testing.T) {
	r := func(s, e string) [2][]byte {
		var end []byte
		if e != "" {
			end = []byte(e)
		}
		return [2][]byte{[]byte(s), end}
	}
	for _, c := range []struct{ in, want [][2][]byte }{
		{nil, nil},
		{[][2][]byte{r("a", "b")}, [][2][]byte{r("a", "b")}},
		{[][2][]byte{r("e", "f"), r("a", "b"), r("c", "d")}, [][2][]byte{r("a", "b"), r("c", "d"), r("e", "f")}},
		{[][2][]byte{r("c", "d"), r("a", "b"), r("c", "d")}, [][2][]byte{r("a", "b"), r("c", "d")}},
		{[][2][]byte{r("a", "c"), r("b", "e"), r("e", "f")}, [][2][]byte{r("a", "e"), r("e", "f")}},
		{[][2][]byte{r("a", "e"), r("b", "c"), r("d", "d")}, [][2][]byte{r("a", "e")}},
		{[][2][]byte{r("c", ""), r("a", "b"), r("d", "e")}, [][2][]byte{r("a", "b"), r("c", "")}},
		{[][2][]byte{r("a", "b"), r("b", "b"), r("b", "c")}, [][2][]byte{r("a", "b"), r("b", "b"), r("b", "c")}},
	} {
		require.Equal(t, c.want, disjoint(c.in), "%q", c.in)
	}
}
