package kvclient

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// BenchmarkGet measures a cached-route Get through a store (storetest:
// the real transaction layer over an in-memory engine) over loopback
// gRPC: client overhead plus one round trip and the store's read, as a
// unary RPC and on the BatchCommands stream. The Parallel variants run GOMAXPROCS*8
// concurrent callers (where batching coalesces); the batched ones report
// req/msg, the mean number of requests per BatchCommands message.
func BenchmarkGet(b *testing.B) {
	for _, mode := range []struct {
		name  string
		unary bool
	}{{"unary", true}, {"batched", false}} {
		b.Run(mode.name, func(b *testing.B) {
			cl := newStores(b, 1)
			cl.put("key", "value", 10)
			c := cl.client(Config{DisableBatch: mode.unary})
			k := []byte("key")
			if _, _, err := c.Get(bg, k, 20); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := c.Get(bg, k, 20); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkGetParallel(b *testing.B) {
	for _, mode := range []struct {
		name  string
		unary bool
	}{{"unary", true}, {"batched", false}} {
		b.Run(mode.name, func(b *testing.B) {
			cl := newStores(b, 1)
			cl.put("key", "value", 10)
			c := cl.client(Config{DisableBatch: mode.unary})
			k := []byte("key")
			if _, _, err := c.Get(bg, k, 20); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetParallelism(8)
			msgs, reqs := batchSizeTotals()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, _, err := c.Get(bg, k, 20); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			if !mode.unary {
				msgs2, reqs2 := batchSizeTotals()
				b.ReportMetric((reqs2-reqs)/float64(msgs2-msgs), "req/msg")
			}
		})
	}
}

// batchSizeTotals reads the batch size histogram: messages sent and the
// requests they carried, over every store connection of the process.
func batchSizeTotals() (msgs uint64, reqs float64) {
	var m dto.Metric
	if err := batchSize.Write(&m); err != nil {
		panic(err)
	}
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}
