// Package replicacheck runs the replica consistency check of a whole
// cluster from outside, through the stores' status ports
// (raftstore.ConsistencyHandler at /debug/consistency): it asks every
// store to check the regions it leads (each replica hashes the region at
// the same raft index and compares with the leader's hash), then collects
// every replica's hash and verdict and compares them itself.
//
// A region whose check failed (its leadership moved, it split) or whose
// replica reports no hash at the leader's index (it caught up from a
// snapshot taken after the check) is checked again in the next round, until
// ctx ends. A replica that reports the leader's index without a hash is
// still computing it (or failed to: "error"): it is no mismatch, it is
// polled again. Used by cmd/consistencycheck and tests/.
package replicacheck

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/stratadb/strata/raftstore"
)

// Mismatch is a replica whose hash differs from its region leader's.
type Mismatch struct {
	RegionID    uint64
	Index       uint64
	StatusAddr  string // the store of the differing replica
	Hash        string
	LeaderHash  string
	ReplicaView string // that replica's own verdict
}

// Result is the outcome of Run.
type Result struct {
	// Checked are the regions whose every replica reported the leader's
	// hash at the leader's index.
	Checked []uint64
	// Mismatches are replicas that differ (the cluster is inconsistent).
	Mismatches []Mismatch
	// Unfinished are regions some store hosts that were not checked on
	// every replica before ctx ended.
	Unfinished []uint64
}

// settleTime bounds how long one round waits for the replicas' verdicts.
const settleTime = 10 * time.Second

// pollInterval is how often a round polls the replicas' verdicts.
const pollInterval = 100 * time.Millisecond

// Run checks every region hosted by the stores at statusAddrs (host:port
// of their status ports), until each is checked on all its replicas, a
// replica differs, or ctx ends (what is left is Unfinished). An error
// means a store could not be asked (the check is then incomplete, not
// failed).
func Run(ctx context.Context, client *http.Client, statusAddrs []string) (Result, error) {
	var res Result
	done := map[uint64]bool{}
	hosted := map[uint64]bool{}
	for ctx.Err() == nil {
		round := map[uint64]raftstore.ConsistencyReport{}
		for _, addr := range statusAddrs {
			reps, err := call(ctx, client, http.MethodPost, addr, "?region=all")
			if err != nil {
				return res.finish(ctx, hosted, done, err)
			}
			for _, r := range reps {
				if r.Error == "" && !done[r.RegionID] {
					round[r.RegionID] = r
				}
			}
		}
		settle := time.Now().Add(settleTime)
		// At least one pass: it also learns which regions the stores host.
		for polled := false; !polled || (len(round) > 0 && time.Now().Before(settle) && ctx.Err() == nil); polled = true {
			matched := map[uint64]int{}
			for _, addr := range statusAddrs {
				reps, err := call(ctx, client, http.MethodGet, addr, "")
				if err != nil {
					return res.finish(ctx, hosted, done, err)
				}
				for _, r := range reps {
					hosted[r.RegionID] = true
					want, ok := round[r.RegionID]
					if !ok || r.Index != want.Index {
						continue
					}
					if r.Hash == "" {
						// Applied the ComputeHash but still hashing (the
						// hash is off the Ready loop), or hashing failed
						// ("error", in that store's log): no verdict yet.
						continue
					}
					if r.Hash != want.Hash || r.Verify == "mismatch" {
						res.Mismatches = append(res.Mismatches, Mismatch{RegionID: r.RegionID, Index: r.Index,
							StatusAddr: addr, Hash: r.Hash, LeaderHash: want.Hash, ReplicaView: r.Verify})
						delete(round, r.RegionID)
						done[r.RegionID] = true
						continue
					}
					if r.Verify == "match" {
						matched[r.RegionID]++
					}
				}
			}
			for id, want := range round {
				if matched[id] >= want.Replicas {
					done[id] = true
					res.Checked = append(res.Checked, id)
					delete(round, id)
				}
			}
			if len(round) > 0 {
				select {
				case <-ctx.Done():
				case <-time.After(pollInterval):
				}
			}
		}
		if len(res.Mismatches) > 0 {
			break
		}
		all := len(hosted) > 0
		for id := range hosted {
			all = all && done[id]
		}
		if all {
			break
		}
		select { // leaders may be moving: ask again shortly
		case <-ctx.Done():
		case <-time.After(pollInterval):
		}
	}
	return res.finish(ctx, hosted, done, nil)
}

// finish lists the unfinished regions; a store that could not be asked
// because ctx ended is no error (the regions are unfinished).
func (res Result) finish(ctx context.Context, hosted, done map[uint64]bool, err error) (Result, error) {
	for id := range hosted {
		if !done[id] {
			res.Unfinished = append(res.Unfinished, id)
		}
	}
	slices.Sort(res.Checked)
	slices.Sort(res.Unfinished)
	if err != nil && ctx.Err() != nil {
		err = nil
	}
	return res, err
}

func call(ctx context.Context, client *http.Client, method, addr, query string) ([]raftstore.ConsistencyReport, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+"/debug/consistency"+query, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("replicacheck: %s %s: %w", method, addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("replicacheck: %s %s: %s (is it a store's status port?)", method, req.URL, resp.Status)
	}
	var out []raftstore.ConsistencyReport
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("replicacheck: %s %s: %w", method, req.URL, err)
	}
	return out, nil
}
