package raftstore

import (
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/raft_serverpb"
)

// Leases of hibernated leaders through store liveness support (issue 7;
// CockroachDB's store liveness "support", TiKV's hibernated regions).
//
// A hibernated leader sends no heartbeats, so its tick-based lease
// (lease.go) lapses and the first read of an idle region would pay a
// ReadIndex round and wake the group. Instead, while a leader hibernates it
// serves reads under the tick-based lease it had when it fell asleep
// until that runs out, and under the support its store gets from the
// stores of its followers once they acked (the acks take a round trip; a
// read in between must not wake the group):
//
// Support. Store A numbers the StoreLiveness messages it sends every
// HeartbeatTicks to each store B and remembers when it sent each. B answers
// each with StoreLivenessResp carrying its support epoch for A. B promises:
// it does not withdraw support for A (declare A down, which bumps the epoch)
// until supportWindow = (ElectionTicks-2) ticks of B's clock passed since it
// last heard from A. So when A gets the answer to a message it sent at
// local time t, B supports A in that epoch until at least t + maxLease (the
// lease length, 10 % below that window for clock-rate drift as in
// leaseFor): the support grant A keeps per store (storeLive.support).
// Like the tick-based lease, this assumes every store runs with the same
// RaftTick and ElectionTicks.
//
// Hold. A follower on B that hibernates with its leader on A, having heard
// from it within the last ElectionTicks/2 ticks (so raft's election
// elapsed time is well below the timeout and CheckQuorum makes it ignore
// (pre-)votes) while B supports A, is held: it is not ticked (so it never
// campaigns, and keeps ignoring votes) and no request or message from
// another peer wakes it, until a message from its leader arrives (the
// leader woke up) or B's support epoch for A changes (B declared A down,
// which happens only after the window above). It tells the leader with a
// HibernateAck carrying the epoch and the round of the Hibernate message.
// A forced vote (a leader transfer, which only an awake leader starts) is
// still stepped by raft and then releases the hold (the term changed).
//
// Rounds. Each time a leader hibernates it starts a new round (peer
// hibRound), named in its Hibernate messages and echoed by the acks. The
// leader counts only acks of its current round: an ack of an earlier
// round comes from a follower that the wake-up ending that round may have
// released (the leader's heartbeats reached it after it acked; it is awake
// and free to vote now), even when the term and last index are the same
// (a region only read wakes and sleeps at the same index). An ack of the
// current round was sent after the follower got this round's Hibernate,
// which the leader sent after its last message of the awake period (one
// ordered stream per pair of stores), and no message of the leader's
// follows until it wakes, which ends the round: the follower is still
// held while the leader is in that round.
//
// Lease. A hibernated leader in term T (with the lease state of T: an
// entry of T committed, no transfer), in round r, may serve a read at now
// when, counting itself, a quorum of the region's voters are followers
// that acked round r of its hibernation in T with epoch e and whose
// store's grant is in epoch e and expires after now. Any new leader needs
// a vote from a quorum, which includes one of those: the leader itself
// never votes while it leads, and a held follower neither votes nor
// campaigns before its store's grant expires or the leader wakes. The
// hibernated leader has every entry committed and applied (it
// hibernates only then and wakes before it can take a write), so reads are
// served at once. Waking the leader (any proposal, raft message other than
// a stale response, PD step) withdraws this lease at once; the woken leader
// renews its tick lease with a ReadIndex round as before (until then it
// serves under what is left of it).
//
// A restarted store lost its holds: its peers drop votes for an election
// timeout and campaign no sooner than (ElectionTicks-2) ticks after they
// start (createPeer), past every grant made before the crash; and the new
// process answers in a new epoch (supportEpochBase), so its followers'
// old acks never count again. Unreachable reports make a store down only
// once the window passed as well.
//
// Rounds are not persisted: a restarted peer never leads again in a term it
// led (raft restarts it as a follower; leading takes an election, a new
// term), and acks name the term. A store that predates rounds acks with
// round 0, which never counts (its followers give no support lease; the
// leader serves under its tick lease and wakes, as before hibernated
// leases).
//
// Metrics: strata_raftstore_reads_total{path="hibernated_lease"|
// "local_hibernated_lease"}, strata_raftstore_hibernate_acks_total,
// strata_raftstore_hibernate_acks_stale_total (acks of another round).

// supportGrant is the support another store gives this one: epoch, and
// until when (this store's clock) it holds at least.
type supportGrant struct {
	epoch  uint64
	expiry time.Time
}

// livenessPing is a StoreLiveness message not yet answered.
type livenessPing struct {
	seq    uint64
	sentAt time.Time
}

// supportAck is a follower that acked its leader's hibernation: its peer
// and store, and the support epoch it is held in.
type supportAck struct {
	peer, store, epoch uint64
}

