package pdtest

import (
	"context"
	"fmt"
	"net"
	"net/http"
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
	// HTTPAddr serves the member's HTTP API (published to the other
	// members, which forward leader-only requests to it).
	HTTPAddr string
	httpSrv  *http.Server
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
	return newCluster(t, members, replicas, nil)
}

// NewWith is New with tweak applied to the member's configuration before
// it starts (e.g. an HTTP token file).
func NewWith(t testing.TB, replicas int, tweak func(*pd.Config)) *Server {
	t.Helper()
	return newCluster(t, 1, replicas, tweak)[0]
}

func newCluster(t testing.TB, members, replicas int, tweak func(*pd.Config)) []*Server {
	t.Helper()
	ss := make([]*Server, members)
	var initial []string
	for i := range ss {
		ss[i] = newServer(t, fmt.Sprintf("pd%d", i+1), "http://"+listen(t), replicas)
		if tweak != nil {
			tweak(&ss[i].cfg)
		}
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

func newServer(t testing.TB, name, peerURL string, replicas int) *Server {
	s := &Server{t: t, cfg: pd.Config{
		Name:         name,
		DataDir:      t.TempDir(),
		Addr:         "127.0.0.1:0", // fixed after the first start
		PeerURL:      peerURL,
		ClientURL:    "http://" + listen(t),
		StatusAddr:   listen(t),
		Replicas:     replicas,
		EtcdLogLevel: "error",
		EtcdTick:     50 * time.Millisecond,
	}}
	s.HTTPAddr = s.cfg.StatusAddr
	return s
}

// FreePeerURL returns a free loopback URL for a new member's etcd peer.
func FreePeerURL(t testing.TB) string { return "http://" + listen(t) }

// Join starts a member that joins an existing cluster after it was added
// with `etcd member add` (PD's POST /members), which gave initialCluster.
// It is stopped in t.Cleanup.
func Join(t testing.TB, name, peerURL, initialCluster string, replicas int) *Server {
	t.Helper()
	s := newServer(t, name, peerURL, replicas)
	s.cfg.InitialCluster, s.cfg.InitialClusterState = initialCluster, "existing"
	s.launch()
	t.Cleanup(s.Stop)
	s.waitReady()
	return s
}

// WaitRemoved waits until a member removed from the cluster stops by
// itself, whatever it returns.
func (s *Server) WaitRemoved() {
	s.t.Helper()
	select {
	case <-s.done:
	case <-time.After(startTimeout):
		require.FailNow(s.t, "removed pd member "+s.cfg.Name+" did not stop")
	}
	s.httpSrv.Close()
	s.srv = nil
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
	ln, err := net.Listen("tcp", s.cfg.StatusAddr)
	require.NoError(s.t, err)
	s.httpSrv = &http.Server{Handler: srv.APIHandler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.httpSrv.Serve(ln) }()
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
	s.httpSrv.Close()
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
