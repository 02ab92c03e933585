package coprocessor

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pingcap/tidb/pkg/parser/mysql"

	cop "github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
	"github.com/stratadb/strata/store/mvcc"
)

// TestScanDecodesAddedColumn: rows written before ADD COLUMN e INT
// DEFAULT 9 (later SET DEFAULT 1) lack e; a pushed-down scan with the new
// schema reads them as e's origin default 9, in a Selection, a Projection
// and an aggregate alike.
func TestScanDecodesAddedColumn(t *testing.T) {
	old, db := dagTable(t)
	tbl := old.Clone()
	tbl.Columns = append(tbl.Columns, &model.ColumnInfo{ID: 5, Name: "e", Type: types.FieldType{Tp: mysql.TypeLong},
		HasDefault: true, Default: "1", Origin: &model.OriginDefault{Value: "9"}})
	tbl.Init()
	info, err := json.Marshal(tbl)
	require.NoError(t, err)
	scan := &cop.Executor{Tp: cop.ExecType_TypeTableScan, TblScan: &cop.TableScan{TableId: tbl.ID, TableInfo: info}}
	sel := &cop.Executor{Tp: cop.ExecType_TypeSelection, Selection: &cop.Selection{Conditions: []*cop.Expr{compileExpr(t, tbl, "e = 9 AND id <= 2")}}}
	proj := &cop.Executor{Tp: cop.ExecType_TypeProjection, Projection: &cop.Projection{Exprs: []*cop.Expr{compileExpr(t, tbl, "id"), compileExpr(t, tbl, "e")}}}
	sum := &cop.Executor{Tp: cop.ExecType_TypeAggregation, Aggregation: &cop.Aggregation{Funcs: []*cop.AggFunc{{Tp: cop.AggFuncType_Sum, Arg: compileExpr(t, tbl, "e")}}}}
	all := []Range{{Start: tablecodec.RowKey(tbl.ID, 0), End: tablecodec.RowKey(tbl.ID, 1000)}}

	r := mvcc.NewSnapshotReader(db, mvcc.ReadOptions{TS: 100})
	defer r.Close()
	resp, err := Execute(r, &cop.DAGRequest{Executors: []*cop.Executor{scan, sel, proj}}, all)
	require.NoError(t, err)
	var out []string
	for _, row := range resp.GetRows() {
		out = append(out, decodeOut(t, row.GetValue(), 2))
	}
	require.Equal(t, []string{"1 9", "2 9"}, out)

	resp, err = Execute(r, &cop.DAGRequest{Executors: []*cop.Executor{scan, sum}}, all)
	require.NoError(t, err)
	require.Equal(t, "180", decodeOut(t, resp.GetAggRow(), 1))
}
