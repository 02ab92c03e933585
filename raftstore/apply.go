package raftstore

import (
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/stratadb/strata/proto/raft_cmdpb"
)

// apply writes every Ready's committed entries into one batch, records
// each region's applied index in the same batch, commits it without fsync
// (the raft log is synced and is re-applied from the applied index after a
// crash), then answers proposals. Each command's epoch is re-checked
// against the region at its index: a command proposed before the region
// changed writes nothing and is answered EpochNotMatch (on every replica
// alike, so they stay identical).
//
// With persistedOnly (before the Ready is persisted) it applies only the
// entries the local log already holds; a Ready with a snapshot waits for it.
func (s *Store) apply(readies []peerReady, persistedOnly bool) {
	var b *pebble.Batch
	results := s.applyBufs[:0]
	start := time.Now()
	for _, r := range readies {
		ents := r.rd.CommittedEntries
		if persistedOnly {
			if r.rd.Snapshot != nil && !raft.IsEmptySnap(r.rd.Snapshot) {
				continue
			}
			n := 0
			for n < len(ents) && ents[n].GetIndex() <= r.p.ps.lastIndex {
				n++
			}
			ents = ents[:n]
		}
		if len(ents) == 0 || ents[len(ents)-1].GetIndex() <= r.p.ps.apply.applied {
			continue
		}
		if b == nil {
			b = s.db.NewBatch()
		}
		p := r.p
		as := p.ps.apply
		for _, e := range ents {
			if e.GetIndex() <= as.applied {
				continue
			}
			// An entry of the lease's term committed: the leader's no-op
			// (or a later entry) proves it knows every committed entry.
			p.lease.committedInTerm(e.GetTerm())
			var resp *raft_cmdpb.RaftCmdResponse
			var hashAdmin *raft_cmdpb.AdminRequest // ComputeHash / VerifyHash (consistency.go)
			switch e.GetType() {
			case raftpb.EntryType_EntryNormal:
				if len(e.GetData()) == 0 {
					break // a new leader's empty entry
				}
				cmd, err := decodeCmd(e.GetData())
				if err != nil {
					s.fatal("decode entry", err)
				}
				if cmd.GetAdminRequest() != nil && !isHashAdmin(cmd.GetAdminRequest()) {
					// May change the region (split, conf change): local
					// readers wait for the next renewal's copy of it. (A
					// consistency check changes nothing.)
					p.lease.unpublish()
				}
				resp = s.applyCmd(b, p, &as, cmd, e.GetIndex())
				if isHashAdmin(cmd.GetAdminRequest()) && resp.GetRegionError() == nil {
					hashAdmin = cmd.GetAdminRequest()
				}
			default:
				resp = s.applyConfChange(b, p, e)
			}
			as.applied = e.GetIndex()
			p.ackApplied(e.GetIndex(), e.GetTerm(), resp, &results)
			if hashAdmin != nil {
				b = s.applyHashAdmin(b, p, as, hashAdmin)
			}
		}
		if err := b.Set(applyStateKey(p.region.GetId()), as.encode(), nil); err != nil {
			s.fatal("write apply state", err)
		}
		p.nextApply = as
		p.applyPending = true
	}
	if b == nil {
		return
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		s.fatal("commit apply batch", err)
	}
	b.Close()
	if len(s.splits) > 0 {
		s.finishSplits()
	}
	for _, r := range readies {
		if !r.p.applyPending {
			continue
		}
		r.p.applyPending = false
		ps, as := r.p.ps, r.p.nextApply
		if as.truncatedIndex > ps.apply.truncatedIndex {
			ps.logCompacted(as.truncatedIndex, as.truncatedTerm)
			raftLogGCApplied.Inc()
		}
		ps.apply.applied = max(ps.apply.applied, as.applied)
		// Before any proposal is answered: a follower read's index
		// (AppliedIndex) covers every write acknowledged here.
		r.p.appliedPub.Store(ps.apply.applied)
		r.p.regionChangedStale()
		// Only now may local readers rely on the lease: the entries that
		// renewed it (and every earlier one) are in the engine.
		r.p.publishLease()
	}
	applySeconds.Observe(time.Since(start).Seconds())
	for i, ap := range results {
		switch {
		case ap.stale:
			ap.pr.respond(ap.resp, nil, "stale")
		case ap.resp.GetRegionError() != nil:
			ap.pr.respond(ap.resp, nil, "apply_region_error")
		default:
			ap.pr.respond(ap.resp, nil, "ok")
		}
		results[i] = appliedProposal{}
	}
	s.applyBufs = results[:0]
}

// applyCmd executes one committed command of p at index into b and returns
// its response. Deterministic given the region state, so every replica
// reaches the same outcome.
func (s *Store) applyCmd(b *pebble.Batch, p *peer, as *applyState, cmd *raft_cmdpb.RaftCmdRequest, index uint64) *raft_cmdpb.RaftCmdResponse {
	if rid := cmd.GetHeader().GetRegionId(); rid != p.region.GetId() {
		s.fatal("apply", fmt.Errorf("%w: command for region %d in the log of region %d", ErrCorrupt, rid, p.region.GetId()))
	}
	if e := checkCmdEpoch(cmd, p.region); e != nil {
		applyEpochNotMatch.Inc()
		return &raft_cmdpb.RaftCmdResponse{RegionError: p.epochNotMatch(), AppliedIndex: index}
	}
	if admin := cmd.GetAdminRequest(); admin != nil {
		switch admin.GetCmdType() {
		case raft_cmdpb.AdminCmdType_CompactLog:
			if err := s.applyCompactLog(b, p, as, admin.GetCompactLog(), index); err != nil {
				s.fatal("apply compact log", err)
			}
		case raft_cmdpb.AdminCmdType_Split:
			return s.applySplit(b, p, admin.GetSplit(), index)
		case raft_cmdpb.AdminCmdType_ComputeHash, raft_cmdpb.AdminCmdType_VerifyHash:
			// Handled by the caller once the applied index is set (applyHashAdmin).
		default:
			s.fatal("apply", fmt.Errorf("%w: unsupported admin command %v at index %d of region %d",
				ErrCorrupt, admin.GetCmdType(), index, p.region.GetId()))
		}
		return &raft_cmdpb.RaftCmdResponse{AppliedIndex: index, AdminResponse: &raft_cmdpb.AdminResponse{}}
	}
	// Before the deletes it carries can be seen: b is committed after this.
	if err := s.learnGCSafePoint(b, cmd.GetGcSafePoint(), "apply"); err != nil {
		s.fatal("apply gc safe point", err)
	}
	var err error
	if s.keyBuf, err = applyWrites(b, cmd, s.keyBuf); err != nil {
		s.fatal("apply writes", err)
	}
	for _, r := range cmd.GetRequests() {
		if r.GetCf() == raft_cmdpb.CF_LOCK {
			p.locksKnown = false // the resolved ts rescans (replicaread.go)
		}
		n := uint64(len(r.GetKey()) + len(r.GetValue()))
		p.sizeDiff += n
		p.writtenBytes += n
	}
	p.writtenKeys += uint64(len(cmd.GetRequests()))
	p.keysDiff += uint64(len(cmd.GetRequests()))
	s.markSplitDirty(p)
	return &raft_cmdpb.RaftCmdResponse{AppliedIndex: index}
}
