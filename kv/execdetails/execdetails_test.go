package execdetails

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDetails(t *testing.T) {
	bg := context.Background()
	require.Nil(t, From(bg))
	From(bg).Add(KVRead, time.Second) // a nil Details ignores adds
	require.Zero(t, From(bg).Get(KVRead))

	var x Details
	ctx := With(bg, &x)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { From(ctx).Add(KVRead, time.Millisecond) })
	}
	wg.Wait()
	From(ctx).Add(Backoff, 3*time.Millisecond)
	require.Equal(t, 8*time.Millisecond, x.Get(KVRead))
	require.Equal(t, 3*time.Millisecond, x.Get(Backoff))
	x.Reset()
	for s := range NumStages {
		require.Zero(t, x.Get(s), s.String())
	}
	require.Equal(t, "lock_keys", LockKeys.String())
}

// TestSpans: spans are recorded only while tracing, relative to Begin,
// at most MaxSpans of them; Begin empties the buffer and keeps its memory.
func TestSpans(t *testing.T) {
	var x Details
	start := time.Now()
	x.Begin(start, false)
	x.Since(Parse, start)
	x.RPC(NumStages, "get", 1, 1, start, time.Millisecond, 0, false)
	spans, over := x.Spans(nil)
	require.Empty(t, spans)
	require.Zero(t, over)
	require.Greater(t, x.Get(Parse), time.Duration(0), "stages count with tracing off")

	x.Begin(start, true)
	require.Zero(t, x.Get(Parse))
	x.Add(Backoff, 2*time.Millisecond)
	x.RPC(KVRead, "get", 9, 3, start.Add(time.Millisecond), time.Millisecond, 1, true)
	spans, _ = x.Spans(nil)
	require.Len(t, spans, 2)
	require.Equal(t, "backoff", spans[0].Name)
	require.Equal(t, 2*time.Millisecond, spans[0].Dur)
	require.Equal(t, Span{Name: "get", Start: time.Millisecond, Dur: time.Millisecond, RPC: true, Region: 9, Store: 3, Retries: 1, Failed: true}, spans[1])

	for range MaxSpans + 5 {
		x.Add(KVRead, time.Microsecond)
	}
	spans, over = x.Spans(spans[:0])
	require.Len(t, spans, MaxSpans)
	require.Equal(t, 7, over)
	x.Begin(time.Now(), true)
	spans, over = x.Spans(nil)
	require.Empty(t, spans)
	require.Zero(t, over)
	require.GreaterOrEqual(t, cap(x.spans), MaxSpans, "the buffer is reused")
}
