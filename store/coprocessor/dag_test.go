package coprocessor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv/keys"
	cop "github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
	"github.com/stratadb/strata/store/mvcc"
)

// dagTable is t(id BIGINT PRIMARY KEY, k INT, c VARCHAR(20), d DECIMAL(10,2))
// with rows id 1..20: k = id % 7 (NULL when id % 5 == 0), c = "c<id%4>",
// d = id * 1.25.
func dagTable(t *testing.T) (*model.TableInfo, *pebble.DB) {
	tbl := &model.TableInfo{ID: 42, Name: "t", PKIsHandle: true, HandleOffset: 0, AutoIncOffset: -1, Columns: []*model.ColumnInfo{
		{ID: 1, Name: "id", Type: types.FieldType{Tp: mysql.TypeLonglong, Flag: mysql.PriKeyFlag | mysql.NotNullFlag}},
		{ID: 2, Name: "k", Type: types.FieldType{Tp: mysql.TypeLong}},
		{ID: 3, Name: "c", Type: types.FieldType{Tp: mysql.TypeVarchar, Flen: 20}},
		{ID: 4, Name: "d", Type: types.FieldType{Tp: mysql.TypeNewDecimal, Flen: 10, Decimal: 2}},
	}}
	tbl.Init()
	db, err := pebble.Open("", &pebble.Options{Comparer: keys.Comparer, FS: vfs.NewMem()})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	var w mvcc.Txn
	scratch := make([]types.Datum, 4)
	for id := int64(1); id <= 20; id++ {
		k := types.NewInt(id % 7)
		if id%5 == 0 {
			k = types.NullDatum
		}
		d, ok := types.ToDecimal(types.NewFloat(float64(id) * 1.25))
		require.True(t, ok)
		row := []types.Datum{types.NewInt(id), k, types.NewString(fmt.Sprintf("c%d", id%4)), d.Round(2).Datum()}
		w.PutWrite(tablecodec.RowKey(tbl.ID, id), 10, &mvcc.Write{Kind: mvcc.WritePut, StartTS: 9, ShortValue: tbl.EncodeRow(nil, row, scratch), HasShortValue: true})
	}
	b := db.NewBatch()
	require.NoError(t, mvcc.ApplyWrites(b, w.Writes()))
	require.NoError(t, b.Commit(pebble.NoSync))
	return tbl, db
}

func compileExpr(t testing.TB, tbl *model.TableInfo, s string) *cop.Expr {
	stmt, err := parser.New().ParseOneStmt("SELECT "+s+" FROM t", "", "")
	require.NoError(t, err)
	e, err := expr.Compile(stmt.(*ast.SelectStmt).Fields.Fields[0].Expr, &expr.Ctx{Columns: tbl.Schema()})
	require.NoError(t, err, s)
	p, err := expr.ToPB(e)
	require.NoError(t, err, s)
	return p
}

