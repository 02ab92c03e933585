package raftstore

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/proto/errorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
)

// proposal is a command waiting for its entry to be applied. index and term
// are known once the entry is in a persisted Ready; the proposal is answered
// when an entry at index applies here: with the command's response if it
// has term, else with StaleCommand (another entry committed at the index,
// so this one never will). An overwrite of the index in the local log alone
// decides nothing (the entry may still commit through another peer).
type proposal struct {
	id  uint64
	cmd *raft_cmdpb.RaftCmdRequest
	// leaderGen, when not 0, is the store's LeaderGeneration the write was
	// prepared under; it is refused (retryably) if the store has gained a
	// leadership since.
	leaderGen   uint64
	index, term uint64
	start       time.Time
	// proposed is when the entry was handed to raft (before any MsgApp
	// carrying it was sent): its commit renews the lease from there.
	proposed time.Time
	// appended is when the entry was fsynced in this (the leader's) log
	// (trackProposals); committed when the apply round that applies it
	// began (Store.apply): the write's stages (ProposeTiming).
	appended, committed time.Time
	// cb, when set, receives the outcome instead of done (handover writes).
	cb func(*raft_cmdpb.RaftCmdResponse, error)
	// overwritten is when a persisted Ready replaced the entry in the local
	// log (zero while it is there); see trackProposals.
	overwritten time.Time
	done        chan proposalResult // cap 1
}

type proposalResult struct {
	resp   *raft_cmdpb.RaftCmdResponse
	err    error
	timing ProposeTiming
}

// ProposeTiming is where a proposal's time went, from its arrival at the
// store to its answer (the store's side of a write, kvrpcpb.WriteDetail).
// A stage the proposal did not reach is 0.
type ProposeTiming struct {
	// SendWait is from Propose to raft taking the entry (the Ready loop's
	// inbox, parking during a leader transfer).
	SendWait time.Duration
	// PersistLog is from raft taking it to the entry being fsynced in the
	// leader's log.
	PersistLog time.Duration
	// CommitLog is from raft taking it to the apply round that applies it
	// (a quorum stored it).
	CommitLog time.Duration
	// ApplyLog is from the start of that apply round to the answer.
	ApplyLog time.Duration
}

// FillWriteDetail adds t to d's raft stages (d may be nil).
func (t ProposeTiming) FillWriteDetail(d *kvrpcpb.WriteDetail) {
	if d == nil {
		return
	}
	d.ProposeSendWaitNanos += uint64(t.SendWait)
	d.PersistLogNanos += uint64(t.PersistLog)
	d.CommitLogNanos += uint64(t.CommitLog)
	d.ApplyLogNanos += uint64(t.ApplyLog)
}

// timing is p's stages as of now (its answer).
func (p *proposal) timing(now time.Time) ProposeTiming {
	var t ProposeTiming
	if p.proposed.IsZero() {
		return t
	}
	t.SendWait = p.proposed.Sub(p.start)
	if !p.appended.IsZero() {
		t.PersistLog = p.appended.Sub(p.proposed)
	}
	if !p.committed.IsZero() {
		t.CommitLog = p.committed.Sub(p.proposed)
		t.ApplyLog = now.Sub(p.committed)
	}
	return t
}

func (p *proposal) regionID() uint64 { return p.cmd.GetHeader().GetRegionId() }

func (p *proposal) respond(resp *raft_cmdpb.RaftCmdResponse, err error, outcome string) {
	proposals.WithLabelValues(outcome).Inc()
	now := time.Now()
	proposeSeconds.Observe(now.Sub(p.start).Seconds())
	if p.cb != nil {
		p.cb(resp, err)
		return
	}
	p.done <- proposalResult{resp: resp, err: err, timing: p.timing(now)}
}

func (p *proposal) regionError(e *errorpb.Error, outcome string) {
	p.respond(&raft_cmdpb.RaftCmdResponse{RegionError: e}, nil, outcome)
}

// readRequest is a linearizable read waiting for ReadIndex + apply.
type readRequest struct {
	rctx *kvrpcpb.Context
	// waitIndex, when set, makes this a follower read (replicaread.go):
	// served once the applied index reaches it, on any replica.
	waitIndex uint64
	start     time.Time
	done      chan readResult // cap 1
}

type readResult struct {
	region *metapb.Region
	rerr   *errorpb.Error
	err    error
}

