package ddl

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/table"
	"github.com/stratadb/strata/sql/types"
)

// TestRewriteColumnStates: the table as each step of a MODIFY COLUMN that
// rewrites rows publishes it: the changing column and index copies, where
// DML computes the converted value, and the swap's names, order and
// dropped indexes.
func TestRewriteColumnStates(t *testing.T) {
	for _, tc := range []struct {
		alter   string
		order   string // columns once public
		indexes string // name(columns) once public, in order
		value   string // the changing column's value for the row (1, 42, 'x', 7)
	}{
		{"ALTER TABLE t MODIFY n VARCHAR(5)", "id,n,s,z", "kn(n),ksn(s,n),kz(z)", "42"},
		{"ALTER TABLE t CHANGE n m DECIMAL(6,2) FIRST", "m,id,s,z", "kn(m),ksn(s,m),kz(z)", "42.00"},
		{"ALTER TABLE t MODIFY n VARCHAR(5) AFTER z", "id,s,z,n", "kn(n),ksn(s,n),kz(z)", "42"},
	} {
		tbl := testTable(t, "CREATE TABLE t (id INT PRIMARY KEY, n INT, s VARCHAR(10), z INT, KEY kn (n), KEY ksn (s, n), KEY kz (z))")
		tbl.Init()
		sp := alterSpecs(t, tc.alter)[0]
		old := sp.NewColumns[0].Name.Name.O
		if sp.OldColumnName != nil {
			old = sp.OldColumnName.Name.O
		}
		nc, err := ModifyColumn(tbl, old, sp.NewColumns[0], nil)
		require.NoError(t, err, tc.alter)
		require.True(t, NeedsRewrite(tbl, tbl.Columns[tbl.FindColumn(old)], nc), tc.alter)
		j := &Job{ID: 9, ColumnName: old, Columns: []*model.ColumnInfo{nc}, Positions: []ColumnPosition{PositionOf(sp.Position)}}

		// delete only: hidden column and copies, invisible to queries.
		require.NoError(t, addChanging(tbl, j), tc.alter)
		tbl.Init()
		require.Equal(t, 4, len(tbl.Columns))
		require.Len(t, tbl.NonPublic, 1)
		cc := tbl.NonPublic[0]
		require.Equal(t, "_Col$_n_0", cc.Name)
		require.Equal(t, model.StateDeleteOnly, cc.State)
		require.Equal(t, &model.ChangeInfo{From: tbl.Columns[1].ID, Name: nc.Name}, cc.Changing)
		require.Len(t, tbl.Indices, 5, "kn and ksn have copies, kz not")
		require.Equal(t, "_Idx$_kn_0", tbl.Indices[3].Name)
		require.Equal(t, "_Idx$_ksn_0", tbl.Indices[4].Name)
		require.Equal(t, tbl.Indices[1].ID, tbl.Indices[4].ChangingOf)

		// write only: DML writes the converted value and the copies'
		// entries, over ForWrite's layout.
		require.NoError(t, setChangingState(tbl, j, model.StateWriteOnly))
		tbl.Init()
		require.True(t, tbl.HasChanging())
		fw := tbl.ForWrite()
		full := []types.Datum{types.NewInt(1), types.NewInt(42), types.NewString("x"), types.NewInt(7), types.NullDatum}
		require.NoError(t, tbl.FillChanging(full, func(c *model.ColumnInfo, v types.Datum) (types.Datum, error) {
			d, _, err := table.ConvertChanging(tbl, c, v, 1)
			return d, err
		}))
		require.Equal(t, tc.value, full[4].String(), tc.alter)
		require.Equal(t, 4, tbl.Indices[4].Columns[1].Offset, "the copy's column resolves in ForWrite's table")
		require.Equal(t, "_Col$_n_0", fw.Columns[4].Name)

		// public: the swap.
		dropped, err := swapChanging(tbl, j)
		require.NoError(t, err, tc.alter)
		tbl.Init()
		var names, ixs []string
		for _, c := range tbl.Columns {
			names = append(names, c.Name)
		}
		for _, ix := range tbl.Indices {
			var cols []string
			for _, c := range ix.Columns {
				cols = append(cols, tbl.Columns[c.Offset].Name)
			}
			ixs = append(ixs, ix.Name+"("+strings.Join(cols, ",")+")")
			require.Zero(t, ix.ChangingOf)
			require.Equal(t, model.StatePublic, ix.State)
		}
		require.Equal(t, tc.order, strings.Join(names, ","), tc.alter)
		require.Equal(t, tc.indexes, strings.Join(ixs, ","), tc.alter)
		require.Empty(t, tbl.NonPublic)
		require.Len(t, dropped, 2, "the old kn and ksn")
		require.Equal(t, cc.ID, tbl.Columns[tbl.FindColumn(nc.Name)].ID, "the changing column is the column")
		require.Equal(t, nc.Type.Tp, tbl.Columns[tbl.FindColumn(nc.Name)].Type.Tp)
	}
}