func TestExecuteDAG(t *testing.T) {
	tbl, db := dagTable(t)
	info, err := json.Marshal(tbl)
	require.NoError(t, err)
	scanT := func(desc bool) *cop.Executor {
		return &cop.Executor{Tp: cop.ExecType_TypeTableScan, TblScan: &cop.TableScan{TableId: tbl.ID, Desc: desc, TableInfo: info}}
	}
	sel := func(conds ...string) *cop.Executor {
		s := &cop.Selection{}
		for _, c := range conds {
			s.Conditions = append(s.Conditions, compileExpr(t, tbl, c))
		}
		return &cop.Executor{Tp: cop.ExecType_TypeSelection, Selection: s}
	}
	topN := func(n uint64, by string, desc bool) *cop.Executor {
		return &cop.Executor{Tp: cop.ExecType_TypeTopN, TopN: &cop.TopN{Limit: n, OrderBy: []*cop.ByItem{{Expr: compileExpr(t, tbl, by), Desc: desc}}}}
	}
	proj := func(es ...string) *cop.Executor {
		p := &cop.Projection{}
		for _, e := range es {
			p.Exprs = append(p.Exprs, compileExpr(t, tbl, e))
		}
		return &cop.Executor{Tp: cop.ExecType_TypeProjection, Projection: p}
	}
	agg := func(fs ...string) *cop.Executor {
		a := &cop.Aggregation{}
		for _, f := range fs {
			name, arg, _ := strings.Cut(strings.TrimSuffix(f, ")"), "(")
			af := &cop.AggFunc{Tp: cop.AggFuncType(cop.AggFuncType_value[name])}
			if arg != "*" {
				af.Arg = compileExpr(t, tbl, arg)
			}
			a.Funcs = append(a.Funcs, af)
		}
		return &cop.Executor{Tp: cop.ExecType_TypeAggregation, Aggregation: a}
	}
	groupAgg := func(group string, fs ...string) *cop.Executor {
		e := agg(fs...)
		e.Aggregation.GroupBy = []*cop.Expr{compileExpr(t, tbl, group)}
		return e
	}
	all := []Range{{Start: tablecodec.RowKey(tbl.ID, 0), End: tablecodec.RowKey(tbl.ID, 1000)}}
	tests := []struct {
		name    string
		execs   []*cop.Executor
		paging  uint64
		maxScan uint64
		// ids of the returned rows, or the decoded projection / aggregate row
		ids     []int64
		out     []string
		resume  int64    // handle the resume key follows; 0: none
		groups  []string // the decoded rows of a GROUP BY's partial groups
		wantErr error
	}{
		{name: "selection", execs: []*cop.Executor{scanT(false), sel("k > 4")}, ids: []int64{6, 12, 13, 19}},
		{name: "selection-null-is-false", execs: []*cop.Executor{scanT(false), sel("k IS NULL OR k = 0")}, ids: []int64{5, 7, 10, 14, 15, 20}},
		{name: "two-conditions", execs: []*cop.Executor{scanT(false), sel("k > 1", "c LIKE 'c1%'")}, ids: []int64{9, 13, 17}},
		{name: "selection-limit", execs: []*cop.Executor{scanT(false), sel("k > 4"), limit(2)}, ids: []int64{6, 12}},
		{name: "selection-desc-limit", execs: []*cop.Executor{scanT(true), sel("k > 4"), limit(3)}, ids: []int64{19, 13, 12}},
		{name: "paging", execs: []*cop.Executor{scanT(false), sel("d > 10")}, paging: 3, ids: []int64{9, 10, 11}, resume: 11},
		{name: "paging-desc", execs: []*cop.Executor{scanT(true)}, paging: 2, ids: []int64{20, 19}, resume: 19},
		{name: "paging-exhausted", execs: []*cop.Executor{scanT(false), sel("id > 18")}, paging: 5, ids: []int64{19, 20}},
		{name: "topn", execs: []*cop.Executor{scanT(false), topN(3, "d", true)}, ids: []int64{20, 19, 18}},
		{name: "topn-nulls-first", execs: []*cop.Executor{scanT(false), sel("id < 12"), topN(3, "k", false)}, ids: []int64{5, 10, 7}},
		{name: "topn-zero", execs: []*cop.Executor{scanT(false), topN(0, "d", true)}},
		{name: "projection", execs: []*cop.Executor{scanT(false), sel("id <= 2"), proj("k + 1", "c", "d * 2")}, out: []string{"2 c1 2.50", "3 c2 5.00"}},
		{name: "aggregation", execs: []*cop.Executor{scanT(false), agg("Count(*)", "Count(k)", "Sum(k)", "Min(c)", "Max(d)", "Avg(id)")},
			out: []string{"20 16 48 c0 25.00 20 210"}},
		{name: "aggregation-empty", execs: []*cop.Executor{scanT(false), sel("id > 100"), agg("Count(*)", "Sum(d)", "Max(c)", "Avg(k)")},
			out: []string{"0 NULL NULL 0 NULL"}},
		{name: "aggregation-selection", execs: []*cop.Executor{scanT(false), sel("c = 'c2'"), agg("Count(*)", "Sum(d)")}, out: []string{"5 62.50"}},
		{name: "group-by", execs: []*cop.Executor{scanT(false), groupAgg("k", "Count(*)", "Sum(d)", "FirstRow(c)")}, groups: []string{
			"1 2 11.25 c1", "2 3 33.75 c2", "3 2 25.00 c3", "4 3 41.25 c0", "NULL 4 62.50 c1", "6 2 23.75 c2", "0 2 26.25 c3", "5 2 38.75 c0"}},
		{name: "group-by-selection", execs: []*cop.Executor{scanT(false), sel("id > 14"), groupAgg("c", "Max(k)", "Avg(id)", "FirstRow(k)")}, groups: []string{
			"c3 5 2 34 NULL", "c0 2 2 36 2", "c1 3 1 17 3", "c2 4 1 18 4"}},
		{name: "group-by-empty", execs: []*cop.Executor{scanT(false), sel("id > 100"), groupAgg("k", "Count(*)")}},
		{name: "scan-limit", execs: []*cop.Executor{scanT(false), sel("id > 100")}, maxScan: 5, wantErr: ErrScanLimit},
		{name: "expr-without-schema", execs: []*cop.Executor{scan(false), sel("k > 1")}, wantErr: ErrUnsupported},
		{name: "bad-column", execs: []*cop.Executor{scanT(false), {Tp: cop.ExecType_TypeSelection, Selection: &cop.Selection{
			Conditions: []*cop.Expr{{Tp: cop.ExprType_ExprColumn, Offset: 9}}}}}, wantErr: ErrUnsupported},
		{name: "selection-after-limit", execs: []*cop.Executor{scanT(false), limit(2), sel("k > 1")}, wantErr: ErrUnsupported},
		{name: "agg-after-topn", execs: []*cop.Executor{scanT(false), topN(2, "k", false), agg("Count(*)")}, wantErr: ErrUnsupported},
		{name: "sum-without-arg", execs: []*cop.Executor{scanT(false), {Tp: cop.ExecType_TypeAggregation, Aggregation: &cop.Aggregation{
			Funcs: []*cop.AggFunc{{Tp: cop.AggFuncType_Sum}}}}}, wantErr: ErrUnsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := mvcc.NewSnapshotReader(db, mvcc.ReadOptions{TS: 100})
			defer r.Close()
			dag := &cop.DAGRequest{Executors: tc.execs, PagingSize: tc.paging, MaxScanRows: tc.maxScan, CollectSummaries: true}
			resp, err := Execute(r, dag, all)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Len(t, resp.GetSummaries(), len(tc.execs))
			if resp.GetAggRow() != nil {
				require.Equal(t, tc.out, []string{decodeOut(t, resp.GetAggRow(), len(strings.Fields(tc.out[0])))})
				require.EqualValues(t, 1, resp.GetSummaries()[len(tc.execs)-1].GetNumProducedRows())
				return
			}
			if tc.execs[len(tc.execs)-1].GetAggregation().GetGroupBy() != nil {
				var groups []string
				for _, row := range resp.GetRows() {
					require.Empty(t, row.GetKey())
					groups = append(groups, decodeOut(t, row.GetValue(), len(strings.Fields(tc.groups[0]))))
				}
				require.Equal(t, tc.groups, groups)
				require.EqualValues(t, len(tc.groups), resp.GetSummaries()[len(tc.execs)-1].GetNumProducedRows())
				return
			}
			var ids []int64
			var out []string
			for _, row := range resp.GetRows() {
				_, h, err := tablecodec.DecodeRowKey(row.GetKey())
				require.NoError(t, err)
				ids = append(ids, h)
				if tc.out != nil {
					out = append(out, decodeOut(t, row.GetValue(), len(strings.Fields(tc.out[0]))))
				}
			}
			if tc.out != nil {
				require.Equal(t, tc.out, out)
			} else {
				require.Equal(t, tc.ids, ids)
			}
			require.EqualValues(t, len(resp.GetRows()), resp.GetSummaries()[len(tc.execs)-1].GetNumProducedRows())
			if tc.resume == 0 {
				require.Nil(t, resp.GetResumeKey())
				return
			}
			want := tablecodec.RowKey(tbl.ID, tc.resume)
			if !tc.execs[0].GetTblScan().GetDesc() {
				want = append(want, 0)
			}
			require.Equal(t, want, resp.GetResumeKey())
		})
	}
}

