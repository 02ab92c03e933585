package txn

import (
	"context"
	"fmt"
	"testing"

	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/store/mvcc"
)

// BenchmarkStorageGet: the store's point read below gRPC (ReadIndex of the
// test engine, concurrency-manager check, view, lock check, write-record
// seek) for a committed short value among 1000 keys, read through a
// pebble.Snapshot and through an mvcc.View (what store/server uses).
//
//	go test -run NONE -bench StorageGet -benchmem ./kv/txn
func BenchmarkStorageGet(b *testing.B) {
	ctx := context.Background()
	h := newHarness(b)
	const n = 1000
	for i := range n {
		k := fmt.Appendf(nil, "row%04d", i)
		resp, err := h.s.Prewrite(ctx, &kvrpcpb.PrewriteRequest{
			Mutations:    []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: k, Value: []byte("value")}},
			PrimaryLock:  k,
			StartVersion: 10,
			LockTtl:      3000,
		})
		if err != nil || len(resp.GetErrors()) > 0 {
			b.Fatalf("prewrite: %v %v", err, resp.GetErrors())
		}
		cresp, err := h.s.Commit(ctx, &kvrpcpb.CommitRequest{StartVersion: 10, Keys: [][]byte{k}, CommitVersion: 11})
		if err != nil || cresp.GetError() != nil {
			b.Fatalf("commit: %v %v", err, cresp.GetError())
		}
	}
	require := func(resp *kvrpcpb.GetResponse, err error) {
		if err != nil || resp.GetError() != nil || string(resp.GetValue()) != "value" {
			b.Fatalf("get: %v %v %q", err, resp.GetError(), resp.GetValue())
		}
	}
	for _, tc := range []struct {
		name string
		snap func() Snapshot
	}{
		{"snapshot", func() Snapshot { return h.e.DB().NewSnapshot() }},
		{"view", func() Snapshot { v, _ := mvcc.NewView(h.e.DB()); return v }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			h.e.SetSnapshot(tc.snap)
			defer h.e.SetSnapshot(nil)
			reqs := make([]*kvrpcpb.GetRequest, n)
			for i := range reqs {
				reqs[i] = &kvrpcpb.GetRequest{Context: &kvrpcpb.Context{}, Key: fmt.Appendf(nil, "row%04d", i), Version: 100}
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				require(h.s.Get(ctx, reqs[i%n]))
			}
		})
	}
}
