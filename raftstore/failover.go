package raftstore

import (
	"slices"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/stratadb/strata/proto/metapb"
)

// Fast failover when a store's process is gone (issue 29).
//
// A follower waits an election timeout (1–2 s by default) before it
// campaigns, and CheckQuorum makes the other voters ignore (pre-)votes for
// as long: that is what keeps a partitioned or paused leader's lease safe
// (lease.go). When the leader's process was killed, nothing is left to
// protect, yet every write of its regions waited out that timeout.
//
// Evidence. The transport dials each store it sends to at the address PD
// has for it; a dial that fails with ECONNREFUSED (the host's kernel
// answered the SYN with a reset: no socket listens on that address) is
// reported to the loop (StoreGone). A store's process listens on its
// address from before it serves anything until after it stopped serving
// reads: store/server stops the raft store (its loop withdraws every
// lease and fails waiting reads) before it closes the gRPC listener, and
// kill -9 ends both at once. Two processes of one store never run at once
// (Pebble's directory lock), and a process registers its address with PD
// before it serves, so the address PD gives is the latest process's. A
// refusal therefore shows that the process that held any lease of this
// store's leaders has ended; reads it served before that precede the
// refusal and everything that follows it.
//
// What it does not cover: a paused process (SIGSTOP) keeps its listener
// and the kernel completes connections to it; a partition drops packets,
// so dials time out; neither is a refusal, and both keep the election
// timeout and the lease. A device between stores that forges resets for a
// live host (a firewall's REJECT with tcp-reset) would be taken for a
// dead process: such a network must turn this off (Config.DisableFastFailover).
//
// Election. For each local follower whose leader, in the follower's
// current term T, is a peer on the gone store, the voters on the other
// live stores are ranked by store id; the first campaigns at once, the
// k-th k x max(2, ElectionTicks/4) ticks later if its term is still T and
// its leader is still the gone peer (so two followers seldom split the
// vote: the first may find the store gone a little later than the second). The campaign is
// forced (raft's MsgTimeoutNow path: no pre-vote, and voters grant it
// within their CheckQuorum lease), which is safe for every live lease:
// a forced vote in term T+1 is granted only by voters still in a term
// at most T; any leader elected in T+1 or later got a quorum of voters
// already in such a term, and they refuse (one vote per term; lower terms
// are refused), so the candidate cannot win while another leader's lease
// may serve. The only lease it overrides is that of term T's leader, whose
// process is gone. A follower whose term or leader moved on drops its
// plan: it never forces an election against a leader it has not heard
// of. The new leader then serves reads as any leader does: through
// ReadIndex until an entry of its term commits, then under its own lease.
//
// A forced vote can fail: the first follower may lack the last entries
// (its append was in flight when the leader died), and the others refuse
// it. Such a refusal moved them to the candidate's term with no leader, so
// their own plans lapse; instead, once their store finds the old leader's
// store gone too, they campaign at once the ordinary way (pre-vote, no
// force: raft's CheckQuorum rule alone protects any live lease, since a
// voter following a live leader refuses it), and the most up-to-date
// follower wins a tick or two later instead of an election timeout later.
//
// A follower restarted less than an election timeout ago refuses votes
// (createPeer: a lease it acknowledged before the restart may be live).
// When it follows, still in the term it restarted in, a leader on the gone
// store, that lease can only be the gone leader's (a leader of its
// persisted term, and the election of that leader respected every earlier
// lease), so it votes again at once.
//
// Metrics: strata_raftstore_fast_campaigns_total, and stores_down_total
// (the refusal also marks the store down at once, releasing followers
// held for its hibernated leaders, support.go).

// failoverPlan is a follower's pending fast campaign: in term, while its
// leader is peer lead on the gone store, at tick at.
// An ordinary plan (afterForcedVote) campaigns with pre-vote once the
// store is found gone, if the follower still knows no leader in term.
type failoverPlan struct {
	store, term, lead, at uint64
	ordinary              bool
}

// StoreGone reports that a dial to store id's address was refused: its
// process is gone (the transport calls it; see above).
func (s *Store) StoreGone(id uint64) {
	s.inbox.push(func(m *inboxMsgs) { m.gone = append(m.gone, id) })
}

// storeGone handles a refusal of store id in the loop.
func (s *Store) storeGone(id uint64) {
	if id == 0 || id == s.id {
		return
	}
	s.trackStore(id)
	if s.cfg.DisableFastFailover {
		// A refusal is no proof here: the store is only unreachable, down
		// once the support window passed (support.go).
		s.storeUnreachable(id)
		return
	}
	s.storeDown(id, "connection refused: its process is gone")
	planned, now := 0, 0
	for _, r := range s.meta.sorted() { // key order keeps the harness deterministic
		p := s.peers[r.GetId()]
		if p == nil || p.destroyed || p.isLeader {
			continue
		}
		st := p.rn.BasicStatus()
		if p.failover.term != 0 && p.failover.term != st.GetTerm() {
			p.failover = failoverPlan{} // of an earlier term: void
		}
		if p.failover.ordinary && p.failover.store == id {
			s.ordinaryCampaign(p)
			continue
		}
		if p.failover.term != 0 {
			continue
		}
		if st.RaftState != raft.StateFollower || st.Lead == 0 || p.storeOf(st.Lead) != id || p.meta.GetRole() == metapb.PeerRole_Learner {
			continue
		}
		if p.mayHaveAcked && st.GetTerm() == p.createdTerm {
			// Restarted recently, it refuses votes for an election timeout
			// to protect a lease it may have acknowledged before; any such
			// lease is of a leader of its persisted term, the leader it
			// follows now, whose process is gone: nothing is left to
			// protect, and refusing would stall the fast election.
			p.mayHaveAcked = false
		}
		rank := s.failoverRank(p, id)
		p.failover = failoverPlan{store: id, term: st.GetTerm(), lead: st.Lead, at: s.ticks + uint64(rank)*s.failoverStagger()}
		planned++
		if rank == 0 {
			s.fastCampaign(p)
			now++
		} else {
			s.failovers = append(s.failovers, p)
		}
	}
	if planned > 0 {
		s.log.Info("leader store gone: fast elections", "gone_store", id, "campaigning_now", now, "later", planned-now)
	}
}

