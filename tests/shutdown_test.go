package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/stratadb/strata/internal/promtext"
	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/kvclient"
	kvtxn "github.com/stratadb/strata/kvclient/txn"
	"github.com/stratadb/strata/localcluster"
	"github.com/stratadb/strata/pd/pdclient"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/storepb"
)

// progress records the outcomes of a loop of calls (writes, TSO requests)
// with their completion times, to measure how long a disruption stalls it.
type progress struct {
	mu   sync.Mutex
	oks  []time.Time
	errs []timedErr
}

type timedErr struct {
	at  time.Time
	err error
}

func (p *progress) record(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.errs = append(p.errs, timedErr{time.Now(), err})
		return
	}
	p.oks = append(p.oks, time.Now())
}

func (p *progress) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.oks)
}

// waitMore waits until n more calls succeeded.
func (p *progress) waitMore(t *testing.T, n int, within time.Duration) {
	t.Helper()
	target := p.count() + n
	require.Eventually(t, func() bool { return p.count() >= target }, within, time.Millisecond,
		"calls did not resume (%d errors so far, last: %v)", len(p.errs), p.lastErr())
}

func (p *progress) lastErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.errs) == 0 {
		return nil
	}
	return p.errs[len(p.errs)-1].err
}

// measure runs disrupt while the loop goes on and returns the longest time
// without a successful call from the last success before disrupt until the
// loop has resumed (n more successes), and the errors seen meanwhile.
func (p *progress) measure(t *testing.T, n int, disrupt func()) (time.Duration, []error) {
	t.Helper()
	p.waitMore(t, 20, 20*time.Second)
	p.mu.Lock()
	from, errFrom := len(p.oks)-1, len(p.errs)
	p.mu.Unlock()
	disrupt()
	p.waitMore(t, n, 30*time.Second)
	p.mu.Lock()
	defer p.mu.Unlock()
	var stall time.Duration
	for i := from + 1; i < len(p.oks); i++ {
		stall = max(stall, p.oks[i].Sub(p.oks[i-1]))
	}
	var errs []error
	for _, e := range p.errs[errFrom:] {
		errs = append(errs, e.err)
	}
	return stall, errs
}

// loop calls f until the test ends.
func loop(t *testing.T, f func(ctx context.Context) error) *progress {
	p := &progress{}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			p.record(f(ctx))
			cancel()
		}
	}()
	t.Cleanup(func() { close(quit); <-done })
	return p
}