// maxPendingPings bounds the unanswered StoreLiveness messages kept per
// store (older ones are forgotten; their answers then renew nothing).
const maxPendingPings = 32

// supportWindow is how long this store keeps supporting a store it heard
// from (it declares it down no sooner): ElectionTicks-2 ticks, the same
// real-time bound a follower's election timeout has (leaseFor).
func (s *Store) supportWindow() time.Duration {
	return time.Duration(max(s.cfg.ElectionTicks-2, 0)) * s.cfg.RaftTick
}

// supportEnabled reports whether hibernated leaders may serve reads under
// store support (leases and hibernation both on).
func (s *Store) supportEnabled() bool { return s.maxLease > 0 && s.hibernateEnabled() }

// handleLivenessPing answers a StoreLiveness message from store rm's
// sender with this store's support epoch for it (heard() already noted it).
func (s *Store) handleLivenessPing(rm *raft_serverpb.RaftMessage) {
	from := rm.GetFromPeer().GetStoreId()
	s.receiveSafeTS(from, rm.GetExtra().GetSafeTs())
	l := s.live[from]
	if l == nil || rm.GetExtra().GetIndex() == 0 {
		return
	}
	s.sendExtra(from, &raft_serverpb.RaftMessage{
		FromPeer: rm.GetToPeer(), ToPeer: rm.GetFromPeer(),
		Extra: &raft_serverpb.ExtraMessage{Type: raft_serverpb.ExtraMessageType_StoreLivenessResp,
			Index: rm.GetExtra().GetIndex(), Epoch: l.epoch},
	})
}

// handleLivenessResp records the support a store's answer grants: from
// when the answered message was sent, for maxLease.
func (s *Store) handleLivenessResp(rm *raft_serverpb.RaftMessage) {
	l := s.live[rm.GetFromPeer().GetStoreId()]
	if l == nil {
		return
	}
	seq, epoch := rm.GetExtra().GetIndex(), rm.GetExtra().GetEpoch()
	i := slices.IndexFunc(l.sent, func(p livenessPing) bool { return p.seq == seq })
	if i < 0 {
		return
	}
	g := supportGrant{epoch: epoch, expiry: l.sent[i].sentAt.Add(s.maxLease)}
	l.sent = slices.Delete(l.sent, 0, i+1)
	if g.epoch == l.support.epoch && !g.expiry.After(l.support.expiry) {
		return
	}
	l.support = g
	s.publishSupport()
}

// publishSupport copies every store's grant for local readers.
func (s *Store) publishSupport() {
	m := make(map[uint64]supportGrant, len(s.live))
	for id, l := range s.live {
		if l.support.epoch != 0 {
			m[id] = l.support
		}
	}
	s.supportPub.Store(&m)
}

// grants returns the published support grants (never nil).
func (s *Store) grants() map[uint64]supportGrant {
	if m := s.supportPub.Load(); m != nil {
		return *m
	}
	return nil
}

// holdFollower runs when follower p hibernated with its leader (peer
// leader on store leaderStore) on Hibernate message x: if it heard from the
// leader recently and this store supports the leader's store, p is held and
// the leader gets a HibernateAck of x's term, index and round.
func (s *Store) holdFollower(p *peer, leader, leaderStore uint64, x *raft_serverpb.ExtraMessage) {
	l := s.live[leaderStore]
	if !s.supportEnabled() || l == nil || l.down || s.ticks-p.leaderMsgTick >= uint64(s.cfg.ElectionTicks/2) {
		return
	}
	p.hold, p.holdStore, p.holdEpoch, p.holdLeader = true, leaderStore, l.epoch, leader
	s.sendExtra(leaderStore, &raft_serverpb.RaftMessage{
		RegionId: p.region.GetId(), FromPeer: p.meta, ToPeer: p.peerMeta(leader), RegionEpoch: p.region.GetRegionEpoch(),
		Extra: &raft_serverpb.ExtraMessage{Type: raft_serverpb.ExtraMessageType_HibernateAck, Term: x.GetTerm(), Index: x.GetIndex(),
			Round: x.GetRound(), Epoch: l.epoch},
	})
}

// held reports whether follower p is still held (see above); a hold that
// ended is cleared.
func (s *Store) held(p *peer) bool {
	if !p.hold {
		return false
	}
	l := s.live[p.holdStore]
	if p.isLeader || l == nil || l.down || l.epoch != p.holdEpoch || p.rn.BasicStatus().GetTerm() != p.hibTerm {
		p.hold = false
	}
	return p.hold
}

