package coprocessor

import (
	"encoding/json"
	"fmt"
	"strings"
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

// sbtestRegion returns sbtest1's table and a DB holding its 10,000 rows
// committed at 10.
func sbtestRegion(b *testing.B) (*model.TableInfo, *pebble.DB) {
	tbl := &model.TableInfo{ID: 7, Name: "sbtest1", PKIsHandle: true, AutoIncOffset: -1, Columns: []*model.ColumnInfo{
		{ID: 1, Name: "id", Type: types.FieldType{Tp: mysql.TypeLong, Flag: mysql.PriKeyFlag | mysql.NotNullFlag}},
		{ID: 2, Name: "k", Type: types.FieldType{Tp: mysql.TypeLong, Flag: mysql.NotNullFlag}},
		{ID: 3, Name: "c", Type: types.FieldType{Tp: mysql.TypeString, Flen: 120}},
		{ID: 4, Name: "pad", Type: types.FieldType{Tp: mysql.TypeString, Flen: 60}},
	}}
	tbl.Init()
	db, err := pebble.Open("", &pebble.Options{Comparer: keys.Comparer, FS: vfs.NewMem()})
	require.NoError(b, err)
	var w mvcc.Txn
	scratch := make([]types.Datum, 4)
	for id := int64(1); id <= 10000; id++ {
		row := []types.Datum{types.NewInt(id), types.NewInt(id * 7919 % 10000), types.NewString(strings.Repeat("7", 119)), types.NewString(strings.Repeat("p", 59))}
		w.PutWrite(tablecodec.RowKey(tbl.ID, id), 10, &mvcc.Write{Kind: mvcc.WritePut, StartTS: 9, ShortValue: tbl.EncodeRow(nil, row, scratch), HasShortValue: true})
	}
	bt := db.NewBatch()
	require.NoError(b, mvcc.ApplyWrites(bt, w.Writes()))
	require.NoError(b, bt.Commit(pebble.NoSync))
	return tbl, db
}

// BenchmarkSelectionCount: sysbench's select_random_ranges without its
// index: COUNT(k) of 10 BETWEENs over a 10,000-row sbtest1 region.
func BenchmarkSelectionCount(b *testing.B) {
	tbl, db := sbtestRegion(b)
	defer db.Close()
	info, _ := json.Marshal(tbl)
	var conds []string
	for i := range 10 {
		conds = append(conds, fmt.Sprintf("k BETWEEN %d AND %d", i*900, i*900+5))
	}
	sel := &cop.Selection{Conditions: []*cop.Expr{compileExpr(b, tbl, strings.Join(conds, " OR "))}}
	dag := &cop.DAGRequest{Executors: []*cop.Executor{
		{Tp: cop.ExecType_TypeTableScan, TblScan: &cop.TableScan{TableId: tbl.ID, TableInfo: info}},
		{Tp: cop.ExecType_TypeSelection, Selection: sel},
		{Tp: cop.ExecType_TypeAggregation, Aggregation: &cop.Aggregation{Funcs: []*cop.AggFunc{{Tp: cop.AggFuncType_Count, Arg: compileExpr(b, tbl, "k")}}}},
	}}
	all := []Range{{Start: tablecodec.RowKey(tbl.ID, 0), End: tablecodec.RowKey(tbl.ID, 1<<40)}}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r := mvcc.NewSnapshotReader(db, mvcc.ReadOptions{TS: 100})
		resp, err := Execute(r, dag, all)
		r.Close()
		if err != nil || resp.GetScannedRows() != 10000 {
			b.Fatal(err, resp.GetScannedRows())
		}
	}
}

// BenchmarkRangesCount: the shape of select_random_ranges over the
// clustered key: COUNT(*) of 10 ranges of 6 rows each in one request.
func BenchmarkRangesCount(b *testing.B) {
	tbl, db := sbtestRegion(b)
	defer db.Close()
	info, _ := json.Marshal(tbl)
	dag := &cop.DAGRequest{Executors: []*cop.Executor{
		{Tp: cop.ExecType_TypeTableScan, TblScan: &cop.TableScan{TableId: tbl.ID, TableInfo: info}},
		{Tp: cop.ExecType_TypeAggregation, Aggregation: &cop.Aggregation{Funcs: []*cop.AggFunc{{Tp: cop.AggFuncType_Count}}}},
	}}
	var ranges []Range
	for i := range int64(10) {
		ranges = append(ranges, Range{Start: tablecodec.RowKey(tbl.ID, 1+i*900), End: tablecodec.RowKey(tbl.ID, 7+i*900)})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r := mvcc.NewSnapshotReader(db, mvcc.ReadOptions{TS: 100})
		resp, err := Execute(r, dag, ranges)
		r.Close()
		if err != nil || resp.GetScannedRows() != 60 {
			b.Fatal(err, resp.GetScannedRows())
		}
	}
}
