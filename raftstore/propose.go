package raftstore

import (
	"context"
	"fmt"
	"time"

	"go.etcd.io/raft/v3"

	"github.com/stratadb/strata/proto/raft_cmdpb"
)

// Propose replicates cmd through the raft group of its region and answers
// once the entry carrying it has been applied on this store (this store's
// peer must lead the region), or with a region error saying why nothing was
// written. It is the only way to write user data, and it evaluates nothing:
// cmd.requests are plain writes per key space (keys are cf keys; raftstore
// adds the key-space prefix, see kv/keys), decided by the caller beforehand.
//
// Contract for callers that evaluate against the engine (store/txn, store/server):
// a nil error and no region error mean every request of cmd was applied on
// this store, in one batch with the applied index, before Propose returned;
// so a caller that read the engine (after ReadIndex) under its own per-key
// latches and releases them after Propose returns orders the next
// evaluation on those keys after this write. A region error means nothing
// was written, now or later: NotLeader (with a hint when known),
// RegionNotFound, EpochNotMatch (at propose or at apply: the region changed
// since the caller looked; the current region is attached), KeyNotInRegion,
// ServerIsBusy (too many queued writes, a raft refusal, or leaderGen
// mismatch; retry), StaleCommand (another entry was committed at the
// proposal's index). An error means the outcome is unknown: ErrUndetermined
// (wrapping ErrStopped when the store stopped with the proposal in flight)
// or ctx's error. The entry may still apply later, so a caller holding
// latches should pass a ctx without cancellation (context.WithoutCancel):
// the store answers every proposal it accepted.
//
// cmd.header needs region_id and region_epoch (the epoch the caller
// evaluated under: a mismatch at propose or apply time is EpochNotMatch);
// header.term, when not 0, must be the leader's current term (else
// StaleCommand: nothing was proposed). Propose takes ownership of cmd (it
// sets header.proposal_id); the caller must not use it afterwards.
// admin_request is not supported yet (refused with an error).
//
// leaderGen, when not 0, is the store's LeaderGeneration at which the caller
// prepared the write (e.g. chose a commit timestamp above every read served
// so far): if a peer of this store has become leader since, the command is
// not proposed and gets ServerIsBusy, so the caller can prepare it again.
// Safe for concurrent use.
func (s *Store) Propose(ctx context.Context, cmd *raft_cmdpb.RaftCmdRequest, leaderGen uint64) (*raft_cmdpb.RaftCmdResponse, error) {
	if cmd.GetAdminRequest() != nil {
		return nil, ErrAdminNotSupported
	}
	resp, _, err := s.proposeAndWait(ctx, cmd, leaderGen)
	return resp, err
}

// ProposeTimed is Propose that also returns where the proposal's time went
// (zero stages when it was refused before raft took it).
func (s *Store) ProposeTimed(ctx context.Context, cmd *raft_cmdpb.RaftCmdRequest, leaderGen uint64) (*raft_cmdpb.RaftCmdResponse, ProposeTiming, error) {
	if cmd.GetAdminRequest() != nil {
		return nil, ProposeTiming{}, ErrAdminNotSupported
	}
	return s.proposeAndWait(ctx, cmd, leaderGen)
}

// proposeAndWait is Propose without the admin check (SplitRegion proposes
// admin commands through it).
func (s *Store) proposeAndWait(ctx context.Context, cmd *raft_cmdpb.RaftCmdRequest, leaderGen uint64) (*raft_cmdpb.RaftCmdResponse, ProposeTiming, error) {
	pr := &proposal{cmd: cmd, leaderGen: leaderGen, start: time.Now(), done: make(chan proposalResult, 1)}
	if resp := s.queueProposal(pr); resp != nil {
		return resp, ProposeTiming{}, nil
	}
	select {
	case res := <-pr.done:
		return res.resp, res.timing, res.err
	case <-ctx.Done():
		return nil, ProposeTiming{}, ctx.Err()
	case <-s.done:
		// The loop answered everything it held before exiting.
		select {
		case res := <-pr.done:
			return res.resp, res.timing, res.err
		default:
			return nil, ProposeTiming{}, fmt.Errorf("%w: %w", ErrUndetermined, ErrStopped)
		}
	}
}

// queueProposal hands pr to the Ready loop. It returns the response when pr
// was refused without being queued (a retryable region error), else nil.
func (s *Store) queueProposal(pr *proposal) *raft_cmdpb.RaftCmdResponse {
	busy := false
	if !s.inbox.push(func(m *inboxMsgs) {
		if busy = len(m.proposals) >= maxQueuedRequests; !busy {
			m.proposals = append(m.proposals, pr)
		}
	}) {
		// Never proposed: safe for the client to retry elsewhere.
		proposals.WithLabelValues("stopping").Inc()
		return &raft_cmdpb.RaftCmdResponse{RegionError: errStopping(pr.regionID())}
	}
	if busy {
		proposals.WithLabelValues("busy").Inc()
		return &raft_cmdpb.RaftCmdResponse{RegionError: ErrServerIsBusy("too many queued writes")}
	}
	return nil
}

