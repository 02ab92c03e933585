package raftstore

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/stratadb/strata/failpoint"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
)

// applier executes committed raft entries into the engine, one round at a
// time: every entry of the round goes into one batch that also carries
// each region's applied index, committed without fsync (the raft log is
// synced and is re-applied from the applied index after a crash). Each
// command's epoch is re-checked against the region at its index: a command
// proposed before the region changed writes nothing and is answered
// EpochNotMatch (on every replica alike, so they stay identical).
//
// The Ready loop hands it, per peer, the committed entries to apply
// (applyTask); it hands back an applyResult: per peer the apply state it
// wrote (applied index, truncation), the proposals to answer with their
// responses, and the side effects the loop runs once the batch is
// committed (conf changes for raft and storeMeta, splits, removed peers,
// written regions for the split checker). Of a peer it touches only the
// apply side: its region and what follows from it (later entries of the
// round are checked against it; siblings, the removed flag, whether the
// split checker measured it), its lease's commit and publication state,
// its write and log-size counters, its resolved-ts lock flag and its
// proposals awaiting an index. Everything else of the store it reaches
// through applyHost. It runs on the loop's goroutine today; it is the unit
// an apply worker pool would run for disjoint peers.
type applier struct {
	db   *pebble.DB
	host applyHost
	log  *slog.Logger
	// Scratch reused across rounds: engine keys, and the round's result.
	keyBuf []byte
	res    applyResult
}

// applyHost is what an apply round needs from the rest of the store while
// the batch is open. *Store implements it.
type applyHost interface {
	// fatal stops the process: the engine failed or the log is corrupt.
	fatal(what string, err error)
	// hosts reports whether a peer of regionID exists on this store.
	hosts(regionID uint64) bool
	// learnGCSafePoint raises the store's GC safe point before b, which
	// carries deletes made under it, is committed (gcsafepoint.go).
	learnGCSafePoint(b *pebble.Batch, sp uint64, from string) error
	// startHash and verifyHash run a consistency check's two admin
	// commands (consistency.go).
	startHash(region *metapb.Region, index uint64, snap *pebble.Snapshot)
	verifyHash(regionID, index uint64, leaderHash []byte)
	// stepPersisted reports a persistence step to the harness.
	stepPersisted(step string)
}

// applyTask is one peer's share of an apply round: its committed entries
// in log order (those at or below its applied index are skipped).
type applyTask struct {
	p    *peer
	ents []*raftpb.Entry
}

// applyResult is what a committed apply round hands back to the loop.
// Valid until the next round.
type applyResult struct {
	// applied holds, per task in order, the peer and the apply state the
	// batch wrote for it.
	applied []appliedState
	// answers are the proposals of this store the round decided.
	answers []appliedProposal
	// confChanges are the conf changes applied, in log order; splits the
	// splits (split.go); written the peers that got data writes.
	confChanges []confChangeResult
	splits      []splitResult
	written     []*peer
	// deleted are the engine ranges DeleteRange commands removed (the
	// store compacts them, compact.go).
	deleted []engineRange
}

type appliedState struct {
	p  *peer
	as applyState
}

func (r *applyResult) reset() {
	clear(r.applied)
	clear(r.answers)
	clear(r.confChanges)
	clear(r.splits)
	clear(r.written)
	clear(r.deleted)
	*r = applyResult{applied: r.applied[:0], answers: r.answers[:0], confChanges: r.confChanges[:0],
		splits: r.splits[:0], written: r.written[:0], deleted: r.deleted[:0]}
}

