package raftstore

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// ConsistencyReport is one region's entry in the /debug/consistency answer.
type ConsistencyReport struct {
	RegionID uint64 `json:"region_id"`
	Index    uint64 `json:"index"`
	Hash     string `json:"hash,omitempty"` // hex
	Verify   string `json:"verify,omitempty"`
	// Replicas (POST answers) is the number of peers of the region when
	// the leader answered: that many replicas should report a verdict.
	Replicas int    `json:"replicas,omitempty"`
	Error    string `json:"error,omitempty"`
}

func reportOf(r HashRecord) ConsistencyReport {
	return ConsistencyReport{RegionID: r.RegionID, Index: r.Index, Hash: hex.EncodeToString(r.Hash), Verify: r.Verify}
}

// ConsistencyHandler serves the consistency check on a store's status port
// (mount it at /debug/consistency). store returns the store, or nil while it
// is not open yet (503).
//
//	POST ?region=N     check region N (this store must lead it)
//	POST ?region=all   check every region this store leads, one at a time
//	GET                this store's latest hash of every region it hosts
//	                   (index 0 and no hash: not hashed since it started;
//	                   an index and no hash: hashing at that index, off
//	                   the loop, or it failed: verify "error")
//
// Answers are JSON arrays of ConsistencyReport. A POST entry's hash is the
// leader's; every replica compares its own when it applies the VerifyHash
// (a mismatch is an error log and strata_raftstore_consistency_checks_total
// {result="mismatch"}); GET on every store shows each replica's hash and
// verdict, so a checker can compare the replicas directly.
func ConsistencyHandler(store func() *Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := store()
		if s == nil {
			http.Error(w, "store is not open yet; retry", http.StatusServiceUnavailable)
			return
		}
		var out []ConsistencyReport
		switch r.Method {
		case http.MethodGet:
			recs := map[uint64]HashRecord{}
			for _, rec := range s.ConsistencyHashes() {
				recs[rec.RegionID] = rec
			}
			for _, reg := range s.meta.sorted() {
				rec, ok := recs[reg.GetId()]
				if !ok {
					rec.RegionID = reg.GetId() // hosted, never hashed here
				}
				out = append(out, reportOf(rec))
			}
		case http.MethodPost:
			var ids []uint64
			switch arg := r.URL.Query().Get("region"); arg {
			case "all":
				for _, reg := range s.meta.sorted() {
					if s.meta.isLeader(reg.GetId()) {
						ids = append(ids, reg.GetId())
					}
				}
			default:
				id, err := strconv.ParseUint(arg, 10, 64)
				if err != nil || id == 0 {
					http.Error(w, `region must be a region id or "all"`, http.StatusBadRequest)
					return
				}
				ids = []uint64{id}
			}
			for _, id := range ids {
				ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
				rec, rerr, err := s.CheckConsistency(ctx, id)
				cancel()
				rep := reportOf(rec)
				rep.RegionID = id
				switch {
				case errors.Is(err, ErrNoLeaderHere):
					rep.Error = "not leader here: ask the store leading the region"
				case err != nil:
					rep.Error = err.Error()
				case rerr != nil:
					rep.Error = "region error: " + rerr.GetMessage()
				default:
					rep.Replicas = len(s.meta.region(id).GetPeers())
				}
				out = append(out, rep)
			}
		default:
			http.Error(w, "use GET or POST", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if out == nil {
			out = []ConsistencyReport{}
		}
		_ = json.NewEncoder(w).Encode(out)
	})
}
