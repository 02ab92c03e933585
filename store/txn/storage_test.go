package txn

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/proto/errorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/store/concurrency"
	"github.com/stratadb/strata/store/storetest/memengine"
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// nowTS is a PD-style timestamp of the current wall clock.
func nowTS() uint64 { return uint64(time.Now().UnixMilli()) << 18 }

func (h *harness) lock(t *testing.T, startTS uint64, wait int64, keys ...string) *kvrpcpb.PessimisticLockResponse {
	t.Helper()
	var muts []*kvrpcpb.Mutation
	for _, k := range keys {
		muts = append(muts, &kvrpcpb.Mutation{Op: kvrpcpb.Op_PessimisticLock, Key: []byte(k)})
	}
	resp, err := h.s.PessimisticLock(bg, &kvrpcpb.PessimisticLockRequest{
		Mutations: muts, PrimaryLock: []byte(keys[0]), StartVersion: startTS, ForUpdateTs: startTS,
		LockTtl: 60000, WaitTimeout: wait,
	})
	require.NoError(t, err)
	require.Nil(t, resp.RegionError)
	return resp
}

func (h *harness) pessimisticRollback(t *testing.T, startTS uint64, keys ...string) {
	t.Helper()
	var ks [][]byte
	for _, k := range keys {
		ks = append(ks, []byte(k))
	}
	resp, err := h.s.PessimisticRollback(bg, &kvrpcpb.PessimisticRollbackRequest{StartVersion: startTS, ForUpdateTs: startTS, Keys: ks})
	require.NoError(t, err)
	require.Empty(t, resp.Errors)
}

func TestLockWaitWakesOnReleaseInOrder(t *testing.T) {
	h := newHarness(t)
	base := nowTS()
	holder := base + 1
	require.Empty(t, h.lock(t, holder, -1, "k").Errors)

	// Three waiters queue in order.
	type result struct {
		ts   uint64
		resp *kvrpcpb.PessimisticLockResponse
	}
	results := make(chan result, 3)
	var wg sync.WaitGroup
	for i := uint64(0); i < 3; i++ {
		ts := base + 10 + i
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- result{ts, h.lock(t, ts, 10000, "k")}
		}()
		waitFor(t, "waiter queued", func() bool { return h.s.waits.waiters() == int(i+1) })
	}
	// Each release lets exactly the next waiter in, in arrival order.
	release := holder
	for i := uint64(0); i < 3; i++ {
		h.pessimisticRollback(t, release, "k")
		r := <-results
		require.Empty(t, r.resp.Errors)
		require.Equal(t, base+10+i, r.ts, "waiters acquire in arrival order")
		release = r.ts
		waitFor(t, "others still waiting", func() bool { return h.s.waits.waiters() == int(2-i) })
	}
	wg.Wait()
}

func TestLockWaitAfterCommitIsWriteConflict(t *testing.T) {
	h := newHarness(t)
	holder := nowTS()
	require.Empty(t, h.lock(t, holder, -1, "k").Errors)
	done := make(chan *kvrpcpb.PessimisticLockResponse, 1)
	go func() { done <- h.lock(t, holder+1, 10000, "k") }()
	waitFor(t, "waiter queued", func() bool { return h.s.waits.waiters() == 1 })

	pre, err := h.s.Prewrite(bg, &kvrpcpb.PrewriteRequest{
		Mutations:   []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte("k"), Value: []byte("v")}},
		PrimaryLock: []byte("k"), StartVersion: holder, ForUpdateTs: holder, LockTtl: 60000,
		PessimisticActions: []kvrpcpb.PessimisticAction{kvrpcpb.PessimisticAction_DoPessimisticCheck},
	})
	require.NoError(t, err)
	require.Empty(t, pre.Errors)
	cr, err := h.s.Commit(bg, &kvrpcpb.CommitRequest{StartVersion: holder, CommitVersion: holder + 5, Keys: [][]byte{[]byte("k")}})
	require.NoError(t, err)
	require.Nil(t, cr.Error)

	resp := <-done
	require.Len(t, resp.Errors, 1)
	require.NotNil(t, resp.Errors[0].Conflict)
	require.Equal(t, kvrpcpb.WriteConflict_PessimisticRetry, resp.Errors[0].Conflict.Reason)
	require.Equal(t, holder+5, resp.Errors[0].Conflict.ConflictCommitTs)
}

