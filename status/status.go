package status

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stratadb/strata/failpoint"
	"github.com/stratadb/strata/internal/security"
)

// Version and GitHash identify the build; the Makefile overrides them.
var (
	Version = "0.1.0-dev"
	GitHash = "unknown"
)

// Info is the body of /status.
type Info struct {
	Role          string    `json:"role"`
	Version       string    `json:"version"`
	GitHash       string    `json:"git_hash"`
	StartTime     time.Time `json:"start_time"`
	UptimeSeconds float64   `json:"uptime_seconds"`
}

// Route is an extra handler a process serves on its status port (PD's
// HTTP API), registered with http.ServeMux pattern syntax.
type Route struct {
	Pattern string
	Handler http.Handler
}

// Serve listens on addr and serves the status endpoints and routes until
// ctx is cancelled. It returns the bound address (useful with port 0) once
// the listener is open; serving continues in a background goroutine.
func Serve(ctx context.Context, addr, role string, routes ...Route) (net.Addr, error) {
	return ServeTLS(ctx, addr, role, nil, routes...)
}

// ServeTLS is Serve over cluster TLS when sec is set (HTTPS; a client
// certificate is verified when given but not required, see
// security.TLS.HTTPServerConfig); a nil sec serves plain HTTP.
func ServeTLS(ctx context.Context, addr, role string, sec *security.TLS, routes ...Route) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("status: listen %s: %w", addr, err)
	}
	start := time.Now()
	mux := http.NewServeMux()
	mux.HandleFunc("/status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(Info{
			Role: role, Version: Version, GitHash: GitHash,
			StartTime: start, UptimeSeconds: time.Since(start).Seconds(),
		})
	})
	mux.Handle("/metrics", promhttp.Handler())
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	if h := failpoint.Handler(); h != nil { // failpoints builds only
		mux.Handle("/debug/fail/", h)
	}
	for _, r := range routes {
		mux.Handle(r.Pattern, r.Handler)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if sec != nil {
		srv.TLSConfig = sec.HTTPServerConfig()
		srv.ErrorLog = sec.HTTPErrorLog()
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Error("status server stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		shutCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutCtx)
	}()
	return ln.Addr(), nil
}

// Deferred is a route's handler that exists only later (the SQL node's
// /dashboard needs the server, created after the status port opens):
// until Set, it answers 503. Safe for concurrent use.
type Deferred struct {
	h atomic.Pointer[http.Handler]
}

// Set makes h serve the route's requests from now on.
func (d *Deferred) Set(h http.Handler) { d.h.Store(&h) }

// ServeHTTP implements http.Handler.
func (d *Deferred) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := d.h.Load()
	if h == nil {
		http.Error(w, "the node is still starting; retry in a moment", http.StatusServiceUnavailable)
		return
	}
	(*h).ServeHTTP(w, r)
}
