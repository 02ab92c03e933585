package coprocessor

import (
	"encoding/json"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv/keys"
	cop "github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
	"github.com/stratadb/strata/store/mvcc"
)

// TestCollatedDAG: a pushed-down Selection, TopN and GROUP BY over a
// utf8mb4_general_ci column compare, order and group under it, as the
// SQL node does (the collation travels in the request).
func TestCollatedDAG(t *testing.T) {
	tbl := &model.TableInfo{ID: 43, Name: "t", PKIsHandle: true, HandleOffset: 0, AutoIncOffset: -1, Columns: []*model.ColumnInfo{
		{ID: 1, Name: "id", Type: types.FieldType{Tp: mysql.TypeLonglong, Flag: mysql.PriKeyFlag | mysql.NotNullFlag}},
		{ID: 2, Name: "s", Type: types.FieldType{Tp: mysql.TypeVarchar, Flen: 20, Coll: 45}},
	}}
	tbl.Init()
	db, err := pebble.Open("", &pebble.Options{Comparer: keys.Comparer, FS: vfs.NewMem()})
	require.NoError(t, err)
	defer db.Close()
	var w mvcc.Txn
	vals := []string{"ann", "Bob", "ANN ", "bob", "Åsa", "carl"}
	for i, v := range vals {
		id := int64(i + 1)
		row := []types.Datum{types.NewInt(id), types.NewString(v)}
		w.PutWrite(tablecodec.RowKey(tbl.ID, id), 10, &mvcc.Write{Kind: mvcc.WritePut, StartTS: 9, ShortValue: tbl.EncodeRow(nil, row, make([]types.Datum, 2)), HasShortValue: true})
	}
	b := db.NewBatch()
	require.NoError(t, mvcc.ApplyWrites(b, w.Writes()))
	require.NoError(t, b.Commit(pebble.NoSync))
	info, err := json.Marshal(tbl)
	require.NoError(t, err)
	all := []Range{{Start: tablecodec.RowKey(tbl.ID, 0), End: tablecodec.RowKey(tbl.ID, 1000)}}
	run := func(execs ...*cop.Executor) *cop.SelectResponse {
		scan := &cop.Executor{Tp: cop.ExecType_TypeTableScan, TblScan: &cop.TableScan{TableId: tbl.ID, TableInfo: info}}
		r := mvcc.NewSnapshotReader(db, mvcc.ReadOptions{TS: 100})
		defer r.Close()
		resp, err := Execute(r, &cop.DAGRequest{Executors: append([]*cop.Executor{scan}, execs...)}, all)
		require.NoError(t, err)
		return resp
	}
	ids := func(resp *cop.SelectResponse) []int64 {
		var out []int64
		for _, row := range resp.GetRows() {
			_, h, err := tablecodec.DecodeRowKey(row.GetKey())
			require.NoError(t, err)
			out = append(out, h)
		}
		return out
	}
	sel := &cop.Executor{Tp: cop.ExecType_TypeSelection, Selection: &cop.Selection{Conditions: []*cop.Expr{compileExpr(t, tbl, "s = 'Ann'")}}}
	require.Equal(t, []int64{1, 3}, ids(run(sel)))
	like := &cop.Executor{Tp: cop.ExecType_TypeSelection, Selection: &cop.Selection{Conditions: []*cop.Expr{compileExpr(t, tbl, "s LIKE 'b%' OR s IN ('ASA')")}}}
	require.Equal(t, []int64{2, 4, 5}, ids(run(like)))
	topN := &cop.Executor{Tp: cop.ExecType_TypeTopN, TopN: &cop.TopN{Limit: 6, OrderBy: []*cop.ByItem{{Expr: compileExpr(t, tbl, "s")}}}}
	got := ids(run(topN))
	require.ElementsMatch(t, []int64{1, 3}, got[:2]) // ann = ANN
	require.Equal(t, []int64{5}, got[2:3])           // Åsa sorts as ASA
	require.ElementsMatch(t, []int64{2, 4}, got[3:5])
	require.Equal(t, []int64{6}, got[5:])
	group := &cop.Executor{Tp: cop.ExecType_TypeAggregation, Aggregation: &cop.Aggregation{
		GroupBy: []*cop.Expr{compileExpr(t, tbl, "s")}, Funcs: []*cop.AggFunc{{Tp: cop.AggFuncType_Count}}}}
	require.Len(t, run(group).GetRows(), 4) // ann, bob, asa, carl
}