// decodeOut decodes a row encoded with column ids 0..n-1 as space-separated
// values.
func decodeOut(t *testing.T, v []byte, n int) string {
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = int64(i)
	}
	out := make([]types.Datum, n)
	require.NoError(t, tablecodec.NewRowDecoder(ids).Decode(v, out))
	s := make([]string, n)
	for i, d := range out {
		s[i] = d.String()
		if d.IsNull() {
			s[i] = "NULL"
		}
	}
	return strings.Join(s, " ")
}

func TestLimiter(t *testing.T) {
	l := NewLimiter(1)
	ctx := t.Context()
	require.NoError(t, l.Acquire(ctx))
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, l.Acquire(cctx), context.Canceled)
	l.Release()
	require.NoError(t, l.Acquire(ctx))
	l.Release()
}

// TestSumOverflow: an integer SUM leaves int64 exactly when it would
// overflow and goes on in DECIMAL.
func TestSumOverflow(t *testing.T) {
	col := &expr.Column{Offset: 0, Ft: types.Int64Type}
	x := &run{p: plan{aggs: []aggFunc{{tp: cop.AggFuncType_Sum, arg: col}, {tp: cop.AggFuncType_Avg, arg: col}}},
		states: make([]aggState, 2), row: make([]types.Datum, 1)}
	for _, v := range []int64{math.MaxInt64 - 1, 3, -5, math.MinInt64} {
		x.row[0] = types.NewInt(v)
		require.NoError(t, x.accumulate(x.states))
	}
	var out []types.Datum
	for i, f := range x.p.aggs {
		out = x.states[i].appendPartial(out, f)
	}
	require.Equal(t, "-4", out[0].String()) // (2^63-2) + 3 - 5 - 2^63
	require.Equal(t, "4", out[1].String())
	require.Equal(t, "-4", out[2].String())
}