func (r *readRequest) respond(res readResult) {
	readIndexSeconds.Observe(time.Since(r.start).Seconds())
	r.done <- res
}

// readBatch is every read that arrived in one loop iteration, behind one
// ReadIndex call with a unique context.
// A batch with a nil ctx holds lease reads waiting for apply to reach index
// (the commit index when they were accepted).
type readBatch struct {
	ctx    []byte
	index  uint64 // 0 until the ReadState arrives
	reqs   []*readRequest
	issued time.Time
	term   uint64 // raft term when issued; its ReadState renews the lease of that term only
}

// peer is this store's replica of one region. Owned by the Ready loop.
type peer struct {
	meta   *metapb.Peer
	region *metapb.Region
	rn     *raft.RawNode
	ps     *peerStorage
	// siblings are the regions this peer's last split created (sent with
	// EpochNotMatch along with region).
	siblings []*metapb.Region
	// Split check (splitcheck.go): bytes written since the last check,
	// whether it was checked since it was created or last split, and
	// bytes written since the last region heartbeat.
	sizeDiff     uint64
	keysDiff     uint64
	checked      bool
	writtenBytes uint64
	writtenKeys  uint64
	lastHB       time.Time // when the last region heartbeat was queued
	hbDropped    bool      // the last region heartbeat found the queue full

	isLeader bool
	// leaderTerm is the term isLeader was last reported for (TxnHooks).
	leaderTerm uint64
	leaderID   uint64
	// leadTermPub is the term of this peer's current leadership, 0 while
	// it does not lead, for readers off the loop (Store.LeaderTerm). The
	// loop sets it when it handles raft's state change, before it persists
	// or applies anything of that Ready: before a snapshot install clears
	// the region's ranges and before a proposal is answered undetermined.
	leadTermPub atomic.Uint64

	unassigned  map[uint64]*proposal // proposed, index not yet known
	pending     []*proposal          // ordered by index
	reads       []*readRequest       // not yet behind a ReadIndex
	readBatches []*readBatch         // behind a ReadIndex, in issue order
	applyWaits  []*readRequest       // follower reads waiting for their read index to apply

	// Follower and stale reads (replicaread.go): leaderPub is the leader's
	// peer id as raft last reported it and appliedPub the applied index in
	// the engine, both for readers off the loop; safeTS and staleRegion
	// the published safe ts and region (advanceSafeTS); pendingSafe
	// resolved ts waiting for the applied index; minLock the lowest
	// read-blocking lock start ts in the region, valid while locksKnown
	// (cleared when a lock is written or a snapshot installed).
	leaderPub  atomic.Uint64
	appliedPub atomic.Uint64
	// installingPub is set before the batch that starts a snapshot install
	// (clearing the region's ranges) commits and cleared once the ingest
	// finished: replica reads refuse meanwhile (ReplicaPresent, StaleRead).
	installingPub atomic.Bool
	safeTS        atomic.Uint64
	staleRegion   atomic.Pointer[metapb.Region] // shared, read-only
	pendingSafe   []pendingSafeTS
	minLock       uint64
	locksKnown    bool

	// parked are writes raft refused because a leader transfer is in
	// progress. They were never proposed: when the transfer ends they are
	// proposed again (still leader) or answered NotLeader naming the new
	// leader. transferee is the target of the last transfer seen, the
	// leader hint while the new leader is not known yet.
	parked     []*proposal
	transferee uint64
	// handedOff is set when this store started a transfer of the region
	// while draining: the drain then also waits until the new leader is
	// known here, which means the election finished (it may need this
	// peer's vote, which must go out before the store stops), or until an
	// election timeout passed since stepping down (steppedDown) without
	// one: then there is no election to help (e.g. no quorum left).
	handedOff   bool
	steppedDown time.Time

	ticksSinceHeartbeat int

	// Conf changes (confchange.go): uninitialized is set for a peer created
	// by a raft message that has no region data yet (peerCache holds the
	// stores of the peers it heard from); removed once it applied its own
	// removal (destroyed at the end of the iteration).
	uninitialized bool
	removed       bool
	peerCache     map[uint64]uint64
	// Leader's view of its followers (pd.go samplePeerActivity): when each
	// was last recently active, in term activeTerm sampled since activeSince.
	peerActive  map[uint64]time.Time
	activeTerm  uint64
	activeSince time.Time
	// activeFrom is the store tick from which raft's RecentActive flags
	// are fresh again after the leader woke (quorumAfterRemoval).
	activeFrom uint64

	// Raft log GC (loggc.go): compactProposed is the highest compact index
	// proposed (not proposed again), logBytes approximates the bytes
	// appended since the last compaction.
	compactProposed uint64
	logBytes        uint64

	// lease lets the leader serve reads without ReadIndex (see leaderLease);
	// delegate publishes it to reads outside the loop (Store.localRead).
	lease    leaderLease
	delegate atomic.Pointer[readDelegate]
	// created is when this peer was built; mayHaveAcked says its persisted
	// state shows it may have followed a leader before (see createPeer).
	created      time.Time
	mayHaveAcked bool
	createdTerm  uint64 // the persisted term it was built with
	// renewLease asks the loop for a ReadIndex round (with or without reads)
	// because a lease read found the lease past half its length.
	renewLease bool
	// st caches raft's status for the read-queueing phase of iteration stIter.
	st     raft.BasicStatus
	stIter uint64

	// The loop's work sets (hibernate.go): inActive (in Store.active: polled
	// next iteration), inAwake (in Store.awake: ticked), inSleepers (in
	// Store.sleepers: slow PD heartbeats), splitDirty (in Store.splitDirty).
	// hibernated: not ticked; idleTicks counts a leader's idle ticks.
	// destroyed: removed from the store, skipped wherever a set still holds it.
	inActive   bool
	inAwake    bool
	inSleepers bool
	splitDirty bool
	hibernated bool
	destroyed  bool
	idleTicks  int
	hibTerm    uint64 // the term a follower last hibernated in

	// Hibernated leases (support.go). A follower: leaderMsgTick is the
	// store tick of its last append/heartbeat/snapshot from the leader;
	// hold is set while it is held (not ticked, not woken by others) for
	// holdLeader on holdStore in support epoch holdEpoch. A hibernated
	// leader: hibRound numbers its hibernations (the current one while
	// hibernated; in memory: a restarted peer never leads again in a term
	// it led, and acks name the term), supportAcks are the followers that
	// acked this round.
	leaderMsgTick uint64
	hold          bool
	holdStore     uint64
	holdEpoch     uint64
	holdLeader    uint64
	supportAcks   []supportAck
	hibRound      uint64
	// failover is a fast campaign this follower plans because its
	// leader's store is gone (failover.go); zero term: none.
	failover failoverPlan
}