func TestLockWaitTimeout(t *testing.T) {
	h := newHarness(t)
	holder := nowTS()
	require.Empty(t, h.lock(t, holder, -1, "k").Errors)
	start := time.Now()
	resp := h.lock(t, holder+1, 100, "k")
	require.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)
	require.Len(t, resp.Errors, 1)
	require.NotNil(t, resp.Errors[0].LockWaitTimeout, "got %v", resp.Errors[0])
	require.Equal(t, holder, resp.Errors[0].LockWaitTimeout.LockTs)
	require.Zero(t, h.s.waits.waiters())

	// NOWAIT: Locked at once.
	resp = h.lock(t, holder+2, -1, "k")
	require.NotNil(t, resp.Errors[0].Locked)
}

func TestLockWaitOnExpiredHolderReturnsLocked(t *testing.T) {
	h := newHarness(t)
	old := nowTS() - 10000<<18 // 10 s ago with a 1 s TTL
	resp, err := h.s.PessimisticLock(bg, &kvrpcpb.PessimisticLockRequest{
		Mutations:   []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_PessimisticLock, Key: []byte("k")}},
		PrimaryLock: []byte("k"), StartVersion: old, ForUpdateTs: old, LockTtl: 1000,
	})
	require.NoError(t, err)
	require.Empty(t, resp.Errors)
	start := time.Now()
	resp = h.lock(t, nowTS(), 10000, "k")
	require.Less(t, time.Since(start), 5*time.Second)
	require.NotNil(t, resp.Errors[0].Locked, "the client must resolve the expired lock")
}

// Lock TTLs run on PD's clock, which may be far from this store's wall
// clock: a PD whose clock was an hour ahead leaves timestamps an hour
// ahead, and one whose clock is behind hands out timestamps an hour
// behind. A waiter is judged by its request's for_update_ts, never by the
// store's clock: an expired holder is reported Locked (for the client to
// resolve) after its TTL, not an hour later, and a live one is waited for,
// not reported expired at once.
func TestLockTTLRunsOnPDClock(t *testing.T) {
	for _, tc := range []struct {
		name    string
		offset  time.Duration // PD's clock minus this store's
		ttl     uint64        // the holder's, ms
		waitMS  int64
		expired bool
	}{
		{"PD an hour ahead, holder expires", time.Hour, 200, 20000, true},
		{"PD an hour behind, holder alive", -time.Hour, 60000, 300, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			pdNow := func() uint64 { return uint64(time.Now().Add(tc.offset).UnixMilli()) << 18 }
			holder := pdNow()
			resp, err := h.s.PessimisticLock(bg, &kvrpcpb.PessimisticLockRequest{
				Mutations:   []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_PessimisticLock, Key: []byte("k")}},
				PrimaryLock: []byte("k"), StartVersion: holder, ForUpdateTs: holder, LockTtl: tc.ttl,
			})
			require.NoError(t, err)
			require.Empty(t, resp.Errors)
			start := time.Now()
			resp = h.lock(t, holder+1, tc.waitMS, "k")
			require.Len(t, resp.Errors, 1)
			if tc.expired {
				require.NotNil(t, resp.Errors[0].Locked, "the expired holder is for the client to resolve: %v", resp.Errors[0])
				require.Less(t, time.Since(start), 10*time.Second, "judged by the store's clock, the TTL would run out an hour later")
				return
			}
			require.NotNil(t, resp.Errors[0].LockWaitTimeout, "a live holder is waited for, not reported expired: %v", resp.Errors[0])
		})
	}
}

// A pessimistic lock request that meets a live prewrite lock is answered
// Locked at once instead of queueing: the owner is committing and waits for
// no one, and a committed owner's locks are resolved region-wide by the
// client (a queued waiter was woken once per key as a large transaction's
// secondaries were committed in the background: TestLargeTransaction's
// UPDATE timed out behind a 100,000-key INSERT).
func TestLockMeetingPrewriteLockReturnsLockedAtOnce(t *testing.T) {
	h := newHarness(t)
	owner := nowTS()
	pre, err := h.s.Prewrite(bg, &kvrpcpb.PrewriteRequest{
		Mutations:   []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte("k"), Value: []byte("v")}},
		PrimaryLock: []byte("k"), StartVersion: owner, LockTtl: 60000,
	})
	require.NoError(t, err)
	require.Empty(t, pre.Errors)
	start := time.Now()
	resp := h.lock(t, owner+1, 10000, "k")
	require.Less(t, time.Since(start), 5*time.Second, "must not wait for the 10 s lock wait timeout")
	require.Len(t, resp.Errors, 1)
	require.NotNil(t, resp.Errors[0].Locked, "got %v", resp.Errors[0])
	require.Equal(t, owner, resp.Errors[0].Locked.LockVersion)
	require.Zero(t, h.s.waits.waiters())
}