// TestStoreStopWriteStall: one writer commits through kvclient/txn in a loop
// while the store leading the region is stopped, first with SIGTERM, then
// (after that store is back) with kill -9. SIGTERM hands the leadership over
// first: no write fails and the stall is a few round trips instead of an
// election timeout. After kill -9 the store's followers find it gone at
// their next dial and elect a new leader at once (raftstore/failover.go):
// the stall is below an election timeout too (in-flight 1PC and async
// commits may end undetermined).
func TestStoreStopWriteStall(t *testing.T) {
	c := startCluster(t, clusterOpts{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pd, err := pdclient.New(ctx, c.PDAddrs())
	require.NoError(t, err)
	t.Cleanup(func() { pd.Close() })
	kvc := kvclient.New(pd, kvclient.Config{})
	t.Cleanup(func() { kvc.Close() })
	txns := kvtxn.NewClient(kvc, pd, kvtxn.Config{})

	next := 0
	writes := loop(t, func(ctx context.Context) error {
		next++
		tx, err := txns.Begin(ctx, kv.TxnOptions{OnePC: true, AsyncCommit: true})
		if err != nil {
			return err
		}
		key := fmt.Appendf(nil, "stall-%06d", next)
		if err := tx.Set(key, key); err != nil {
			_ = tx.Rollback(ctx)
			return err
		}
		return tx.Commit(ctx)
	})

	// SIGTERM first, on a cluster where every client connection is warm
	// (see the report: kvclient's gRPC reconnect backoff to a store that
	// was just restarted can add up to 1s when the leadership moves to it).
	stopped := regionLeader(t, c, pd)
	gracefulStall, gracefulErrs := writes.measure(t, 50, func() {
		require.NoError(t, stopped.Stop(15*time.Second))
		require.NoError(t, stopped.ExitErr(), "SIGTERM ends the store cleanly")
	})
	require.NoError(t, stopped.Start())
	// As in a rolling restart, stop the next store only once the restarted
	// one is back in the quorum: with it missing, the two others are.
	waitReplicating(t, stopped)

	killed := regionLeader(t, c, pd)
	require.NotSame(t, stopped, killed)
	killStall, killErrs := writes.measure(t, 50, func() { require.NoError(t, killed.Kill()) })
	t.Logf("longest write stall: kill -9 of the leader's store %v (%d errors: %v); SIGTERM %v (%d errors)",
		killStall, len(killErrs), killErrs, gracefulStall, len(gracefulErrs))
	require.Empty(t, gracefulErrs, "a graceful stop fails no write and leaves none undetermined")
	log, err := os.ReadFile(stopped.LogPath)
	require.NoError(t, err)
	require.Contains(t, string(log), "leaders transferred before stop")
	// The stores run a 50ms raft tick: an election timeout is at least
	// 500ms. A killed store refuses connections, so its followers elect a
	// new leader without waiting for it (raftstore/failover.go).
	require.Less(t, gracefulStall, 500*time.Millisecond, "the stall must not include an election timeout")
	require.Less(t, killStall, 500*time.Millisecond, "a killed leader's store is found gone at once: the stall must not include an election timeout")
}

// regionLeader returns the store process leading the (single) region, as
// PD reports it and the store itself confirms.
func regionLeader(t *testing.T, c *localcluster.Cluster, pd *pdclient.Client) *localcluster.Proc {
	t.Helper()
	var leader *localcluster.Proc
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		region, peer, err := pd.GetRegion(ctx, []byte("stall-"))
		if err != nil || peer == nil {
			return false
		}
		st, err := pd.GetStore(ctx, peer.GetStoreId())
		if err != nil {
			return false
		}
		proc := procByFlag(c.Stores, "--addr", st.GetAddress())
		if proc == nil || !proc.Running() {
			return false
		}
		conn, err := grpc.NewClient(st.GetAddress(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return false
		}
		defer conn.Close()
		resp, err := storepb.NewStoreClient(conn).KvGet(ctx, &kvrpcpb.GetRequest{
			Context: &kvrpcpb.Context{RegionId: region.GetId(), RegionEpoch: region.GetRegionEpoch(), Peer: peer},
			Key:     []byte("stall-"), Version: 1,
		})
		if err != nil || resp.GetRegionError() != nil {
			return false
		}
		leader = proc
		return true
	}, 20*time.Second, 10*time.Millisecond, "no confirmed region leader")
	return leader
}

// waitReplicating waits until the store persists raft entries again (the
// leader replicates to it) while the writes go on.
func waitReplicating(t *testing.T, store *localcluster.Proc) {
	t.Helper()
	addr := store.Flag("--status-addr")
	appends := func() int {
		mfs, err := promtext.Fetch(context.Background(), addr)
		if err != nil {
			return -1
		}
		// 0 when absent: no fsync yet.
		return int(mfs.Series(false)["strata_raftstore_appended_entries_per_fsync_count"])
	}
	first := -1
	require.Eventually(t, func() bool {
		n := appends()
		if first < 0 {
			first = n
			return false
		}
		return n >= first+20
	}, 30*time.Second, 10*time.Millisecond, "restarted store %s does not replicate", store.Name)
}

// procByFlag returns the process started with flag value v.
func procByFlag(procs []*localcluster.Proc, flag, v string) *localcluster.Proc {
	for _, p := range procs {
		if p.Flag(flag) == v {
			return p
		}
	}
	return nil
}

// TestPDLeaderStopTSOGap: a TSO loop through pdclient against three PD
// processes while the PD leader is stopped, first with SIGTERM (it resigns:
// the next leader serves within milliseconds, GetTS fails nothing), then,
// after it is back, with kill -9 (the next leader waits for the old leader's
// etcd lease to expire).
func TestPDLeaderStopTSOGap(t *testing.T) {
	pds := startPDs(t, 3)
	var addrs []string
	for _, p := range pds {
		addrs = append(addrs, p.Flag("--addr"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pd, err := pdclient.New(ctx, addrs)
	require.NoError(t, err)
	t.Cleanup(func() { pd.Close() })

	var last uint64
	tso := loop(t, func(ctx context.Context) error {
		ts, err := pd.GetTS(ctx)
		if err == nil && ts <= last {
			err = fmt.Errorf("ts %d not above %d", ts, last)
		}
		last = max(last, ts)
		return err
	})

	stopped := pdLeader(t, pd, pds)
	gracefulGap, gracefulErrs := tso.measure(t, 200, func() {
		require.NoError(t, stopped.Stop(15*time.Second))
		require.NoError(t, stopped.ExitErr(), "SIGTERM ends PD cleanly")
	})
	require.NoError(t, stopped.Start())

	killed := pdLeader(t, pd, pds)
	killGap, killErrs := tso.measure(t, 200, func() { require.NoError(t, killed.Kill()) })
	t.Logf("longest TSO gap: SIGTERM of the PD leader %v (%d errors); kill -9 %v (%d errors: %v)",
		gracefulGap, len(gracefulErrs), killGap, len(killErrs), killErrs)
	require.Empty(t, gracefulErrs)
	require.Less(t, gracefulGap, 2*time.Second, "the next leader must not wait for the old leader's 3s lease")
}

// startPDs starts an n-member PD cluster of real processes (replicas=1, so
// it bootstraps without stores) and kills them when the test ends.
func startPDs(t *testing.T, n int) []*localcluster.Proc {
	t.Helper()
	ports, err := localcluster.FreePorts(4 * n)
	require.NoError(t, err)
	dir := t.TempDir()
	var initial []string
	for i := range n {
		initial = append(initial, fmt.Sprintf("pd%d=http://127.0.0.1:%d", i+1, ports[4*i+1]))
	}
	var procs []*localcluster.Proc
	for i := range n {
		name := fmt.Sprintf("pd%d", i+1)
		procs = append(procs, &localcluster.Proc{
			Name: name, Bin: filepath.Join(binDir, "pd"), LogPath: filepath.Join(dir, "logs", name+".log"),
			Args: []string{
				"--name", name, "--data-dir", filepath.Join(dir, name),
				"--addr", fmt.Sprintf("127.0.0.1:%d", ports[4*i]),
				"--peer-url", fmt.Sprintf("http://127.0.0.1:%d", ports[4*i+1]),
				"--etcd-client-url", fmt.Sprintf("http://127.0.0.1:%d", ports[4*i+2]),
				"--status-addr", fmt.Sprintf("127.0.0.1:%d", ports[4*i+3]),
				"--initial-cluster", strings.Join(initial, ","), "--replicas", "1",
			},
		})
	}
	t.Cleanup(func() {
		for _, p := range procs {
			_ = p.Kill()
		}
		if t.Failed() {
			for _, p := range procs {
				if data, err := os.ReadFile(p.LogPath); err == nil {
					t.Logf("==== %s\n%s", p.Name, data[max(0, len(data)-8<<10):])
				}
			}
		}
	})
	for _, p := range procs {
		require.NoError(t, p.Start())
	}
	return procs
}

// pdLeader returns the PD process that leads, as the members report it.
func pdLeader(t *testing.T, pd *pdclient.Client, procs []*localcluster.Proc) *localcluster.Proc {
	t.Helper()
	var leader *localcluster.Proc
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		m, err := pd.GetMembers(ctx)
		if err != nil || m.GetLeader() == nil {
			return false
		}
		leader = procByFlag(procs, "--name", m.GetLeader().GetName())
		return leader != nil && leader.Running()
	}, 20*time.Second, 10*time.Millisecond, "no pd leader")
	return leader
}
