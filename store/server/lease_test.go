package server

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/raftstore"
)

// leaseEvents records a store's lease hook events.
type leaseEvents struct {
	mu     sync.Mutex
	events []raftstore.LeaseEvent
}

func (e *leaseEvents) add(ev raftstore.LeaseEvent) {
	e.mu.Lock()
	e.events = append(e.events, ev)
	e.mu.Unlock()
}

func (e *leaseEvents) snapshot() []raftstore.LeaseEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]raftstore.LeaseEvent(nil), e.events...)
}

// TestLeaseReads: steady reads on the leader are mostly lease reads; a
// leader cut off from its followers (clients still reach it) whose raft
// clock stalled (so it never steps down) never returns a value older than a
// write acknowledged by the new leader before the read started; the new
// leader, and the next one after a crash-stop, serve every acknowledged
// write.
func TestLeaseReads(t *testing.T) {
	c := newTestCluster(t)
	c.put("k", "v0")

	// Steady sequential reads on the leader.
	leaseReads := func() float64 {
		// Served in the Ready loop or on the caller's goroutine, under the
		// tick lease or (the region may fall asleep between the puts) the
		// hibernated leader's support lease.
		n := 0.0
		for _, path := range []string{"lease", "local_lease", "hibernated_lease", "local_hibernated_lease"} {
			n += counterValue(t, "strata_raftstore_reads_total", "path", path)
		}
		return n
	}
	lease0 := leaseReads()
	ri0 := counterValue(t, "strata_raftstore_reads_total", "path", "read_index")
	const reads = 300
	for i := range reads {
		if i%50 == 0 {
			c.put("k", fmt.Sprintf("v%d", i))
		}
		require.Equal(t, fmt.Sprintf("v%d", i/50*50), string(c.get("k", ^uint64(0)).GetValue()))
	}
	lease := leaseReads() - lease0
	ri := counterValue(t, "strata_raftstore_reads_total", "path", "read_index") - ri0
	t.Logf("steady reads: %v lease, %v read_index", lease, ri)
	require.GreaterOrEqual(t, lease+ri, float64(reads))
	// A ReadIndex renews the lease (~72 ms with this cluster's 10 ms ticks)
	// and every read inside it is a lease read, so the lease share is about
	// lease/(lease+read latency): above 3/4 on this machine even at load
	// average 30. Half still means the lease serves reads; below it, reads
	// would take as long as the lease itself.
	require.GreaterOrEqual(t, lease, float64(reads)/2, "most steady reads are lease reads")

	// Partition the leader's raft traffic (clients still reach it) and stall
	// its raft clock, so it never steps down by CheckQuorum: only the lease's
	// own expiry stops it from serving reads once the others elect a leader.
	requireNoStaleReadsWhenCutOff(t, c, c.leader(), 250)

	// Crash-stop the new leader's raft loop (no transfer): the next leader
	// too serves every acknowledged write.
	c.put("k", "v900")
	l := c.leader()
	c.nodes[l].srv.Store().Stop()
	// Ask the other stores until one leads and answers (the stopped store
	// still reports itself leader, so c.get cannot be used).
	deadline := time.Now().Add(waitFor)
	for {
		require.True(t, time.Now().Before(deadline), "no new leader answered")
		answered := false
		for j, n := range c.nodes {
			if j == l || n.srv == nil {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			r, err := n.client.KvGet(ctx, &kvrpcpb.GetRequest{Context: c.reqCtx(), Key: []byte("k"), Version: ^uint64(0)})
			cancel()
			if err == nil && r.GetRegionError() == nil {
				require.Equal(t, "v900", string(r.GetValue()))
				answered = true
			}
		}
		if answered {
			break
		}
		time.Sleep(5 * time.Millisecond) // backoff between retries, not synchronisation
	}
	stopRaft(c)
}

// TestLeaseDroppedOnTransfer: under read load, a graceful leader transfer
// ends the old leader's lease before raft can send MsgTimeoutNow, and no read
// is served from that lease once the transfer began.
func TestLeaseDroppedOnTransfer(t *testing.T) {
	c := newTestCluster(t)
	c.put("k", "v")
	l := c.leader()
	store := c.nodes[l].srv.Store()
	var ev leaseEvents
	store.SetLeaseHookForTest(ev.add)
	defer store.SetLeaseHookForTest(nil)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reads atomic.Int64
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				r := c.get("k", ^uint64(0))
				if string(r.GetValue()) != "v" {
					panic("wrong value " + string(r.GetValue()))
				}
				reads.Add(1)
			}
		})
	}
	require.Eventually(t, func() bool { return len(ev.snapshot()) >= 50 }, waitFor, time.Millisecond, "no lease reads")
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	t0 := time.Now()
	require.NoError(t, store.TransferLeaders(ctx))
	cancel()
	t.Logf("transfer took %v", time.Since(t0))
	before := reads.Load()
	require.Eventually(t, func() bool { return reads.Load() >= before+50 }, waitFor, time.Millisecond, "reads stopped after the transfer")
	close(stop)
	wg.Wait()

	transferred := map[uint64]bool{} // terms in which a transfer began
	nTransfers, nLease := 0, 0
	events := ev.snapshot()
	slices.SortFunc(events, func(a, b raftstore.LeaseEvent) int { return cmp.Compare(a.Seq, b.Seq) })
	for _, e := range events {
		if e.Transfer {
			nTransfers++
			require.NotZero(t, e.LeadTransferee, "raft has the transfer in progress")
			require.False(t, e.LeaseValid, "lease still valid once LeadTransferee is set")
			transferred[e.Term] = true
			continue
		}
		nLease++
		require.Zero(t, e.LeadTransferee, "lease read during a transfer")
		require.False(t, transferred[e.Term], "lease read after the transfer began in term %d", e.Term)
		require.Positive(t, e.Remaining)
	}
	t.Logf("%d lease reads on the old leader, %d transfers, %d reads in all", nLease, nTransfers, reads.Load())
	require.Positive(t, nTransfers)
	require.False(t, store.IsLeader(c.region().GetId()))
	stopRaft(c)
}

