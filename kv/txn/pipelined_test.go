package txn

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv/concurrency"
	"github.com/stratadb/strata/proto/errorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
)

// asyncEngine is a pebbleEngine whose WriteAsync queues the write until the
// test releases it (Write still writes at once) (apply: written; drop: refused with a region error, as
// a proposal lost to a leader change is).
type asyncEngine struct {
	*pebbleEngine
	queued chan queuedWrite
}

type queuedWrite struct {
	reqs []*raft_cmdpb.Request
	done func(*errorpb.Error, error)
}

func (e *asyncEngine) WriteAsync(rctx *kvrpcpb.Context, region *metapb.Region, gen uint64, reqs []*raft_cmdpb.Request, done func(*errorpb.Error, error)) {
	e.queued <- queuedWrite{reqs: reqs, done: done}
}

func (e *asyncEngine) apply(t *testing.T) {
	t.Helper()
	w := <-e.queued
	w.done(e.Write(bg, nil, nil, 0, w.reqs))
}

func (e *asyncEngine) drop(t *testing.T) {
	t.Helper()
	w := <-e.queued
	w.done(&errorpb.Error{Message: "not leader", NotLeader: &errorpb.NotLeader{RegionId: 1}}, nil)
}

func newAsyncHarness(t *testing.T) (*harness, *asyncEngine) {
	pe := newPebbleEngine(t)
	e := &asyncEngine{pebbleEngine: pe, queued: make(chan queuedWrite, 16)}
	tso := &counterTSO{}
	return &harness{t: t, e: pe, tso: tso, s: New(e, concurrency.New(), tso, Config{PipelinedPessimisticLock: true})}, e
}

func (h *harness) prewritePessimistic(ctx context.Context, startTS, forUpdateTS uint64, key, value string) (*kvrpcpb.PrewriteResponse, error) {
	return h.s.Prewrite(ctx, &kvrpcpb.PrewriteRequest{
		Mutations:          []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: []byte(key), Value: []byte(value)}},
		PessimisticActions: []kvrpcpb.PessimisticAction{kvrpcpb.PessimisticAction_DoPessimisticCheck},
		PrimaryLock:        []byte(key), StartVersion: startTS, ForUpdateTs: forUpdateTS, LockTtl: 60000,
	})
}

// TestPipelinedLockAnsweredBeforeApply: a pessimistic lock is answered once
// evaluated; its keys stay latched until the lock record applied, so the
// transaction's own prewrite (and anyone else) runs after it and sees it.
func TestPipelinedLockAnsweredBeforeApply(t *testing.T) {
	h, e := newAsyncHarness(t)
	resp := h.lock(t, 10, 1000, "k") // answered with the write still queued
	require.Empty(t, resp.Errors)
	require.Equal(t, int64(0), h.e.writes.Load())

	type result struct {
		resp *kvrpcpb.PrewriteResponse
		err  error
	}
	done := make(chan result, 1)
	go func() {
		r, err := h.prewritePessimistic(bg, 10, 10, "k", "v")
		done <- result{r, err}
	}()
	// The prewrite waits for the latch the queued lock write holds.
	ctx, cancel := context.WithTimeout(bg, 20*time.Millisecond)
	_, err := h.prewritePessimistic(ctx, 10, 10, "k", "v")
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)

	e.apply(t) // the lock record; then the prewrite (written directly) runs
	r := <-done
	require.NoError(t, r.err)
	require.Empty(t, r.resp.Errors)
	require.Equal(t, int64(2), h.e.writes.Load())
}

// TestPipelinedLockLost: a lock record that never applied (the proposal
// was dropped) releases the latches; the prewrite amends the missing lock
// when nothing was committed after for_update_ts, and fails with
// PessimisticLockNotFound when something was.
func TestPipelinedLockLost(t *testing.T) {
	h, e := newAsyncHarness(t)
	require.Empty(t, h.lock(t, 10, 1000, "a").Errors)
	e.drop(t)
	r, err := h.prewritePessimistic(bg, 10, 10, "a", "v")
	require.NoError(t, err)
	require.Empty(t, r.Errors, "nothing newer committed: the missing lock is amended")

	// Txn 20 locks b, loses the record; txn 30 locks, prewrites and
	// commits b meanwhile; txn 20's prewrite must fail.
	require.Empty(t, h.lock(t, 20, 1000, "b").Errors)
	e.drop(t)
	require.Empty(t, h.lock(t, 30, 1000, "b").Errors)
	e.apply(t)
	r, err = h.prewritePessimistic(bg, 30, 30, "b", "w")
	require.NoError(t, err)
	require.Empty(t, r.Errors)
	c, err := h.s.Commit(bg, &kvrpcpb.CommitRequest{Keys: [][]byte{[]byte("b")}, StartVersion: 30, CommitVersion: 31})
	require.NoError(t, err)
	require.Nil(t, c.Error)
	r, err = h.prewritePessimistic(bg, 20, 20, "b", "x")
	require.NoError(t, err)
	require.Len(t, r.Errors, 1)
	require.Contains(t, r.Errors[0].GetRetryable(), "not found", "%v", r.Errors[0])
}

// TestPipelinedLockOffIsSynchronous: without PipelinedPessimisticLock the
// lock is answered only after its write applied.
func TestPipelinedLockOffIsSynchronous(t *testing.T) {
	pe := newPebbleEngine(t)
	e := &asyncEngine{pebbleEngine: pe, queued: make(chan queuedWrite, 16)}
	tso := &counterTSO{}
	h := &harness{t: t, e: pe, tso: tso, s: New(e, concurrency.New(), tso, Config{})}
	require.Empty(t, h.lock(t, 10, 1000, "k").Errors)
	require.Equal(t, int64(1), pe.writes.Load())
	require.Empty(t, e.queued)
}
