package pdclient_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/pd/pdclient"
	"github.com/stratadb/strata/pd/pdtest"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/pdpb"
)

func newClient(t testing.TB, addrs []string, opts ...pdclient.Option) *pdclient.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pdclient.New(ctx, addrs, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestGetTSConcurrentUniqueIncreasing, in both TSO modes: timestamps are
// unique, and each is above every timestamp returned before its call began.
func TestGetTSConcurrentUniqueIncreasing(t *testing.T) {
	addr := pdtest.Start(t, 3)
	for _, mode := range []pdclient.TSOMode{pdclient.TSOModeDefault, pdclient.TSOModeParallel} {
		t.Run(mode.String(), func(t *testing.T) {
			c := newClient(t, []string{addr}, pdclient.WithTSOMode(mode))
			require.Equal(t, mode, c.TSOMode())
			ctx := testCtx(t)

			const workers, per = 64, 300
			var maxReturned atomic.Uint64
			results := make([][]uint64, workers)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range per {
						floor := maxReturned.Load()
						ts, err := c.GetTS(ctx)
						if err != nil {
							t.Errorf("GetTS: %v", err)
							return
						}
						if ts <= floor {
							t.Errorf("ts %d not above %d, returned before the call began", ts, floor)
						}
						for cur := maxReturned.Load(); ts > cur && !maxReturned.CompareAndSwap(cur, ts); cur = maxReturned.Load() {
						}
						results[w] = append(results[w], ts)
					}
				}()
			}
			wg.Wait()
			seen := make(map[uint64]struct{}, workers*per)
			for _, r := range results {
				for _, ts := range r {
					_, dup := seen[ts]
					require.False(t, dup, "duplicate ts %d", ts)
					seen[ts] = struct{}{}
				}
			}
			require.Len(t, seen, workers*per)
		})
	}
}

func TestRestartPersistsTSOAndIDs(t *testing.T) {
	s := pdtest.New(t, 1)
	ctx := testCtx(t)
	c := newClient(t, []string{s.Addr})
	var lastTS, lastID uint64
	for range 10 {
		ts, err := c.GetTS(ctx)
		require.NoError(t, err)
		require.Greater(t, ts, lastTS)
		lastTS = ts
		id, err := c.AllocID(ctx, 7)
		require.NoError(t, err)
		require.Greater(t, id, lastID)
		lastID = id + 6
	}

	s.Restart()

	// The same client reconnects; a fresh client must see larger values too.
	for _, cl := range []*pdclient.Client{c, newClient(t, []string{s.Addr})} {
		ts, err := getTSRetry(ctx, cl)
		require.NoError(t, err)
		require.Greater(t, ts, lastTS)
		lastTS = ts
		id, err := cl.AllocID(ctx, 1)
		require.NoError(t, err)
		require.Greater(t, id, lastID)
		lastID = id
	}
}

// getTSRetry retries ErrTSOUnavailable (the in-flight batch of a stream that
// broke under a restart fails with it).
func getTSRetry(ctx context.Context, c *pdclient.Client) (uint64, error) {
	for {
		ts, err := c.GetTS(ctx)
		if err == nil || ctx.Err() != nil || !errorsIs(err, pdclient.ErrTSOUnavailable) {
			return ts, err
		}
	}
}

