package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
	require.NoError(t, check(ctx, ok.URL+"/status", &body))
	require.Equal(t, "up", body.String())
	require.Error(t, check(ctx, bad.URL, &body))
	require.NoError(t, check(ctx, "tcp://"+ln.Addr().String(), &body))
	require.Error(t, check(ctx, "tcp://"+closedAddr, &body))
	require.Error(t, check(ctx, "mysql://root@"+closedAddr+"/", &body))
	require.Error(t, check(ctx, "mysql://"+ln.Addr().String()+"/", &body), "no user")
	require.Error(t, check(ctx, "ftp://x", &body))
}