// stopRaft stops every store's raft loop, so the cleanup's graceful stops
// do not wait for leader transfers to stores already stopped.
func stopRaft(c *testCluster) {
	for _, n := range c.nodes {
		if n.srv != nil {
			n.srv.Store().Stop()
		}
	}
}

// TestLocalLeaseReadsStopWithTheStore: lease reads served on the caller's
// goroutine end with the Ready loop: after Stop, ReadIndex answers
// ErrStopped instead of letting a read reach an engine about to close.
func TestLocalLeaseReadsStopWithTheStore(t *testing.T) {
	c := newTestCluster(t)
	c.put("k", "v")
	store := c.nodes[c.leader()].srv.Store()
	// The region may hibernate between the reads (it is only read), and a
	// hibernated leader's local reads count as local_hibernated_lease: both
	// are served on the caller's goroutine.
	local := func() float64 {
		return counterValue(t, "strata_raftstore_reads_total", "path", "local_lease") +
			counterValue(t, "strata_raftstore_reads_total", "path", "local_hibernated_lease")
	}
	before := local()
	require.Eventually(t, func() bool {
		require.Equal(t, "v", string(c.get("k", ^uint64(0)).GetValue()))
		return local() > before
	}, waitFor, time.Millisecond, "no read served on the caller's goroutine")
	stopRaft(c)
	_, _, err := store.ReadIndex(context.Background(), c.reqCtx())
	require.ErrorIs(t, err, raftstore.ErrStopped)
}

