package pd_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/stratadb/strata/pd/pdtest"
	"github.com/stratadb/strata/proto/pdpb"
	"github.com/stratadb/strata/tso"
)

// tsoStream is a raw Tso stream to one member, one request at a time.
type tsoStream struct {
	t      *testing.T
	stream pdpb.PD_TsoClient
}

func openTSO(t *testing.T, addr string) *tsoStream {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s, err := pdpb.NewPDClient(conn).Tso(ctx)
	require.NoError(t, err)
	return &tsoStream{t: t, stream: s}
}

func (s *tsoStream) send() error { return s.stream.Send(&pdpb.TsoRequest{Count: 1}) }

// recv returns the timestamp of the next answer, or ok=false when the member
// refused (header error) or the stream broke.
func (s *tsoStream) recv() (ts uint64, ok bool) {
	resp, err := s.stream.Recv()
	if err != nil || resp.GetHeader().GetError() != nil {
		return 0, false
	}
	return tso.ComposeTS(resp.Timestamp.Physical, resp.Timestamp.Logical), true
}

// tryTS opens a fresh stream to addr and asks for one timestamp; ok is false
// when the member is unreachable or refuses.
func tryTS(t *testing.T, addr string) (uint64, bool) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return 0, false
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := pdpb.NewPDClient(conn).Tso(ctx)
	if err != nil {
		return 0, false
	}
	s := &tsoStream{t: t, stream: st}
	if s.send() != nil {
		return 0, false
	}
	return s.recv()
}

// getTS polls addr with fresh streams until it answers with a timestamp.
func getTS(t *testing.T, addr string, deadline time.Time) uint64 {
	t.Helper()
	for {
		if ts, ok := tryTS(t, addr); ok {
			return ts
		}
		require.False(t, time.Now().After(deadline), "%s never answered with a timestamp", addr)
		time.Sleep(10 * time.Millisecond) // polling interval
	}
}

// TestPausedLeaderStopsServingTSO is the "two PD leaders" defect: the PD
// leader is SIGSTOPped past its lease, another member takes over and hands out
// a timestamp T; once the old leader runs again, its already-open streams
// (with requests queued while it was paused, and new ones) must never answer
// with a timestamp below T. The TSO window is long so the old leader could
// answer from memory without touching etcd: only the lease stops it.
func TestPausedLeaderStopsServingTSO(t *testing.T) {
	ps := pdtest.StartProcs(t, 3, 1, pdtest.ProcOptions{LeaderLease: time.Second, TSOWindow: time.Minute})
	old := pdtest.ProcLeader(t, ps)
	require.NotNil(t, old)
	// Liveness deadline only (a starved machine makes etcd slow); the
	// assertions do not depend on timing.
	deadline := time.Now().Add(2 * time.Minute)
	before := getTS(t, old.Addr, deadline)

	// Several streams to the old leader, each proven to serve.
	const streams = 8
	olds := make([]*tsoStream, streams)
	for i := range olds {
		olds[i] = openTSO(t, old.Addr)
		require.NoError(t, olds[i].send())
		ts, ok := olds[i].recv()
		require.True(t, ok, "old leader serves before the pause")
		require.Greater(t, ts, before)
	}

	old.Pause()
	resumed := false
	defer func() {
		if !resumed {
			old.Resume()
		}
	}()
	// Another member takes over once the old leader's lease has expired.
	var newTS uint64
	for newTS == 0 {
		for _, p := range ps {
			if p == old {
				continue
			}
			if ts, ok := tryTS(t, p.Addr); ok {
				newTS = ts
				break
			}
		}
		require.False(t, time.Now().After(deadline), "no other member served TSO while the leader was paused")
		if newTS == 0 {
			time.Sleep(20 * time.Millisecond) // polling interval
		}
	}
	require.Greater(t, newTS, before)
	// Requests queued on the old leader's streams while it is paused.
	for _, s := range olds {
		require.NoError(t, s.send())
	}
	old.Resume()
	resumed = true

	// Every answer the old streams give from now on is a refusal, or (should
	// the old member lead again) a timestamp above newTS.
	refused := 0
	for i, s := range olds {
		for {
			ts, ok := s.recv()
			if !ok {
				refused++
				break
			}
			require.Greater(t, ts, newTS, "stream %d of the deposed leader answered below the new leader's timestamp", i)
			require.False(t, time.Now().After(deadline), "old stream %d kept answering", i)
			if s.send() != nil {
				refused++
				break
			}
		}
	}
	require.Equal(t, streams, refused)
}

