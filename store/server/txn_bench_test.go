package server

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/storepb"
)

// report records ops/s and latency percentiles of lat.
func report(b *testing.B, lat [][]time.Duration, elapsed time.Duration) {
	all := slices.Concat(lat...)
	require.NotEmpty(b, all)
	slices.Sort(all)
	pct := func(p float64) time.Duration { return all[min(len(all)-1, int(p*float64(len(all))))] }
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "ops/s")
	b.ReportMetric(float64(pct(0.50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(pct(0.99).Microseconds()), "p99-µs")
	b.Logf("n=%d ops/s=%.0f p50=%v p99=%v max=%v", len(all), float64(len(all))/elapsed.Seconds(), pct(0.50), pct(0.99), all[len(all)-1])
}

// streamMux multiplexes concurrent callers on one BatchCommands stream
// (the client side in small, for the benchmark).
type streamMux struct {
	mu      sync.Mutex
	stream  storepb.Store_BatchCommandsClient
	next    uint64
	waiting map[uint64]chan *storepb.BatchCommandsResponse_Response
}

func newStreamMux(b *testing.B, cl storepb.StoreClient) *streamMux {
	stream, err := cl.BatchCommands(context.Background())
	require.NoError(b, err)
	m := &streamMux{stream: stream, waiting: map[uint64]chan *storepb.BatchCommandsResponse_Response{}}
	go func() {
		for {
			msg, err := stream.Recv()
			if err != nil {
				return
			}
			m.mu.Lock()
			for i, r := range msg.GetResponses() {
				ch := m.waiting[msg.GetRequestIds()[i]]
				delete(m.waiting, msg.GetRequestIds()[i])
				ch <- r
			}
			m.mu.Unlock()
		}
	}()
	return m
}

func (m *streamMux) do(r *storepb.BatchCommandsRequest_Request) *storepb.BatchCommandsResponse_Response {
	ch := make(chan *storepb.BatchCommandsResponse_Response, 1)
	m.mu.Lock()
	m.next++
	id := m.next
	m.waiting[id] = ch
	err := m.stream.Send(&storepb.BatchCommandsRequest{Requests: []*storepb.BatchCommandsRequest_Request{r}, RequestIds: []uint64{id}})
	m.mu.Unlock()
	if err != nil {
		return &storepb.BatchCommandsResponse_Response{Error: err.Error()}
	}
	return <-ch
}

// BenchmarkKvGet: 16 concurrent point gets of one key on the leader of a
// 3-replica region, each a unary RPC or multiplexed on one BatchCommands
// stream.
//
//	go test -run NONE -bench KvGet -benchtime 20000x ./kv/server
func BenchmarkKvGet(b *testing.B) {
	c := newTestCluster(b)
	c.put("k", "value")
	const readers = 16
	for _, mode := range []string{"unary", "batch"} {
		b.Run(mode, func(b *testing.B) {
			n := c.nodes[c.leader()]
			rctx := c.reqCtx()
			mux := newStreamMux(b, n.client)
			defer mux.stream.CloseSend()
			var next atomic.Int64
			lat := make([][]time.Duration, readers)
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for w := range readers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						req := &kvrpcpb.GetRequest{Context: rctx, Key: []byte("k"), Version: ^uint64(0)}
						t0 := time.Now()
						var resp *kvrpcpb.GetResponse
						if mode == "unary" {
							var err error
							resp, err = n.client.KvGet(context.Background(), req)
							require.NoError(b, err)
						} else {
							r := mux.do(&storepb.BatchCommandsRequest_Request{Cmd: &storepb.BatchCommandsRequest_Request_Get{Get: req}})
							require.Empty(b, r.GetError())
							resp = r.GetGet()
						}
						lat[w] = append(lat[w], time.Since(t0))
						require.Equal(b, "value", string(resp.GetValue()))
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			report(b, lat, time.Since(start))
		})
	}
}

// BenchmarkTxnCommit: one writer committing a 2-key transaction with plain
// 2PC (prewrite, then commit), async commit (one prewrite round; commit
// after) and 1PC, each step waiting for its raft write.
//
//	go test -run NONE -bench TxnCommit -benchtime 300x ./kv/server
func BenchmarkTxnCommit(b *testing.B) {
	c := newTestCluster(b)
	c.put("warmup", "x")
	for _, mode := range []string{"2pc", "async", "1pc"} {
		b.Run(mode, func(b *testing.B) {
			n := c.nodes[c.leader()]
			rctx := c.reqCtx()
			lat := make([][]time.Duration, 1)
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				k1, k2 := fmt.Appendf(nil, "%s-%d-a", mode, i), fmt.Appendf(nil, "%s-%d-b", mode, i)
				ts := c.nextTS()
				t0 := time.Now()
				pre, err := n.client.KvPrewrite(context.Background(), &kvrpcpb.PrewriteRequest{
					Context: rctx, Mutations: []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: k1, Value: []byte("v")}, {Op: kvrpcpb.Op_Put, Key: k2, Value: []byte("v")}},
					PrimaryLock: k1, StartVersion: ts, LockTtl: 3000,
					UseAsyncCommit: mode == "async", Secondaries: [][]byte{k2}, TryOnePc: mode == "1pc",
				})
				require.NoError(b, err)
				require.Empty(b, pre.GetErrors())
				require.Nil(b, pre.GetRegionError())
				if mode == "2pc" {
					cm, err := n.client.KvCommit(context.Background(), &kvrpcpb.CommitRequest{Context: rctx, StartVersion: ts, Keys: [][]byte{k1, k2}, CommitVersion: c.nextTS()})
					require.NoError(b, err)
					require.Nil(b, cm.GetError())
				}
				lat[0] = append(lat[0], time.Since(t0)) // async: the client is answered here
				if mode == "async" {
					cm, err := n.client.KvCommit(context.Background(), &kvrpcpb.CommitRequest{Context: rctx, StartVersion: ts, Keys: [][]byte{k1, k2}, CommitVersion: pre.GetMinCommitTs()})
					require.NoError(b, err)
					require.Nil(b, cm.GetError())
				}
			}
			b.StopTimer()
			report(b, lat, time.Since(start))
		})
	}
}
