package raftstore

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/tracker"

	"github.com/stratadb/strata/proto/raft_cmdpb"
)

// Raft log GC (TiKV's raft_log_gc): every LogGCInterval the leader of a
// region looks at how far every replica has the log (the minimum match
// index over all peers, capped by its own applied index) and, when at
// least LogGCThreshold entries (or LogGCSizeLimit bytes of appended
// entries) lie between the truncated index and that point, proposes an
// admin CompactLog through raft. A peer more than LogGCLagLimit entries
// behind (down, or partitioned) does not hold compaction back: it catches
// up from a snapshot (snapshot.go). Every replica applies it at the same log
// position: the truncated index and term go into the apply state and the
// entries up to it are deleted, in the apply batch (so truncation and the
// applied index survive a crash together). raft then reports ErrCompacted
// below the truncated index, and a peer that needs entries from below gets
// a snapshot. A region never compacts past what every peer within the lag
// limit has.

// maybeCompactLog proposes a CompactLog for leader p when its log is worth
// truncating. Runs in the loop.
func (s *Store) maybeCompactLog(p *peer) {
	if !p.isLeader {
		return
	}
	if p.rn.BasicStatus().RaftState != raft.StateLeader {
		return
	}
	applied := p.ps.apply.applied
	target := applied
	p.rn.WithProgress(func(id uint64, _ raft.ProgressType, pr tracker.Progress) {
		if lag := s.cfg.LogGCLagLimit; lag > 0 && pr.Match+uint64(lag) < applied {
			return // too far behind: it will get a snapshot
		}
		target = min(target, pr.Match)
	})
	first := p.ps.apply.truncatedIndex
	if target <= first || target <= p.compactProposed {
		return
	}
	if target-first < uint64(s.cfg.LogGCThreshold) && p.logBytes < s.cfg.LogGCSizeLimit {
		return
	}
	term, err := p.ps.Term(target)
	if err != nil {
		s.log.Warn("raft log gc: term of compact index", "region", p.region.GetId(), "index", target, "err", err)
		return
	}
	cmd := &raft_cmdpb.RaftCmdRequest{
		Header: &raft_cmdpb.RaftRequestHeader{RegionId: p.region.GetId(), RegionEpoch: p.region.GetRegionEpoch()},
		AdminRequest: &raft_cmdpb.AdminRequest{
			CmdType:    raft_cmdpb.AdminCmdType_CompactLog,
			CompactLog: &raft_cmdpb.CompactLogRequest{CompactIndex: target, CompactTerm: term},
		},
	}
	data, err := encodeCmd(cmd)
	if err != nil {
		s.fatal("encode compact log", err)
	}
	if err := p.rn.Propose(data); err != nil {
		return // busy or stepping down: the next interval tries again
	}
	p.compactProposed = target
	raftLogGCProposed.Inc()
}

// applyCompactLog executes a committed CompactLog of p into b: the new
// truncated state is returned for the apply state written with the batch,
// and the entries up to it are deleted. A request at or below the current
// truncated index is a no-op (a later one already applied).
func applyCompactLog(b *pebble.Batch, p *peer, as *applyState, req *raft_cmdpb.CompactLogRequest, index uint64) error {
	ci, ct := req.GetCompactIndex(), req.GetCompactTerm()
	if ci <= as.truncatedIndex {
		return nil
	}
	if ci >= index {
		return fmt.Errorf("%w: compact index %d at or past its own entry %d", ErrCorrupt, ci, index)
	}
	lo, _ := entryRange(p.region.GetId())
	if err := b.DeleteRange(lo, entryKey(p.region.GetId(), ci+1), nil); err != nil {
		return err
	}
	raftLogGCEntries.Add(float64(ci - as.truncatedIndex))
	as.truncatedIndex, as.truncatedTerm = ci, ct
	p.logBytes = 0
	return nil
}

// logCompacted updates p's in-memory view once the batch holding a
// CompactLog committed: raft sees the new first index and the cache drops
// the truncated entries.
func (ps *peerStorage) logCompacted(truncIdx, truncTerm uint64) {
	ps.apply.truncatedIndex, ps.apply.truncatedTerm = truncIdx, truncTerm
	n := 0
	for n < len(ps.cache) && ps.cache[n].GetIndex() <= truncIdx {
		n++
	}
	if n > 0 {
		ps.cache = append(ps.cache[:0:0], ps.cache[n:]...)
	}
}

// TruncatedIndex returns the raft log's truncated index of a region on this
// store as persisted (entries up to it are gone). It reads the engine, not
// the loop's state; safe for concurrent use.
func (s *Store) TruncatedIndex(regionID uint64) (uint64, error) {
	v, closer, err := s.db.Get(applyStateKey(regionID))
	if err != nil {
		return 0, err
	}
	defer closer.Close()
	as, err := decodeApplyState(v)
	return as.truncatedIndex, err
}