// handleHibernateAck records a follower's ack of its leader's current
// hibernation round and publishes the hibernated lease once a quorum acked.
// An ack of another round is refused: the wake-up that ended its round may
// have released that follower (see Lease above).
func (s *Store) handleHibernateAck(rm *raft_serverpb.RaftMessage) {
	p := s.peers[rm.GetRegionId()]
	x := rm.GetExtra()
	if p == nil || !p.isLeader || !p.hibernated || p.meta.GetId() != rm.GetToPeer().GetId() ||
		p.rn.BasicStatus().GetTerm() != x.GetTerm() || p.ps.lastIndex != x.GetIndex() {
		return
	}
	if x.GetRound() != p.hibRound {
		hibernateAcksStale.Inc()
		s.log.Debug("stale hibernate ack", "region", p.region.GetId(), "from_peer", rm.GetFromPeer().GetId(),
			"round", x.GetRound(), "current_round", p.hibRound)
		return
	}
	hibernateAcks.Inc()
	a := supportAck{peer: rm.GetFromPeer().GetId(), store: rm.GetFromPeer().GetStoreId(), epoch: x.GetEpoch()}
	if i := slices.IndexFunc(p.supportAcks, func(b supportAck) bool { return b.peer == a.peer }); i >= 0 {
		p.supportAcks[i] = a
	} else {
		p.supportAcks = append(p.supportAcks, a)
	}
	s.publishHibernatedLease(p)
}

// publishHibernatedLease publishes hibernated leader p's support lease to
// local readers (the acks and the quorum they must reach; the grants are
// looked up at read time).
func (s *Store) publishHibernatedLease(p *peer) {
	l := &p.lease
	if l.pub == nil || l.term == 0 || !l.committed || l.transferred || l.term != p.rn.BasicStatus().GetTerm() {
		return
	}
	need, acks := p.supportQuorum()
	if need <= 0 || len(acks) < need {
		return
	}
	p.delegate.Store(&readDelegate{region: proto.Clone(p.region).(*metapb.Region), term: l.term, expiry: l.expiry, support: acks, need: need})
}

// supportQuorum returns how many acked voters (besides p) a quorum of
// raft's voters needs and the acks of voters (0, nil in a joint
// configuration or when p is no voter).
func (p *peer) supportQuorum() (int, []supportAck) {
	cfg := p.rn.Status().Config
	if len(cfg.Voters[1]) > 0 {
		return 0, nil
	}
	voters := cfg.Voters[0]
	if _, ok := voters[p.meta.GetId()]; !ok {
		return 0, nil
	}
	var acks []supportAck
	for _, a := range p.supportAcks {
		if _, ok := voters[a.peer]; ok {
			acks = append(acks, a)
		}
	}
	return len(voters)/2 + 1 - 1, acks
}

// supportExpiry is when the hibernated lease of acks (need of them) ends
// under grants: the need-th latest expiry among acks whose store's grant
// is in the acked epoch (zero if fewer).
func supportExpiry(acks []supportAck, need int, grants map[uint64]supportGrant) time.Time {
	var buf [4]time.Time // no allocation on the read path for up to 5 voters
	exp := buf[:0]
	for _, a := range acks {
		if g, ok := grants[a.store]; ok && g.epoch == a.epoch {
			exp = append(exp, g.expiry)
		}
	}
	if need <= 0 || len(exp) < need {
		return time.Time{}
	}
	slices.SortFunc(exp, func(a, b time.Time) int { return b.Compare(a) })
	return exp[need-1]
}

// supportLease returns hibernated leader p's published support lease when
// it is valid at now, else nil.
func (s *Store) supportLease(p *peer, now time.Time) *readDelegate {
	if !p.hibernated || !s.supportEnabled() {
		return nil
	}
	if d := p.delegate.Load(); d != nil && d.support != nil && now.Before(supportExpiry(d.support, d.need, s.grants())) {
		return d
	}
	return nil
}

// hibernatedLeaseRead serves rr on hibernated leader p when its support
// lease, or the tick-based lease it hibernated with, is valid now, without
// waking it (the tick-based lease is not renewed: it only bridges the time
// until the followers' acks arrive).
func (s *Store) hibernatedLeaseRead(p *peer, rr *readRequest) bool {
	if !s.supportEnabled() || !p.hibernated || !p.isLeader || !epochMatches(rr.rctx.GetRegionEpoch(), p.region) {
		return false
	}
	now := s.now()
	if d := s.supportLease(p, now); d != nil {
		readsTotal.WithLabelValues("hibernated_lease").Inc()
		rr.respond(readResult{region: d.region})
		return true
	}
	if !p.tickLeaseHeld(now) {
		return false
	}
	readsTotal.WithLabelValues("lease").Inc()
	rr.respond(readResult{region: proto.Clone(p.region).(*metapb.Region)})
	return true
}