// apply runs one round over tasks (non-empty) and commits it. The result
// is valid until the next call.
func (a *applier) apply(tasks []applyTask) *applyResult {
	a.res.reset()
	b := a.db.NewBatch()
	for _, t := range tasks {
		p := t.p
		as := p.ps.apply
		written := false
		for _, e := range t.ents {
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
					a.host.fatal("decode entry", err)
				}
				if cmd.GetAdminRequest() != nil && !isHashAdmin(cmd.GetAdminRequest()) {
					// May change the region (split, conf change): local
					// readers wait for the next renewal's copy of it. (A
					// consistency check changes nothing.)
					p.lease.unpublish()
				}
				var w bool
				resp, w = a.applyCmd(b, p, &as, cmd, e.GetIndex())
				written = written || w
				if isHashAdmin(cmd.GetAdminRequest()) && resp.GetRegionError() == nil {
					hashAdmin = cmd.GetAdminRequest()
				}
			default:
				resp = a.applyConfChange(b, p, e)
			}
			as.applied = e.GetIndex()
			p.ackApplied(e.GetIndex(), e.GetTerm(), resp, &a.res.answers)
			if hashAdmin != nil {
				b = a.applyHashAdmin(b, p, as, hashAdmin)
			}
		}
		if err := b.Set(applyStateKey(p.region.GetId()), as.encode(), nil); err != nil {
			a.host.fatal("write apply state", err)
		}
		a.res.applied = append(a.res.applied, appliedState{p: p, as: as})
		if written {
			a.res.written = append(a.res.written, p)
		}
	}
	failpoint.Hit("raft-apply")
	if err := b.Commit(pebble.NoSync); err != nil {
		a.host.fatal("commit apply batch", err)
	}
	b.Close()
	a.host.stepPersisted("apply")
	return &a.res
}

// applyCmd executes one committed command of p at index into b and returns
// its response, and whether it wrote data. Deterministic given the region
// state, so every replica reaches the same outcome.
func (a *applier) applyCmd(b *pebble.Batch, p *peer, as *applyState, cmd *raft_cmdpb.RaftCmdRequest, index uint64) (*raft_cmdpb.RaftCmdResponse, bool) {
	if rid := cmd.GetHeader().GetRegionId(); rid != p.region.GetId() {
		a.host.fatal("apply", fmt.Errorf("%w: command for region %d in the log of region %d", ErrCorrupt, rid, p.region.GetId()))
	}
	if e := checkCmdEpoch(cmd, p.region); e != nil {
		applyEpochNotMatch.Inc()
		return &raft_cmdpb.RaftCmdResponse{RegionError: p.epochNotMatch(), AppliedIndex: index}, false
	}
	if admin := cmd.GetAdminRequest(); admin != nil {
		switch admin.GetCmdType() {
		case raft_cmdpb.AdminCmdType_CompactLog:
			if err := applyCompactLog(b, p, as, admin.GetCompactLog(), index); err != nil {
				a.host.fatal("apply compact log", err)
			}
		case raft_cmdpb.AdminCmdType_Split:
			return a.applySplit(b, p, admin.GetSplit(), index), false
		case raft_cmdpb.AdminCmdType_ComputeHash, raft_cmdpb.AdminCmdType_VerifyHash:
			// Handled by the caller once the applied index is set (applyHashAdmin).
		default:
			a.host.fatal("apply", fmt.Errorf("%w: unsupported admin command %v at index %d of region %d",
				ErrCorrupt, admin.GetCmdType(), index, p.region.GetId()))
		}
		return &raft_cmdpb.RaftCmdResponse{AppliedIndex: index, AdminResponse: &raft_cmdpb.AdminResponse{}}, false
	}
	// Before the deletes it carries can be seen: b is committed after this.
	if err := a.host.learnGCSafePoint(b, cmd.GetGcSafePoint(), "apply"); err != nil {
		a.host.fatal("apply gc safe point", err)
	}
	var err error
	if a.keyBuf, err = applyWrites(b, cmd, a.keyBuf); err != nil {
		a.host.fatal("apply writes", err)
	}
	for _, r := range cmd.GetRequests() {
		if r.GetCf() == raft_cmdpb.CF_LOCK {
			p.locksKnown = false // the resolved ts rescans (replicaread.go)
		}
		if r.GetCmdType() == raft_cmdpb.CmdType_DeleteRange {
			a.res.deleted = append(a.res.deleted, deletedRange(r))
		}
		n := uint64(len(r.GetKey()) + len(r.GetValue()))
		p.sizeDiff += n
		p.writtenBytes += n
	}
	p.writtenKeys += uint64(len(cmd.GetRequests()))
	p.keysDiff += uint64(len(cmd.GetRequests()))
	return &raft_cmdpb.RaftCmdResponse{AppliedIndex: index}, true
}

