package pdtest

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/pd"
)

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

// Start starts a PD server whose bootstrap waits for replicas stores, waits
// until it serves as leader and returns its gRPC address. It is stopped in
// t.Cleanup.
func Start(t testing.TB, replicas int) (addr string) {
	return New(t, replicas).Addr
}

// New is Start returning a handle that can Stop and Restart the server.
func New(t testing.TB, replicas int) *Server {
	t.Helper()
	s := &Server{t: t, cfg: pd.Config{
		Name:         "pd",
		DataDir:      t.TempDir(),
		Addr:         "127.0.0.1:0",
		PeerURL:      "http://" + freeAddr(t),
		ClientURL:    "http://" + freeAddr(t),
		Replicas:     replicas,
		EtcdLogLevel: "error",
	}}
	s.start()
	t.Cleanup(s.Stop)
	return s
}

// Server returns the running pd.Server (nil when stopped).
func (s *Server) Server() *pd.Server { return s.srv }

func (s *Server) start() {
	t := s.t
	t.Helper()
	srv, err := pd.NewServer(s.cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	select {
	case <-srv.Ready():
	case err := <-done:
		cancel()
		require.NoError(t, err, "pd server failed to start")
		require.FailNow(t, "pd server exited before ready")
	case <-time.After(30 * time.Second):
		cancel()
		require.FailNow(t, "pd server not ready after 30s")
	}
	s.srv, s.cancel, s.done = srv, cancel, done
	s.Addr = srv.Addr().String()
	s.cfg.Addr = s.Addr // restart on the same address
	require.Eventually(t, srv.IsLeader, 30*time.Second, 5*time.Millisecond, "pd did not become leader")
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
			s.t.Errorf("pd server: %v", err)
		}
	case <-time.After(30 * time.Second):
		s.t.Errorf("pd server did not stop within 30s")
	}
	s.srv = nil
}

// Restart stops the server (if running) and starts it again on the same
// data dir and addresses.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return fmt.Sprintf("127.0.0.1:%d", l.Addr().(*net.TCPAddr).Port)
}
