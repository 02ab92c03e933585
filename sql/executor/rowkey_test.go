package executor

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/types"
)

func TestRowKeyForDistinct(t *testing.T) {
	// NULL, empty string and numerically equal values of different kinds.
	k := func(ds ...types.Datum) string { return string(rowKey(nil, ds)) }
	require.NotEqual(t, k(types.NullDatum), k(types.NewString("")))
	require.Equal(t, k(types.NewInt(1)), k(types.NewUint(1)))
	require.Equal(t, k(types.NewInt(2)), k(types.NewFloat(2)))
	require.NotEqual(t, k(types.NewString("a"), types.NewString("b")), k(types.NewString("ab"), types.NewString("")))
}
