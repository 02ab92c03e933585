package kvclient

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/kvclient/rpcstats"
	"github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/store/storetest"
)

func rowInts(t *testing.T, resps []*coprocessorpb.SelectResponse) []int {
	var got []int
	for _, sr := range resps {
		for _, row := range sr.Rows {
			var i int
			_, err := fmt.Sscanf(string(row.Key), "k%02d", &i)
			require.NoError(t, err)
			got = append(got, i)
		}
	}
	return got
}

// TestCoprocessorStoreBatch: regions whose leaders share a store are
// asked in one RPC of up to CopStoreBatch tasks; a batched task whose
// region split meanwhile is retried alone; every row comes back once,
// in key order, and the RPCs are counted on the context's counter.
func TestCoprocessorStoreBatch(t *testing.T) {
	cl := newStores(t, 2)
	for i := range 40 {
		cl.put(key(i), "v", 10)
	}
	// Regions [0,4) [4,8) ... [36,∞): ten, the last two led by store 2.
	for i := 4; i < 40; i += 4 {
		id := cl.split(key(i))
		if i >= 32 {
			cl.SetLeader(id, 2, true)
		}
	}
	c := cl.client(Config{CopStoreBatch: 4})
	all := []*kvrpcpb.KeyRange{{Start: []byte("")}}
	scan := scanDAG()
	var n rpcstats.Counter
	resps, err := c.Coprocessor(rpcstats.With(bg, &n), scan, all, 20)
	require.NoError(t, err)
	require.Len(t, resps, 10)
	require.Equal(t, seq(0, 40), rowInts(t, resps))
	// Store 1: 8 tasks in 2 RPCs; store 2: 2 tasks in 1.
	require.Equal(t, 2, cl.NodeCalls(1, "Coprocessor"))
	require.Equal(t, 1, cl.NodeCalls(2, "Coprocessor"))
	require.EqualValues(t, 3, n.Cop())

	// Split regions behind the cache: one is a batch's first task (its
	// RPC is redone task by task), one a batched task (retried alone).
	cl.split(key(2))
	cl.split(key(14))
	resps, err = c.Coprocessor(bg, countDAG(), all, 20)
	require.NoError(t, err)
	var total int64
	for _, r := range resps {
		total += r.AggValues[0]
	}
	require.EqualValues(t, 40, total, "no region counted twice or missed")
	resps, err = c.Coprocessor(bg, scan, all, 20)
	require.NoError(t, err)
	require.Equal(t, seq(0, 40), rowInts(t, resps))

	// Batching off: one RPC per region.
	c1 := cl.client(Config{CopStoreBatch: 1})
	var n1 rpcstats.Counter
	resps, err = c1.Coprocessor(rpcstats.With(bg, &n1), scan, all, 20)
	require.NoError(t, err)
	require.Equal(t, seq(0, 40), rowInts(t, resps))
	require.EqualValues(t, 12, n1.Cop())
}

// TestCoprocessorStoreWithoutBatching: a store that ignores the batched
// tasks (answers the first region only) gets them again one by one.
func TestCoprocessorStoreWithoutBatching(t *testing.T) {
	cl := newCluster(t, storetest.Options{IgnoreStoreBatch: true})
	for i := range 20 {
		cl.put(key(i), "v", 10)
	}
	for i := 5; i < 20; i += 5 {
		cl.split(key(i))
	}
	c := cl.client(Config{})
	var n rpcstats.Counter
	resps, err := c.Coprocessor(rpcstats.With(bg, &n), scanDAG(), []*kvrpcpb.KeyRange{{Start: []byte("")}}, 20)
	require.NoError(t, err)
	require.Equal(t, seq(0, 20), rowInts(t, resps))
	require.EqualValues(t, 4, n.Cop(), "one batched RPC, then the three other regions alone")
}

