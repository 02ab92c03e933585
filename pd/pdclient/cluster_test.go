package pdclient_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/pd/pdclient"
	"github.com/stratadb/strata/pd/pdtest"
	"github.com/stratadb/strata/proto/metapb"
)

// TestThreeMemberFailover: the client follows the leader across a leader
// stop; timestamps and ids keep increasing and metadata survives.
func TestThreeMemberFailover(t *testing.T) {
	ss := pdtest.NewCluster(t, 3, 1)
	var addrs []string
	for _, s := range ss {
		addrs = append(addrs, s.Addr)
	}
	c := newClient(t, addrs)
	ctx := testCtx(t)

	lastTS, err := getTSRetry(ctx, c)
	require.NoError(t, err)
	lastID, err := c.AllocID(ctx, 1)
	require.NoError(t, err)
	require.NoError(t, c.PutStore(ctx, &metapb.Store{Id: 7, Address: "127.0.0.1:7"}))
	members, err := c.GetMembers(ctx)
	require.NoError(t, err)
	require.Len(t, members.Members, 3)
	old := pdtest.Leader(ss)
	require.Equal(t, old.Addr, members.Leader.ClientUrls[0])

	// Graceful stop of the leader under a TSO load: it resigns, so another
	// member takes over at once (not after the 3s lease), and GetTS rides
	// through the change without an error.
	load := startTSOLoad(c)
	load.waitMore(t, 100)
	stopStart := time.Now()
	old.Stop()
	t.Logf("leader stop took %v", time.Since(stopStart))
	require.Eventually(t, func() bool { return pdtest.Leader(ss) != nil }, 20*time.Second, 10*time.Millisecond)
	load.waitMore(t, 100)
	gap, errs := load.stop()
	t.Logf("longest TSO gap across a graceful leader stop: %v", gap)
	require.Empty(t, errs)
	require.Less(t, gap, 2*time.Second, "the next leader must not wait for the old leader's lease to expire")

	ts, err := getTSRetry(ctx, c)
	require.NoError(t, err)
	require.Greater(t, ts, lastTS)
	id, err := c.AllocID(ctx, 1)
	require.NoError(t, err)
	require.Greater(t, id, lastID)
	ok, err := c.IsBootstrapped(ctx)
	require.NoError(t, err)
	require.True(t, ok, "bootstrapped with replicas=1 by the first leader")
	r, _, err := c.GetRegion(ctx, []byte("k"))
	require.NoError(t, err)
	require.Equal(t, uint64(7), r.Peers[0].StoreId)

	// The old leader comes back as a follower; the client keeps working.
	old.Restart()
	for range 20 {
		ts, err := getTSRetry(ctx, c)
		require.NoError(t, err)
		require.Greater(t, ts, lastTS)
		lastTS = ts
	}
}

// tsoLoad calls GetTS in a loop and records errors, timestamps going
// backwards and the longest time between two successful calls.
type tsoLoad struct {
	c    *pdclient.Client
	n    atomic.Int64
	quit chan struct{}
	done chan struct{}

	mu     sync.Mutex
	errs   []error
	maxGap time.Duration
}

func startTSOLoad(c *pdclient.Client) *tsoLoad {
	l := &tsoLoad{c: c, quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		last, lastTS := time.Now(), uint64(0)
		for {
			select {
			case <-l.quit:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			ts, err := l.c.GetTS(ctx)
			cancel()
			now := time.Now()
			l.mu.Lock()
			switch {
			case err != nil:
				l.errs = append(l.errs, err)
			case ts <= lastTS:
				l.errs = append(l.errs, fmt.Errorf("ts %d not above %d", ts, lastTS))
			default:
				l.maxGap = max(l.maxGap, now.Sub(last))
				last, lastTS = now, ts
			}
			l.mu.Unlock()
			l.n.Add(1)
		}
	}()
	return l
}

// waitMore waits until n more calls returned.
func (l *tsoLoad) waitMore(t *testing.T, n int64) {
	target := l.n.Load() + n
	require.Eventually(t, func() bool { return l.n.Load() >= target }, 20*time.Second, time.Millisecond)
}

func (l *tsoLoad) stop() (time.Duration, []error) {
	close(l.quit)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.maxGap, l.errs
}
