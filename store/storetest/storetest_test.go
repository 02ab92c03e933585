package storetest_test

// The store driven by the production client stack, as the SQL node's tests
// drive it (a store package's tests may import the KV client; its code may
// not: internal/layout).

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/kvclient"
	"github.com/stratadb/strata/kvclient/txn"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/store/storetest"
)

type client struct {
	st *storetest.Store
	tc *txn.Client
	kv *txn.Storage
}

func start(t *testing.T, opts storetest.Options) *client {
	t.Helper()
	st, err := storetest.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	kvc := kvclient.New(st, kvclient.Config{})
	t.Cleanup(func() { _ = kvc.Close() })
	tc := txn.NewClient(kvc, st, txn.Config{})
	return &client{st: st, tc: tc, kv: txn.NewStorage(st, kvc, tc)}
}

func (c *client) begin(t *testing.T, opts kv.TxnOptions) *txn.Txn {
	t.Helper()
	tx, err := c.tc.Begin(context.Background(), opts)
	require.NoError(t, err)
	return tx
}

// read returns every pair at a fresh timestamp.
func (c *client) read(t *testing.T) map[string]string {
	t.Helper()
	ctx := context.Background()
	ts, err := c.kv.GetTS(ctx)
	require.NoError(t, err)
	pairs, err := kv.ScanAt(ctx, c.kv, nil, nil, ts, 0)
	require.NoError(t, err)
	out := map[string]string{}
	for _, p := range pairs {
		out[string(p.Key)] = string(p.Value)
	}
	return out
}

func key(i int) []byte { return []byte(fmt.Sprintf("k%03d", i)) }

// A transaction over regions led by two store nodes commits atomically
// (2PC or async commit: more than one region), and is read back through
// regions split further under it.
func TestCommitAcrossRegions(t *testing.T) {
	c := start(t, storetest.Options{Stores: 2, SplitKeys: [][]byte{key(3), key(6)}})
	ctx := context.Background()
	require.Len(t, c.st.Engine().Regions(), 3)
	for _, opts := range []kv.TxnOptions{{}, {AsyncCommit: true}, {Pessimistic: true, AsyncCommit: true}} {
		tx := c.begin(t, opts)
		if opts.Pessimistic {
			_, err := tx.LockKeys(ctx, kv.LockOptions{}, key(0), key(4), key(8))
			require.NoError(t, err)
		}
		for i := range 9 {
			require.NoError(t, tx.Set(key(i), []byte(fmt.Sprint(opts.AsyncCommit, i))))
		}
		require.NoError(t, tx.Commit(ctx))
		got := c.read(t)
		for i := range 9 {
			require.Equal(t, fmt.Sprint(opts.AsyncCommit, i), got[string(key(i))], "%+v", opts)
		}
	}
	n, err := c.st.Engine().SplitBySize(2)
	require.NoError(t, err)
	require.Positive(t, n)
	require.Len(t, c.read(t), 9, "read through regions the client learns from EpochNotMatch")
}

// The second of two optimistic transactions writing one key fails at
// commit with the conflict; a failed prewrite answered by a fault is the
// same to the client.
func TestWriteConflict(t *testing.T) {
	c := start(t, storetest.Options{})
	ctx := context.Background()
	a, b := c.begin(t, kv.TxnOptions{}), c.begin(t, kv.TxnOptions{})
	require.NoError(t, a.Set(key(1), []byte("a")))
	require.NoError(t, b.Set(key(1), []byte("b")))
	require.NoError(t, a.Commit(ctx))
	var wc *kv.WriteConflictError
	require.ErrorAs(t, b.Commit(ctx), &wc)
	require.Equal(t, "a", c.read(t)[string(key(1))])

	f := &storetest.Fault{Method: "KvPrewrite", Times: 1, Answer: func(req proto.Message) (proto.Message, error) {
		r := req.(*kvrpcpb.PrewriteRequest)
		return &kvrpcpb.PrewriteResponse{Errors: []*kvrpcpb.KeyError{{Conflict: &kvrpcpb.WriteConflict{
			StartTs: r.GetStartVersion(), ConflictCommitTs: r.GetStartVersion() + 1, Key: r.GetMutations()[0].GetKey()}}}}, nil
	}}
	c.st.Inject(f)
	d := c.begin(t, kv.TxnOptions{})
	require.NoError(t, d.Set(key(2), []byte("d")))
	require.ErrorAs(t, d.Commit(ctx), &wc)
	require.Equal(t, 1, c.st.Hits(f))
	e := c.begin(t, kv.TxnOptions{})
	require.NoError(t, e.Set(key(2), []byte("e")))
	require.NoError(t, e.Commit(ctx), "the fault answered once")
}

// Two pessimistic transactions locking two keys in opposite orders: the
// store's deadlock detector refuses the wait that closes the cycle.
func TestDeadlock(t *testing.T) {
	c := start(t, storetest.Options{Stores: 2, SplitKeys: [][]byte{key(2)}})
	ctx := context.Background()
	a, b := c.begin(t, kv.TxnOptions{Pessimistic: true}), c.begin(t, kv.TxnOptions{Pessimistic: true})
	_, err := a.LockKeys(ctx, kv.LockOptions{}, key(1))
	require.NoError(t, err)
	_, err = b.LockKeys(ctx, kv.LockOptions{}, key(3))
	require.NoError(t, err)
	locks, err := c.st.Locks(ctx, math.MaxUint64)
	require.NoError(t, err)
	require.Len(t, locks, 2)

	// a waits for b's key 3 and b for a's key 1: the wait that closes the
	// cycle is refused, its transaction (the victim) rolls back, and the
	// other gets its lock.
	type outcome struct {
		tx  *txn.Txn
		err error
	}
	done := make(chan outcome, 2)
	for _, w := range []struct {
		tx  *txn.Txn
		key []byte
	}{{a, key(3)}, {b, key(1)}} {
		go func() {
			_, err := w.tx.LockKeys(ctx, kv.LockOptions{}, w.key)
			done <- outcome{w.tx, err}
		}()
	}
	victim := <-done
	var dl *kv.DeadlockError
	require.ErrorAs(t, victim.err, &dl)
	require.NoError(t, victim.tx.Rollback(ctx))
	winner := <-done
	require.NoError(t, winner.err)
	require.NoError(t, winner.tx.Commit(ctx))
	require.Equal(t, 1, c.st.Deadlocks())
	require.Zero(t, c.st.LockWaiters())
}

// A pessimistic lock held in memory by the region's leader survives a
// split of its region: the split hands it over to the engine first.
func TestSplitKeepsMemoryLocks(t *testing.T) {
	c := start(t, storetest.Options{})
	ctx := context.Background()
	a := c.begin(t, kv.TxnOptions{Pessimistic: true})
	_, err := a.LockKeys(ctx, kv.LockOptions{}, key(5))
	require.NoError(t, err)
	c.st.Split(key(3), key(7))
	locks, err := c.st.Locks(ctx, math.MaxUint64)
	require.NoError(t, err)
	require.Len(t, locks, 1)
	b := c.begin(t, kv.TxnOptions{Pessimistic: true})
	_, err = b.LockKeys(ctx, kv.LockOptions{NoWait: true}, key(5))
	var lc *kv.LockConflictError
	require.ErrorAs(t, err, &lc, "the lock is still held after the split")
	require.NoError(t, a.Set(key(5), []byte("a")))
	require.NoError(t, a.Commit(ctx))
	require.NoError(t, b.Rollback(ctx))
	require.Equal(t, "a", c.read(t)[string(key(5))])
}