// TestPagedPartials: with page_scan_rows every chain answers the part it
// scanned and where to resume; following the resume keys and merging the
// pages as the SQL node merges regions gives the unpaged answer, and no
// page scans more than its bound.
func TestPagedPartials(t *testing.T) {
	tbl, db := dagTable(t)
	info, err := json.Marshal(tbl)
	require.NoError(t, err)
	scanT := &cop.Executor{Tp: cop.ExecType_TypeTableScan, TblScan: &cop.TableScan{TableId: tbl.ID, TableInfo: info}}
	aggE := &cop.Executor{Tp: cop.ExecType_TypeAggregation, Aggregation: &cop.Aggregation{Funcs: []*cop.AggFunc{
		{Tp: cop.AggFuncType_Count}, {Tp: cop.AggFuncType_Sum, Arg: compileExpr(t, tbl, "id")}, {Tp: cop.AggFuncType_Count, Arg: compileExpr(t, tbl, "k")}}}}
	groupE := &cop.Executor{Tp: cop.ExecType_TypeAggregation, Aggregation: &cop.Aggregation{
		GroupBy: []*cop.Expr{compileExpr(t, tbl, "c")}, Funcs: []*cop.AggFunc{{Tp: cop.AggFuncType_Count}}}}
	selE := &cop.Executor{Tp: cop.ExecType_TypeSelection, Selection: &cop.Selection{Conditions: []*cop.Expr{compileExpr(t, tbl, "k > 2")}}}
	topE := &cop.Executor{Tp: cop.ExecType_TypeTopN, TopN: &cop.TopN{Limit: 3, OrderBy: []*cop.ByItem{{Expr: compileExpr(t, tbl, "d"), Desc: true}}}}
	all := []Range{{Start: tablecodec.RowKey(tbl.ID, 0), End: tablecodec.RowKey(tbl.ID, 1000)}}

	// pages runs dag page by page and returns the responses.
	pages := func(t *testing.T, dag *cop.DAGRequest) []*cop.SelectResponse {
		var out []*cop.SelectResponse
		rs := all
		for len(out) < 100 {
			r := mvcc.NewSnapshotReader(db, mvcc.ReadOptions{TS: 100})
			resp, err := Execute(r, dag, rs)
			r.Close()
			require.NoError(t, err)
			out = append(out, resp)
			if n := dag.GetPageScanRows(); n > 0 {
				require.LessOrEqual(t, resp.GetScannedRows(), n)
			}
			if resp.GetResumeKey() == nil {
				return out
			}
			rs = []Range{{Start: resp.GetResumeKey(), End: all[0].End}}
		}
		t.Fatal("no end of pages")
		return nil
	}
	for _, n := range []uint64{1, 3, 7, 20, 64} {
		t.Run(fmt.Sprint("rows=", n), func(t *testing.T) {
			// Aggregation: counts and sums add up.
			var cnt, sum, cntK int64
			ps := pages(t, &cop.DAGRequest{Executors: []*cop.Executor{scanT, aggE}, PageScanRows: n})
			// A page ends at its n-th row even when it is the last one.
			want := 1
			if n <= 20 {
				want = int(20/n) + 1
			}
			require.Len(t, ps, want)
			for _, p := range ps {
				var a, b, c int64
				_, err := fmt.Sscanf(strings.ReplaceAll(decodeOut(t, p.GetAggRow(), 3), "NULL", "0"), "%d %d %d", &a, &b, &c)
				require.NoError(t, err)
				cnt, sum, cntK = cnt+a, sum+b, cntK+c
			}
			require.Equal(t, []int64{20, 210, 16}, []int64{cnt, sum, cntK})

			// GROUP BY: per-group counts add up.
			groups := map[string]int{}
			for _, p := range pages(t, &cop.DAGRequest{Executors: []*cop.Executor{scanT, groupE}, PageScanRows: n}) {
				for _, row := range p.GetRows() {
					var g string
					var c int
					_, err := fmt.Sscanf(decodeOut(t, row.GetValue(), 2), "%s %d", &g, &c)
					require.NoError(t, err)
					groups[g] += c
				}
			}
			require.Equal(t, map[string]int{"c0": 5, "c1": 5, "c2": 5, "c3": 5}, groups)

			// Selection: the same rows, once each, in order.
			var ids []int64
			for _, p := range pages(t, &cop.DAGRequest{Executors: []*cop.Executor{scanT, selE}, PageScanRows: n}) {
				for _, row := range p.GetRows() {
					_, h, err := tablecodec.DecodeRowKey(row.GetKey())
					require.NoError(t, err)
					ids = append(ids, h)
				}
			}
			require.Equal(t, []int64{3, 4, 6, 11, 12, 13, 17, 18, 19}, ids)

			// TopN: each page's top rows; the best 3 of them are the top 3.
			var tops []int64
			for _, p := range pages(t, &cop.DAGRequest{Executors: []*cop.Executor{scanT, topE}, PageScanRows: n}) {
				require.LessOrEqual(t, len(p.GetRows()), 3)
				for _, row := range p.GetRows() {
					_, h, err := tablecodec.DecodeRowKey(row.GetKey())
					require.NoError(t, err)
					tops = append(tops, h)
				}
			}
			slices.Sort(tops)
			require.Equal(t, []int64{18, 19, 20}, tops[len(tops)-3:])
		})
	}
}

