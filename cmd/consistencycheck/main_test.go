package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/raftstore"
)

func TestRun(t *testing.T) {
	// One store leading one region with a single replica that matches.
	store := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rep := raftstore.ConsistencyReport{RegionID: 1, Index: 9, Hash: "ab", Verify: "match"}
		if r.Method == http.MethodPost {
			rep.Replicas = 1
		}
		_ = json.NewEncoder(w).Encode([]raftstore.ConsistencyReport{rep})
	}))
	defer store.Close()
	addr := strings.TrimPrefix(store.URL, "http://")
	pd := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "/pd/api/v1/stores", r.URL.Path)
		_, _ = w.Write([]byte(`{"count":1,"stores":[{"store":{"id":1,"status_address":"` + addr + `","state_name":"Up"}}]}`))
	}))
	defer pd.Close()

	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{nil, 2, ""},
		{[]string{"--stores", addr}, 0, "1 regions equal on every replica, 0 differ"},
		{[]string{"--pd", strings.TrimPrefix(pd.URL, "http://")}, 0, "1 regions equal"},
	} {
		var out, errOut bytes.Buffer
		require.Equal(t, tc.code, run(tc.args, &out, &errOut), "%v: %s", tc.args, errOut.String())
		require.Contains(t, out.String(), tc.out)
	}
}
