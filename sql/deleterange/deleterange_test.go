package deleterange

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/sql/tablecodec"
)

// indexKey is an entry of index indexID of table tableID.
func indexKey(tableID, indexID int64) []byte {
	return append(tablecodec.AppendIndexPrefix(nil, tableID, indexID), 0x03, 0x80, 0, 0, 0, 0, 0, 0, 1)
}

// TestRanges: a table's range holds its rows and index entries and nothing
// of its neighbours; an index's range only its entries.
func TestRanges(t *testing.T) {
	for _, tc := range []struct {
		r       Range
		what    string
		inside  [][]byte
		outside [][]byte
		element int64
		jobID   int64
	}{
		{r: Table(7, 42), what: "table 42", jobID: 7, element: 42,
			inside:  [][]byte{tablecodec.RowKey(42, 1), tablecodec.RowKey(42, -1), indexKey(42, 3)},
			outside: [][]byte{tablecodec.RowKey(41, 1<<60), tablecodec.RowKey(43, -1<<60)}},
		{r: Index(8, 42, 3), what: "index 3 of table 42", jobID: 8, element: 3,
			inside:  [][]byte{indexKey(42, 3)},
			outside: [][]byte{tablecodec.RowKey(42, 1), indexKey(42, 2), indexKey(42, 4)}},
	} {
		require.Equal(t, tc.what, tc.r.What)
		require.Equal(t, tc.jobID, tc.r.JobID)
		require.Equal(t, tc.element, tc.r.ElementID)
		in := func(k []byte) bool {
			return bytes.Compare(k, tc.r.StartKey) >= 0 && bytes.Compare(k, tc.r.EndKey) < 0
		}
		for _, k := range tc.inside {
			require.True(t, in(k), "%s holds %x", tc.what, k)
		}
		for _, k := range tc.outside {
			require.False(t, in(k), "%s does not hold %x", tc.what, k)
		}
	}
}

// TestMutations: records carry the transaction's start ts, decode back,
// and sort by job, then element.
func TestMutations(t *testing.T) {
	rs := []Range{Table(9, 1), Index(2, 5, 1), Table(2, 5)}
	muts := Mutations(rs, 1234)
	require.Len(t, muts, 3)
	for i, m := range muts {
		require.Equal(t, kvrpcpb.Op_Put, m.GetOp())
		require.True(t, bytes.HasPrefix(m.GetKey(), pendingPrefix()))
		r, err := decode(m.GetValue())
		require.NoError(t, err)
		want := rs[i]
		want.TS = 1234
		require.Equal(t, want, r)
	}
	require.Negative(t, bytes.Compare(muts[1].GetKey(), muts[2].GetKey()), "job 2 element 1 before job 2 element 5")
	require.Negative(t, bytes.Compare(muts[2].GetKey(), muts[0].GetKey()), "job 2 before job 9")
	require.False(t, bytes.HasPrefix(rangeKey(donePrefix(), rs[0]), pendingPrefix()), "done records are outside the pending scan")
	_, err := decode([]byte("{"))
	require.Error(t, err)
}
