package coprocessor

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stretchr/testify/require"

	cop "github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
	"github.com/stratadb/strata/store/mvcc"
)

// indexTable is dagTable with index k_1 (id 1) on k: one entry per row
// (k NULL for ids divisible by 5). lockedID's row, when > 0, also carries
// a lock of a transaction that started before the readers' timestamp.
func indexTable(t *testing.T, lockedID int64) (*model.TableInfo, *pebble.DB) {
	tbl, db := dagTable(t)
	tbl.Indices = []*model.IndexInfo{{ID: 1, Name: "k_1", Columns: []*model.IndexColumn{{Name: "k", Offset: 1}}}}
	tbl.Init()
	var w mvcc.Txn
	for id := int64(1); id <= 20; id++ {
		k := types.NewInt(id % 7)
		if id%5 == 0 {
			k = types.NullDatum
		}
		key := tablecodec.AppendIndexKey(nil, tbl.ID, 1, []types.Datum{k}, true, tablecodec.IntHandle(id))
		w.PutWrite(key, 10, &mvcc.Write{Kind: mvcc.WritePut, StartTS: 9, ShortValue: tablecodec.IndexValue(true, tablecodec.IntHandle(id)), HasShortValue: true})
	}
	if lockedID > 0 {
		rk := tablecodec.RowKey(tbl.ID, lockedID)
		w.PutLock(rk, &mvcc.Lock{Type: mvcc.LockPut, Primary: rk, StartTS: 50, TTL: 3000})
	}
	b := db.NewBatch()
	require.NoError(t, mvcc.ApplyWrites(b, w.Writes()))
	require.NoError(t, b.Commit(pebble.NoSync))
	return tbl, db
}

// fakeRows serves the rows of even handles from r (as a store leading
// only their region would) and leaves the others to the SQL node.
type fakeRows struct {
	r     *mvcc.SnapshotReader
	calls int
}

func (f *fakeRows) LookUp(keys, vals [][]byte, local []bool) error {
	f.calls++
	for i, k := range keys {
		_, h, err := tablecodec.DecodeRowKey(k)
		if err != nil {
			return err
		}
		if h%2 != 0 {
			continue
		}
		v, found, err := f.r.Get(k)
		if err != nil {
			return err
		}
		local[i] = true
		if found {
			vals[i] = v
		}
	}
	return nil
}

