package gcleader_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/sql/gcleader"
	"github.com/stratadb/strata/store/gc"
)

// BenchmarkGCForeground measures, on a 3-store loopback cluster, the rate
// at which GC deletes old versions and the p50/p99 of point reads from 4
// concurrent readers without GC and while GC runs (one measurement per
// run; b.N is ignored).
//
//	go test -run XXX -bench GCForeground -benchtime 1x ./kv/gcleader/
func BenchmarkGCForeground(b *testing.B) {
	// Production batching (256 keys, 5ms pause); fast polling.
	c := startCluster(b, gc.Config{PollInterval: 50 * time.Millisecond, DeleteDelay: 100 * time.Millisecond})
	ctx := context.Background()
	const keys, versions = 300, 4
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < keys; i += 4 {
				for v := range versions {
					tx, err := c.txn.Begin(ctx, kv.TxnOptions{})
					require.NoError(b, err)
					require.NoError(b, tx.Set([]byte(fmt.Sprintf("key%05d", i)), []byte(fmt.Sprintf("value-%d-%d", i, v))))
					require.NoError(b, tx.Commit(ctx))
				}
			}
		}()
	}
	wg.Wait()

	read := func(d time.Duration) (p50, p99 time.Duration, n int) {
		var mu sync.Mutex
		var lat []time.Duration
		var rg sync.WaitGroup
		stop := time.Now().Add(d)
		for w := range 4 {
			rg.Add(1)
			go func() {
				defer rg.Done()
				for i := w; time.Now().Before(stop); i += 7 {
					ts, err := c.pd.GetTS(ctx)
					require.NoError(b, err)
					start := time.Now()
					_, _, err = c.readAt(ctx, fmt.Sprintf("key%05d", i%keys), ts)
					el := time.Since(start)
					require.NoError(b, err)
					mu.Lock()
					lat = append(lat, el)
					mu.Unlock()
				}
			}()
		}
		rg.Wait()
		slices.Sort(lat)
		return lat[len(lat)/2], lat[len(lat)*99/100], len(lat)
	}
	p50, p99, n := read(3 * time.Second)
	b.Logf("without GC: %d reads, p50 %v p99 %v", n, p50, p99)

	l := gcleader.New(c.pd, c.kv, c.txn.Resolver(), gcleader.Config{NodeID: "bench", MinLifeTime: time.Millisecond})
	sp, err := l.RunOnce(ctx, time.Millisecond, 0)
	require.NoError(b, err)
	gcStart := time.Now()
	var gcTook time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			all := true
			for _, s := range c.stores {
				if s.GC().CollectedSafePoint() < sp {
					all = false
				}
			}
			if all {
				gcTook = time.Since(gcStart)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	p50, p99, n = read(3 * time.Second)
	<-done
	deleted := keys * (versions - 1)
	b.Logf("with GC running: %d reads, p50 %v p99 %v; GC deleted %d versions in %v (%.0f versions/s, incl. %v delete delay)",
		n, p50, p99, deleted, gcTook, float64(deleted)/gcTook.Seconds(), 100*time.Millisecond)
}