// failoverStagger is how many ticks each rank waits after the one before
// it: the first follower may find the store gone a little later (its
// reconnect backoff), and two forced campaigns in one term split the vote.
func (s *Store) failoverStagger() uint64 {
	return uint64(max(2, s.cfg.ElectionTicks/4))
}

// failoverRank is this store's place among the voters of p's region on
// live stores other than gone, in store id order.
func (s *Store) failoverRank(p *peer, gone uint64) int {
	var ids []uint64
	for _, pp := range p.region.GetPeers() {
		sid := pp.GetStoreId()
		if sid == gone || pp.GetRole() == metapb.PeerRole_Learner || (sid != s.id && !s.storeAlive(sid)) {
			continue
		}
		ids = append(ids, sid)
	}
	slices.Sort(ids)
	return max(slices.Index(ids, s.id), 0)
}

// checkFailovers runs on every tick: followers whose turn came campaign if
// their plan still holds.
func (s *Store) checkFailovers() {
	keep := s.failovers[:0]
	for _, p := range s.failovers {
		if p.failover.term == 0 || p.destroyed {
			continue
		}
		if s.ticks < p.failover.at {
			keep = append(keep, p)
			continue
		}
		s.fastCampaign(p)
	}
	clear(s.failovers[len(keep):])
	s.failovers = keep
}

// fastCampaign starts p's forced election if its plan still holds: a
// follower in the plan's term whose leader is still the gone peer.
func (s *Store) fastCampaign(p *peer) {
	plan := p.failover
	p.failover = failoverPlan{}
	st := p.rn.BasicStatus()
	if st.RaftState != raft.StateFollower || st.GetTerm() != plan.term || st.Lead != plan.lead || !s.storeGoneStill(plan.store) {
		return
	}
	s.wake(p)
	if p.hibernated {
		return // held for another store's leader: not this plan's case
	}
	// raft starts a forced election on MsgTimeoutNow from its leader.
	if err := p.rn.Step(&raftpb.Message{Type: raftpb.MessageType_MsgTimeoutNow.Enum(), From: new(plan.lead), To: new(p.meta.GetId()), Term: new(plan.term)}); err != nil {
		s.log.Warn("fast campaign refused by raft", "region", p.region.GetId(), "err", err)
		return
	}
	fastCampaigns.Inc()
	s.touch(p)
}

// isForcedVote reports whether m asks for a vote past CheckQuorum (a
// leader transfer's or a fast failover's campaign).
func isForcedVote(m *raftpb.Message) bool {
	return m.GetType() == raftpb.MessageType_MsgVote && string(m.GetContext()) == campaignTransfer
}

// campaignTransfer is etcd raft's context of a forced vote request.
const campaignTransfer = "CampaignTransfer"

// afterForcedVote runs after p stepped a forced vote request m: if p
// refused it (the candidate's log is behind p's) while p's leader before
// it is on a store found gone (now, or at the next refusal: the request
// may arrive before this store's own dial failed), p campaigns then
// instead of after an election timeout. That is an ordinary campaign
// (pre-vote, no force): raft's own rules keep every live lease, since a
// voter that follows a live leader refuses it.
func (s *Store) afterForcedVote(p *peer, before *raft.BasicStatus, m *raftpb.Message) {
	if s.cfg.DisableFastFailover || before.Lead == 0 {
		return
	}
	st := p.rn.BasicStatus()
	if st.RaftState != raft.StateFollower || st.GetTerm() != m.GetTerm() || st.GetVote() == m.GetFrom() {
		return
	}
	store := p.storeOf(before.Lead)
	p.failover = failoverPlan{store: store, term: st.GetTerm(), ordinary: true}
	if s.storeGoneStill(store) {
		s.ordinaryCampaign(p)
	}
}

// ordinaryCampaign carries out p's ordinary plan if p still knows no
// leader in its term.
func (s *Store) ordinaryCampaign(p *peer) {
	plan := p.failover
	p.failover = failoverPlan{}
	st := p.rn.BasicStatus()
	if st.RaftState != raft.StateFollower || st.GetTerm() != plan.term || st.Lead != 0 {
		return
	}
	if err := p.rn.Campaign(); err != nil {
		s.log.Warn("campaign after a refused forced vote", "region", p.region.GetId(), "err", err)
		return
	}
	fastCampaigns.Inc()
	s.touch(p)
}

// storeGoneStill reports whether store id has not been heard from since
// it was found gone.
func (s *Store) storeGoneStill(id uint64) bool {
	l := s.live[id]
	return l != nil && l.down
}
