package txn_test

// Transactions against a real PD and three real store nodes in process on
// loopback (one region: raftstore does not split yet).

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/kvclient"
	"github.com/stratadb/strata/kvclient/txn"
	"github.com/stratadb/strata/pd/pdclient"
	"github.com/stratadb/strata/pd/pdtest"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/storepb"
	"github.com/stratadb/strata/store/server"
)

type cluster struct {
	pd *pdclient.Client
	kv *kvclient.Client
	tc *txn.Client
}

func startCluster(t *testing.T) *cluster { return startClusterTB(t, kvclient.Config{}) }

func startClusterTB(t testing.TB, cfg kvclient.Config) *cluster {
	pdAddr := pdtest.Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pd, err := pdclient.New(ctx, []string{pdAddr})
	require.NoError(t, err)
	t.Cleanup(func() { pd.Close() })
	for range 3 {
		srv, err := server.New(server.Config{
			PDEndpoints:       []string{pdAddr},
			Addr:              "127.0.0.1:0",
			DataDir:           t.TempDir(),
			RaftTick:          10 * time.Millisecond,
			ElectionTicks:     10,
			HeartbeatTicks:    2,
			HeartbeatInterval: 100 * time.Millisecond,
			Logger:            slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		require.NoError(t, err)
		sctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Run(sctx) }()
		t.Cleanup(func() {
			stop()
			<-done
		})
		select {
		case <-srv.Ready():
		case err := <-done:
			require.FailNow(t, "store exited", "%v", err)
		case <-time.After(30 * time.Second):
			require.FailNow(t, "store not ready")
		}
	}
	kv := kvclient.New(pd, cfg)
	t.Cleanup(func() { _ = kv.Close() })
	return &cluster{pd: pd, kv: kv, tc: txn.NewClient(kv, pd, txn.Config{LockTTL: 500 * time.Millisecond})}
}

func (c *cluster) begin(t *testing.T, opts kv.TxnOptions) *txn.Txn {
	t.Helper()
	tx, err := c.tc.Begin(context.Background(), opts)
	require.NoError(t, err)
	return tx
}

func (c *cluster) read(t *testing.T, key string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tx := c.begin(t, kv.TxnOptions{ReadOnly: true})
	v, found, err := tx.Get(ctx, []byte(key))
	require.NoError(t, err)
	return string(v), found
}

func TestClusterCommitModes(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	for i, opts := range []kv.TxnOptions{
		{},                               // 2PC
		{OnePC: true},                    // 1PC
		{AsyncCommit: true},              // async commit
		{Pessimistic: true},              // pessimistic 2PC
		{Pessimistic: true, OnePC: true}, // pessimistic 1PC
	} {
		tx := c.begin(t, opts)
		keys := [][]byte{[]byte(fmt.Sprintf("m%d-a", i)), []byte(fmt.Sprintf("m%d-b", i))}
		if opts.Pessimistic {
			_, err := tx.LockKeys(ctx, kv.LockOptions{}, keys...)
			require.NoError(t, err)
		}
		for _, k := range keys {
			require.NoError(t, tx.Set(k, []byte("v")))
		}
		require.NoError(t, tx.Commit(ctx), "%+v", opts)
		for _, k := range keys {
			require.Eventually(t, func() bool { v, ok := c.read(t, string(k)); return ok && v == "v" },
				10*time.Second, 5*time.Millisecond, "%+v %s", opts, k)
		}
	}

	// Conflicts and existence checks.
	t1 := c.begin(t, kv.TxnOptions{})
	require.NoError(t, t1.Set([]byte("m0-a"), []byte("t1")))
	t2 := c.begin(t, kv.TxnOptions{OnePC: true})
	require.NoError(t, t2.Set([]byte("m0-a"), []byte("t2")))
	require.NoError(t, t2.Commit(ctx))
	var wc *kv.WriteConflictError
	require.ErrorAs(t, t1.Commit(ctx), &wc)
	t3 := c.begin(t, kv.TxnOptions{})
	require.NoError(t, t3.Insert([]byte("m0-b"), []byte("x")))
	var ke *kv.KeyExistsError
	require.ErrorAs(t, t3.Commit(ctx), &ke)
}

// prewrite leaves locks of a transaction that then "dies": keys[0] is the
// primary.
func prewrite(t *testing.T, c *cluster, startTS, ttl uint64, keys ...string) {
	ctx := context.Background()
	var muts []*kvrpcpb.Mutation
	for _, k := range keys {
		muts = append(muts, &kvrpcpb.Mutation{Op: kvrpcpb.Op_Put, Key: []byte(k), Value: []byte("dead-" + k)})
	}
	bo := c.kv.NewBackoffer()
	for {
		r, err := c.kv.Locate(ctx, bo, muts[0].Key)
		require.NoError(t, err)
		resp, retry, err := c.kv.SendRequest(ctx, bo, r, &kvclient.Request{Cmd: &storepb.BatchCommandsRequest_Request_Prewrite{Prewrite: &kvrpcpb.PrewriteRequest{
			Mutations: muts, PrimaryLock: muts[0].Key, StartVersion: startTS, LockTtl: ttl, TxnSize: uint64(len(muts)), MinCommitTs: startTS + 1}}})
		require.NoError(t, err)
		if retry {
			continue
		}
		require.Empty(t, resp.GetPrewrite().GetErrors())
		return
	}
}

func commitPrimary(t *testing.T, c *cluster, key string, startTS uint64) uint64 {
	ctx := context.Background()
	commitTS, err := c.pd.GetTS(ctx)
	require.NoError(t, err)
	bo := c.kv.NewBackoffer()
	for {
		r, err := c.kv.Locate(ctx, bo, []byte(key))
		require.NoError(t, err)
		resp, retry, err := c.kv.SendRequest(ctx, bo, r, &kvclient.Request{Cmd: &storepb.BatchCommandsRequest_Request_Commit{Commit: &kvrpcpb.CommitRequest{
			StartVersion: startTS, Keys: [][]byte{[]byte(key)}, CommitVersion: commitTS}}})
		require.NoError(t, err)
		if retry {
			continue
		}
		require.Nil(t, resp.GetCommit().GetError())
		return commitTS
	}
}

func TestClusterResolvesAbandonedTxn(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	setup := c.begin(t, kv.TxnOptions{})
	for _, k := range []string{"r-a", "r-b", "c-a", "c-b"} {
		require.NoError(t, setup.Set([]byte(k), []byte("old")))
	}
	require.NoError(t, setup.Commit(ctx))
	for _, k := range []string{"r-a", "r-b", "c-a", "c-b"} {
		// Reading resolves the secondary locks the background commit may
		// not have reached yet (the raw prewrites below would meet them).
		v, _ := c.read(t, k)
		require.Equal(t, "old", v)
	}

	// Rolled back: its primary was never committed; readers wait out the
	// 300ms TTL, roll it back and read the old values.
	ts, err := c.pd.GetTS(ctx)
	require.NoError(t, err)
	prewrite(t, c, ts, 300, "r-a", "r-b")
	start := time.Now()
	v, _ := c.read(t, "r-b")
	require.Equal(t, "old", v)
	v, _ = c.read(t, "r-a")
	require.Equal(t, "old", v)
	require.Less(t, time.Since(start), 10*time.Second)

	// Committed primary, secondary left locked: readers commit it.
	ts, err = c.pd.GetTS(ctx)
	require.NoError(t, err)
	prewrite(t, c, ts, 60_000, "c-a", "c-b")
	commitPrimary(t, c, "c-a", ts)
	v, _ = c.read(t, "c-b")
	require.Equal(t, "dead-c-b", v, "a committed primary commits its secondaries")

	// A writer meets the resolved keys without trouble.
	w := c.begin(t, kv.TxnOptions{})
	require.NoError(t, w.Set([]byte("r-b"), []byte("new")))
	require.NoError(t, w.Set([]byte("c-b"), []byte("new")))
	require.NoError(t, w.Commit(ctx))
}

func TestClusterPessimisticWaitTimeoutAndDeadlock(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	t1 := c.begin(t, kv.TxnOptions{Pessimistic: true})
	t2 := c.begin(t, kv.TxnOptions{Pessimistic: true})
	_, err := t1.LockKeys(ctx, kv.LockOptions{}, []byte("p-a"))
	require.NoError(t, err)
	_, err = t2.LockKeys(ctx, kv.LockOptions{}, []byte("p-b"))
	require.NoError(t, err)

	start := time.Now()
	_, err = t2.LockKeys(ctx, kv.LockOptions{WaitTimeoutMs: 300}, []byte("p-a"))
	require.ErrorIs(t, err, kv.ErrLockWaitTimeout)
	require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	var lc *kv.LockConflictError
	_, err = t2.LockKeys(ctx, kv.LockOptions{NoWait: true}, []byte("p-a"))
	require.ErrorAs(t, err, &lc)

	// t1 waits for p-b (t2), t2 for p-a (t1): one of them is the victim
	// at once; once it rolls back, the other gets its lock.
	type result struct {
		i   int
		err error
	}
	txns := []*txn.Txn{t1, t2}
	keys := []string{"p-b", "p-a"}
	results := make(chan result, 2)
	for i := range txns {
		go func() {
			_, err := txns[i].LockKeys(ctx, kv.LockOptions{WaitTimeoutMs: 10_000}, []byte(keys[i]))
			results <- result{i, err}
		}()
	}
	first := <-results
	var dl *kv.DeadlockError
	require.ErrorAs(t, first.err, &dl)
	require.NoError(t, txns[first.i].Rollback(ctx))
	second := <-results
	require.NoError(t, second.err)
	require.NoError(t, txns[second.i].Commit(ctx))
}

// BenchmarkClusterPointGet: a snapshot point get through a real store (one
// region, leader on loopback), as unary RPCs and on the BatchCommands
// stream, from one caller and from 8*GOMAXPROCS concurrent callers. Each
// get is a read-only transaction at a fixed ts (Begin, Get, Rollback: no
// TSO round), as an autocommit point SELECT's.
func BenchmarkClusterPointGet(b *testing.B) {
	for _, unary := range []bool{true, false} {
		name := "batched"
		if unary {
			name = "unary"
		}
		b.Run(name, func(b *testing.B) {
			c := startClusterTB(b, kvclient.Config{DisableBatch: unary})
			ctx := context.Background()
			tx, err := c.tc.Begin(ctx, kv.TxnOptions{})
			require.NoError(b, err)
			require.NoError(b, tx.Set([]byte("bench"), []byte("value")))
			require.NoError(b, tx.Commit(ctx))
			ts, err := c.pd.GetTS(ctx)
			require.NoError(b, err)
			// Warm the route and the connection.
			require.Eventually(b, func() bool { _, ok, err := c.getAt(ctx, []byte("bench"), ts); return err == nil && ok }, 20*time.Second, time.Millisecond)
			b.Run("serial", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, _, err := c.getAt(ctx, []byte("bench"), ts); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("parallel", func(b *testing.B) {
				b.ReportAllocs()
				b.SetParallelism(8)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, _, err := c.getAt(ctx, []byte("bench"), ts); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		})
	}
}

// getAt reads key in a read-only transaction at ts.
func (c *cluster) getAt(ctx context.Context, key []byte, ts uint64) ([]byte, bool, error) {
	tx, err := c.tc.Begin(ctx, kv.TxnOptions{StartTS: ts, ReadOnly: true})
	if err != nil {
		return nil, false, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	return tx.Get(ctx, key)
}
