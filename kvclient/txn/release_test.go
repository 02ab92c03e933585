package txn_test

// A failed lock round, a deadlock victim, a killed lock wait, a ROLLBACK
// and a failed commit release their locks at once (issue 34), against real
// stores: the next writer of a released key is not stalled until the TTL.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/kvclient"
	"github.com/stratadb/strata/kvclient/txn"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/storepb"
)

// releaseBound is how much longer than an uncontended lock request the
// next writer of a released key may take. The locks' TTL (releaseTTL) is
// far longer, and heartbeats keep a live transaction's locks for good, so
// a lock left behind fails by seconds: the next writer's 5 s wait times
// out. The bound only has to stay well below that; at 100 ms it failed
// under -race on a loaded 2-core machine (270 ms for a released key).
const (
	releaseBound = time.Second
	releaseTTL   = 10 * time.Second
)

var probeSeq atomic.Int64

// releaseClient is a transaction client whose locks live releaseTTL.
func releaseClient(c *cluster) *txn.Client {
	return txn.NewClient(c.kv, c.pd, txn.Config{LockTTL: releaseTTL})
}

func pbegin(t *testing.T, tc *txn.Client) *txn.Txn {
	t.Helper()
	tx, err := tc.Begin(context.Background(), kv.TxnOptions{Pessimistic: true})
	require.NoError(t, err)
	return tx
}

func byteKeys(keys ...string) [][]byte {
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = []byte(k)
	}
	return out
}

// lockCost is how long an uncontended lock round takes right now: a new
// transaction's LockKeys of a fresh key (the test machinery's own cost).
func lockCost(t *testing.T, tc *txn.Client) time.Duration {
	t.Helper()
	ctx := context.Background()
	w := pbegin(t, tc)
	defer func() { _ = w.Rollback(ctx) }()
	start := time.Now()
	_, err := w.LockKeys(ctx, kv.LockOptions{WaitTimeoutMs: 5000}, []byte(fmt.Sprintf("probe/%d", probeSeq.Add(1))))
	require.NoError(t, err)
	return time.Since(start)
}

// requireReleased: a new transaction locks keys within releaseBound of an
// uncontended lock round.
func requireReleased(t *testing.T, tc *txn.Client, keys ...string) {
	t.Helper()
	ctx := context.Background()
	base := lockCost(t, tc)
	w := pbegin(t, tc)
	defer func() { _ = w.Rollback(ctx) }()
	start := time.Now()
	_, err := w.LockKeys(ctx, kv.LockOptions{WaitTimeoutMs: 5000}, byteKeys(keys...)...)
	took := time.Since(start)
	require.NoError(t, err, "%v not released: the next writer waited %v", keys, took)
	require.Less(t, took, base+releaseBound, "%v: the next writer waited %v (uncontended lock: %v)", keys, took, base)
}

// TestReleaseLockWaitTimeoutMultiKey: V's FOR UPDATE of (k1, k6) locks its
// primary k1, then times out on k6 (held by H): the 1205 releases k1 at
// once, and so does V's ROLLBACK.
func TestReleaseLockWaitTimeoutMultiKey(t *testing.T) {
	c := startCluster(t)
	tc := releaseClient(c)
	ctx := context.Background()
	h := pbegin(t, tc)
	_, err := h.LockKeys(ctx, kv.LockOptions{}, []byte("lwt/k6"))
	require.NoError(t, err)

	v := pbegin(t, tc)
	_, err = v.LockKeys(ctx, kv.LockOptions{WaitTimeoutMs: 300}, byteKeys("lwt/k1", "lwt/k6")...)
	require.ErrorIs(t, err, kv.ErrLockWaitTimeout)
	requireReleased(t, tc, "lwt/k1")

	// The transaction goes on: its next lock round chooses a primary anew.
	_, err = v.LockKeys(ctx, kv.LockOptions{}, []byte("lwt/k2"))
	require.NoError(t, err)
	require.NoError(t, v.Rollback(ctx))
	requireReleased(t, tc, "lwt/k1", "lwt/k2")
	require.NoError(t, h.Rollback(ctx))
	requireReleased(t, tc, "lwt/k6")
}

// TestReleaseStatementErrorAfterPartialLock: a NOWAIT FOR UPDATE that took
// its primary and then met a lock fails (3572) without keeping the
// primary.
func TestReleaseStatementErrorAfterPartialLock(t *testing.T) {
	c := startCluster(t)
	tc := releaseClient(c)
	ctx := context.Background()
	h := pbegin(t, tc)
	_, err := h.LockKeys(ctx, kv.LockOptions{}, []byte("nw/k6"))
	require.NoError(t, err)
	v := pbegin(t, tc)
	var lc *kv.LockConflictError
	_, err = v.LockKeys(ctx, kv.LockOptions{NoWait: true}, byteKeys("nw/k1", "nw/k6")...)
	require.ErrorAs(t, err, &lc)
	requireReleased(t, tc, "nw/k1")
	require.NoError(t, v.Rollback(ctx))
	require.NoError(t, h.Rollback(ctx))
}

