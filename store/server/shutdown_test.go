package server

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	strkv "github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/kvclient"
	kvtxn "github.com/stratadb/strata/kvclient/txn"
	"github.com/stratadb/strata/store/mvcc"
)

// clusterTSO hands out the test cluster's timestamps (kvclient/txn's Oracle).
type clusterTSO struct{ c *testCluster }

func (o clusterTSO) GetTS(context.Context) (uint64, error) { return o.c.nextTS(), nil }

// commitOne writes key in a transaction of its own (1PC in one region).
func commitOne(ctx context.Context, txns *kvtxn.Client, key, value []byte) error {
	tx, err := txns.Begin(ctx, strkv.TxnOptions{OnePC: true, AsyncCommit: true})
	if err != nil {
		return err
	}
	if err := tx.Set(key, value); err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	return tx.Commit(ctx)
}

// writeLoad runs writers that commit unique keys through kvclient/txn (half of
// them reading each write back), until stop is called. Every error is recorded: during a
// graceful leader transfer there must be none (no undetermined write, no
// stale read).
type writeLoad struct {
	c       *testCluster
	kv      *kvclient.Client
	done    atomic.Int64
	stopped chan struct{}
	wg      sync.WaitGroup

	mu      sync.Mutex
	errs    []error
	last    time.Time     // last successful write
	maxGap  time.Duration // longest time without a successful write
	written map[string]string
}

func startWriteLoad(t *testing.T, c *testCluster, writers int) *writeLoad {
	kv := kvclient.New(c.pd, kvclient.Config{})
	t.Cleanup(func() { kv.Close() })
	txns := kvtxn.NewClient(kv, clusterTSO{c}, kvtxn.Config{})
	l := &writeLoad{c: c, kv: kv, stopped: make(chan struct{}), last: time.Now(), written: map[string]string{}}
	for w := range writers {
		l.wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-l.stopped:
					return
				default:
				}
				k, v := fmt.Sprintf("load-%d-%05d", w, i), fmt.Sprintf("v%d", i)
				ctx, cancel := context.WithTimeout(context.Background(), waitFor)
				err := commitOne(ctx, txns, []byte(k), []byte(v))
				if err == nil && w%2 == 0 { // half the writers read their write back
					var got []byte
					var found bool
					got, found, err = readAt(ctx, txns, []byte(k), c.nextTS())
					if err == nil && (!found || string(got) != v) {
						err = fmt.Errorf("read %s after its commit: found=%v value=%q", k, found, got)
					}
				}
				cancel()
				l.mu.Lock()
				if err != nil {
					l.errs = append(l.errs, fmt.Errorf("writer %d key %s: %w", w, k, err))
				} else {
					now := time.Now()
					l.maxGap = max(l.maxGap, now.Sub(l.last))
					l.last = now
					l.written[k] = v
				}
				l.mu.Unlock()
				l.done.Add(1)
			}
		})
	}
	return l
}

// waitWrites waits until n more operations completed.
func (l *writeLoad) waitWrites(t *testing.T, n int64) {
	target := l.done.Load() + n
	require.Eventually(t, func() bool { return l.done.Load() >= target }, waitFor, time.Millisecond)
}

func (l *writeLoad) stop() {
	close(l.stopped)
	l.wg.Wait()
}

// TestTransferLeadersBeforeStop: a store that is asked to stop first hands
// its leadership to another replica while a write/read load runs. No write
// ends undetermined, every read sees the write before it, the drained store
// keeps replicating as a follower, and stopping it afterwards costs the
// clients nothing.
func TestTransferLeadersBeforeStop(t *testing.T) {
	c := newTestCluster(t)
	c.put("warmup", "x")
	load := startWriteLoad(t, c, 8)
	load.waitWrites(t, 200)

	l := c.leader()
	store := c.nodes[l].srv.Store()
	region := c.region().GetId()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	require.NoError(t, store.TransferLeaders(ctx))
	cancel()
	took := time.Since(start)
	require.False(t, store.IsLeader(region))
	newLeader := c.leader()
	require.NotEqual(t, l, newLeader)
	load.waitWrites(t, 200)

	// Still a follower that applies what the new leader commits.
	c.put("after-transfer", "y")
	require.Eventually(t, func() bool {
		v, found, err := engineGet(store.Engine(), "after-transfer", mvcc.MaxTS)
		return err == nil && found && string(v) == "y"
	}, waitFor, time.Millisecond)
	require.False(t, store.IsLeader(region), "a draining store does not keep leadership")

	c.stop(l)
	load.waitWrites(t, 200)
	load.stop()
	load.mu.Lock()
	defer load.mu.Unlock()
	require.Empty(t, load.errs)
	// Timing is only logged: the election timeout here is 100ms, too close
	// to scheduling noise to tell a transfer from a crash (tests/ measures
	// that with real processes).
	t.Logf("transfer took %v; %d writes, longest gap between successful writes %v; writes held during the transfer and redirected: %v",
		took, len(load.written), load.maxGap, counterValue(t, "strata_raftstore_proposals_total", "result", "transfer_not_leader"))

	// Every acknowledged write is there.
	got := c.scan("load-", "load.", 0)
	require.Equal(t, len(load.written), len(got))
	for k, v := range load.written {
		require.Equal(t, v, got[k], k)
	}
}

// counterValue reads a counter of the default registry (0 when absent).
func counterValue(t *testing.T, name, label, value string) float64 {
	mfs, err := prometheus.DefaultGatherer.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label && lp.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// readAt reads key in a read-only snapshot at ts.
func readAt(ctx context.Context, txns *kvtxn.Client, key []byte, ts uint64) ([]byte, bool, error) {
	tx, err := txns.Begin(ctx, strkv.TxnOptions{StartTS: ts, ReadOnly: true})
	if err != nil {
		return nil, false, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	return tx.Get(ctx, key)
}
