package pdclient_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stratadb/strata/pd/pdclient"
	"github.com/stratadb/strata/pd/pdtest"
)

// TestLeaderKilledUnderTSOLoad is issue 10's acceptance check: a 3-member PD
// (member processes, default leader lease) whose leader is killed -9 under 64
// GetTS callers, in each TSO mode. A new leader serves within 5 s, no call
// fails, and every timestamp is strictly greater than any returned before
// its call began.
func TestLeaderKilledUnderTSOLoad(t *testing.T) {
	for _, mode := range []pdclient.TSOMode{pdclient.TSOModeDefault, pdclient.TSOModeParallel} {
		t.Run(mode.String(), func(t *testing.T) {
			ps := pdtest.StartProcs(t, 3, 1, pdtest.ProcOptions{})
			var addrs []string
			for _, p := range ps {
				addrs = append(addrs, p.Addr)
			}
			c := newClient(t, addrs, pdclient.WithTSOMode(mode))

			const callers = 64
			var (
				maxReturned atomic.Uint64
				calls       atomic.Int64
				killedAt    atomic.Int64 // unix nanos; 0 before the kill
				firstAfter  atomic.Int64 // unix nanos of the first call issued and answered after the kill
				mu          sync.Mutex
				errs        []error
				quit        = make(chan struct{})
				wg          sync.WaitGroup
			)
			for range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-quit:
							return
						default:
						}
						floor := maxReturned.Load()
						issued := time.Now().UnixNano()
						ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
						ts, err := c.GetTS(ctx)
						cancel()
						if err == nil && ts <= floor {
							err = fmt.Errorf("ts %d not above %d, returned before the call began", ts, floor)
						}
						if err != nil {
							mu.Lock()
							errs = append(errs, err)
							mu.Unlock()
							continue
						}
						for cur := maxReturned.Load(); ts > cur && !maxReturned.CompareAndSwap(cur, ts); cur = maxReturned.Load() {
						}
						if k := killedAt.Load(); k != 0 && issued > k {
							firstAfter.CompareAndSwap(0, time.Now().UnixNano())
						}
						calls.Add(1)
					}
				}()
			}
			waitCalls := func(n int64) {
				target := calls.Load() + n
				deadline := time.Now().Add(30 * time.Second)
				for calls.Load() < target {
					require.False(t, time.Now().After(deadline), "GetTS made no progress")
					time.Sleep(5 * time.Millisecond) // polling interval
				}
			}
			waitCalls(1000)

			old := pdtest.ProcLeader(t, ps)
			require.NotNil(t, old)
			// The PD leader hands etcd's raft leadership to another member
			// (pd.Server), so its death costs no etcd election; wait for
			// that (it is checked every 5 s).
			cli, err := clientv3.New(clientv3.Config{Endpoints: []string{old.EtcdURL}, DialTimeout: 5 * time.Second})
			require.NoError(t, err)
			deadline := time.Now().Add(30 * time.Second)
			for {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				st, err := cli.Status(ctx, old.EtcdURL)
				cancel()
				require.NoError(t, err)
				if st.Leader != st.Header.MemberId {
					break
				}
				require.False(t, time.Now().After(deadline), "the pd leader kept etcd's leadership")
				time.Sleep(20 * time.Millisecond) // polling interval
			}
			cli.Close()
			killedAt.Store(time.Now().UnixNano())
			old.Kill()
			waitCalls(1000)
			close(quit)
			wg.Wait()

			took := time.Duration(firstAfter.Load() - killedAt.Load())
			t.Logf("mode %s: first timestamp after kill -9 of the leader %s in %v; %d calls", mode, old.Name, took, calls.Load())
			require.Empty(t, errs)
			require.Less(t, took, 5*time.Second, "no new leader served TSO within 5s of the kill")
			nl := pdtest.ProcLeader(t, ps)
			require.NotNil(t, nl)
			require.NotEqual(t, old.Name, nl.Name)
		})
	}
}