// TestHibernatedLeaseReads: an idle region's leader hibernates and serves
// reads without waking, under the support its followers' stores give its
// store (raftstore/support.go); cut off from them with its raft clock
// stalled (it notices nothing), it never returns a value older than a
// write the new leader acknowledged before the read started.
func TestHibernatedLeaseReads(t *testing.T) {
	// 50 ms ticks: a 360 ms lease, so a loop stalled by a loaded host (or
	// the race detector) rarely lets the support grants lapse.
	c := newTestCluster(t, func(cfg *Config) { cfg.RaftTick = 50 * time.Millisecond })
	c.put("k", "v0")
	old := c.leader()
	oldStore := c.nodes[old].srv.Store()
	rid := c.region().GetId()
	require.Eventually(t, func() bool { return oldStore.HibernatedLeaseForTest(rid) }, waitFor, 5*time.Millisecond,
		"the idle region's leader hibernates with a support lease")
	h0 := counterValue(t, "strata_raftstore_reads_total", "path", "local_hibernated_lease")
	const reads = 50
	for range reads {
		require.Equal(t, "v0", string(c.get("k", ^uint64(0)).GetValue()))
	}
	require.GreaterOrEqual(t, counterValue(t, "strata_raftstore_reads_total", "path", "local_hibernated_lease")-h0, float64(reads)/2,
		"reads of a hibernated region are served under its support lease")
	c.put("k", "v1")
	require.Eventually(t, func() bool { return oldStore.HibernatedLeaseForTest(rid) }, waitFor, 5*time.Millisecond,
		"the region hibernates again after the write")
	requireNoStaleReadsWhenCutOff(t, c, old, 1)
}

// requireNoStaleReadsWhenCutOff cuts store old (the leader of c's region,
// whose key k holds v<last>) off from the others' raft traffic (clients
// still reach it) and stalls its raft clock, so it never steps down by
// CheckQuorum or notices the others are gone: only its lease's own expiry
// stops it from serving reads. Readers hammer it while a writer commits
// increasing values through the new leader; no read may return a value
// older than one acknowledged before it started. It heals the cut and
// returns the new leader.
func requireNoStaleReadsWhenCutOff(t *testing.T, c *testCluster, old int, last int64) int {
	t.Helper()
	oldStore := c.nodes[old].srv.Store()
	oldStore.PauseTicksForTest(true)
	oldStore.SetRaftFilterForTest(func(uint64) bool { return true })
	defer oldStore.SetRaftFilterForTest(nil)
	defer oldStore.PauseTicksForTest(false)

	var acked atomic.Int64 // highest value acknowledged by a new leader
	acked.Store(last)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var stale, served, refused atomic.Int64
	var staleMsg atomic.Value
	// Readers hammer the old leader directly.
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				before := acked.Load()
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				resp, err := c.nodes[old].client.KvGet(ctx, &kvrpcpb.GetRequest{Context: c.reqCtx(), Key: []byte("k"), Version: ^uint64(0)})
				cancel()
				if err != nil || resp.GetRegionError() != nil {
					refused.Add(1)
					continue
				}
				served.Add(1)
				got, _ := strconv.Atoi(string(resp.GetValue()[1:]))
				if int64(got) < before {
					stale.Add(1)
					staleMsg.Store(fmt.Sprintf("read v%d after v%d was acknowledged", got, before))
				}
			}
		})
	}
	// A writer commits increasing values through whichever other store leads.
	newLeader := -1
	deadline := time.Now().Add(waitFor)
	for nAcked := 0; nAcked < 20; {
		require.True(t, time.Now().Before(deadline), "no new leader took writes")
		i := acked.Load() + 1
		for j, n := range c.nodes {
			if j == old || !n.srv.Store().IsLeader(c.region().GetId()) {
				continue
			}
			ts := c.nextTS()
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			resp, err := n.client.KvPrewrite(ctx, onePCRequest(c.reqCtx(),
				[]*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte("k"), Value: fmt.Appendf(nil, "v%d", i)}}, ts-5, ts))
			cancel()
			if err == nil && resp.GetRegionError() == nil && len(resp.GetErrors()) == 0 {
				acked.Store(i)
				newLeader = j
				nAcked++
				break
			}
		}
		if acked.Load() < i {
			time.Sleep(2 * time.Millisecond) // backoff while no new leader is known, not synchronisation
		}
	}
	// Keep reading a little after the last acknowledgement: readers that
	// started after it must see it too.
	for n := served.Load() + refused.Load(); served.Load()+refused.Load() < n+20; {
		time.Sleep(time.Millisecond) // waiting for readers' progress, not synchronisation of state
	}
	close(stop)
	wg.Wait()
	t.Logf("old leader under partition: %d reads served, %d refused; new leader %d", served.Load(), refused.Load(), newLeader)
	require.Zero(t, stale.Load(), "stale read from the partitioned old leader: %v", staleMsg.Load())
	require.NotEqual(t, -1, newLeader)

	// The new leader serves the newest acknowledged write.
	resp, err := c.nodes[newLeader].client.KvGet(context.Background(), &kvrpcpb.GetRequest{Context: c.reqCtx(), Key: []byte("k"), Version: ^uint64(0)})
	require.NoError(t, err)
	require.Nil(t, resp.GetRegionError())
	got, _ := strconv.Atoi(string(resp.GetValue()[1:]))
	require.GreaterOrEqual(t, int64(got), acked.Load())
	oldStore.PauseTicksForTest(false)
	oldStore.SetRaftFilterForTest(nil)

	return newLeader
}