func TestDeadlockVictimFailsAtOnce(t *testing.T) {
	h := newHarness(t)
	a, b := nowTS(), nowTS()+1
	require.Empty(t, h.lock(t, a, -1, "k1").Errors)
	require.Empty(t, h.lock(t, b, -1, "k2").Errors)
	done := make(chan *kvrpcpb.PessimisticLockResponse, 1)
	go func() { done <- h.lock(t, a, 20000, "k2") }() // a waits for b
	waitFor(t, "a waiting", func() bool { return h.s.waits.waiters() == 1 })

	start := time.Now()
	resp := h.lock(t, b, 20000, "k1") // b would wait for a: cycle
	require.Less(t, time.Since(start), time.Second)
	require.Len(t, resp.Errors, 1)
	dl := resp.Errors[0].Deadlock
	require.NotNil(t, dl, "got %v", resp.Errors[0])
	require.Equal(t, a, dl.LockTs)
	require.Len(t, dl.WaitChain, 2)

	// The victim rolls back; the survivor gets its lock.
	h.pessimisticRollback(t, b, "k2")
	require.Empty(t, (<-done).Errors)
}

func TestDetectorChains(t *testing.T) {
	d := NewLocalDetector()
	require.Nil(t, d.Detect(1, 2, []byte("a")))
	require.Nil(t, d.Detect(2, 3, []byte("b")))
	dl := d.Detect(3, 1, []byte("c"))
	require.NotNil(t, dl)
	require.Len(t, dl.WaitChain, 3)
	d.CleanUp(2, 3)
	require.Nil(t, d.Detect(3, 1, []byte("c")), "the cycle is gone once 2 stops waiting")
}

// An async-commit prewrite keeps its keys locked in memory until its write
// is applied: a read at or above min_commit_ts waits and then sees the lock;
// a read below it does not wait.
func TestAsyncCommitMemoryLockOrdersReads(t *testing.T) {
	h := newHarness(t)
	h.s.cm.SyncMaxTS(100)
	unblock := make(chan struct{})
	entered := make(chan struct{}, 1)
	h.e.SetBeforeWrite(func() {
		entered <- struct{}{}
		<-unblock
	})
	done := make(chan *kvrpcpb.PrewriteResponse, 1)
	go func() {
		resp, err := h.s.Prewrite(bg, &kvrpcpb.PrewriteRequest{
			Mutations:   []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte("k"), Value: []byte("v")}},
			PrimaryLock: []byte("k"), StartVersion: 50, LockTtl: 1000, UseAsyncCommit: true,
		})
		require.NoError(t, err)
		done <- resp
	}()
	<-entered
	h.e.SetBeforeWrite(nil)

	// Below min_commit_ts (101): not blocked, sees nothing.
	g, err := h.s.Get(bg, &kvrpcpb.GetRequest{Key: []byte("k"), Version: 100})
	require.NoError(t, err)
	require.True(t, g.NotFound)

	// At 101: waits for the apply.
	ctx, cancel := context.WithTimeout(bg, 30*time.Millisecond)
	_, err = h.s.Get(ctx, &kvrpcpb.GetRequest{Key: []byte("k"), Version: 101})
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	got := make(chan *kvrpcpb.GetResponse, 1)
	go func() {
		g, err := h.s.Get(bg, &kvrpcpb.GetRequest{Key: []byte("k"), Version: 101})
		require.NoError(t, err)
		got <- g
	}()
	close(unblock)
	require.Equal(t, uint64(101), (<-done).MinCommitTs)
	g = <-got
	require.NotNil(t, g.Error)
	require.NotNil(t, g.Error.Locked)
}

