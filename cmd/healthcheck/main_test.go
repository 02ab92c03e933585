package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/internal/pki"
	"github.com/stratadb/strata/internal/security"
)

func TestCheck(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("up")) }))
	defer ok.Close()
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer bad.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedAddr := closed.Addr().String()
	require.NoError(t, closed.Close())

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var body bytes.Buffer
	require.NoError(t, check(ctx, nil, ok.URL+"/status", &body))
	require.Equal(t, "up", body.String())
	require.Error(t, check(ctx, nil, bad.URL, &body))
	require.NoError(t, check(ctx, nil, "tcp://"+ln.Addr().String(), &body))
	require.Error(t, check(ctx, nil, "tcp://"+closedAddr, &body))
	require.Error(t, check(ctx, nil, "mysql://root@"+closedAddr+"/", &body))
	require.Error(t, check(ctx, nil, "mysql://"+ln.Addr().String()+"/", &body), "no user")
	require.Error(t, check(ctx, nil, "ftp://x", &body))
	require.ErrorContains(t, check(ctx, nil, "tls://"+ln.Addr().String(), &body), "--cluster-ssl-ca")
}

// TestCheckTLS: tls and https targets with the cluster certificate.
func TestCheckTLS(t *testing.T) {
	_, f, err := pki.NewFiles(t.TempDir(), "x", "x", []string{"127.0.0.1"}, time.Hour)
	require.NoError(t, err)
	sec, err := security.New(security.Config{CA: f.CA, Cert: f.Cert, Key: f.Key}, "test")
	require.NoError(t, err)

	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	srv.TLS = sec.HTTPServerConfig()
	srv.StartTLS()
	defer srv.Close()
	grpcLike, err := tls.Listen("tcp", "127.0.0.1:0", sec.ServerConfig())
	require.NoError(t, err)
	defer grpcLike.Close()
	go func() {
		for {
			c, err := grpcLike.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, check(ctx, sec, srv.URL+"/status", io.Discard))
	require.NoError(t, check(ctx, sec, "tls://"+grpcLike.Addr().String(), io.Discard))
	require.Error(t, check(ctx, nil, srv.URL+"/status", io.Discard), "the CA is not in the system roots")
}
