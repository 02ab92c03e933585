package coprocessor

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv/keys"
	cop "github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/store/mvcc"
)

func scan(desc bool) *cop.Executor {
	return &cop.Executor{Tp: cop.ExecType_TypeTableScan, TblScan: &cop.TableScan{TableId: 1, Desc: desc}}
}

func limit(n uint64) *cop.Executor {
	return &cop.Executor{Tp: cop.ExecType_TypeLimit, Limit: &cop.Limit{Limit: n}}
}

func count(n int) *cop.Executor {
	fs := make([]cop.AggFuncType, n)
	return &cop.Executor{Tp: cop.ExecType_TypeAggregation, Aggregation: &cop.Aggregation{AggFunc: fs}}
}

func TestExecute(t *testing.T) {
	db, err := pebble.Open("", &pebble.Options{Comparer: keys.Comparer, FS: vfs.NewMem()})
	require.NoError(t, err)
	defer db.Close()
	var w mvcc.Txn
	put := func(k []byte, startTS, commitTS uint64, v string) {
		w.PutWrite(k, commitTS, &mvcc.Write{Kind: mvcc.WritePut, StartTS: startTS, ShortValue: []byte(v), HasShortValue: true})
	}
	for i := 0; i < 10; i++ {
		k := []byte(fmt.Sprintf("r%02d", i))
		put(k, 9, 10, fmt.Sprintf("v%d", i))
		if i%3 == 0 {
			// r00, r03, r06, r09 deleted at 20
			w.PutWrite(k, 20, &mvcc.Write{Kind: mvcc.WriteDelete, StartTS: 19})
		}
	}
	put([]byte("r05"), 29, 30, "new")
	// A lock of a transaction that started at 200 on r04.
	w.PutLock([]byte("r04"), &mvcc.Lock{Type: mvcc.LockPut, Primary: []byte("r04"), StartTS: 200, TTL: 3000})
	b := db.NewBatch()
	require.NoError(t, mvcc.ApplyWrites(b, w.Writes()))
	require.NoError(t, b.Commit(pebble.NoSync))

	all := []Range{{Start: []byte("r"), End: []byte("s")}}
	two := []Range{{Start: []byte("r00"), End: []byte("r03")}, {Start: []byte("r07"), End: nil}}
	// One reader scans every range with the same two iterators, re-bounded
	// per range (the lock on r04 lies in the second).
	three := []Range{{Start: []byte("r01"), End: []byte("r02")}, {Start: []byte("r04"), End: []byte("r06")}, {Start: []byte("r08"), End: nil}}
	tests := []struct {
		name    string
		execs   []*cop.Executor
		ranges  []Range
		ts      uint64
		rows    []string
		agg     []int64
		wantErr error
		// wantLocked: the scan meets the lock on r04.
		wantLocked bool
	}{
		{name: "scan-at-15", execs: []*cop.Executor{scan(false)}, ranges: all, ts: 15,
			rows: []string{"r00=v0", "r01=v1", "r02=v2", "r03=v3", "r04=v4", "r05=v5", "r06=v6", "r07=v7", "r08=v8", "r09=v9"}},
		{name: "scan-latest", execs: []*cop.Executor{scan(false)}, ranges: all, ts: 100,
			rows: []string{"r01=v1", "r02=v2", "r04=v4", "r05=new", "r07=v7", "r08=v8"}},
		{name: "two-ranges", execs: []*cop.Executor{scan(false)}, ranges: two, ts: 100,
			rows: []string{"r01=v1", "r02=v2", "r07=v7", "r08=v8"}},
		{name: "desc-limit", execs: []*cop.Executor{scan(true), limit(3)}, ranges: two, ts: 100,
			rows: []string{"r08=v8", "r07=v7", "r02=v2"}},
		{name: "three-ranges", execs: []*cop.Executor{scan(false)}, ranges: three, ts: 100,
			rows: []string{"r01=v1", "r04=v4", "r05=new", "r08=v8"}},
		{name: "three-ranges-desc", execs: []*cop.Executor{scan(true)}, ranges: three, ts: 100,
			rows: []string{"r08=v8", "r05=new", "r04=v4", "r01=v1"}},
		{name: "three-ranges-locked", execs: []*cop.Executor{scan(false)}, ranges: three, ts: 300, wantLocked: true},
		{name: "limit", execs: []*cop.Executor{scan(false), limit(2)}, ranges: all, ts: 100,
			rows: []string{"r01=v1", "r02=v2"}},
		{name: "limit-0", execs: []*cop.Executor{scan(false), limit(0)}, ranges: all, ts: 100},
		{name: "count", execs: []*cop.Executor{scan(false), count(2)}, ranges: all, ts: 100, agg: []int64{6, 6}},
		{name: "count-at-15", execs: []*cop.Executor{scan(false), count(1)}, ranges: all, ts: 15, agg: []int64{10}},
		{name: "limit-count", execs: []*cop.Executor{scan(false), limit(4), count(1)}, ranges: all, ts: 100, agg: []int64{4}},
		{name: "locked", execs: []*cop.Executor{scan(false)}, ranges: all, ts: 300, wantLocked: true},
		{name: "locked-after-limit", execs: []*cop.Executor{scan(false), limit(2)}, ranges: all, ts: 300,
			rows: []string{"r01=v1", "r02=v2"}},
		{name: "no-scan", execs: []*cop.Executor{limit(1)}, ranges: all, wantErr: ErrUnsupported},
		{name: "limit-after-agg", execs: []*cop.Executor{scan(false), count(1), limit(1)}, ranges: all, wantErr: ErrUnsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := mvcc.NewSnapshotReader(db, mvcc.ReadOptions{TS: tc.ts})
			defer r.Close()
			resp, err := Execute(r, &cop.DAGRequest{Executors: tc.execs}, tc.ranges)
			if tc.wantLocked {
				var ke *mvcc.KeyError
				require.ErrorAs(t, err, &ke)
				require.Equal(t, []byte("r04"), ke.Err.GetLocked().GetKey())
				return
			}
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			var rows []string
			for _, row := range resp.GetRows() {
				rows = append(rows, string(row.GetKey())+"="+string(row.GetValue()))
			}
			require.Equal(t, tc.rows, rows)
			require.Equal(t, tc.agg, resp.GetAggValues())
		})
	}
}
