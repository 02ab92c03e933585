package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/localcluster"
	"github.com/stratadb/strata/raftstore"
)

// consistencyReports calls a store's /debug/consistency (method GET: its
// replicas' hashes; POST with query: run the check).
func consistencyReports(p *localcluster.Proc, method, query string) ([]raftstore.ConsistencyReport, error) {
	req, err := http.NewRequest(method, "http://"+flagValue(p, "--status-addr")+"/debug/consistency"+query, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %s", method, req.URL, resp.Status)
	}
	var out []raftstore.ConsistencyReport
	return out, json.NewDecoder(resp.Body).Decode(&out)
}

// checkConsistency runs the consistency check of every region on the
// stores leading them and waits until every replica of every region shows
// the leader's hash at the leader's index with a "match" verdict; it fails
// at once on a mismatch. A region whose check failed (leadership moved) or
// whose replica has no hash at that index (it caught up by a snapshot past
// the check) is checked again. It returns the number of regions checked.
func checkConsistency(t *testing.T, c *localcluster.Cluster) int {
	t.Helper()
	replicas := map[uint64]int{} // region -> replicas hosting it (from the GET lists)
	done := map[uint64]bool{}
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		leaderHash := map[uint64]raftstore.ConsistencyReport{}
		for _, st := range c.Stores {
			reps, err := consistencyReports(st, http.MethodPost, "?region=all")
			require.NoError(t, err)
			for _, r := range reps {
				if r.Error == "" && !done[r.RegionID] {
					leaderHash[r.RegionID] = r
				}
			}
		}
		// Wait for every replica's verdict on this round's checks.
		settle := time.Now().Add(10 * time.Second)
		for len(leaderHash) > 0 && time.Now().Before(settle) {
			clear(replicas)
			seen := map[uint64]int{}
			for _, st := range c.Stores {
				reps, err := consistencyReports(st, http.MethodGet, "")
				require.NoError(t, err)
				for _, r := range reps {
					replicas[r.RegionID]++
					want, ok := leaderHash[r.RegionID]
					if !ok || r.Index != want.Index {
						continue
					}
					require.NotEqual(t, "mismatch", r.Verify, "region %d: replica on %s differs at index %d", r.RegionID, st.Name, r.Index)
					require.Equal(t, want.Hash, r.Hash, "region %d: replica on %s hashed differently at index %d", r.RegionID, st.Name, r.Index)
					if r.Verify == "match" {
						seen[r.RegionID]++
					}
				}
			}
			for id := range leaderHash {
				if seen[id] == len(c.Stores) {
					done[id] = true
					delete(leaderHash, id)
				}
			}
			if len(leaderHash) > 0 {
				time.Sleep(100 * time.Millisecond) // poll interval, not synchronisation
			}
		}
		all := len(replicas) > 0
		for id := range replicas {
			all = all && done[id]
		}
		if all {
			return len(done)
		}
	}
	var missing []uint64
	for id := range replicas {
		if !done[id] {
			missing = append(missing, id)
		}
	}
	t.Fatalf("consistency check did not finish on every replica of regions %v", missing)
	return 0
}