func (s *Store) propose(pr *proposal) {
	h := pr.cmd.GetHeader()
	p := s.peers[h.GetRegionId()]
	if p == nil {
		pr.regionError(errRegionNotFound(h.GetRegionId()), "region_not_found")
		return
	}
	if !p.isLeader {
		pr.regionError(errNotLeader(p.region.GetId(), p.leaderHint()), "not_leader")
		return
	}
	s.busy(p)
	if pr.leaderGen != 0 && pr.leaderGen != s.leaderGen.Load() {
		pr.regionError(ErrServerIsBusy("leadership changed while the write was prepared"), "leader_changed")
		return
	}
	if p.refuseProposal(pr) {
		return
	}
	s.propSeq++
	if p.propose(pr, s.propSeq, s.now()) {
		s.nParked++
	}
}

// refuseProposal answers pr and reports true when p (the leader) must not
// propose it: its epoch, term or keys do not match the region.
func (p *peer) refuseProposal(pr *proposal) bool {
	h := pr.cmd.GetHeader()
	if h.GetRegionEpoch() == nil || checkCmdEpoch(pr.cmd, p.region) != nil {
		pr.regionError(p.epochNotMatch(), "epoch_not_match")
		return true
	}
	if t := h.GetTerm(); t != 0 && t != p.rn.BasicStatus().GetTerm() {
		pr.regionError(errStaleCommand(), "stale_term")
		return true
	}
	if e := checkCmdKeys(pr.cmd, p.region); e != nil {
		pr.regionError(e, "key_not_in_region")
		return true
	}
	return false
}

// propose hands pr to raft as proposal id at now. It reports true when pr
// was parked (see peer.parked) instead; a refusal is answered.
func (p *peer) propose(pr *proposal, id uint64, now time.Time) (parked bool) {
	pr.id = id
	pr.cmd.GetHeader().ProposalId = id
	data, err := encodeCmd(pr.cmd)
	if err != nil {
		pr.respond(nil, err, "error")
		return false
	}
	pr.proposed = now
	if err := p.rn.Propose(data); err != nil {
		st := p.rn.BasicStatus()
		if st.RaftState == raft.StateLeader && st.LeadTransferee != 0 {
			// Raft refuses proposals while leadership is being transferred:
			// hold the write until the transfer ends (see peer.parked).
			p.transferee = st.LeadTransferee
			p.parked = append(p.parked, pr)
			return true
		}
		if st.RaftState == raft.StateLeader {
			// Still leader, no transfer: raft refused it for another reason
			// (too many uncommitted bytes). NotLeader without a hint would
			// send the client around the other peers; this one is the
			// leader, it is only busy.
			pr.regionError(ErrServerIsBusy("raft refused the proposal: "+err.Error()), "raft_refused")
			return false
		}
		// Raft stepped down earlier in this iteration (p.isLeader catches up
		// after the Ready): name raft's current leader, or the transfer
		// target while the new leader is not known yet.
		hint := p.peerMeta(st.Lead)
		if hint == nil || st.Lead == p.meta.GetId() {
			hint = p.peerMeta(p.transferee)
		}
		pr.regionError(errNotLeader(p.region.GetId(), hint), "not_leader")
		return false
	}
	p.unassigned[pr.id] = pr
	return false
}

// unparkAborted proposes again the parked writes of peers that are still
// leader with no transfer in progress (the transfer was aborted).
func (s *Store) unparkAborted() {
	for _, p := range s.peers {
		if len(p.parked) == 0 {
			continue
		}
		if st := p.rn.BasicStatus(); st.RaftState != raft.StateLeader || st.LeadTransferee != 0 {
			continue // still transferring, or stepped down (answered after the Ready)
		}
		parked := p.parked
		p.parked = nil
		s.nParked -= len(parked)
		for _, pr := range parked {
			s.propose(pr)
		}
	}
}

// answerParked answers p's parked writes with NotLeader and the best
// leader hint, once it has stepped down, and returns how many it answered.
func (p *peer) answerParked() int {
	n := len(p.parked)
	if n == 0 {
		return 0
	}
	hint := p.leaderHint()
	for _, pr := range p.parked {
		pr.regionError(errNotLeader(p.region.GetId(), hint), "transfer_not_leader")
	}
	clear(p.parked)
	p.parked = p.parked[:0]
	return n
}
