package replicacheck

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/raftstore"
)

// fakeStore serves /debug/consistency like a store: POST answers for the
// regions it leads, GET its replicas' hashes.
func fakeStore(t *testing.T, leads []raftstore.ConsistencyReport, hashes []raftstore.ConsistencyReport) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out := hashes
		if r.Method == http.MethodPost {
			out = leads
		}
		if out == nil {
			out = []raftstore.ConsistencyReport{}
		}
		require.NoError(t, json.NewEncoder(w).Encode(out))
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func rep(region, index uint64, hash, verify string) raftstore.ConsistencyReport {
	return raftstore.ConsistencyReport{RegionID: region, Index: index, Hash: hash, Verify: verify}
}

func TestRun(t *testing.T) {
	lead := func(region, index uint64, hash string) raftstore.ConsistencyReport {
		r := rep(region, index, hash, "match")
		r.Replicas = 2
		return r
	}
	for _, tc := range []struct {
		name                      string
		leadsA, hashesA, hashesB  []raftstore.ConsistencyReport
		checked, differ, unfinish int
	}{
		{
			name:    "equal",
			leadsA:  []raftstore.ConsistencyReport{lead(1, 10, "aa"), lead(2, 7, "bb")},
			hashesA: []raftstore.ConsistencyReport{rep(1, 10, "aa", "match"), rep(2, 7, "bb", "match")},
			hashesB: []raftstore.ConsistencyReport{rep(1, 10, "aa", "match"), rep(2, 7, "bb", "match")},
			checked: 2,
		},
		{
			name:    "replica differs",
			leadsA:  []raftstore.ConsistencyReport{lead(1, 10, "aa")},
			hashesA: []raftstore.ConsistencyReport{rep(1, 10, "aa", "match")},
			hashesB: []raftstore.ConsistencyReport{rep(1, 10, "ff", "mismatch")},
			differ:  1,
		},
		{
			name:     "a replica never hashes at the leader's index",
			leadsA:   []raftstore.ConsistencyReport{lead(1, 10, "aa")},
			hashesA:  []raftstore.ConsistencyReport{rep(1, 10, "aa", "match")},
			hashesB:  []raftstore.ConsistencyReport{rep(1, 4, "00", "skipped")},
			unfinish: 1,
		},
		{
			// The replica applied the ComputeHash (it reports the index)
			// but its hash goroutine is not done: no hash yet, no verdict.
			name:     "a replica's hash is still being computed",
			leadsA:   []raftstore.ConsistencyReport{lead(1, 10, "aa")},
			hashesA:  []raftstore.ConsistencyReport{rep(1, 10, "aa", "match")},
			hashesB:  []raftstore.ConsistencyReport{rep(1, 10, "", "")},
			unfinish: 1,
		},
		{
			name:     "a hosted region has no leader to check it",
			leadsA:   []raftstore.ConsistencyReport{{RegionID: 3, Error: "not leader here"}},
			hashesA:  []raftstore.ConsistencyReport{{RegionID: 3}},
			hashesB:  []raftstore.ConsistencyReport{{RegionID: 3}},
			unfinish: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := fakeStore(t, tc.leadsA, tc.hashesA)
			b := fakeStore(t, nil, tc.hashesB)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			res, err := Run(ctx, http.DefaultClient, []string{a, b})
			require.NoError(t, err)
			require.Len(t, res.Checked, tc.checked)
			require.Len(t, res.Mismatches, tc.differ)
			require.Len(t, res.Unfinished, tc.unfinish)
		})
	}
}

// TestRunStoreDown: a store that does not answer is an error.
func TestRunStoreDown(t *testing.T) {
	a := fakeStore(t, nil, nil)
	srv := httptest.NewServer(http.NotFoundHandler())
	b := strings.TrimPrefix(srv.URL, "http://")
	srv.Close()
	_, err := Run(context.Background(), http.DefaultClient, []string{a, b})
	require.Error(t, err)
}
