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
//	go test -run NONE -bench StorageGet -benchmem ./store/txn
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
	view := func() Snapshot { v, _ := mvcc.NewView(h.e.DB()); return v }
	for _, tc := range []struct {
		name  string
		snap  func() Snapshot
		setup func(b *testing.B)
	}{
		{"snapshot", func() Snapshot { return h.e.DB().NewSnapshot() }, nil},
		{"view", view, nil},
		// The rows in one of four SSTables, the other three holding other
		// rows: what a store's point read meets once memtables flush.
		{"view-sstables", view, func(b *testing.B) { flushWithOtherRows(b, h, n) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			if tc.setup != nil {
				tc.setup(b)
			}
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

// flushWithOtherRows flushes h's engine, then writes and flushes n rows
// of other keys three times.
func flushWithOtherRows(b *testing.B, h *harness, n int) {
	ctx := context.Background()
	if err := h.e.DB().Flush(); err != nil {
		b.Fatal(err)
	}
	for t := range 3 {
		muts := make([]*kvrpcpb.Mutation, n)
		keys := make([][]byte, n)
		for i := range muts {
			keys[i] = fmt.Appendf(nil, "other%d-%04d", t, i)
			muts[i] = &kvrpcpb.Mutation{Op: kvrpcpb.Op_Put, Key: keys[i], Value: []byte("value")}
		}
		start := uint64(20 + 2*t)
		resp, err := h.s.Prewrite(ctx, &kvrpcpb.PrewriteRequest{Mutations: muts, PrimaryLock: keys[0], StartVersion: start, LockTtl: 3000})
		if err != nil || len(resp.GetErrors()) > 0 {
			b.Fatalf("prewrite: %v %v", err, resp.GetErrors())
		}
		cresp, err := h.s.Commit(ctx, &kvrpcpb.CommitRequest{StartVersion: start, Keys: keys, CommitVersion: start + 1})
		if err != nil || cresp.GetError() != nil {
			b.Fatalf("commit: %v %v", err, cresp.GetError())
		}
		if err := h.e.DB().Flush(); err != nil {
			b.Fatal(err)
		}
	}
}
