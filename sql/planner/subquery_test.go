package planner

import (
	"testing"

	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv/tablecodec"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/types"
)

// TestCompareSubquery checks IN / NOT IN / ANY / ALL against MySQL's
// three-valued results, and that the subquery runs once however many
// rows evaluate it.
func TestCompareSubquery(t *testing.T) {
	null := tablecodec.NullDatum
	i := func(v int64) types.Datum { return tablecodec.NewInt(v) }
	set := func(vs ...types.Datum) [][]types.Datum {
		rows := make([][]types.Datum, len(vs))
		for j, v := range vs {
			rows[j] = []types.Datum{v}
		}
		return rows
	}
	for _, tc := range []struct {
		name     string
		op       opcode.Op
		all, not bool
		l        types.Datum
		rows     [][]types.Datum
		want     types.Datum // NULL or 0/1
	}{
		{"1 IN (1, NULL)", opcode.EQ, false, false, i(1), set(i(1), null), i(1)},
		{"2 IN (1, NULL)", opcode.EQ, false, false, i(2), set(i(1), null), null},
		{"2 IN (1)", opcode.EQ, false, false, i(2), set(i(1)), i(0)},
		{"NULL IN (1)", opcode.EQ, false, false, null, set(i(1)), null},
		{"NULL IN ()", opcode.EQ, false, false, null, set(), i(0)},
		{"NULL NOT IN ()", opcode.EQ, false, true, null, set(), i(1)},
		{"2 NOT IN (1, NULL)", opcode.EQ, false, true, i(2), set(i(1), null), null},
		{"1 NOT IN (1, NULL)", opcode.EQ, false, true, i(1), set(i(1), null), i(0)},
		{"2 NOT IN (1)", opcode.EQ, false, true, i(2), set(i(1)), i(1)},
		{"2 > ALL (1, NULL)", opcode.GT, true, false, i(2), set(i(1), null), null},
		{"0 > ALL (1, NULL)", opcode.GT, true, false, i(0), set(i(1), null), i(0)},
		{"NULL > ALL ()", opcode.GT, true, false, null, set(), i(1)},
		{"2 > ANY (3, 1)", opcode.GT, false, false, i(2), set(i(3), i(1)), i(1)},
		{"2 < ANY (1, NULL)", opcode.LT, false, false, i(2), set(i(1), null), null},
	} {
		runs := 0
		sq := &Subquery{Run: func() ([][]types.Datum, error) { runs++; return tc.rows, nil }}
		e := &compareSubquery{l: &expr.Constant{Value: tc.l, Ft: types.Int64Type}, sq: sq, op: tc.op, all: tc.all, not: tc.not}
		for range 3 {
			got, err := e.Eval(nil)
			require.NoError(t, err, tc.name)
			if tc.want.IsNull() {
				require.True(t, got.IsNull(), "%s: got %v", tc.name, got)
			} else {
				require.False(t, got.IsNull(), tc.name)
				require.Equal(t, tc.want.Int64(), got.Int64(), tc.name)
			}
		}
		require.Equal(t, 1, runs, tc.name)
	}
}
