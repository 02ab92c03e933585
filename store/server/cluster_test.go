package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/pd/pdclient"
	"github.com/stratadb/strata/pd/pdtest"
	"github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/proto/errorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/storepb"
	"github.com/stratadb/strata/raftstore"
	"github.com/stratadb/strata/store/mvcc"
)

const waitFor = 20 * time.Second

// testCluster is a real PD plus in-process store nodes (three unless
// newTestClusterOf says otherwise) on loopback.
type testCluster struct {
	t     testing.TB
	pd    *pdclient.Client
	pdURL string
	nodes []*testNode
	ts    uint64
	tsMu  sync.Mutex
	opts  []func(*Config) // applied to every node's config
}

type testNode struct {
	dir    string
	srv    *Server
	cancel context.CancelFunc
	done   chan error
	conn   *grpc.ClientConn
	client storepb.StoreClient
}

func newTestCluster(t testing.TB, opts ...func(*Config)) *testCluster {
	return newTestClusterOf(t, 3, opts...)
}

// newTestClusterOf is newTestCluster with n store nodes (n replicas).
func newTestClusterOf(t testing.TB, n int, opts ...func(*Config)) *testCluster {
	pdAddr := pdtest.Start(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	pd, err := pdclient.New(ctx, []string{pdAddr})
	require.NoError(t, err)
	t.Cleanup(func() { pd.Close() })
	c := &testCluster{t: t, pd: pd, pdURL: pdAddr, opts: opts}
	for range n {
		c.nodes = append(c.nodes, &testNode{dir: t.TempDir()})
	}
	t.Cleanup(func() {
		for i := range c.nodes {
			c.stop(i)
		}
	})
	for i := range c.nodes {
		c.start(i)
	}
	return c
}

func (c *testCluster) start(i int) {
	t := c.t
	n := c.nodes[i]
	cfg := Config{
		PDEndpoints:       []string{c.pdURL},
		Addr:              "127.0.0.1:0",
		DataDir:           n.dir,
		RaftTick:          10 * time.Millisecond,
		ElectionTicks:     10,
		HeartbeatTicks:    2,
		HeartbeatInterval: 100 * time.Millisecond,
		Logger:            slog.New(slog.NewTextHandler(io.Discard, nil)),
		// These tests use their own small timestamps (nextTS), not PD's.
		TSO: syntheticTSO{},
	}
	for _, o := range c.opts {
		o(&cfg)
	}
	srv, err := New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	n.srv, n.cancel, n.done = srv, cancel, make(chan error, 1)
	go func() { n.done <- srv.Run(ctx) }()
	select {
	case <-srv.Ready():
	case err := <-n.done:
		require.FailNow(t, "store exited", "%v", err)
	case <-time.After(waitFor):
		require.FailNow(t, "store not ready")
	}
	n.conn, err = grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	n.client = storepb.NewStoreClient(n.conn)
}

func (c *testCluster) stop(i int) {
	n := c.nodes[i]
	if n.srv == nil {
		return
	}
	n.conn.Close()
	n.cancel()
	select {
	case err := <-n.done:
		require.NoError(c.t, err)
	case <-time.After(waitFor):
		require.FailNow(c.t, "store did not stop")
	}
	n.srv = nil
}

// syntheticTSO leaves the max read timestamp to the reads themselves: the
// tests' timestamps come from nextTS, so a PD timestamp would be far above
// all of them.
type syntheticTSO struct{}

func (syntheticTSO) GetTS(context.Context) (uint64, error) { return 0, nil }

func (c *testCluster) nextTS() uint64 {
	c.tsMu.Lock()
	defer c.tsMu.Unlock()
	c.ts += 10
	return c.ts
}

// leaderNow returns the node index leading the region, or -1.
func (c *testCluster) leaderNow() int {
	r := c.region()
	if r == nil {
		return -1
	}
	for i, n := range c.nodes {
		if n.srv != nil && n.srv.Store().IsLeader(r.GetId()) {
			return i
		}
	}
	return -1
}

// leader waits for a leader and returns its node index.
func (c *testCluster) leader() int {
	require.Eventually(c.t, func() bool { return c.leaderNow() >= 0 }, waitFor, 5*time.Millisecond, "no leader")
	return c.leaderNow()
}

// region is the (single) region, as known by any running store.
func (c *testCluster) region() *metapb.Region {
	for _, n := range c.nodes {
		if n.srv != nil {
			if rs := n.srv.Store().Regions(); len(rs) > 0 {
				return rs[0]
			}
		}
	}
	return nil
}

func (c *testCluster) reqCtx() *kvrpcpb.Context {
	r := c.region()
	return &kvrpcpb.Context{RegionId: r.GetId(), RegionEpoch: r.GetRegionEpoch()}
}

// retry calls f on the current leader until it reports done.
func (c *testCluster) retry(f func(n *testNode) bool) {
	deadline := time.Now().Add(waitFor)
	for time.Now().Before(deadline) {
		if l := c.leaderNow(); l >= 0 && f(c.nodes[l]) {
			return
		}
		time.Sleep(5 * time.Millisecond) // backoff between retries, not synchronisation
	}
	require.FailNow(c.t, "request did not succeed before the deadline")
}

// retryable reports whether a region error means "ask again (elsewhere)".
func retryable(e *errorpb.Error) bool {
	return e.GetNotLeader() != nil || e.GetStaleCommand() != nil || e.GetServerIsBusy() != nil
}

// onePCRequest is a write of muts (in one region) committed by 1PC, as the
// SQL node's transactions send it: a prewrite with try_one_pc that read at
// startTS, committed at commitTS or above.
func onePCRequest(rctx *kvrpcpb.Context, muts []*kvrpcpb.Mutation, startTS, commitTS uint64) *kvrpcpb.PrewriteRequest {
	return &kvrpcpb.PrewriteRequest{Context: rctx, Mutations: muts, PrimaryLock: muts[0].GetKey(), StartVersion: startTS,
		LockTtl: 3000, TxnSize: uint64(len(muts)), MinCommitTs: commitTS, TryOnePc: true}
}

// onePC writes through the current leader, retrying on leader changes.
func (c *testCluster) onePC(muts []*kvrpcpb.Mutation, startTS, commitTS uint64) *kvrpcpb.PrewriteResponse {
	var resp *kvrpcpb.PrewriteResponse
	c.retry(func(n *testNode) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var err error
		resp, err = n.client.KvPrewrite(ctx, onePCRequest(c.reqCtx(), muts, startTS, commitTS))
		if err != nil || retryable(resp.GetRegionError()) {
			return false
		}
		require.Nil(c.t, resp.GetRegionError())
		return true
	})
	return resp
}