func TestIndexScanAndLookUp(t *testing.T) {
	tbl, db := indexTable(t, 0)
	info, err := json.Marshal(tbl)
	require.NoError(t, err)
	scanI := func(desc bool) *cop.Executor {
		return &cop.Executor{Tp: cop.ExecType_TypeIndexScan, IdxScan: &cop.IndexScan{TableId: tbl.ID, IndexId: 1, Desc: desc, TableInfo: info}}
	}
	lookUp := &cop.Executor{Tp: cop.ExecType_TypeIndexLookUp, IdxLookup: &cop.IndexLookUp{TableId: tbl.ID}}
	sel := func(c string) *cop.Executor {
		return &cop.Executor{Tp: cop.ExecType_TypeSelection, Selection: &cop.Selection{Conditions: []*cop.Expr{compileExpr(t, tbl, c)}}}
	}
	limit := func(n uint64) *cop.Executor {
		return &cop.Executor{Tp: cop.ExecType_TypeLimit, Limit: &cop.Limit{Limit: n}}
	}
	topN := func(n uint64, by string, desc bool) *cop.Executor {
		return &cop.Executor{Tp: cop.ExecType_TypeTopN, TopN: &cop.TopN{Limit: n, OrderBy: []*cop.ByItem{{Expr: compileExpr(t, tbl, by), Desc: desc}}}}
	}
	ixKey := func(k int64) []byte {
		return tablecodec.AppendIndexKey(nil, tbl.ID, 1, []types.Datum{types.NewInt(k)}, false, tablecodec.Handle{})
	}
	// k in [2, 4]: ids 2 9 16 (k=2), 3 17 (k=3; 10 is NULL), 4 11 18 (k=4).
	k24 := []Range{{Start: ixKey(2), End: ixKey(5)}}
	whole := []Range{{Start: tablecodec.AppendIndexKey(nil, tbl.ID, 1, nil, false, tablecodec.Handle{}), End: tablecodec.AppendIndexKey(nil, tbl.ID, 2, nil, false, tablecodec.Handle{})}}
	tests := []struct {
		name    string
		execs   []*cop.Executor
		ranges  []Range
		paging  uint64
		ids     []int64 // handles in output order
		remote  []int64 // handles left to the SQL node (lookups)
		resume  bool
		wantErr error
	}{
		{name: "index-scan", execs: []*cop.Executor{scanI(false)}, ranges: k24, ids: []int64{2, 9, 16, 3, 17, 4, 11, 18}},
		{name: "index-scan-desc", execs: []*cop.Executor{scanI(true)}, ranges: k24, ids: []int64{18, 11, 4, 17, 3, 16, 9, 2}},
		{name: "index-scan-nulls-first", execs: []*cop.Executor{scanI(false), limit(3)}, ranges: whole, ids: []int64{5, 10, 15}},
		{name: "index-selection-on-handle", execs: []*cop.Executor{scanI(false), sel("id > 10")}, ranges: k24, ids: []int64{16, 17, 11, 18}},
		{name: "index-selection-on-key", execs: []*cop.Executor{scanI(false), sel("k <> 3"), limit(4)}, ranges: k24, ids: []int64{2, 9, 16, 4}},
		{name: "index-topn", execs: []*cop.Executor{scanI(false), topN(2, "id", true)}, ranges: k24, ids: []int64{18, 17}},
		{name: "index-paging", execs: []*cop.Executor{scanI(false)}, ranges: k24, paging: 4, ids: []int64{2, 9, 16, 3}, resume: true},
		{name: "lookup", execs: []*cop.Executor{scanI(false), lookUp}, ranges: k24, ids: []int64{2, 9, 16, 3, 17, 4, 11, 18}, remote: []int64{9, 3, 17, 11}},
		{name: "lookup-desc-limit", execs: []*cop.Executor{scanI(true), lookUp, limit(3)}, ranges: k24, ids: []int64{18, 11, 4}, remote: []int64{11}},
		{name: "lookup-paging", execs: []*cop.Executor{scanI(false), lookUp}, ranges: k24, paging: 3, ids: []int64{2, 9, 16}, remote: []int64{9}, resume: true},
		{name: "lookup-selection", execs: []*cop.Executor{scanI(false), lookUp, sel("c = 'c1'")}, ranges: k24, wantErr: ErrUnsupported},
		{name: "lookup-without-index", execs: []*cop.Executor{{Tp: cop.ExecType_TypeTableScan, TblScan: &cop.TableScan{TableId: tbl.ID, TableInfo: info}}, lookUp}, ranges: k24, wantErr: ErrUnsupported},
		{name: "unknown-index", execs: []*cop.Executor{{Tp: cop.ExecType_TypeIndexScan, IdxScan: &cop.IndexScan{TableId: tbl.ID, IndexId: 9, TableInfo: info}}}, ranges: k24, wantErr: ErrUnsupported},
		{name: "index-without-schema", execs: []*cop.Executor{{Tp: cop.ExecType_TypeIndexScan, IdxScan: &cop.IndexScan{TableId: tbl.ID, IndexId: 1}}}, ranges: k24, wantErr: ErrUnsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := mvcc.NewSnapshotReader(db, mvcc.ReadOptions{TS: 100})
			defer r.Close()
			rows := &fakeRows{r: mvcc.NewSnapshotReader(db, mvcc.ReadOptions{TS: 100})}
			defer rows.r.Close()
			resp, err := ExecuteLookUp(r, rows, &cop.DAGRequest{Executors: tc.execs, PagingSize: tc.paging}, tc.ranges)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			lookup := len(tc.execs) > 1 && tc.execs[1].GetTp() == cop.ExecType_TypeIndexLookUp
			var ids, remote []int64
			row := make([]types.Datum, tbl.RowWidth())
			for _, out := range resp.GetRows() {
				require.True(t, tablecodec.IsIndexKey(out.GetKey()), "output key is the index key")
				_, _, vals, h, hasHandle, err := tablecodec.DecodeIndexKey(out.GetKey(), 1, false)
				require.NoError(t, err)
				require.True(t, hasHandle)
				ids = append(ids, h.IntValue())
				if !lookup {
					require.Equal(t, tablecodec.IndexValue(true, h), out.GetValue())
					continue
				}
				require.Equal(t, tablecodec.RowKey(tbl.ID, h.IntValue()), out.GetRowKey())
				if out.GetRemote() {
					require.Empty(t, out.GetValue())
					remote = append(remote, h.IntValue())
					continue
				}
				// A local row is the stored row: its k is the index entry's.
				require.NoError(t, tbl.DecodeRow(out.GetRowKey(), out.GetValue(), row))
				require.Equal(t, h.IntValue(), row[0].Int64())
				require.Equal(t, vals[0].Int64(), row[1].Int64())
				require.Equal(t, fmt.Sprintf("c%d", h.IntValue()%4), string(row[2].Bytes()))
			}
			require.Equal(t, tc.ids, ids)
			require.Equal(t, tc.remote, remote)
			if lookup {
				require.EqualValues(t, len(tc.remote), resp.GetRemoteLookups())
				require.EqualValues(t, len(tc.ids)-len(tc.remote), resp.GetLocalLookups())
			}
			require.Equal(t, tc.resume, resp.GetResumeKey() != nil)
		})
	}
}

