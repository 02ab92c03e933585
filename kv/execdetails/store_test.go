package execdetails

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const ms = time.Millisecond

// TestStore: the store's side of RPCs sums into the store stages, and when
// tracing each stage becomes a span inside its RPC's, in the order the
// store runs them, a nested stage at its parent's start.
func TestStore(t *testing.T) {
	var x Details
	start := time.Now()
	x.Begin(start, true)
	var w StoreTimes
	w.Total = 8 * ms
	w.Set(StoreLatchWait, 1*ms)
	w.Set(StoreProcess, 1*ms)
	w.Set(RaftCommitLog, 4*ms)
	w.Set(RaftPersistLog, 2*ms)
	w.Set(RaftApply, 2*ms)
	rpcAt := start.Add(10 * ms)
	x.RPC(Commit, "prewrite", 2, 1, rpcAt, 10*ms, 0, false)
	x.Store(rpcAt, 10*ms, &w)
	x.Store(rpcAt, 10*ms, &w) // a second RPC adds up
	require.Equal(t, 4*ms, x.Get(RaftApply))
	require.Equal(t, 8*ms, x.Get(RaftCommitLog))
	require.Zero(t, x.Get(StoreKVRead))

	spans, _ := x.Spans(nil)
	require.Len(t, spans, 1+2*5)
	// The store's 8 ms centred in the 10 ms RPC: from 11 ms.
	want := []Span{
		{Name: "store_latch_wait", Start: 11 * ms, Dur: 1 * ms},
		{Name: "store_process", Start: 12 * ms, Dur: 1 * ms},
		{Name: "raft_commit_log", Start: 13 * ms, Dur: 4 * ms},
		{Name: "raft_persist_log", Start: 13 * ms, Dur: 2 * ms},
		{Name: "raft_apply", Start: 17 * ms, Dur: 2 * ms},
	}
	require.Equal(t, want, spans[1:6])
	for _, s := range spans[1:] {
		require.GreaterOrEqual(t, s.Start, 10*ms, s.Name)
		require.LessOrEqual(t, s.Start+s.Dur, 20*ms, "%s ends inside its RPC", s.Name)
	}

	// A store that reports more than the client saw (clocks differ): the
	// spans still end by the RPC's end.
	x.Begin(start, true)
	var r StoreTimes
	r.Set(StoreReadIndex, 3*ms)
	r.Set(StoreProcess, 3*ms)
	r.Set(StoreKVRead, 2*ms)
	x.Store(start, 4*ms, &r)
	spans, _ = x.Spans(nil)
	require.Equal(t, []Span{
		{Name: "store_read_index", Start: 0, Dur: 3 * ms},
		{Name: "store_process", Start: 3 * ms, Dur: 1 * ms},
		{Name: "store_kv_read", Start: 3 * ms, Dur: 1 * ms},
	}, spans)

	var none *Details
	none.Store(start, ms, &r) // nil ignores
}

func TestSlowest(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stages map[Stage]time.Duration
		want   Stage
	}{
		{"nothing", nil, NumStages},
		{"client only", map[Stage]time.Duration{Parse: ms, LockKeys: 500 * ms}, LockKeys},
		{"store explains the commit", map[Stage]time.Duration{Commit: 400 * ms, RaftApply: 350 * ms, StoreProcess: ms}, RaftApply},
		{"store too small to explain it", map[Stage]time.Duration{LockKeys: 500 * ms, StoreProcess: 2 * ms}, LockKeys},
		{"half is enough", map[Stage]time.Duration{KVRead: 10 * ms, StoreCMWait: 5 * ms}, StoreCMWait},
		{"store only", map[Stage]time.Duration{StoreWait: ms}, StoreWait},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st [NumStages]time.Duration
			for s, d := range tc.stages {
				st[s] = d
			}
			require.Equal(t, tc.want, Slowest(&st))
		})
	}
	require.Equal(t, "raft_apply", RaftApply.String())
	require.True(t, RaftApply.IsStore())
	require.False(t, Commit.IsStore())
}