func (c *testCluster) put(key, value string) {
	ts := c.nextTS()
	resp := c.onePC([]*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte(key), Value: []byte(value)}}, ts-5, ts)
	for _, ke := range resp.GetErrors() {
		// onePC resends after an RPC error; a resend that meets the
		// write of its own earlier attempt (a conflict with its own
		// start_ts, unique to this put) finds the put already applied.
		if wc := ke.GetConflict(); wc != nil && wc.GetConflictTs() == ts-5 {
			continue
		}
		require.Failf(c.t, "put failed", "%s: %v", key, ke)
	}
}

func (c *testCluster) get(key string, version uint64) *kvrpcpb.GetResponse {
	var resp *kvrpcpb.GetResponse
	c.retry(func(n *testNode) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var err error
		resp, err = n.client.KvGet(ctx, &kvrpcpb.GetRequest{Context: c.reqCtx(), Key: []byte(key), Version: version})
		if err != nil || retryable(resp.GetRegionError()) {
			return false
		}
		require.Nil(c.t, resp.GetRegionError())
		return true
	})
	return resp
}

func (c *testCluster) scan(start, end string, limit uint32) map[string]string {
	var resp *kvrpcpb.ScanResponse
	c.retry(func(n *testNode) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var err error
		resp, err = n.client.KvScan(ctx, &kvrpcpb.ScanRequest{Context: c.reqCtx(), StartKey: []byte(start), EndKey: []byte(end), Limit: limit, Version: ^uint64(0)})
		if err != nil || retryable(resp.GetRegionError()) {
			return false
		}
		require.Nil(c.t, resp.GetRegionError())
		return true
	})
	out := map[string]string{}
	for _, p := range resp.GetPairs() {
		out[string(p.GetKey())] = string(p.GetValue())
	}
	return out
}

