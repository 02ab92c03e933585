package raftstore

import (
	"context"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/tracker"
)

// TransferLeaders prepares a graceful stop: it hands the leadership of every
// region this store leads to another replica (raft leader transfer, to the
// up-to-date follower with the highest match index) and returns once no
// local peer leads, each region it handed off has a new leader known here
// (the election is over, so this store's vote is not needed any more) and
// every write this store accepted has been answered; or when ctx is done
// (ctx.Err(); transfers may still be under way). The store keeps serving
// raft messages and requests meanwhile and afterwards, and transfers away
// any leadership it wins again until Stop.
//
// Writes that arrive while a transfer is in progress (raft refuses them) are
// held and answered, once the transfer ends, with NotLeader naming the new
// leader, or proposed here if the transfer was aborted. Writes already in
// the log are answered with their result when they apply (the transferee
// has every entry before it campaigns, so none is lost). The leader lease
// of each region ends when its transfer starts; reads then go through
// ReadIndex, which needs a quorum in the current term, so a read served
// during the transfer is linearizable; reads waiting when leadership moves
// are answered NotLeader.
func (s *Store) TransferLeaders(ctx context.Context) error {
	done := make(chan struct{})
	if !s.inbox.push(func(m *inboxMsgs) { m.drains = append(m.drains, done) }) {
		return ErrStopped
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.done:
		return ErrStopped
	}
}

// transferLeaders starts a leader transfer for every region this store
// leads that has none in progress (raft aborts a transfer that did not
// finish within an election timeout; the next iteration starts another).
func (s *Store) transferLeaders() {
	for _, p := range s.peers {
		if !p.isLeader {
			continue
		}
		// Raft's own state: p.isLeader lags a step-down within this
		// iteration, and a follower would forward the request to the leader.
		if st := p.rn.BasicStatus(); st.RaftState != raft.StateLeader || st.LeadTransferee != 0 {
			continue
		}
		if p.splitInFlight() {
			continue // hand it over once the split applied (split.go)
		}
		target := transferTarget(p.rn, p.meta.GetId())
		if target == 0 {
			continue // no other voter: keep serving until stopped
		}
		p.handedOff = s.startTransfer(p, target) // else tried again next iteration
	}
}

// startTransfer starts a leader transfer of p (a leader with no transfer in
// progress) to peer target. It reports false, starting nothing, when raft
// refused the handover write (the transaction layer's in-memory locks
// would be lost with the leadership); the caller tries again later.
func (s *Store) startTransfer(p *peer, target uint64) bool {
	s.busy(p)
	// The transaction layer's in-memory state goes into the log first: the
	// transferee has every entry before it campaigns.
	if s.handover(p.region, s.propose) {
		transfersDeferred.Inc()
		s.log.Info("leader transfer deferred: the handover of in-memory locks was refused", "region", p.region.GetId(), "to_peer", target)
		return false
	}
	p.transferee = target
	// The MsgTimeoutNow this may send lets the target win an election
	// with forced votes that ignore CheckQuorum: no lease read from here
	// on in this term, decided before the message can go out.
	p.lease.transferStarted()
	p.rn.TransferLeader(target)
	if h := s.leaseHook.Load(); h != nil {
		st := p.rn.BasicStatus()
		(*h)(LeaseEvent{Transfer: true, RegionID: p.region.GetId(), Term: st.GetTerm(), LeadTransferee: st.LeadTransferee,
			LeaseValid: p.lease.valid(s.now(), st.RaftState == raft.StateLeader, st.GetTerm(), st.LeadTransferee),
			Seq:        s.leaseSeq.Add(1)})
	}
	leaderTransfers.Inc()
	s.log.Info("transferring leader", "region", p.region.GetId(), "to_peer", target)
	return true
}

// transferTarget picks the target of a leader transfer among rn's voters
// (see betterTransferee); 0 when there is none.
func transferTarget(rn *raft.RawNode, self uint64) uint64 {
	var best transferCandidate
	rn.WithProgress(func(id uint64, typ raft.ProgressType, pr tracker.Progress) {
		c := transferCandidate{id: id, match: pr.Match, active: pr.RecentActive}
		if id != self && typ == raft.ProgressTypePeer && !pr.IsLearner && betterTransferee(c, best) {
			best = c
		}
	})
	return best.id
}

type transferCandidate struct {
	id, match uint64
	active    bool // raft heard from it within the last election timeout
}

// betterTransferee orders transfer targets: recently active first, then the
// highest match index (least to catch up before the transfer can finish),
// then the lowest id (deterministic). The zero candidate loses to any.
func betterTransferee(c, best transferCandidate) bool {
	switch {
	case best.id == 0:
		return true
	case c.active != best.active:
		return c.active
	case c.match != best.match:
		return c.match > best.match
	default:
		return c.id < best.id
	}
}

// drained reports whether no local peer leads, every region handed off has
// a known new leader, and no accepted write is waiting for its result.
func (s *Store) drained() bool {
	for _, p := range s.peers {
		if p.isLeader || len(p.parked) > 0 || len(p.unassigned) > 0 || len(p.pending) > 0 {
			return false
		}
		electing := p.leaderID == 0 || p.leaderID == p.meta.GetId()
		if p.handedOff && electing && s.now().Sub(p.steppedDown) < s.electionTimeout() {
			return false
		}
	}
	return true
}