// syncLease aligns the lease with raft's state st: a new term starts
// without a lease, stepping down drops it, and a transfer in progress (also
// one raft started on a follower's MsgTransferLeader) ends it for the term.
func (p *peer) syncLease(st *raft.BasicStatus) {
	switch {
	case st.RaftState != raft.StateLeader:
		if p.lease.term != 0 {
			p.lease.expire()
		}
		return
	case st.GetTerm() != p.lease.term:
		p.lease.becomeLeader(st.GetTerm())
	}
	if st.LeadTransferee != 0 && !p.lease.transferred {
		p.lease.transferStarted()
	}
}

// tickLeaseHeld reports whether p's tick-based lease is valid at now, with
// raft's current state (syncLease first).
func (p *peer) tickLeaseHeld(now time.Time) bool {
	st := p.rn.BasicStatus()
	p.syncLease(&st)
	return p.lease.valid(now, st.RaftState == raft.StateLeader, st.GetTerm(), st.LeadTransferee)
}

// publishLease publishes the lease to local readers when it is valid for
// reads (renewed in a term whose entry this leader applied, no transfer);
// the loop's own checks (raft state, transferee) are kept in step by
// syncLease, which withdraws it.
func (p *peer) publishLease() {
	l := &p.lease
	if l.pub == nil || l.term == 0 || !l.committed || l.transferred || l.expiry.IsZero() {
		return
	}
	d := p.delegate.Load()
	if d != nil && d.support == nil && d.term == l.term && d.expiry.Equal(l.expiry) && sameRegion(d.region, p.region) {
		return
	}
	region := p.region
	if d != nil && sameRegion(d.region, p.region) {
		region = d.region
	} else {
		region = proto.Clone(p.region).(*metapb.Region)
	}
	p.delegate.Store(&readDelegate{region: region, term: l.term, expiry: l.expiry})
}

