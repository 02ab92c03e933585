package txn

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/store/mvcc"
)

// TestGetAllocs keeps the point get's allocations where they are: the hot
// path of point_select.
func TestGetAllocs(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	k := []byte("row")
	resp, err := h.s.Prewrite(ctx, &kvrpcpb.PrewriteRequest{
		Mutations: []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: k, Value: []byte("value")}}, PrimaryLock: k, StartVersion: 10, LockTtl: 3000,
	})
	require.NoError(t, err)
	require.Empty(t, resp.GetErrors())
	cresp, err := h.s.Commit(ctx, &kvrpcpb.CommitRequest{StartVersion: 10, Keys: [][]byte{k}, CommitVersion: 11})
	require.NoError(t, err)
	require.Nil(t, cresp.GetError())
	h.e.SetSnapshot(func() Snapshot { v, _ := mvcc.NewView(h.e.DB()); return v })
	defer h.e.SetSnapshot(nil)
	req := &kvrpcpb.GetRequest{Context: &kvrpcpb.Context{}, Key: k, Version: 100}
	n := testing.AllocsPerRun(200, func() {
		resp, err := h.s.Get(ctx, req)
		if err != nil || string(resp.GetValue()) != "value" {
			t.Fatalf("get: %v %v", resp, err)
		}
	})
	t.Logf("allocs per get: %v", n)
	require.LessOrEqual(t, n, float64(getAllocs), "a point get allocates more than it did")
}