// TestLateLeaseAnswerDoesNotExtendTSO reproduces the defect deterministically
// on a running (not paused) leader: the etcd leader renews the PD leader's
// lease, but the answer reaches the PD leader late (a slow or partitioned
// network, modelled by a proxy in front of every etcd peer URL), and its
// later renewals are lost. etcd expires the lease TTL after it renewed it and
// another member takes over; the old leader, had it counted its lease from
// when the answer arrived (as etcd's client does), would keep answering for
// about the hold time more. It must refuse instead.
func TestLateLeaseAnswerDoesNotExtendTSO(t *testing.T) {
	const lease, hold = 6 * time.Second, 2500 * time.Millisecond
	ps := pdtest.StartProcs(t, 3, 1, pdtest.ProcOptions{LeaderLease: lease, TSOWindow: time.Minute, PeerProxy: true})
	old := pdtest.ProcLeader(t, ps)
	require.NotNil(t, old)
	deadline := time.Now().Add(2 * time.Minute) // liveness only, as above
	before := getTS(t, old.Addr, deadline)

	var urls []string
	for _, p := range ps {
		urls = append(urls, p.EtcdURL)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: urls, DialTimeout: 5 * time.Second})
	require.NoError(t, err)
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The old leader's lease is the lease of the first leader key.
	resp, err := cli.Get(ctx, "/strata/leader/", clientv3.WithFirstCreate()...)
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	leaseID := resp.Kvs[0].Lease
	// Its renewals must cross the network: move etcd's leadership off it.
	moveEtcdLeaderOff(ctx, t, cli, old.EtcdURL, deadline)

	const streams = 8
	olds := make([]*tsoStream, streams)
	for i := range olds {
		olds[i] = openTSO(t, old.Addr)
		require.NoError(t, olds[i].send())
		ts, ok := olds[i].recv()
		require.True(t, ok, "old leader serves before the fault")
		require.Greater(t, ts, before)
	}

	// The next renewal of the old leader's lease is applied but answered
	// late; every later one is lost.
	var held atomic.Bool
	release := make(chan struct{})
	heldAt := make(chan time.Time, 1)
	hook := func(id int64) pdtest.RenewAction {
		if id != leaseID {
			return pdtest.RenewAction{}
		}
		if held.CompareAndSwap(false, true) {
			heldAt <- time.Now()
			time.AfterFunc(hold, func() { close(release) })
			return pdtest.RenewAction{Hold: release}
		}
		return pdtest.RenewAction{Drop: true}
	}
	for _, p := range ps {
		p.Proxy.SetRenewHook(hook)
	}
	var renewed time.Time
	select {
	case renewed = <-heldAt:
	case <-time.After(2 * lease):
		require.FailNow(t, "the old leader sent no lease renewal")
	}

	// Another member takes over once etcd expired the lease.
	newTS := uint64(0)
	for newTS == 0 {
		for _, p := range ps {
			if p == old {
				continue
			}
			if ts, ok := tryTS(t, p.Addr); ok {
				newTS = ts
				break
			}
		}
		require.False(t, time.Now().After(deadline), "no other member served TSO")
		if newTS == 0 {
			time.Sleep(20 * time.Millisecond) // polling interval
		}
	}
	t.Logf("new leader served %v after the last applied renewal", time.Since(renewed))
	require.Greater(t, newTS, before)

	for i, s := range olds {
		require.NoError(t, s.send())
		if ts, ok := s.recv(); ok {
			require.Greater(t, ts, newTS, "stream %d of the deposed leader answered below the new leader's timestamp", i)
		}
	}
}

// moveEtcdLeaderOff makes sure the etcd member at url is not the etcd leader.
func moveEtcdLeaderOff(ctx context.Context, t *testing.T, cli *clientv3.Client, url string, deadline time.Time) {
	t.Helper()
	for {
		st, err := cli.Status(ctx, url)
		require.NoError(t, err)
		if st.Leader != st.Header.MemberId {
			return
		}
		ms, err := cli.MemberList(ctx)
		require.NoError(t, err)
		var to uint64
		for _, m := range ms.Members {
			if m.ID != st.Header.MemberId {
				to = m.ID
				break
			}
		}
		one, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second})
		require.NoError(t, err)
		_, err = one.MoveLeader(ctx, to)
		one.Close()
		if err != nil {
			t.Logf("move etcd leader: %v", err)
		}
		require.False(t, time.Now().After(deadline), "etcd leadership did not move")
		time.Sleep(50 * time.Millisecond) // polling interval
	}
}
