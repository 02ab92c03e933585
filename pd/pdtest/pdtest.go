package pdtest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/internal/freeport"
	"github.com/stratadb/strata/pd"
)

const startTimeout = 30 * time.Second

// Server is one in-process PD member.
type Server struct {
	t      testing.TB
	cfg    pd.Config
	srv    *pd.Server
	cancel context.CancelFunc
	done   chan error
	// Addr is the PD gRPC address ("127.0.0.1:port"); stable across Restart.
	Addr string
}

// Start starts a single-member PD whose bootstrap waits for replicas stores,
// waits until it serves as leader and returns its gRPC address. It is stopped
// in t.Cleanup.
func Start(t testing.TB, replicas int) (addr string) {
	return New(t, replicas).Addr
}

// New is Start returning a handle that can Stop and Restart the server.
func New(t testing.TB, replicas int) *Server {
	t.Helper()
	return NewCluster(t, 1, replicas)[0]
}

// NewCluster starts members PD members forming one etcd cluster and waits
// until one of them leads. All are stopped in t.Cleanup.
func NewCluster(t testing.TB, members, replicas int) []*Server {
	t.Helper()
	ss := make([]*Server, members)
	var initial []string
	for i := range ss {
		ss[i] = &Server{t: t, cfg: pd.Config{
			Name:         fmt.Sprintf("pd%d", i+1),
			DataDir:      t.TempDir(),
			Addr:         "127.0.0.1:0", // fixed after the first start
			PeerURL:      "http://" + listen(t),
			ClientURL:    "http://" + listen(t),
			Replicas:     replicas,
			EtcdLogLevel: "error",
			EtcdTick:     50 * time.Millisecond,
		}}
		initial = append(initial, ss[i].cfg.Name+"="+ss[i].cfg.PeerURL)
	}
	for _, s := range ss {
		s.cfg.InitialCluster = strings.Join(initial, ",")
		s.launch()
	}
	t.Cleanup(func() {
		// One at a time, the leader last: every member but the last stops
		// with a quorum behind it (its resignation and etcd hand-over are
		// quick), and no leadership moves needlessly. Stopping them all at
		// once made etcd members wait out leader transfers to each other.
		for _, s := range ss {
			if !s.leading() {
				s.Stop()
			}
		}
		for _, s := range ss {
			s.Stop()
		}
	})
	for _, s := range ss {
		s.waitReady()
	}
	require.Eventually(t, func() bool { return Leader(ss) != nil }, startTimeout, 5*time.Millisecond, "no pd leader")
	return ss
}

// Leader returns the member currently leading, or nil.
func Leader(ss []*Server) *Server {
	for _, s := range ss {
		if s.srv != nil && s.srv.IsLeader() {
			return s
		}
	}
	return nil
}

func (s *Server) leading() bool { return s.srv != nil && s.srv.IsLeader() }

// Server returns the running pd.Server (nil when stopped).
func (s *Server) Server() *pd.Server { return s.srv }

func (s *Server) launch() {
	srv, err := pd.NewServer(s.cfg)
	require.NoError(s.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	s.srv, s.cancel, s.done = srv, cancel, done
}

func (s *Server) waitReady() {
	t := s.t
	t.Helper()
	select {
	case <-s.srv.Ready():
	case err := <-s.done:
		s.srv = nil
		require.NoError(t, err, "pd server failed to start")
		require.FailNow(t, "pd server exited before ready")
	case <-time.After(startTimeout):
		require.FailNow(t, "pd server not ready in time")
	}
	s.Addr = s.srv.Addr().String()
	s.cfg.Addr = s.Addr // a restart binds the same address
}

// Stop stops the server gracefully and waits for it; no-op when stopped.
func (s *Server) Stop() {
	if s.srv == nil {
		return
	}
	s.cancel()
	select {
	case err := <-s.done:
		if err != nil {
			s.t.Errorf("pd server %s: %v", s.cfg.Name, err)
		}
	case <-time.After(startTimeout):
		s.t.Errorf("pd server %s did not stop in time", s.cfg.Name)
	}
	s.srv = nil
}

// Restart stops the server (if running) and starts it again on the same data
// dir and addresses. A single-member cluster is waited for until it leads;
// a member of a larger cluster only until it serves.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.launch()
	s.waitReady()
	if !strings.Contains(s.cfg.InitialCluster, ",") {
		require.Eventually(s.t, s.srv.IsLeader, startTimeout, 5*time.Millisecond, "pd did not become leader")
	}
}

// listen returns a free loopback "host:port" that a restarted member can
// bind again (see internal/freeport).
func listen(t testing.TB) string {
	t.Helper()
	p, err := freeport.Take(1)
	require.NoError(t, err)
	return "127.0.0.1:" + strconv.Itoa(p[0])
}
