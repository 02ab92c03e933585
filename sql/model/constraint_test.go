package model

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCheckText: a CHECK constraint's text is MySQL's (<> for not
// equal, outside string literals) and its own parse gives it back.
func TestCheckText(t *testing.T) {
	for in, want := range map[string]string{
		"a <> b":                       "(`a` <> `b`)",
		"a != 'x != y' AND b <> `c!=`": "((`a` <> _utf8mb4'x != y') and (`b` <> `c!=`))",
		"(test.t.a > 1)":               "(`a` > 1)",
		"NOT (a = 3)":                  "not (`a` = 3)",
	} {
		n, err := ParseGeneratedExpr(in)
		require.NoError(t, err)
		got, err := CheckText(n)
		require.NoError(t, err)
		require.Equal(t, want, got, in)
		again, err := ParseGeneratedExpr(got)
		require.NoError(t, err)
		got2, err := CheckText(again)
		require.NoError(t, err)
		require.Equal(t, got, got2, in)
	}
}