// TestStreamGetServedInlineOnlyUnderTheLease: a stream's point get is
// served on the receiving goroutine (getInline) only under the leader's
// valid lease, with the answer KvGet gives (a Percolator lock at or below
// its version is returned as Locked); a get the lease does not cover (a
// stale epoch, a store whose leases were withdrawn when it stopped) is
// left to a worker (finishGet), which answers as KvGet does.
func TestStreamGetServedInlineOnlyUnderTheLease(t *testing.T) {
	c := newTestClusterOf(t, 1)
	c.put("k", "v")
	n := c.nodes[c.leader()]
	svc := n.srv.svc.Load()
	ctx := context.Background()
	req := func(key string, ts uint64) *kvrpcpb.GetRequest {
		return &kvrpcpb.GetRequest{Context: c.reqCtx(), Key: []byte(key), Version: ts}
	}
	ts := c.nextTS()
	require.Eventually(t, func() bool {
		_, pending, err := svc.getInline(ctx, req("k", ts))
		return pending == nil && err == nil
	}, waitFor, time.Millisecond, "the get is never served under the lease")

	lockTS := c.nextTS()
	pre, err := n.client.KvPrewrite(ctx, &kvrpcpb.PrewriteRequest{Context: c.reqCtx(),
		Mutations:   []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte("k"), Value: []byte("v2")}},
		PrimaryLock: []byte("k"), StartVersion: lockTS, LockTtl: 20000})
	require.NoError(t, err)
	require.Nil(t, pre.GetRegionError())
	require.Empty(t, pre.GetErrors())
	readTS := c.nextTS()
	var inline *kvrpcpb.GetResponse
	require.Eventually(t, func() bool {
		resp, pending, err := svc.getInline(ctx, req("k", readTS))
		require.NoError(t, err)
		inline = resp
		return pending == nil
	}, waitFor, time.Millisecond, "the get is never served under the lease")
	require.EqualValues(t, lockTS, inline.GetError().GetLocked().GetLockVersion(), "%v", inline)
	viaKvGet, err := svc.KvGet(ctx, req("k", readTS))
	require.NoError(t, err)
	require.Equal(t, viaKvGet.GetError().String(), inline.GetError().String(), "answered as KvGet answers")
	require.Equal(t, "v", string(c.get("k", lockTS-1).GetValue()), "below the lock the value is read")

	stale := req("k", readTS)
	stale.Context.RegionEpoch = &metapb.RegionEpoch{ConfVer: stale.Context.GetRegionEpoch().GetConfVer(),
		Version: stale.Context.GetRegionEpoch().GetVersion() + 1}
	resp, pending, err := svc.getInline(ctx, stale)
	require.NoError(t, err)
	require.Nil(t, resp)
	require.NotNil(t, pending, "a stale epoch is not served under the lease")
	resp, err = svc.finishGet(ctx, pending)
	require.NoError(t, err)
	require.NotNil(t, resp.GetRegionError().GetEpochNotMatch(), "%v", resp)

	stopRaft(c)
	resp, pending, err = svc.getInline(ctx, req("k", lockTS-1))
	require.NoError(t, err)
	require.Nil(t, resp)
	require.NotNil(t, pending, "a stopped store withdrew its leases")
	_, err = svc.finishGet(ctx, pending)
	require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
}