func TestClusterWriteReadFailover(t *testing.T) {
	// The replay steps below rebuild state machines from the whole log.
	c := newTestCluster(t, func(cfg *Config) { cfg.RaftLogGCInterval = -1 })
	want := map[string]string{}
	write := func(from, to int) {
		for i := from; i < to; i++ {
			k, v := fmt.Sprintf("k%03d", i), fmt.Sprintf("v%d", i)
			c.put(k, v)
			want[k] = v
		}
	}
	write(0, 20)
	require.Equal(t, want, c.scan("", "", 0))
	require.Equal(t, "v7", string(c.get("k007", ^uint64(0)).GetValue()))
	require.True(t, c.get("nope", ^uint64(0)).GetNotFound())
	require.Len(t, c.scan("k005", "k010", 0), 5)
	require.Len(t, c.scan("k005", "", 3), 3)

	t.Run("already-exist", func(t *testing.T) {
		ts := c.nextTS()
		resp := c.onePC([]*kvrpcpb.Mutation{
			{Op: kvrpcpb.Op_Insert, Key: []byte("fresh"), Value: []byte("x")},
			{Op: kvrpcpb.Op_Insert, Key: []byte("k001"), Value: []byte("dup")},
		}, ts-5, ts)
		require.Len(t, resp.GetErrors(), 1)
		require.Equal(t, []byte("k001"), resp.GetErrors()[0].GetAlreadyExist().GetKey())
		require.True(t, c.get("fresh", ^uint64(0)).GetNotFound(), "a failed 1PC writes nothing")
		require.Equal(t, "v1", string(c.get("k001", ^uint64(0)).GetValue()))
	})

	t.Run("write-conflict", func(t *testing.T) {
		resp := c.onePC([]*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte("k002"), Value: []byte("late")}}, 1, c.nextTS())
		require.Len(t, resp.GetErrors(), 1)
		require.NotNil(t, resp.GetErrors()[0].GetConflict())
	})

	t.Run("delete-then-insert", func(t *testing.T) {
		ts := c.nextTS()
		resp := c.onePC([]*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Del, Key: []byte("k003")}}, ts-5, ts)
		require.Empty(t, resp.GetErrors())
		require.True(t, c.get("k003", ^uint64(0)).GetNotFound())
		require.Equal(t, "v3", string(c.get("k003", ts-1).GetValue()), "older snapshot still sees it")
		ts = c.nextTS()
		resp = c.onePC([]*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Insert, Key: []byte("k003"), Value: []byte("v3")}}, ts-5, ts)
		require.Empty(t, resp.GetErrors())
	})

	t.Run("not-leader-hint", func(t *testing.T) {
		l := c.leader()
		f := (l + 1) % 3
		resp, err := c.nodes[f].client.KvGet(context.Background(), &kvrpcpb.GetRequest{Context: c.reqCtx(), Key: []byte("k001"), Version: 1})
		require.NoError(t, err)
		nl := resp.GetRegionError().GetNotLeader()
		require.NotNil(t, nl)
		require.Equal(t, c.nodes[l].srv.Store().ID(), nl.GetLeader().GetStoreId())
		resp, err = c.nodes[l].client.KvGet(context.Background(), &kvrpcpb.GetRequest{
			Context: &kvrpcpb.Context{RegionId: c.region().GetId(), RegionEpoch: &metapb.RegionEpoch{ConfVer: 9, Version: 9}}, Key: []byte("k001"), Version: 1})
		require.NoError(t, err)
		require.NotNil(t, resp.GetRegionError().GetEpochNotMatch())
		resp, err = c.nodes[l].client.KvGet(context.Background(), &kvrpcpb.GetRequest{Context: &kvrpcpb.Context{RegionId: 9999}, Key: []byte("k001"), Version: 1})
		require.NoError(t, err)
		require.NotNil(t, resp.GetRegionError().GetRegionNotFound())
	})

	t.Run("coprocessor", func(t *testing.T) {
		scan := &coprocessorpb.Executor{Tp: coprocessorpb.ExecType_TypeTableScan, TblScan: &coprocessorpb.TableScan{TableId: 1}}
		count := &coprocessorpb.Executor{Tp: coprocessorpb.ExecType_TypeAggregation, Aggregation: &coprocessorpb.Aggregation{AggFunc: []coprocessorpb.AggFuncType{coprocessorpb.AggFuncType_Count}}}
		limit := &coprocessorpb.Executor{Tp: coprocessorpb.ExecType_TypeLimit, Limit: &coprocessorpb.Limit{Limit: 2}}
		run := func(execs ...*coprocessorpb.Executor) *coprocessorpb.SelectResponse {
			data, err := proto.Marshal(&coprocessorpb.DAGRequest{Executors: execs})
			require.NoError(t, err)
			var sel *coprocessorpb.SelectResponse
			c.retry(func(n *testNode) bool {
				resp, err := n.client.Coprocessor(context.Background(), &kvrpcpb.CoprocessorRequest{
					Context: c.reqCtx(), Data: data, StartTs: ^uint64(0),
					Ranges: []*kvrpcpb.KeyRange{{Start: []byte("k000"), End: []byte("k010")}, {Start: []byte("k015"), End: []byte("k017")}},
				})
				if err != nil || retryable(resp.GetRegionError()) {
					return false
				}
				require.Nil(t, resp.GetRegionError())
				require.Empty(t, resp.GetOtherError())
				sel = &coprocessorpb.SelectResponse{}
				require.NoError(t, proto.Unmarshal(resp.GetData(), sel))
				return true
			})
			return sel
		}
		require.Equal(t, []int64{12}, run(scan, count).GetAggValues())
		rows := run(scan, limit).GetRows()
		require.Len(t, rows, 2)
		require.Equal(t, "k000", string(rows[0].GetKey()))
		require.Equal(t, "v0", string(rows[0].GetValue()))

		// Store batching: each task answers as its own region.
		data, err := proto.Marshal(&coprocessorpb.DAGRequest{Executors: []*coprocessorpb.Executor{scan, count}})
		require.NoError(t, err)
		c.retry(func(n *testNode) bool {
			rc := c.reqCtx()
			resp, err := n.client.Coprocessor(context.Background(), &kvrpcpb.CoprocessorRequest{
				Context: rc, Data: data, StartTs: ^uint64(0),
				Ranges: []*kvrpcpb.KeyRange{{Start: []byte("k000"), End: []byte("k005")}},
				Tasks: []*kvrpcpb.StoreBatchTask{
					{RegionId: rc.GetRegionId(), RegionEpoch: rc.GetRegionEpoch(), Peer: rc.GetPeer(), Ranges: []*kvrpcpb.KeyRange{{Start: []byte("k010"), End: []byte("k013")}}},
					{RegionId: 9999, RegionEpoch: rc.GetRegionEpoch(), Ranges: []*kvrpcpb.KeyRange{{Start: []byte("k010"), End: []byte("k013")}}},
				},
			})
			if err != nil || retryable(resp.GetRegionError()) {
				return false
			}
			require.Nil(t, resp.GetRegionError())
			sel := &coprocessorpb.SelectResponse{}
			require.NoError(t, proto.Unmarshal(resp.GetData(), sel))
			require.Equal(t, []int64{5}, sel.GetAggValues())
			require.Len(t, resp.GetBatchResponses(), 2)
			b0, b1 := resp.GetBatchResponses()[0], resp.GetBatchResponses()[1]
			if retryable(b0.GetRegionError()) {
				return false
			}
			require.Nil(t, b0.GetRegionError())
			sel = &coprocessorpb.SelectResponse{}
			require.NoError(t, proto.Unmarshal(b0.GetData(), sel))
			require.Equal(t, []int64{3}, sel.GetAggValues())
			require.NotNil(t, b1.GetRegionError().GetRegionNotFound())
			return true
		})
	})

	t.Run("pd-routes-to-leader", func(t *testing.T) {
		require.Eventually(t, func() bool {
			_, leader, err := c.pd.GetRegion(context.Background(), []byte("k001"))
			return err == nil && leader != nil && leader.GetStoreId() == c.nodes[c.leader()].srv.Store().ID()
		}, waitFor, 10*time.Millisecond)
	})

	// A follower goes down; the other two keep committing.
	l := c.leader()
	f := (l + 1) % 3
	c.stop(f)
	write(20, 40)
	require.Equal(t, want, c.scan("", "", 0))

	// It comes back and catches up (checked on its own engine).
	c.start(f)
	require.Eventually(t, func() bool {
		got, err := engineScan(c.nodes[f].srv.Store().Engine())
		return err == nil && fmt.Sprint(got) == fmt.Sprint(want)
	}, waitFor, 10*time.Millisecond)

	// The leader goes down: a new leader serves every acknowledged write.
	l = c.leader()
	c.stop(l)
	require.Equal(t, want, c.scan("", "", 0))
	write(40, 50)
	require.Equal(t, want, c.scan("", "", 0))
	c.start(l)

	// Full restart.
	for i := range c.nodes {
		c.stop(i)
	}
	for i := range c.nodes {
		c.start(i)
	}
	require.Equal(t, want, c.scan("", "", 0))
	write(50, 55)
	require.Equal(t, want, c.scan("", "", 0))

	// Replay: a store that lost every unsynced apply (data and applied
	// index) rebuilds its state machine from the synced raft log.
	f = (c.leader() + 1) % 3
	c.stop(f)
	require.NoError(t, raftstore.ForgetAppliedForTest(c.nodes[f].dir))
	c.start(f)
	require.Eventually(t, func() bool {
		got, err := engineScan(c.nodes[f].srv.Store().Engine())
		return err == nil && fmt.Sprint(got) == fmt.Sprint(want)
	}, waitFor, 10*time.Millisecond)

	// No read before replay: every replica lost its applied state; the
	// first read on the new leader must already see every acknowledged write.
	for i := range c.nodes {
		c.stop(i)
		require.NoError(t, raftstore.ForgetAppliedForTest(c.nodes[i].dir))
	}
	for i := range c.nodes {
		c.start(i)
	}
	require.Equal(t, want, c.scan("", "", 0))
	require.Equal(t, "v54", string(c.get("k054", ^uint64(0)).GetValue()))
}

// engineGet reads key's latest committed value at ts straight from a
// store's engine (any replica; locks ignored).
func engineGet(db *pebble.DB, key string, ts uint64) ([]byte, bool, error) {
	r := mvcc.NewSnapshotReader(db, mvcc.ReadOptions{TS: ts, Isolation: kvrpcpb.IsolationLevel_RC})
	defer r.Close()
	return r.Get([]byte(key))
}

// engineScan reads every latest committed key straight from a store's
// engine (any replica; locks ignored).
func engineScan(db *pebble.DB) (map[string]string, error) {
	r := mvcc.NewSnapshotReader(db, mvcc.ReadOptions{TS: mvcc.MaxTS, Isolation: kvrpcpb.IsolationLevel_RC})
	defer r.Close()
	got := map[string]string{}
	err := r.Scan(nil, nil, false, false, func(k, v []byte) bool {
		got[string(k)] = string(v)
		return true
	})
	return got, err
}
