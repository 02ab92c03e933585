package trace

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv/execdetails"
)

// TestQuantile: the streaming estimate settles near the true p95 of a
// long-tailed latency distribution, and keeps about 5 % of the samples
// above it.
func TestQuantile(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var q Quantile
	var samples []float64
	above, warmN := 0, 0
	for i := range 20000 {
		// A log-normal around 1 ms.
		d := time.Duration(float64(time.Millisecond) * rnExp(rng))
		before, warm := q.Observe(0.95, d)
		require.Equal(t, i >= WarmUp, warm)
		if warm && i >= 2000 {
			warmN++
			if d > before {
				above++
			}
		}
		samples = append(samples, float64(d))
	}
	sort.Float64s(samples)
	truth := samples[len(samples)*95/100]
	require.InEpsilon(t, truth, float64(q.Value()), 0.25, "estimate %v, true p95 %v", q.Value(), time.Duration(truth))
	frac := float64(above) / float64(warmN)
	require.InDelta(t, 0.05, frac, 0.03, "fraction above the estimate")
}

func rnExp(rng *rand.Rand) float64 { return math.Exp(rng.NormFloat64() * 0.5) }

// TestTree: spans nest by time containment under the root, in start
// order; an RPC that starts with its stage goes under it.
func TestTree(t *testing.T) {
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	spans := []Span{
		{Name: "parse", StartNS: 0, DurNS: ms(1)},
		{Name: "pessimistic_lock", RPC: true, Region: 7, Store: 2, StartNS: ms(2), DurNS: ms(500), Retries: 1},
		{Name: "lock_keys", StartNS: ms(2), DurNS: ms(501)},
		{Name: "prewrite", RPC: true, Region: 7, Store: 2, StartNS: ms(505), DurNS: ms(3)},
		{Name: "tso_wait", StartNS: ms(509), DurNS: ms(1)},
		{Name: "commit", StartNS: ms(504), DurNS: ms(7)},
	}
	var got []string
	for _, n := range Tree("Update", 520*time.Millisecond, spans) {
		got = append(got, string(rune('0'+n.Depth))+" "+n.Label())
	}
	require.Equal(t, []string{
		"0 Update",
		"1 parse",
		"1 lock_keys",
		"2 rpc.pessimistic_lock region=7 store=2 retries=1",
		"1 commit",
		"2 rpc.prewrite region=7 store=2",
		"2 tso_wait",
	}, got)
}

// TestRing: newest first, the oldest overwritten.
func TestRing(t *testing.T) {
	r := NewRing[int](3)
	require.Empty(t, r.Recent())
	for i := range 5 {
		v := i
		r.Add(&v)
	}
	var got []int
	for _, v := range r.Recent() {
		got = append(got, *v)
	}
	require.Equal(t, []int{4, 3, 2}, got)
}

// TestKeep copies the recorded spans of a Details.
func TestKeep(t *testing.T) {
	var x execdetails.Details
	start := time.Now()
	x.Begin(start, true)
	x.Since(execdetails.Compile, start)
	x.RPC(execdetails.KVRead, "get", 3, 1, start, time.Millisecond, 2, false)
	spans, over := x.Spans(nil)
	var tr Trace
	Keep(&tr, spans, over)
	require.Len(t, tr.Spans, 2)
	require.Equal(t, "compile", tr.Spans[0].Name)
	require.Equal(t, Span{Name: "get", DurNS: int64(time.Millisecond), RPC: true, Region: 3, Store: 1, Retries: 2}, tr.Spans[1])
	require.Equal(t, time.Millisecond, x.Get(execdetails.KVRead), "the RPC counts in its stage")
}

// BenchmarkStatement is what tracing adds to a point select on the SQL
// node's CPU: a statement's Begin, its four spans (parse, compile,
// tso_wait, the get RPC) and the keep decision, with tracing on and off.
func BenchmarkStatement(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			var x execdetails.Details
			var q Quantile
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				x.Begin(start, on)
				x.Since(execdetails.Parse, start)
				x.Since(execdetails.Compile, start)
				x.Since(execdetails.TSOWait, start)
				x.RPC(execdetails.KVRead, "get", 2, 1, start, time.Millisecond, 0, false)
				q.Observe(0.95, time.Since(start))
				_ = x.Tracing()
			}
		})
	}
}
