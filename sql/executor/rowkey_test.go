package executor

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv/tablecodec"
	"github.com/stratadb/strata/sql/types"
)

func TestRowKeyForDistinct(t *testing.T) {
	// NULL, empty string and numerically equal values of different kinds.
	k := func(ds ...types.Datum) string { return string(rowKey(nil, ds)) }
	require.NotEqual(t, k(tablecodec.NullDatum), k(tablecodec.NewString("")))
	require.Equal(t, k(tablecodec.NewInt(1)), k(tablecodec.NewUint(1)))
	require.Equal(t, k(tablecodec.NewInt(2)), k(tablecodec.NewFloat(2)))
	require.NotEqual(t, k(tablecodec.NewString("a"), tablecodec.NewString("b")), k(tablecodec.NewString("ab"), tablecodec.NewString("")))
}
