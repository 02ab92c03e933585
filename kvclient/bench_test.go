package kvclient

import (
	"testing"
)

// BenchmarkGet measures a cached-route Get through a fake store over
// loopback gRPC: client overhead plus one round trip, as a unary RPC and
// on the BatchCommands stream. The Parallel variants run GOMAXPROCS*8
// concurrent callers (where batching coalesces).
func BenchmarkGet(b *testing.B) {
	for _, mode := range []struct {
		name  string
		unary bool
	}{{"unary", true}, {"batched", false}} {
		b.Run(mode.name, func(b *testing.B) {
			cl := newFakeCluster(b, 1)
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
			cl := newFakeCluster(b, 1)
			cl.put("key", "value", 10)
			c := cl.client(Config{DisableBatch: mode.unary})
			k := []byte("key")
			if _, _, err := c.Get(bg, k, 20); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, _, err := c.Get(bg, k, 20); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