func TestResolveLockRegionWideInBatches(t *testing.T) {
	e := newEngine(t)
	s := New(e, concurrency.New(), &counterTSO{}, Config{ResolveBatch: 3})
	var muts []*kvrpcpb.Mutation
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		muts = append(muts, &kvrpcpb.Mutation{Op: kvrpcpb.Op_Put, Key: []byte(k), Value: []byte(k)})
	}
	pre, err := s.Prewrite(bg, &kvrpcpb.PrewriteRequest{Mutations: muts, PrimaryLock: []byte("a"), StartVersion: 10})
	require.NoError(t, err)
	require.Empty(t, pre.Errors)
	before := e.Writes()
	resp, err := s.ResolveLock(bg, &kvrpcpb.ResolveLockRequest{StartVersion: 10, CommitVersion: 20})
	require.NoError(t, err)
	require.Nil(t, resp.Error)
	require.Equal(t, int64(3), e.Writes()-before, "7 locks in batches of 3")
	sc, err := s.Scan(bg, &kvrpcpb.ScanRequest{Version: 20})
	require.NoError(t, err)
	require.Nil(t, sc.Error)
	require.Len(t, sc.Pairs, 7)
}

func TestLatchesSerializeAndHonourContext(t *testing.T) {
	l := NewLatches(8)
	g, err := l.Acquire(bg, [][]byte{[]byte("a"), []byte("b")})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(bg, 20*time.Millisecond)
	_, err = l.Acquire(ctx, [][]byte{[]byte("b")})
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)

	var (
		mu    sync.Mutex
		order []int
	)
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g, err := l.Acquire(bg, [][]byte{[]byte("b"), []byte("a")})
			require.NoError(t, err)
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			g.Release()
		}()
		waitFor(t, "queued", func() bool {
			s := &l.slots[min(slotOf(l, []byte("a")), slotOf(l, []byte("b")))]
			s.mu.Lock()
			defer s.mu.Unlock()
			return len(s.waiters) == i+1
		})
	}
	g.Release()
	wg.Wait()
	require.Equal(t, []int{0, 1, 2}, order, "FIFO")
}

// A woken waiter that then waits for another key passes the wake-up on:
// the next waiter of the released key gets it at once.
func TestWokenWaiterMovingOnWakesNext(t *testing.T) {
	h := newHarness(t)
	base := nowTS()
	h1, h2, w, x := base+1, base+2, base+3, base+4
	require.Empty(t, h.lock(t, h1, -1, "k1").Errors)
	require.Empty(t, h.lock(t, h2, -1, "k2").Errors)
	wDone := make(chan *kvrpcpb.PessimisticLockResponse, 1)
	go func() { wDone <- h.lock(t, w, 20000, "k1", "k2") }()
	waitFor(t, "w waits for k1", func() bool { return h.s.waits.waiters() == 1 })
	xDone := make(chan *kvrpcpb.PessimisticLockResponse, 1)
	go func() { xDone <- h.lock(t, x, 20000, "k1") }()
	waitFor(t, "x waits for k1", func() bool { return h.s.waits.waiters() == 2 })

	h.pessimisticRollback(t, h1, "k1") // w wakes, then waits for k2
	resp := <-xDone
	require.Empty(t, resp.Errors, "x gets k1 without waiting for its timeout")
	h.pessimisticRollback(t, h2, "k2")
	// w now finds k1 held by x: it waits again until x lets go.
	waitFor(t, "w waits for k1 again", func() bool {
		h.s.waits.mu.Lock()
		defer h.s.waits.mu.Unlock()
		return len(h.s.waits.keys["k1"]) == 1
	})
	h.pessimisticRollback(t, x, "k1")
	require.Empty(t, (<-wDone).Errors)
}

// TestDeadlockThroughFirstWaiter: B and D queue for k0 behind A; D holds
// k1. A releases k0 and B, first in line, takes it: D now waits for B.
// When B then asks for k1 the cycle B -> D -> B is found at once.
func TestDeadlockThroughFirstWaiter(t *testing.T) {
	h := newHarness(t)
	base := nowTS()
	a, b, d := base+1, base+2, base+3
	require.Empty(t, h.lock(t, a, -1, "k0").Errors)
	require.Empty(t, h.lock(t, d, -1, "k1").Errors)
	bGot := make(chan *kvrpcpb.PessimisticLockResponse, 1)
	go func() { bGot <- h.lock(t, b, 10000, "k0") }()
	waitFor(t, "B queued", func() bool { return h.s.waits.waiters() == 1 })
	dGot := make(chan *kvrpcpb.PessimisticLockResponse, 1)
	go func() { dGot <- h.lock(t, d, 10000, "k0") }()
	waitFor(t, "D queued", func() bool { return h.s.waits.waiters() == 2 })

	h.pessimisticRollback(t, a, "k0")
	require.Empty(t, (<-bGot).Errors, "B, first in line, takes k0")
	waitFor(t, "D waits for B", func() bool { return h.s.waits.waiters() == 1 })

	resp := h.lock(t, b, 3000, "k1")
	require.Len(t, resp.Errors, 1)
	require.NotNil(t, resp.Errors[0].Deadlock, "B waits for D, which waits for B: got %v", resp.Errors[0])
	h.pessimisticRollback(t, b, "k0")
	require.Empty(t, (<-dGot).Errors, "D takes k0 once the victim's lock is gone")
}

