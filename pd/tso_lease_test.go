package pd_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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

// getTS polls addr with fresh streams until it answers with a timestamp.
func getTS(t *testing.T, addr string, deadline time.Time) uint64 {
	t.Helper()
	for {
		s := openTSO(t, addr)
		if s.send() == nil {
			if ts, ok := s.recv(); ok {
				return ts
			}
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
	deadline := time.Now().Add(30 * time.Second)
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
			s := openTSO(t, p.Addr)
			if s.send() != nil {
				continue
			}
			if ts, ok := s.recv(); ok {
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