// TestLookUpLocked: a lock on a row read locally ends the request with the
// lock, for the SQL node to resolve; the index scan alone does not see it.
func TestLookUpLocked(t *testing.T) {
	tbl, db := indexTable(t, 16)
	info, err := json.Marshal(tbl)
	require.NoError(t, err)
	execs := []*cop.Executor{
		{Tp: cop.ExecType_TypeIndexScan, IdxScan: &cop.IndexScan{TableId: tbl.ID, IndexId: 1, TableInfo: info}},
		{Tp: cop.ExecType_TypeIndexLookUp, IdxLookup: &cop.IndexLookUp{TableId: tbl.ID}},
	}
	ranges := []Range{{Start: tablecodec.AppendIndexKey(nil, tbl.ID, 1, nil, false, tablecodec.Handle{}), End: tablecodec.AppendIndexKey(nil, tbl.ID, 2, nil, false, tablecodec.Handle{})}}
	r := mvcc.NewSnapshotReader(db, mvcc.ReadOptions{TS: 100})
	defer r.Close()
	rows := &fakeRows{r: mvcc.NewSnapshotReader(db, mvcc.ReadOptions{TS: 100})}
	defer rows.r.Close()
	_, err = ExecuteLookUp(r, rows, &cop.DAGRequest{Executors: execs}, ranges)
	var ke *mvcc.KeyError
	require.True(t, errors.As(err, &ke), "%v", err)

	resp, err := ExecuteLookUp(r, rows, &cop.DAGRequest{Executors: execs[:1]}, ranges)
	require.NoError(t, err)
	require.Len(t, resp.GetRows(), 20)
	// Without a RowReader every row goes back to the SQL node.
	resp, err = ExecuteLookUp(r, nil, &cop.DAGRequest{Executors: execs}, ranges)
	require.NoError(t, err)
	require.EqualValues(t, 20, resp.GetRemoteLookups())
}

// TestLookUpBatches: more entries than one lookup batch keep index order
// across batches.
func TestLookUpBatches(t *testing.T) {
	tbl := &model.TableInfo{ID: 7, Name: "b", PKIsHandle: true, HandleOffset: 0, AutoIncOffset: -1, Columns: []*model.ColumnInfo{
		{ID: 1, Name: "id", Type: types.FieldType{Tp: mysql.TypeLonglong, Flag: mysql.PriKeyFlag | mysql.NotNullFlag}},
		{ID: 2, Name: "k", Type: types.FieldType{Tp: mysql.TypeLonglong}},
	}, Indices: []*model.IndexInfo{{ID: 1, Name: "k", Columns: []*model.IndexColumn{{Name: "k", Offset: 1}}}}}
	tbl.Init()
	_, db := dagTable(t)
	var w mvcc.Txn
	const n = 3*lookupBatch + 7
	scratch := make([]types.Datum, 2)
	for id := int64(1); id <= n; id++ {
		k := (id * 7919) % n // a permutation: index order is not handle order
		row := []types.Datum{types.NewInt(id), types.NewInt(k)}
		w.PutWrite(tablecodec.RowKey(tbl.ID, id), 10, &mvcc.Write{Kind: mvcc.WritePut, StartTS: 9, ShortValue: tbl.EncodeRow(nil, row, scratch), HasShortValue: true})
		w.PutWrite(tablecodec.AppendIndexKey(nil, tbl.ID, 1, []types.Datum{types.NewInt(k)}, true, tablecodec.IntHandle(id)), 10,
			&mvcc.Write{Kind: mvcc.WritePut, StartTS: 9, ShortValue: tablecodec.IndexValue(true, tablecodec.IntHandle(id)), HasShortValue: true})
	}
	b := db.NewBatch()
	require.NoError(t, mvcc.ApplyWrites(b, w.Writes()))
	require.NoError(t, b.Commit(pebble.NoSync))
	info, err := json.Marshal(tbl)
	require.NoError(t, err)
	execs := []*cop.Executor{
		{Tp: cop.ExecType_TypeIndexScan, IdxScan: &cop.IndexScan{TableId: tbl.ID, IndexId: 1, TableInfo: info}},
		{Tp: cop.ExecType_TypeIndexLookUp, IdxLookup: &cop.IndexLookUp{TableId: tbl.ID}},
	}
	start, end := tablecodec.IndexRange(tbl.ID, 1)
	r := mvcc.NewSnapshotReader(db, mvcc.ReadOptions{TS: 100})
	defer r.Close()
	rows := &fakeRows{r: mvcc.NewSnapshotReader(db, mvcc.ReadOptions{TS: 100})}
	defer rows.r.Close()
	resp, err := ExecuteLookUp(r, rows, &cop.DAGRequest{Executors: execs}, []Range{{Start: start, End: end}})
	require.NoError(t, err)
	require.Len(t, resp.GetRows(), n)
	require.Equal(t, 4, rows.calls)
	row := make([]types.Datum, tbl.RowWidth())
	prev := int64(-1)
	for _, out := range resp.GetRows() {
		_, _, vals, _, _, err := tablecodec.DecodeIndexKey(out.GetKey(), 1, false)
		require.NoError(t, err)
		require.Greater(t, vals[0].Int64(), prev)
		prev = vals[0].Int64()
		if !out.GetRemote() {
			require.NoError(t, tbl.DecodeRow(out.GetRowKey(), out.GetValue(), row))
			require.Equal(t, prev, row[1].Int64())
		}
	}
}