// TestLockWaitRecheckedOnNewHolder: a transaction that takes a key's lock
// while others are queued for the key (one that came in between a release
// and the woken waiter's retry) makes them evaluate again, so that they
// wait for, and the deadlock detector sees them waiting for, the new
// holder. Before, such a waiter stayed recorded as waiting for the old
// holder and a deadlock through the key went unseen until a wait timed
// out: the ~2.5 s stalls of every transfer in issue 34's bank workload.
func TestLockWaitRecheckedOnNewHolder(t *testing.T) {
	h := newHarness(t)
	base := nowTS()
	old, c, d := base+1, base+2, base+3
	// D's waiter as a release left it: queued for k0, recorded as waiting
	// for its old holder, which no longer holds it.
	w := h.s.waits.add([]byte("k0"), 1, d, &kvrpcpb.LockInfo{Key: []byte("k0"), LockVersion: old, LockTtl: 60000}, nil)
	require.Empty(t, h.lock(t, c, -1, "k0").Errors, "C takes the free key")
	select {
	case <-w.ch:
		require.True(t, w.recheck, "woken to evaluate again, not as the key's next owner")
	case <-time.After(10 * time.Second):
		t.Fatal("D still recorded as waiting for k0's old holder after C took it")
	}
	require.Zero(t, h.s.waits.waiters())
}

// TestLockWaitersMoveWithTheLeader: a waiter queued on this store for a
// region whose leadership moves away is answered NotLeader at once (the
// holder's release will be served by the new leader and never wake it
// here), not when its wait ends; a waiter of another region keeps
// waiting.
func TestLockWaitersMoveWithTheLeader(t *testing.T) {
	// Every region has a peer on stores 1 and 2, led from store 1 until
	// the test moves region moved's leadership to store 2.
	var moved atomic.Uint64
	e, err := memengine.Open(memengine.Options{Logger: quietLogger{t},
		Peers: func(id uint64) []*metapb.Peer {
			return []*metapb.Peer{{Id: id*10 + 1, StoreId: 1}, {Id: id*10 + 2, StoreId: 2}}
		},
		Leader: func(r *metapb.Region) *metapb.Peer {
			if r.GetId() == moved.Load() {
				return r.GetPeers()[1]
			}
			return r.GetPeers()[0]
		}})
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	e.Split([]byte("m"))
	s := New(e, concurrency.New(), &counterTSO{}, Config{InMemoryPessimisticLock: true})
	lock := func(region *metapb.Region, startTS uint64, wait int64, key string) (*kvrpcpb.PessimisticLockResponse, error) {
		return s.PessimisticLock(bg, &kvrpcpb.PessimisticLockRequest{
			Context:   &kvrpcpb.Context{RegionId: region.GetId(), RegionEpoch: region.GetRegionEpoch(), Peer: region.GetPeers()[0]},
			Mutations: []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_PessimisticLock, Key: []byte(key)}}, PrimaryLock: []byte(key),
			StartVersion: startTS, ForUpdateTs: startTS, LockTtl: 60000, WaitTimeout: wait})
	}
	r1, r2 := e.RegionByKey([]byte("a")), e.RegionByKey([]byte("x"))
	require.NotEqual(t, r1.GetId(), r2.GetId())
	holder := nowTS()
	for _, k := range []struct {
		r   *metapb.Region
		key string
	}{{r1, "a"}, {r2, "x"}} {
		resp, err := lock(k.r, holder, -1, k.key)
		require.NoError(t, err)
		require.Empty(t, resp.Errors)
	}
	type result struct {
		resp *kvrpcpb.PessimisticLockResponse
		err  error
	}
	movedWaiter, stays := make(chan result, 1), make(chan result, 1)
	go func() { r, err := lock(r1, holder+1, 20000, "a"); movedWaiter <- result{r, err} }()
	go func() { r, err := lock(r2, holder+2, 20000, "x"); stays <- result{r, err} }()
	waitFor(t, "both queued", func() bool { return s.LockWaiters() == 2 })

	start := time.Now()
	moved.Store(r1.GetId()) // store 2's peer leads r1 now
	s.LeaderChanged(r1.GetId(), false)
	select {
	case r := <-movedWaiter:
		require.NoError(t, r.err)
		require.NotNil(t, r.resp.GetRegionError().GetNotLeader(), "%v", r.resp)
		require.Less(t, time.Since(start), 5*time.Second)
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter of the region that moved was not answered")
	}
	require.Equal(t, 1, s.LockWaiters(), "the other region's waiter still waits")
	select {
	case r := <-stays:
		t.Fatalf("the waiter of region %d was woken: %v", r2.GetId(), r)
	default:
	}
	_, err = s.PessimisticRollback(bg, &kvrpcpb.PessimisticRollbackRequest{
		Context:      &kvrpcpb.Context{RegionId: r2.GetId(), RegionEpoch: r2.GetRegionEpoch(), Peer: r2.GetPeers()[0]},
		StartVersion: holder, ForUpdateTs: holder, Keys: [][]byte{[]byte("x")}})
	require.NoError(t, err)
	r := <-stays
	require.NoError(t, r.err)
	require.Empty(t, r.resp.Errors, "released: the waiter takes x")
}