// sameRegion reports whether a and b have the same epoch and range.
func sameRegion(a, b *metapb.Region) bool {
	return a.GetRegionEpoch().GetVersion() == b.GetRegionEpoch().GetVersion() &&
		a.GetRegionEpoch().GetConfVer() == b.GetRegionEpoch().GetConfVer() &&
		bytes.Equal(a.GetStartKey(), b.GetStartKey()) && bytes.Equal(a.GetEndKey(), b.GetEndKey())
}

// readIndexInFlight reports whether a ReadIndex (not a lease read waiting
// for apply) is outstanding.
func (p *peer) readIndexInFlight() bool {
	for _, b := range p.readBatches {
		if b.ctx != nil {
			return true
		}
	}
	return false
}

func (p *peer) leaderPeer() *metapb.Peer { return p.peerMeta(p.leaderID) }

// leaderHint is the peer a request refused here should try next: the
// leader, or while none is known right after a leader transfer, the
// transfer's target (the one that campaigns). nil when unknown.
func (p *peer) leaderHint() *metapb.Peer {
	if p.leaderID == 0 && !p.isLeader && p.transferee != 0 {
		return p.peerMeta(p.transferee)
	}
	return p.leaderPeer()
}

func (p *peer) peerMeta(id uint64) *metapb.Peer {
	if id == 0 {
		return nil
	}
	for _, pp := range p.region.GetPeers() {
		if pp.GetId() == id {
			return proto.Clone(pp).(*metapb.Peer)
		}
	}
	return nil
}

func (p *peer) storeOf(peerID uint64) uint64 {
	for _, pp := range p.region.GetPeers() {
		if pp.GetId() == peerID {
			return pp.GetStoreId()
		}
	}
	return p.peerCache[peerID]
}

// trackProposals runs after ents were persisted at now: new proposals
// learn their (index, term), and proposals whose entry was overwritten in
// this log are marked (overwritten = now) but stay pending. An overwrite
// decides nothing: with five voters the overwritten entry may still be
// elected with another peer's log and commit (issue 7), and the log here
// then takes it back. The proposal is answered when an entry at its index
// applies here (ackApplied), or ErrUndetermined if that does not happen
// within a timeout (expireOverwritten).
func (p *peer) trackProposals(ents []*raftpb.Entry, now time.Time) {
	if len(ents) == 0 {
		return
	}
	first, last := ents[0].GetIndex(), ents[len(ents)-1].GetIndex()
	for _, pr := range p.pending {
		if pr.index < first {
			continue
		}
		gone := pr.index > last || ents[pr.index-first].GetTerm() != pr.term
		switch {
		case gone && pr.overwritten.IsZero():
			pr.overwritten = now
			proposalsOverwritten.Inc()
		case !gone:
			pr.overwritten = time.Time{} // the entry is back in the log
		}
	}
	if len(p.unassigned) == 0 {
		return
	}
	sorted := true
	for _, e := range ents {
		id, ok := entryProposalID(e.GetData())
		if !ok {
			continue
		}
		if pr, ok := p.unassigned[id]; ok {
			delete(p.unassigned, id)
			pr.index, pr.term = e.GetIndex(), e.GetTerm()
			pr.appended = now
			proposalAppendSeconds.Observe(now.Sub(pr.start).Seconds())
			if n := len(p.pending); n > 0 && p.pending[n-1].index > pr.index {
				sorted = false // below a pending proposal that was overwritten
			}
			p.pending = append(p.pending, pr)
		}
	}
	if !sorted {
		slices.SortStableFunc(p.pending, func(a, b *proposal) int { return cmp.Compare(a.index, b.index) })
	}
	// Raft accepted these (Propose returned nil) but they are not in the
	// persisted entries: not expected to happen, and nothing says whether
	// a message carrying one went out, so the outcome is unknown.
	for id, pr := range p.unassigned {
		delete(p.unassigned, id)
		pr.respond(nil, fmt.Errorf("%w: proposal missing from the persisted log", ErrUndetermined), "dropped")
	}
}