// TestReleaseKilledLockWait: KILL QUERY (the statement's context
// cancelled) while V waits for k6 releases the primary k1 it took.
func TestReleaseKilledLockWait(t *testing.T) {
	c := startCluster(t)
	tc := releaseClient(c)
	ctx := context.Background()
	h := pbegin(t, tc)
	_, err := h.LockKeys(ctx, kv.LockOptions{}, []byte("kill/k6"))
	require.NoError(t, err)

	v := pbegin(t, tc)
	sctx, kill := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := v.LockKeys(sctx, kv.LockOptions{WaitTimeoutMs: 20_000}, byteKeys("kill/k1", "kill/k6")...)
		done <- err
	}()
	// V holds k1 once a NOWAIT lock of it fails: it then locks or waits
	// for k6 (the primary is locked first).
	deadline := time.Now().Add(20 * time.Second)
	for {
		p := pbegin(t, tc)
		_, err := p.LockKeys(ctx, kv.LockOptions{NoWait: true}, []byte("kill/k1"))
		require.NoError(t, p.Rollback(ctx))
		var lc *kv.LockConflictError
		if errors.As(err, &lc) {
			break
		}
		require.NoError(t, err)
		require.True(t, time.Now().Before(deadline), "V never locked kill/k1")
	}
	kill()
	require.ErrorIs(t, <-done, context.Canceled)
	requireReleased(t, tc, "kill/k1")
	require.NoError(t, v.Rollback(ctx))
	require.NoError(t, h.Rollback(ctx))
}

// probeDeadlock sends, as transaction startTS, a lock request of key that
// waits 1 ms, and reports whether the store found a deadlock: whether a
// transaction holding key waits for startTS.
func probeDeadlock(t *testing.T, c *cluster, startTS uint64, key []byte) bool {
	t.Helper()
	ctx := context.Background()
	ts, err := c.pd.GetTS(ctx)
	require.NoError(t, err)
	bo := c.kv.NewBackoffer()
	for {
		r, err := c.kv.Locate(ctx, bo, key)
		require.NoError(t, err)
		resp, retry, err := c.kv.SendRequest(ctx, bo, r, &kvclient.Request{Cmd: &storepb.BatchCommandsRequest_Request_PessimisticLock{PessimisticLock: &kvrpcpb.PessimisticLockRequest{
			Mutations: []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_PessimisticLock, Key: key}}, PrimaryLock: key,
			StartVersion: startTS, LockTtl: uint64(releaseTTL.Milliseconds()), ForUpdateTs: ts, WaitTimeout: 1}}})
		require.NoError(t, err)
		if retry {
			continue
		}
		for _, ke := range resp.GetPessimisticLock().GetErrors() {
			if ke.Deadlock != nil {
				return true
			}
		}
		return false
	}
}

// TestReleaseDeadlockVictim: V's FOR UPDATE of (k1, k6) locks its primary
// k1; H (holding k6) then waits for k1; V's wait for k6 closes the cycle:
// V is the victim, and k1 is released before its 1213 is returned, so H
// gets k1 at once (it would wait for V's lock until its timeout).
func TestReleaseDeadlockVictim(t *testing.T) {
	c := startCluster(t)
	tc := releaseClient(c)
	ctx := context.Background()
	h := pbegin(t, tc)
	_, err := h.LockKeys(ctx, kv.LockOptions{}, []byte("dl/k6"))
	require.NoError(t, err)
	base := lockCost(t, tc)

	ready, proceed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	defer txn.SetAfterPrimaryLocked(func() { once.Do(func() { close(ready); <-proceed }) })()
	v := pbegin(t, tc)
	type result struct {
		at  time.Time
		err error
	}
	vDone := make(chan result, 1)
	go func() {
		_, err := v.LockKeys(ctx, kv.LockOptions{WaitTimeoutMs: 20_000}, byteKeys("dl/k1", "dl/k6")...)
		vDone <- result{time.Now(), err}
	}()
	<-ready // V holds k1 and has not asked for k6 yet
	hDone := make(chan result, 1)
	waitH := func() {
		go func() {
			_, err := h.LockKeys(ctx, kv.LockOptions{WaitTimeoutMs: 20_000}, []byte("dl/k1"))
			hDone <- result{time.Now(), err}
		}()
	}
	waitH()
	// Until H waits for V at the store: a 1 ms wait as V for k6 is then a
	// deadlock. Should H's wait arrive during such a probe, H is that
	// cycle's victim (nothing taken): it waits again.
	var dl *kv.DeadlockError
	deadline := time.Now().Add(20 * time.Second)
	for !probeDeadlock(t, c, v.StartTS(), []byte("dl/k6")) {
		select {
		case r := <-hDone:
			require.ErrorAs(t, r.err, &dl)
			waitH()
		default:
		}
		require.True(t, time.Now().Before(deadline), "H never waited for V")
	}
	close(proceed)
	vr := <-vDone
	require.ErrorAs(t, vr.err, &dl, "V's wait for k6 closes the cycle")
	hr := <-hDone
	require.NoError(t, hr.err, "H never got k1 from the victim")
	waited := hr.at.Sub(vr.at)
	require.Less(t, waited, base+releaseBound, "H got k1 %v after V's deadlock error (uncontended lock: %v)", waited, base)
	require.NoError(t, v.Rollback(ctx))
	require.NoError(t, h.Rollback(ctx))
}

// TestReleaseFailedCommit: an optimistic commit whose prewrite succeeded in
// one region and met a write conflict in the other rolls the prewritten
// lock back before it returns the conflict.
func TestReleaseFailedCommit(t *testing.T) {
	c := startCluster(t)
	tc := releaseClient(c)
	ctx := context.Background()
	_, err := c.kv.SplitRegions(ctx, byteKeys("fc/k5"))
	require.NoError(t, err)
	t1, err := tc.Begin(ctx, kv.TxnOptions{})
	require.NoError(t, err)
	for _, k := range []string{"fc/k1", "fc/k6"} {
		require.NoError(t, t1.Set([]byte(k), []byte("t1")))
	}
	t2, err := tc.Begin(ctx, kv.TxnOptions{})
	require.NoError(t, err)
	require.NoError(t, t2.Set([]byte("fc/k6"), []byte("t2")))
	require.NoError(t, t2.Commit(ctx))
	var wc *kv.WriteConflictError
	require.ErrorAs(t, t1.Commit(ctx), &wc)
	requireReleased(t, tc, "fc/k1", "fc/k6")
}
