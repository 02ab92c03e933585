package statistics

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
)

func enc(v int64) []byte { return tablecodec.AppendMemComparable(nil, types.NewInt(v)) }

// TestBuilderEstimates builds statistics of 100,000 rows: a unique column,
// a skewed one (half the rows 7, the rest 0..999) and one with NULLs, and
// checks the estimates the planner uses against the true counts.
func TestBuilderEstimates(t *testing.T) {
	b := NewBuilder([]int64{1, 2, 3}, []string{"id", "k", "n"}, []int64{1}, []string{"k_1"})
	const rows = 100000
	for i := int64(0); i < rows; i++ {
		k := i % 1000
		if i%2 == 0 {
			k = 7
		}
		var n []byte
		if i%4 != 0 {
			n = enc(i % 10)
		}
		b.AddRow([][]byte{enc(i), enc(k), n}, map[int64][]byte{1: enc(k)})
	}
	st := b.Finish(42, 1, time.Now())
	require.EqualValues(t, rows, st.Count)

	id, k, n := st.Column(0), st.Column(1), st.Column(2)
	within := func(got, want, tol float64, what string) {
		t.Helper()
		require.InDelta(t, want, got, math.Max(1, want*tol), what)
	}
	within(float64(id.NDV), rows, 0.03, "NDV of a unique column")
	within(float64(k.NDV), 500, 0.03, "NDV of k (odd values)")
	within(float64(n.NDV), 10, 0.01, "NDV of n")
	require.EqualValues(t, rows/4, n.NullCount)

	within(k.EqualRows(enc(7), false, rows), rows/2+100, 0.05, "k = 7 (top-N)")
	within(k.EqualRows(enc(501), false, rows), 100, 0.5, "k = 501")
	require.Zero(t, k.EqualRows(enc(5000), false, rows), "above every value")
	within(n.EqualRows(nil, true, rows), rows/4, 0, "n IS NULL")

	within(id.RangeRows(enc(1000), enc(2000), false, true, rows), 1000, 0.3, "1000 <= id < 2000")
	within(id.RangeRows(nil, enc(50000), false, true, rows), 50000, 0.05, "id < 50000")
	within(id.RangeRows(enc(90000), nil, false, false, rows), 10000, 0.2, "id >= 90000")
	within(k.RangeRows(enc(100), enc(199), false, false, rows), 5000, 0.3, "k BETWEEN 100 AND 199")
	within(st.Index(1).EqualRows(enc(7), false, rows), rows/2+100, 0.05, "index k_1 = 7")
}