// snapshotApplied answers ErrUndetermined to the proposals at or below a
// snapshot's index that this peer just installed: their entries were never
// applied here, and whether they are in the snapshot is not known.
func (p *peer) snapshotApplied(index uint64) {
	kept := p.pending[:0]
	for _, pr := range p.pending {
		if pr.index <= index {
			pr.respond(nil, fmt.Errorf("%w: replaced by a snapshot at index %d", ErrUndetermined, index), "undetermined")
			continue
		}
		kept = append(kept, pr)
	}
	clear(p.pending[len(kept):])
	p.pending = kept
}

// LeaderTerm returns the term in which this store's peer of regionID
// leads it, or 0: no peer here, not the leader, or installing a snapshot.
// Safe from any goroutine. A leader read loads it before its ReadIndex and
// again after taking its engine snapshot (store/txn doc.go, "Leader reads"):
// the same non-zero term both times means the peer led without a break in
// between, so the snapshot holds the region's data and no write of the
// region was answered undetermined here meanwhile. Those answers
// (snapshotApplied, expireOverwritten, destroyPeer) all come after the
// peer stopped leading: a snapshot or another leader's entries reach only
// a follower, and a destroyed peer has left the delegates map first.
func (s *Store) LeaderTerm(regionID uint64) uint64 {
	v, ok := s.delegates.Load(regionID)
	if !ok {
		return 0
	}
	p := v.(*peer)
	if p.installingPub.Load() {
		return 0
	}
	return p.leadTermPub.Load()
}

// expireOverwritten answers ErrUndetermined to the proposals overwritten in
// the local log more than timeout before now whose index has not been
// applied since (e.g. the new leader's log does not reach that index yet):
// their callers (which may hold latches) are not kept waiting for a
// decision that may never come.
func (p *peer) expireOverwritten(now time.Time, timeout time.Duration) {
	kept := p.pending[:0]
	for _, pr := range p.pending {
		if !pr.overwritten.IsZero() && now.Sub(pr.overwritten) > timeout {
			pr.respond(nil, fmt.Errorf("%w: entry %d overwritten in the local log and not decided within %v", ErrUndetermined, pr.index, timeout), "undetermined")
			continue
		}
		kept = append(kept, pr)
	}
	clear(p.pending[len(kept):])
	p.pending = kept
}

// ackApplied answers the proposal of the entry (index, term) that was just
// applied with resp, and any older proposal as stale.
func (p *peer) ackApplied(index, term uint64, resp *raft_cmdpb.RaftCmdResponse, out *[]appliedProposal) {
	for len(p.pending) > 0 && p.pending[0].index <= index {
		pr := p.pending[0]
		p.pending[0] = nil
		p.pending = p.pending[1:]
		if pr.index == index && pr.term == term && resp != nil {
			proposalCommitSeconds.Observe(time.Since(pr.start).Seconds())
			// A quorum stored the entry, so heard from us after pr.proposed.
			p.lease.renew(term, pr.proposed) // published once the batch is written (Store.apply)
			*out = append(*out, appliedProposal{pr: pr, resp: resp})
			continue
		}
		*out = append(*out, appliedProposal{pr: pr, resp: &raft_cmdpb.RaftCmdResponse{RegionError: errStaleCommand()}, stale: true})
	}
}

type appliedProposal struct {
	pr    *proposal
	resp  *raft_cmdpb.RaftCmdResponse
	stale bool
}

// failReads answers every waiting read with e.
func (p *peer) failReads(e *errorpb.Error, err error) {
	for _, r := range p.reads {
		r.respond(readResult{rerr: e, err: err})
	}
	p.reads = nil
	for _, b := range p.readBatches {
		for _, r := range b.reqs {
			r.respond(readResult{rerr: e, err: err})
		}
	}
	p.readBatches = nil
	for _, r := range p.applyWaits {
		r.respond(readResult{rerr: e, err: err})
	}
	p.applyWaits = nil
}

// serveReads clears every read batch whose ReadState index is applied.
func (p *peer) serveReads() {
	applied := p.ps.apply.applied
	n := 0
	for _, b := range p.readBatches {
		if b.index == 0 || b.index > applied {
			p.readBatches[n] = b
			n++
			continue
		}
		region := proto.Clone(p.region).(*metapb.Region)
		for _, r := range b.reqs {
			r.respond(readResult{region: region})
		}
	}
	for i := n; i < len(p.readBatches); i++ {
		p.readBatches[i] = nil
	}
	p.readBatches = p.readBatches[:n]
}
