package executor

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
)

func TestRegionKeyString(t *testing.T) {
	idx := tablecodec.AppendIndexKey(nil, 7, 2, []types.Datum{types.NewInt(5)}, false, tablecodec.Handle{})
	for _, c := range []struct {
		key  []byte
		want string
	}{
		{nil, ""},
		{[]byte("m_catalog"), "6D5F636174616C6F67"},
		{tablecodec.RowKey(7, 1000), "t_7_r_1000"},
		{tablecodec.RowKey(7, -3), "t_7_r_-3"},
		{tablecodec.AppendRecordPrefix(nil, 7), "t_7_r"},
		{tablecodec.AppendTablePrefix(nil, 7), "t_7_"},
		{tablecodec.AppendIndexPrefix(nil, 7, 2), "t_7_i_2_"},
		{idx, "t_7_i_2_038000000000000005"},
	} {
		require.Equal(t, c.want, regionKeyString(c.key), "%x", c.key)
	}
}

func TestInterpolateKeys(t *testing.T) {
	lo := []byte{0x10, 0x20, 0x00}
	hi := []byte{0x10, 0x20, 0x80}
	keys := interpolateKeys(lo, hi, 4)
	require.Len(t, keys, 4)
	require.Equal(t, lo, keys[0])
	for i := 1; i < len(keys); i++ {
		require.Less(t, string(keys[i-1]), string(keys[i]), "ascending")
		require.Less(t, string(keys[i]), string(hi), "below the upper bound")
		require.Equal(t, []byte{0x10, 0x20}, keys[i][:2], "common prefix kept")
	}
	// No room between the bounds: only the lower key.
	require.Len(t, interpolateKeys([]byte{1, 2}, []byte{1, 2, 0, 0, 0, 0, 0, 0, 0, 1}, 4), 1)
}

func TestCheckSplitNum(t *testing.T) {
	for _, c := range []struct {
		n  int64
		ok bool
	}{{0, false}, {-1, false}, {1, true}, {1000, true}, {1001, false}} {
		err := checkSplitNum(c.n)
		require.Equal(t, c.ok, err == nil, "num %d: %v", c.n, err)
	}
}
