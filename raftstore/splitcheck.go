package raftstore

import (
	"context"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/stratadb/strata/kv/codec"
	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
)

// Split checker (TiKV's split_check worker, by size and key count). Every
// SplitCheckInterval the Ready loop picks the regions this store leads that
// took at least RegionSplitSize/16 bytes or RegionSplitKeys/16 key writes
// since their last check (or were never checked) and hands them to one checker goroutine, never
// blocking: a busy checker gets the next round instead. The checker scans
// each region's data in every key space on the engine (off the Ready loop
// and the request paths), records its approximate size and key count (sent
// in region heartbeats, shown by SHOW TABLE REGIONS), and when the region is
// larger than RegionSplitSize or has more than RegionSplitKeys keys, splits
// it at the user key in the middle of its write records (SplitRegion).

// approxStat is a region's size and key count at its last split check.
type approxStat struct{ size, keys uint64 }

// splitCandidates runs in the loop on a split-check tick. It looks only at
// the peers written, created or newly leading since its last round
// (Store.splitDirty, see hibernate.go); a candidate that could not be
// handed to a busy checker stays for the next round.
func (s *Store) splitCandidates() {
	diff, keysDiff := s.cfg.RegionSplitSize/16, s.cfg.RegionSplitKeys/16
	var batch []*metapb.Region
	cands := s.splitDirty[:0]
	for _, p := range s.splitDirty {
		if p.destroyed || !p.isLeader || (p.checked && p.sizeDiff < diff && p.keysDiff < keysDiff) {
			p.splitDirty = false // a later write or leadership queues it again
			continue
		}
		batch = append(batch, p.region) // never mutated: a split stores a new region
		cands = append(cands, p)
	}
	clear(s.splitDirty[len(cands):])
	s.splitDirty = cands
	if len(batch) == 0 {
		return
	}
	select {
	case s.splitCheckCh <- batch:
		for i, p := range cands {
			p.checked, p.sizeDiff, p.keysDiff = true, 0, 0
			p.splitDirty = false
			cands[i] = nil
		}
		s.splitDirty = cands[:0]
	default:
	}
}

func (s *Store) splitCheckLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case batch := <-s.splitCheckCh:
			for _, r := range batch {
				if s.ctx.Err() != nil {
					return
				}
				s.checkRegion(r)
			}
		}
	}
}

func (s *Store) checkRegion(r *metapb.Region) {
	start := time.Now()
	st, mid, err := scanRegionSize(s.db, r)
	splitCheckSeconds.Observe(time.Since(start).Seconds())
	if err != nil {
		s.log.Warn("split check", "region", r.GetId(), "err", err)
		return
	}
	s.approxMu.Lock()
	s.approx[r.GetId()] = st
	s.approxMu.Unlock()
	if st.size <= s.cfg.RegionSplitSize && st.keys <= s.cfg.RegionSplitKeys {
		return
	}
	if mid == nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, 10*s.electionTimeout())
	defer cancel()
	regions, rerr, err := s.SplitRegion(ctx, r.GetId(), r.GetRegionEpoch(), [][]byte{mid})
	switch {
	case err != nil:
		s.log.Warn("split by size", "region", r.GetId(), "err", err)
	case rerr != nil:
		s.log.Debug("split by size refused", "region", r.GetId(), "err", rerr.GetMessage())
	default:
		s.log.Info("split by size", "region", r.GetId(), "size", st.size, "keys", st.keys, "regions", len(regions))
	}
}

// scanRegionSize counts r's engine keys and bytes in every key space and
// returns the user key in the middle of its write records (nil if there is
// no key strictly after the region's start to split at).
func scanRegionSize(db *pebble.DB, r *metapb.Region) (approxStat, []byte, error) {
	var st approxStat
	var writes uint64
	for _, cf := range keys.CFs {
		lo, hi := keys.CFBounds(cf, r.GetStartKey(), r.GetEndKey())
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
		if err != nil {
			return st, nil, err
		}
		for valid := it.First(); valid; valid = it.Next() {
			st.keys++
			lv := it.LazyValue()
			st.size += uint64(len(it.Key()) + lv.Len())
			if cf == raft_cmdpb.CF_WRITE {
				writes++
			}
		}
		if err := it.Close(); err != nil {
			return st, nil, err
		}
	}
	if writes < 2 {
		return st, nil, nil
	}
	lo, hi := keys.CFBounds(raft_cmdpb.CF_WRITE, r.GetStartKey(), r.GetEndKey())
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return st, nil, err
	}
	defer it.Close()
	var n uint64
	for valid := it.First(); valid; valid = it.Next() {
		n++
		if n < writes/2 {
			continue
		}
		_, k, err := codec.DecodeBytes(it.Key()[1:], nil)
		if err != nil {
			return st, nil, err
		}
		if len(normalizeSplitKeys(r, [][]byte{k})) == 1 {
			return st, k, nil
		}
	}
	return st, nil, it.Error()
}

// approximate returns the last split check's figures for a region.
func (s *Store) approximate(id uint64) approxStat {
	s.approxMu.Lock()
	defer s.approxMu.Unlock()
	return s.approx[id]
}