// apply hands the committed entries of readies to the applier as one round
// and runs what it hands back: conf changes, splits, the peers' new apply
// state, then the answers to proposals.
//
// With persistedOnly (before the Ready is persisted) it applies only the
// entries the local log already holds; a Ready with a snapshot waits for it.
func (s *Store) apply(readies []peerReady, persistedOnly bool) {
	start := time.Now()
	tasks := s.applyTasks[:0]
	n := 0 // entries to apply (above each region's applied index)
	defer func() {
		clear(tasks)
		s.applyTasks = tasks[:0]
	}()
	for _, r := range readies {
		ents := r.rd.CommittedEntries
		if persistedOnly {
			if r.rd.Snapshot != nil && !raft.IsEmptySnap(r.rd.Snapshot) {
				continue
			}
			// Only entries this store holds durably: at or below its last
			// persisted index, and below the first entry this Ready writes,
			// which may replace persisted ones at the same indexes (a new
			// leader overwriting uncommitted entries commits its own there
			// in the same message).
			limit := r.p.ps.lastIndex
			if len(r.rd.Entries) > 0 {
				limit = min(limit, r.rd.Entries[0].GetIndex()-1)
			}
			n := 0
			for n < len(ents) && ents[n].GetIndex() <= limit {
				n++
			}
			ents = ents[:n]
		}
		if len(ents) == 0 || ents[len(ents)-1].GetIndex() <= r.p.ps.apply.applied {
			continue
		}
		tasks = append(tasks, applyTask{p: r.p, ents: ents})
		n += int(ents[len(ents)-1].GetIndex() - max(r.p.ps.apply.applied, ents[0].GetIndex()-1))
	}
	if len(tasks) == 0 {
		return
	}
	appliedEntries.Observe(float64(n))
	res := s.applier.apply(tasks)
	for _, p := range res.written {
		s.markSplitDirty(p)
	}
	s.compactor.queue(res.deleted)
	for _, cc := range res.confChanges {
		s.confChangeApplied(cc)
	}
	if len(res.splits) > 0 {
		s.finishSplits(res.splits)
	}
	for _, ap := range res.applied {
		ps, as := ap.p.ps, ap.as
		if as.truncatedIndex > ps.apply.truncatedIndex {
			ps.logCompacted(as.truncatedIndex, as.truncatedTerm)
			raftLogGCApplied.Inc()
		}
		ps.apply.applied = max(ps.apply.applied, as.applied)
		// Before any proposal is answered: a follower read's index
		// (AppliedIndex) covers every write acknowledged here.
		ap.p.appliedPub.Store(ps.apply.applied)
		ap.p.regionChangedStale()
		// Only now may local readers rely on the lease: the entries that
		// renewed it (and every earlier one) are in the engine.
		ap.p.publishLease()
	}
	applySeconds.Observe(time.Since(start).Seconds())
	for _, ap := range res.answers {
		ap.pr.committed = start
		switch {
		case ap.stale:
			ap.pr.respond(ap.resp, nil, "stale")
		case ap.resp.GetRegionError() != nil:
			ap.pr.respond(ap.resp, nil, "apply_region_error")
		default:
			ap.pr.respond(ap.resp, nil, "ok")
		}
	}
	res.reset()
}

// hosts implements applyHost.
func (s *Store) hosts(regionID uint64) bool {
	_, ok := s.peers[regionID]
	return ok
}
