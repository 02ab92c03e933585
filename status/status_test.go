package status

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestServeEndpoints(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := Serve(ctx, "127.0.0.1:0", "test")
	require.NoError(t, err)
	base := "http://" + addr.String()

	resp, err := http.Get(base + "/status")
	require.NoError(t, err)
	var info Info
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&info))
	resp.Body.Close()
	require.Equal(t, "test", info.Role)
	require.Equal(t, Version, info.Version)

	for _, path := range []string{"/metrics", "/debug/pprof/"} {
		resp, err := http.Get(base + path)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		if path == "/metrics" {
			require.True(t, strings.Contains(string(body), "go_goroutines"))
		}
	}
}

func TestServeBadAddr(t *testing.T) {
	_, err := Serve(context.Background(), "256.0.0.1:99999", "test")
	require.Error(t, err)
}