// slowScanner yields n opaque rows, each after a pause.
type slowScanner struct {
	n     int
	pause time.Duration
}

func (s slowScanner) Scan(start, end []byte, _, _ bool, fn func(key, value []byte) bool) error {
	for i := range s.n {
		k := tablecodec.RowKey(1, int64(i))
		if bytes.Compare(k, start) < 0 || (len(end) > 0 && bytes.Compare(k, end) >= 0) {
			continue
		}
		time.Sleep(s.pause)
		if !fn(k, []byte("v")) {
			return nil
		}
	}
	return nil
}

// TestPageTime: page_ms ends a page once its time is spent (checked every
// 64 rows) with a resume key after the last row scanned; a Limit chain
// is never cut short by it.
func TestPageTime(t *testing.T) {
	s := slowScanner{n: 1000, pause: 50 * time.Microsecond} // ≥ 50 ms in all
	all := []Range{{Start: tablecodec.RowKey(1, 0), End: tablecodec.RowKey(1, 1000)}}
	resp, err := Execute(s, &cop.DAGRequest{PageMs: 1, Executors: []*cop.Executor{scan(false)}}, all)
	require.NoError(t, err)
	n := len(resp.GetRows())
	require.Less(t, n, 1000)
	require.Zero(t, n%64)
	require.Equal(t, append(tablecodec.RowKey(1, int64(n-1)), 0), resp.GetResumeKey())

	resp, err = Execute(s, &cop.DAGRequest{PageMs: 1, Executors: []*cop.Executor{scan(false), limit(900)}}, all)
	require.NoError(t, err)
	require.Len(t, resp.GetRows(), 900)
	require.Nil(t, resp.GetResumeKey())
}
