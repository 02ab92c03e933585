package client

import (
	"testing"
)

// BenchmarkGet measures a cached-route Get through a fake store over
// loopback gRPC: client overhead plus one RPC round trip.
func BenchmarkGet(b *testing.B) {
	cl := newFakeCluster(b, 1)
	cl.put("key", "value", 10)
	c := cl.client(Config{})
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
}

func BenchmarkGetParallel(b *testing.B) {
	cl := newFakeCluster(b, 1)
	cl.put("key", "value", 10)
	c := cl.client(Config{})
	k := []byte("key")
	if _, _, err := c.Get(bg, k, 20); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, _, err := c.Get(bg, k, 20); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