// TestCoprocessorPagedTasks: a store that ends pages (page_scan_rows)
// gets the rest of each task's ranges again, batched or not, and every
// row comes back once in key order.
func TestCoprocessorPagedTasks(t *testing.T) {
	for _, batch := range []int{1, 4} {
		t.Run(fmt.Sprint("batch=", batch), func(t *testing.T) {
			cl := newStores(t, 2)
			for i := range 30 {
				cl.put(key(i), "v", 10)
			}
			for i := 10; i < 30; i += 10 {
				cl.split(key(i))
			}
			c := cl.client(Config{CopStoreBatch: batch})
			ranges := []*kvrpcpb.KeyRange{
				{Start: []byte(key(1)), End: []byte(key(5))},
				{Start: []byte(key(7)), End: []byte(key(23))},
				{Start: []byte(key(26))},
			}
			dag := scanDAG()
			dag.PageScanRows = 3
			var n rpcstats.Counter
			resps, err := c.Coprocessor(rpcstats.With(bg, &n), dag, ranges, 20)
			require.NoError(t, err)
			want := append(append(seq(1, 5), seq(7, 23)...), seq(26, 30)...)
			require.Equal(t, want, rowInts(t, resps))
			for _, r := range resps {
				require.LessOrEqual(t, len(r.Rows), 3)
			}
			// Regions hold 7, 13 (k07..k09 and k10..k19, k20..k22) ... rows:
			// [1,5)+[7,10) = 7 rows → 3 pages; [10,20) → 4; [20,23)+[26,30) = 7 → 3.
			want10 := 3 + 4 + 3
			if batch == 1 {
				require.EqualValues(t, want10, n.Cop())
			} else {
				require.EqualValues(t, 4, n.Cop(), "pages of the three regions go together")
			}
		})
	}
}

func TestResumeRanges(t *testing.T) {
	kr := func(s, e string) *kvrpcpb.KeyRange {
		r := &kvrpcpb.KeyRange{Start: []byte(s)}
		if e != "" {
			r.End = []byte(e)
		}
		return r
	}
	str := func(rs []*kvrpcpb.KeyRange) []string {
		var out []string
		for _, r := range rs {
			out = append(out, string(r.Start)+"-"+string(r.End))
		}
		return out
	}
	rs := []*kvrpcpb.KeyRange{kr("a", "c"), kr("e", "g"), kr("k", "")}
	require.Equal(t, []string{"b-c", "e-g", "k-"}, str(resumeRanges(rs, []byte("b"), false)))
	require.Equal(t, []string{"e-g", "k-"}, str(resumeRanges(rs, []byte("c"), false)))
	require.Equal(t, []string{"e-g", "k-"}, str(resumeRanges(rs, []byte("d"), false)))
	require.Equal(t, []string{"z-"}, str(resumeRanges(rs, []byte("z"), false)))
	require.Equal(t, []string{"a-c", "e-f"}, str(resumeRanges(rs, []byte("f"), true)))
	require.Equal(t, []string{"a-c", "e-g", "k-m"}, str(resumeRanges(rs, []byte("m"), true)))
	require.Equal(t, []string{"a-c"}, str(resumeRanges(rs, []byte("e"), true)))
	require.Empty(t, resumeRanges(rs, []byte("a"), true))
	require.Equal(t, "a", string(rs[0].Start), "input untouched")
	require.Equal(t, "c", string(rs[0].End))
}

// TestCoprocessorSplitBetweenPages: regions split while their tasks are
// being paged (batched or not); the tasks re-split from their resume
// points and every row comes back exactly once, in key order.
func TestCoprocessorSplitBetweenPages(t *testing.T) {
	for _, batch := range []int{1, 4} {
		t.Run(fmt.Sprint("batch=", batch), func(t *testing.T) {
			cl := newStores(t, 1)
			for i := range 40 {
				cl.put(key(i), "v", 10)
			}
			for i := 10; i < 40; i += 10 {
				cl.split(key(i))
			}
			var calls atomic.Int32
			cl.Inject(&storetest.Fault{Method: "Coprocessor",
				Match: func(proto.Message) bool { return calls.Add(1) == 2 },
				// After the first pages: split the first and the third
				// region ahead of and behind their resume points.
				Do: func(context.Context, proto.Message) {
					cl.split(key(5))
					cl.split(key(23))
					cl.split(key(27))
				}})
			c := cl.client(Config{CopStoreBatch: batch})
			dag := scanDAG()
			dag.PageScanRows = 4
			resps, err := c.Coprocessor(bg, dag, []*kvrpcpb.KeyRange{{Start: []byte(key(1)), End: []byte(key(38))}}, 20)
			require.NoError(t, err)
			require.Equal(t, seq(1, 38), rowInts(t, resps))
			for _, r := range resps {
				require.LessOrEqual(t, len(r.Rows), 4)
			}
			require.Greater(t, calls.Load(), int32(2))
		})
	}
}