func TestBootstrapAndRouting(t *testing.T) {
	addr := pdtest.Start(t, 3)
	c := newClient(t, []string{addr})
	ctx := testCtx(t)

	_, _, err := c.GetRegion(ctx, []byte("a"))
	require.ErrorIs(t, err, pdclient.ErrNotBootstrapped)

	// Stores registered out of order; the first 3 by id get the peers.
	for _, id := range []uint64{40, 10, 30} {
		require.NoError(t, c.PutStore(ctx, &metapb.Store{Id: id, Address: "127.0.0.1:1", StatusAddress: "127.0.0.1:2"}))
		if id != 30 {
			ok, err := c.IsBootstrapped(ctx)
			require.NoError(t, err)
			require.False(t, ok)
		}
	}
	ok, err := c.IsBootstrapped(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, c.PutStore(ctx, &metapb.Store{Id: 20, Address: "127.0.0.1:3"}))

	stores, err := c.GetAllStores(ctx)
	require.NoError(t, err)
	require.Len(t, stores, 4)
	st, err := c.GetStore(ctx, 20)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:3", st.Address)

	r, leader, err := c.GetRegion(ctx, []byte("anything"))
	require.NoError(t, err)
	require.Nil(t, leader)
	require.Empty(t, r.StartKey)
	require.Empty(t, r.EndKey)
	require.Equal(t, uint64(1), r.RegionEpoch.ConfVer)
	require.Equal(t, uint64(1), r.RegionEpoch.Version)
	require.Len(t, r.Peers, 3)
	var storeIDs []uint64
	peerIDs := map[uint64]bool{r.Id: true}
	for _, p := range r.Peers {
		storeIDs = append(storeIDs, p.StoreId)
		require.False(t, peerIDs[p.Id], "ids must be unique")
		peerIDs[p.Id] = true
	}
	require.Equal(t, []uint64{10, 30, 40}, storeIDs)

	// StoreHeartbeat tells stores which regions to create.
	for _, tc := range []struct {
		store  uint64
		have   []uint64
		create int
	}{
		{10, nil, 1},
		{10, []uint64{r.Id}, 0},
		{20, nil, 0}, // no peer there
		{40, []uint64{999}, 1},
	} {
		resp, err := c.StoreHeartbeat(ctx, &pdpb.StoreHeartbeatRequest{Stats: &pdpb.StoreStats{StoreId: tc.store}, RegionIds: tc.have})
		require.NoError(t, err)
		require.Len(t, resp.CreateRegions, tc.create, "store %d", tc.store)
		if tc.create > 0 {
			require.Equal(t, r.Id, resp.CreateRegions[0].Id)
		}
	}

	// Leader heartbeat, then a split into [ "", "m") and ["m", "").
	_, err = c.RegionHeartbeat(ctx, &pdpb.RegionHeartbeatRequest{Region: r, Leader: r.Peers[1], Term: 2})
	require.NoError(t, err)
	_, leader, err = c.GetRegion(ctx, []byte("x"))
	require.NoError(t, err)
	require.Equal(t, r.Peers[1].Id, leader.Id)

	newID, err := c.AllocID(ctx, 4)
	require.NoError(t, err)
	left := &metapb.Region{Id: newID, EndKey: []byte("m"), RegionEpoch: &metapb.RegionEpoch{ConfVer: 1, Version: 2}}
	for i, p := range r.Peers {
		left.Peers = append(left.Peers, &metapb.Peer{Id: newID + 1 + uint64(i), StoreId: p.StoreId})
	}
	right := &metapb.Region{Id: r.Id, StartKey: []byte("m"), RegionEpoch: &metapb.RegionEpoch{ConfVer: 1, Version: 2}, Peers: r.Peers}
	// The two halves report in one batch (as a store's PD worker sends what
	// queued up together), and a stale heartbeat of the pre-split region
	// after them is ignored.
	resps, err := c.RegionHeartbeats(ctx, []*pdpb.RegionHeartbeatRequest{
		{Region: left, Leader: left.Peers[0], Term: 5},
		{Region: right, Leader: right.Peers[2], Term: 3},
		{Region: r, Leader: r.Peers[0], Term: 9},
	})
	require.NoError(t, err)
	require.Len(t, resps, 3)
	for i, resp := range resps {
		require.Nil(t, resp.GetHeader().GetError(), "heartbeat %d", i)
	}

	for _, tc := range []struct {
		key    string
		region uint64
		leader uint64
	}{
		{"", newID, left.Peers[0].Id},
		{"a", newID, left.Peers[0].Id},
		{"l\xff", newID, left.Peers[0].Id},
		{"m", r.Id, right.Peers[2].Id},
		{"zzz", r.Id, right.Peers[2].Id},
	} {
		got, ld, err := c.GetRegion(ctx, []byte(tc.key))
		require.NoError(t, err, tc.key)
		require.Equal(t, tc.region, got.Id, "key %q", tc.key)
		require.NotNil(t, ld, "key %q", tc.key)
		require.Equal(t, tc.leader, ld.Id, "key %q", tc.key)
	}
	got, ld, err := c.GetRegionByID(ctx, r.Id)
	require.NoError(t, err)
	require.Equal(t, []byte("m"), got.StartKey)
	require.Equal(t, uint64(2), got.RegionEpoch.Version)
	require.Equal(t, right.Peers[2].Id, ld.Id)

	_, _, err = c.GetRegionByID(ctx, 123456)
	require.ErrorIs(t, err, pdclient.ErrRegionNotFound)

	// Store 30 now must create both regions.
	resp, err := c.StoreHeartbeat(ctx, &pdpb.StoreHeartbeatRequest{Stats: &pdpb.StoreStats{StoreId: 30}})
	require.NoError(t, err)
	require.Len(t, resp.CreateRegions, 2)
}

// BenchmarkTSO: timestamps per second and the callers' wait (p50, p99) for
// 1, 64 and 512 concurrent GetTS callers in each TSO mode, against one PD
// member running as its own process on loopback (so client and server do not
// share a Go runtime). Results: bench/results/*-tso.md.
func BenchmarkTSO(b *testing.B) {
	addr := pdtest.StartProcs(b, 1, 1, pdtest.ProcOptions{})[0].Addr
	for _, mode := range []pdclient.TSOMode{pdclient.TSOModeDefault, pdclient.TSOModeParallel} {
		for _, callers := range []int{1, 64, 512} {
			b.Run(fmt.Sprintf("mode=%s/callers=%d", mode, callers), func(b *testing.B) {
				benchTSO(b, newClient(b, []string{addr}, pdclient.WithTSOMode(mode)), callers)
			})
		}
	}
}

func benchTSO(b *testing.B, c *pdclient.Client, callers int) {
	ctx := context.Background()
	waits := make([][]time.Duration, callers)
	for i := range waits {
		waits[i] = make([]time.Duration, 0, b.N/callers+1)
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				if _, err := c.GetTS(ctx); err != nil {
					b.Error(err)
					return
				}
				waits[i] = append(waits[i], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	var all []time.Duration
	for _, w := range waits {
		all = append(all, w...)
	}
	slices.Sort(all)
	q := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))].Microseconds()) }
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "ts/s")
	b.ReportMetric(q(0.5), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
}

func TestClientErrors(t *testing.T) {
	// No PD listening: New gives up when ctx is done.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := pdclient.New(ctx, []string{"127.0.0.1:1"})
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// A dead endpoint first: calls move on to the live one.
	addr := pdtest.Start(t, 1)
	c := newClient(t, []string{"127.0.0.1:1", addr})
	ctx = testCtx(t)
	_, err = c.AllocID(ctx, 1)
	require.NoError(t, err)
	_, err = getTSRetry(ctx, c)
	require.NoError(t, err)

	// Cancelled caller.
	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	_, err = c.GetTS(cctx)
	require.ErrorIs(t, err, context.Canceled)

	require.NoError(t, c.Close())
	_, err = c.GetTS(ctx)
	require.ErrorIs(t, err, pdclient.ErrClosed)
	_, err = c.AllocID(ctx, 1)
	require.ErrorIs(t, err, pdclient.ErrClosed)
}