// leasedEngine is a memengine whose reads are local (LocalReader) while
// leased is set, under a lease of term leaseTerm (1 unless set), while
// LeaderTerm answers nowTerm (1 unless set). It counts the lease checks
// (ReadLocal) and the ReadIndexes that skip them (ReadIndexQueued).
type leasedEngine struct {
	*memengine.Engine
	leased              atomic.Bool
	leaseTerm, nowTerm  atomic.Uint64
	leaseChecks, queued atomic.Int32
}

func orOne(v uint64) uint64 {
	if v == 0 {
		return 1
	}
	return v
}

func (e *leasedEngine) ReadLocal(rctx *kvrpcpb.Context) (*metapb.Region, uint64) {
	e.leaseChecks.Add(1)
	if !e.leased.Load() {
		return nil, 0
	}
	region, rerr, err := e.ReadIndex(bg, rctx)
	if rerr != nil || err != nil {
		return nil, 0
	}
	return region, orOne(e.leaseTerm.Load())
}

func (e *leasedEngine) ReadIndexQueued(ctx context.Context, rctx *kvrpcpb.Context) (*metapb.Region, *errorpb.Error, error) {
	e.queued.Add(1)
	return e.ReadIndex(ctx, rctx)
}

func (e *leasedEngine) LeaderTerm(uint64) uint64 { return orOne(e.nowTerm.Load()) }

// newLeased returns a Storage over a leasedEngine holding k = "v"
// committed at 11.
func newLeased(t *testing.T) (*Storage, *leasedEngine, *concurrency.Manager) {
	e := &leasedEngine{Engine: newEngine(t)}
	cm := concurrency.New()
	s := New(e, cm, &counterTSO{}, Config{})
	pre, err := s.Prewrite(bg, &kvrpcpb.PrewriteRequest{
		Mutations:   []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte("k"), Value: []byte("v")}},
		PrimaryLock: []byte("k"), StartVersion: 10, LockTtl: 3000,
	})
	require.NoError(t, err)
	require.Empty(t, pre.GetErrors())
	com, err := s.Commit(bg, &kvrpcpb.CommitRequest{StartVersion: 10, Keys: [][]byte{[]byte("k")}, CommitVersion: 11})
	require.NoError(t, err)
	require.Nil(t, com.GetError())
	return s, e, cm
}

// GetLocal serves a get only when nothing would wait: a local read of a
// key no in-flight write visible at its version holds; otherwise it
// returns the get where it stopped, and Finish serves it without a second
// lease check.
func TestGetLocalServesOnlyWithoutWaiting(t *testing.T) {
	s, e, cm := newLeased(t)
	get := func(rctx *kvrpcpb.Context, ts uint64) (*kvrpcpb.GetResponse, *PendingGet) {
		resp, pending, err := s.GetLocal(bg, &kvrpcpb.GetRequest{Context: rctx, Key: []byte("k"), Version: ts})
		require.NoError(t, err)
		require.True(t, (resp == nil) != (pending == nil), "served or pending: %v %v", resp, pending)
		return resp, pending
	}
	finish := func(p *PendingGet) *kvrpcpb.GetResponse {
		resp, err := p.Finish(bg)
		require.NoError(t, err)
		return resp
	}
	_, p := get(&kvrpcpb.Context{}, 100)
	require.NotNil(t, p, "no lease: the get must wait for a ReadIndex")
	require.EqualValues(t, 1, e.leaseChecks.Load())
	require.Equal(t, "v", string(finish(p).GetValue()))
	require.EqualValues(t, 1, e.leaseChecks.Load(), "Finish checks no lease again")
	require.EqualValues(t, 1, e.queued.Load(), "Finish's ReadIndex goes to the queue")

	e.leased.Store(true)
	resp, p := get(&kvrpcpb.Context{}, 100)
	require.Nil(t, p)
	require.Equal(t, "v", string(resp.GetValue()))
	require.EqualValues(t, 2, e.leaseChecks.Load(), "one lease check per get")
	require.Greater(t, resp.GetExecDetails().GetScanDetail().GetProcessedVersions(), uint64(0))

	_, p = get(&kvrpcpb.Context{ReplicaRead: true}, 100)
	require.NotNil(t, p, "a replica read goes through ReadReplica")
	require.EqualValues(t, 2, e.leaseChecks.Load(), "a replica read checks no lease")

	commitTS, release, err := cm.LockKeys(bg, [][]byte{[]byte("k")}, 50)
	require.NoError(t, err)
	_, p = get(&kvrpcpb.Context{}, commitTS)
	require.NotNil(t, p, "an in-flight write is visible at its commit_ts")
	require.GreaterOrEqual(t, cm.MaxTS(), commitTS, "the read is recorded before it waits")
	resp, p2 := get(&kvrpcpb.Context{}, commitTS-1)
	require.Nil(t, p2)
	require.Equal(t, "v", string(resp.GetValue()))
	checks := e.leaseChecks.Load()
	done := make(chan *kvrpcpb.GetResponse, 1)
	go func() { done <- finish(p) }()
	waitFor(t, "Finish waits for the in-flight write", func() bool { return cm.WaitingReads() == 1 })
	release()
	require.Equal(t, "v", string((<-done).GetValue()))
	require.Equal(t, checks, e.leaseChecks.Load(), "Finish after the manager's check checks no lease again")
	require.EqualValues(t, 1, e.queued.Load(), "nor does it ReadIndex")
	resp, p = get(&kvrpcpb.Context{}, commitTS)
	require.Nil(t, p)
	require.Equal(t, "v", string(resp.GetValue()))
}

// A lease get meets Percolator locks as Get does: a lock at or below its
// version is returned (Locked), one above it is not seen; and it reads
// only if the peer still leads in the lease's term after the snapshot.
func TestGetLocalLocksAndTerm(t *testing.T) {
	s, e, _ := newLeased(t)
	e.leased.Store(true)
	pre, err := s.Prewrite(bg, &kvrpcpb.PrewriteRequest{
		Mutations:   []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte("k"), Value: []byte("v2")}},
		PrimaryLock: []byte("k"), StartVersion: 20, LockTtl: 3000,
	})
	require.NoError(t, err)
	require.Empty(t, pre.GetErrors())
	get := func(ts uint64) *kvrpcpb.GetResponse {
		resp, p, err := s.GetLocal(bg, &kvrpcpb.GetRequest{Context: &kvrpcpb.Context{}, Key: []byte("k"), Version: ts})
		require.NoError(t, err)
		require.Nil(t, p)
		return resp
	}
	resp := get(30)
	require.NotNil(t, resp.GetError().GetLocked(), "%v", resp)
	require.EqualValues(t, 20, resp.GetError().GetLocked().GetLockVersion())
	want, err := s.Get(bg, &kvrpcpb.GetRequest{Context: &kvrpcpb.Context{}, Key: []byte("k"), Version: 30})
	require.NoError(t, err)
	require.Equal(t, want.GetError().String(), resp.GetError().String(), "as Get answers")
	require.Equal(t, "v", string(get(15).GetValue()))

	e.nowTerm.Store(2) // the peer led again in a later term meanwhile
	resp = get(15)
	require.NotNil(t, resp.GetRegionError().GetNotLeader(), "%v", resp)
	require.Nil(t, resp.GetValue())
}
