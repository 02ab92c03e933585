package raftstore

import (
	"slices"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"

	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/raft_serverpb"
)

// Work proportional to active regions (issue 7; TiKV's hibernate regions,
// CockroachDB's quiescence and store liveness).
//
// Active set. The Ready loop polls only the peers touched since its last
// iteration (Store.active, in the order they were touched): a raft message
// stepped, a proposal, a read, a tick, a PD step, a snapshot status, a
// creation, or a Ready left after Advance. Every call that can give a raw
// node a Ready goes through touch (or wake); a peer outside the set has no
// Ready, so the loop never scans all peers for one.
//
// Hibernation. Only the peers in Store.awake are ticked. A leader whose
// region stayed idle for HibernateTicks ticks (leaderIdle: nothing
// proposed, read, parked or in flight, no leader transfer or conf change,
// every peer's Match at the leader's last index, all committed and
// applied, every peer's store alive, the store not draining) proposes a
// last log GC if one is due, sends a Hibernate message to every other peer
// and stops ticking; it keeps its tick-based lease until that runs out.
// A read served under a lease is no work: a region only read hibernates
// too. A follower that gets it from its leader in its current term, with
// the same last index, last term and commit index, stops ticking too, and
// is held and acks when its store supports the leader's (support.go): once
// a quorum acked, the hibernated leader serves reads under that support
// without waking. A follower not in step keeps ticking
// and eventually campaigns (PreVote), which wakes the others. Any raft
// message wakes a hibernated peer (not a held follower: support.go), except
// a heartbeat or append response reaching a hibernated leader that leaves
// it with nothing to do; so do a proposal, a read the leader cannot serve
// under either lease, a PD step or a leader transfer. A woken leader sends
// heartbeats at once (a ReadIndex round, which also renews its lease).
//
// Safety. Hibernation only stops ticks: a non-ticking follower refuses
// (pre-)votes for longer, never shorter, so the lease invariant
// (lease.go) holds, also for a hibernated leader's tick-based lease:
// the followers that acknowledged it refuse votes for an election timeout
// of their own ticks, and a hibernated follower does not count them. The
// support lease (support.go has its argument) takes over once the
// followers acked; raft's messages and their handling are unchanged.
//
// Dead leaders. A hibernated follower does not notice its leader's death
// by election timeout. Every store sends a StoreLiveness message to each
// store it exchanges raft messages with every HeartbeatTicks ticks (one
// message per store, not per region; its answers are the support of
// support.go); a store not heard from for two election timeouts, or
// reported unreachable by the transport (but never within the support
// window since it was last heard from), is down (a new support epoch):
// every hibernated follower whose leader is there wakes (and campaigns
// after its election timeout), and every hibernated leader with a peer
// there wakes (it reports the down peer to PD and stays awake while that
// store is down). A store heard from again before the woken followers
// campaigned (it only stalled) puts them back to sleep (storeUp).
//
// Per-region periodic work. Region heartbeats to PD go from awake leaders
// every RegionHeartbeatInterval and when something changed (leadership,
// split, hibernation); a hibernated leader sends one every
// HibernatedHeartbeatInterval, spread over that period. The split checker
// looks only at regions written (or newly led) since its last round, log
// GC only at awake leaders (and at a leader about to hibernate).

// storeLive is what a store knows of another store's liveness.
type storeLive struct {
	heardTick uint64    // s.ticks when a message from it last arrived
	heardAt   time.Time // s.now() then
	down      bool      // not heard from for liveTimeout ticks, or unreachable
	// woken are the hibernated followers storeDown woke; if the store is
	// heard from again before they campaigned, they hibernate again
	// (storeUp): a store that stalled briefly causes no elections.
	woken []*peer
	// unreachable: the transport lost a message to it; it is down once
	// the support window passed too (support.go).
	unreachable bool
	// Support (support.go): epoch is this store's support epoch for it
	// (bumped when it is found down), sent the StoreLiveness messages to it
	// not answered yet, support the grant it gives this store.
	epoch   uint64
	sent    []livenessPing
	support supportGrant
}

// liveTimeoutElections is how many election timeouts a store may stay
// silent before it is down: a loop that stalls for one election timeout
// (a large split applying, a loaded host) must not wake every follower of
// its regions.
const liveTimeoutElections = 2

// touch puts p in the set the next loop iteration polls.
func (s *Store) touch(p *peer) {
	if !p.inActive {
		p.inActive = true
		s.active = append(s.active, p)
	}
}

// wake makes p tick again if it hibernated, and touches it. A woken leader
// renews its lease with a ReadIndex round, whose heartbeats wake its
// followers. Raft messages wake a peer without making it busy: an awake
// leader's heartbeat responses do not keep it from hibernating.
func (s *Store) wake(p *peer) {
	s.touch(p)
	if !p.hibernated {
		return
	}
	if !p.isLeader && s.held(p) {
		return // only its leader, or its store found down, wakes it (support.go)
	}
	p.hibernated = false
	hibernatedPeers.Dec()
	if p.isLeader {
		wakes.WithLabelValues("leader").Inc()
	} else {
		wakes.WithLabelValues("follower").Inc()
	}
	if !p.inAwake {
		p.inAwake = true
		s.awake = append(s.awake, p)
	}
	if p.isLeader {
		// The hibernated lease ends here, before anything the woken
		// leader does (support.go).
		p.lease.unpublish()
		p.supportAcks = p.supportAcks[:0]
		p.renewLease = true
		// The followers' activity was not sampled while asleep: start
		// afresh rather than report them down (fillPeerHealth), and
		// trust raft's RecentActive again only after a CheckQuorum
		// (an election timeout of ticks) cleared what it kept from
		// before (quorumAfterRemoval).
		p.peerActive = nil
		p.activeFrom = s.ticks + uint64(s.cfg.ElectionTicks) + 1
	}
}

// busy is wake for work asked of p (a proposal, a read, a PD step, a
// transfer): a leader's idle count starts over.
func (s *Store) busy(p *peer) {
	p.idleTicks = 0
	s.wake(p)
}

// addPeer registers a new peer with the loop: awake, touched, its stores
// tracked for liveness.
func (s *Store) addPeer(p *peer) {
	s.peers[p.region.GetId()] = p
	s.delegates.Store(p.region.GetId(), p)
	p.appliedPub.Store(p.ps.apply.applied)
	p.inAwake = true
	s.awake = append(s.awake, p)
	s.touch(p)
	s.markSplitDirty(p)
	for _, pm := range p.region.GetPeers() {
		s.trackStore(pm.GetStoreId())
	}
}

// markSplitDirty queues p for the split checker's next round.
func (s *Store) markSplitDirty(p *peer) {
	if !p.splitDirty {
		p.splitDirty = true
		s.splitDirty = append(s.splitDirty, p)
	}
}

// hibernateEnabled reports whether idle groups hibernate.
func (s *Store) hibernateEnabled() bool { return s.cfg.HibernateTicks > 0 }

// leaderIdle reports whether leader p's region has nothing in flight (see
// the package comment above). Cheap enough for every tick.
func (s *Store) leaderIdle(p *peer) bool {
	if s.draining || p.uninitialized || p.removed || p.renewLease || p.hbDropped ||
		len(p.unassigned)+len(p.pending)+len(p.reads)+len(p.readBatches)+len(p.parked) > 0 {
		return false
	}
	st := p.rn.BasicStatus()
	last := p.ps.lastIndex
	if st.RaftState != raft.StateLeader || st.LeadTransferee != 0 || st.GetCommit() != last || p.ps.apply.applied != last || p.rn.HasReady() {
		return false
	}
	idle := true
	p.rn.WithProgress(func(id uint64, _ raft.ProgressType, pr tracker.Progress) {
		if id == p.meta.GetId() {
			return
		}
		if pr.Match != last || pr.State != tracker.StateReplicate || !s.storeAlive(p.storeOf(id)) {
			idle = false
		}
	})
	return idle
}

// maybeHibernate runs on every tick of an awake leader p, before raft's
// tick; it reports whether p hibernated (then it is not ticked).
func (s *Store) maybeHibernate(p *peer) bool {
	if !s.hibernateEnabled() || !p.isLeader {
		return false
	}
	if !s.leaderIdle(p) {
		p.idleTicks = 0
		return false
	}
	p.idleTicks++
	if p.idleTicks < s.cfg.HibernateTicks {
		return false
	}
	// A log GC that is due goes first (nothing would propose it while
	// asleep); the region is then busy until it applied everywhere.
	s.maybeCompactLog(p)
	if p.rn.HasReady() {
		p.idleTicks = 0
		return false
	}
	if cfg := p.rn.Status().Config; len(cfg.Voters[1]) > 0 || cfg.AutoLeave {
		return false // joint configuration: raft leaves it on its own
	}
	st := p.rn.BasicStatus()
	p.hibernated, p.idleTicks = true, 0
	// The tick-based lease stays: until the followers' acks give the
	// support lease, reads are served under it (support.go). Only acks of
	// this round count.
	p.supportAcks = p.supportAcks[:0]
	p.hibRound++
	hibernatedPeers.Inc()
	x := &raft_serverpb.ExtraMessage{Type: raft_serverpb.ExtraMessageType_Hibernate, Term: st.GetTerm(),
		Index: p.ps.lastIndex, LogTerm: p.ps.lastTerm, Round: p.hibRound}
	for _, pm := range p.region.GetPeers() {
		if pm.GetId() == p.meta.GetId() {
			continue
		}
		s.sendExtra(pm.GetStoreId(), &raft_serverpb.RaftMessage{
			RegionId: p.region.GetId(), FromPeer: p.meta, ToPeer: pm, RegionEpoch: p.region.GetRegionEpoch(), Extra: x,
		})
	}
	s.queueRegionHeartbeat(p) // PD gets the region's last figures before the long silence
	if !p.inSleepers {
		p.inSleepers = true
		s.sleepers = append(s.sleepers, p)
	}
	return true
}

// handleHibernate runs when a follower gets its leader's Hibernate message.
func (s *Store) handleHibernate(rm *raft_serverpb.RaftMessage) {
	p := s.peers[rm.GetRegionId()]
	if p == nil || p.hibernated || !s.hibernateEnabled() || p.meta.GetId() != rm.GetToPeer().GetId() || p.uninitialized || p.removed {
		return
	}
	x := rm.GetExtra()
	st := p.rn.BasicStatus()
	if st.RaftState != raft.StateFollower || st.GetTerm() != x.GetTerm() || st.Lead != rm.GetFromPeer().GetId() ||
		p.ps.lastIndex != x.GetIndex() || p.ps.lastTerm != x.GetLogTerm() || st.GetCommit() != x.GetIndex() ||
		len(p.unassigned)+len(p.pending)+len(p.reads)+len(p.readBatches)+len(p.parked) > 0 {
		return // not in step with the leader: keep ticking (an election wakes everyone)
	}
	p.hibernated, p.idleTicks, p.hibTerm = true, 0, st.GetTerm()
	hibernatedPeers.Inc()
	s.touch(p) // apply may still be catching up with the commit index
	s.holdFollower(p, rm.GetFromPeer().GetId(), rm.GetFromPeer().GetStoreId(), x)
}

// wakesOnMessage reports whether message m wakes hibernated peer p. A
// hibernated leader keeps sleeping on a response to its last heartbeat or
// append (it may arrive after it fell asleep) unless stepping it left
// raft something to do.
func wakesOnMessage(p *peer, m *raftpb.Message) bool {
	if !p.isLeader || m.GetTerm() != p.rn.BasicStatus().GetTerm() || p.rn.HasReady() {
		return true
	}
	switch m.GetType() {
	case raftpb.MessageType_MsgHeartbeatResp:
		return false
	case raftpb.MessageType_MsgAppResp:
		return m.GetReject()
	}
	return true
}

// trackStore starts tracking the liveness of store id (another store
// hosting a peer of a local region).
func (s *Store) trackStore(id uint64) {
	if id == 0 || id == s.id {
		return
	}
	if _, ok := s.live[id]; ok {
		return
	}
	if s.live == nil {
		s.live = map[uint64]*storeLive{}
	}
	s.live[id] = &storeLive{heardTick: s.ticks, heardAt: s.now(), epoch: s.supportEpochBase}
	i, _ := slices.BinarySearch(s.liveIDs, id)
	s.liveIDs = slices.Insert(s.liveIDs, i, id)
}

// heard records that a message from store id arrived.
func (s *Store) heard(id uint64) {
	l := s.live[id]
	if l == nil {
		s.trackStore(id)
		return
	}
	l.heardTick, l.heardAt, l.unreachable = s.ticks, s.now(), false
	if l.down {
		s.storeUp(id, l)
	}
}

// storeUp runs when store id, found down, is heard from again: the
// followers its silence woke that are still following the same leader in
// the same term, in step with it, hibernate again.
func (s *Store) storeUp(id uint64, l *storeLive) {
	l.down = false
	again := 0
	for i, p := range l.woken {
		l.woken[i] = nil
		if p.destroyed || p.hibernated || p.isLeader || p.storeOf(p.leaderID) != id || !s.inStepWithLeader(p) {
			continue
		}
		p.hibernated, p.idleTicks = true, 0
		hibernatedPeers.Inc()
		again++
	}
	l.woken = l.woken[:0]
	s.log.Info("store up", "up_store", id, "rehibernated_peers", again)
}

// inStepWithLeader reports whether follower p still follows leader
// p.leaderID with nothing in flight and its log committed (it may stop
// ticking: the leader sends nothing while it hibernates).
func (s *Store) inStepWithLeader(p *peer) bool {
	st := p.rn.BasicStatus()
	return st.RaftState == raft.StateFollower && st.Lead == p.leaderID && st.Lead != 0 &&
		p.hibTerm == st.GetTerm() && st.GetCommit() == p.ps.lastIndex &&
		len(p.unassigned)+len(p.pending)+len(p.reads)+len(p.readBatches)+len(p.parked) == 0
}

// storeAlive reports whether store id (0: unknown, this store) is not
// known to be down.
func (s *Store) storeAlive(id uint64) bool {
	l := s.live[id]
	return l == nil || !l.down
}

// checkLiveness runs on every tick: it sends StoreLiveness messages every
// HeartbeatTicks ticks and declares stores not heard from for an election
// timeout down.
func (s *Store) checkLiveness() {
	send := s.ticks%uint64(max(s.cfg.HeartbeatTicks, 1)) == 0
	now := s.now()
	for _, id := range s.liveIDs {
		l := s.live[id]
		if send {
			s.livenessSeq++
			if len(l.sent) >= maxPendingPings {
				l.sent = slices.Delete(l.sent, 0, 1)
			}
			l.sent = append(l.sent, livenessPing{seq: s.livenessSeq, sentAt: now})
			s.sendExtra(id, &raft_serverpb.RaftMessage{
				FromPeer: &metapb.Peer{StoreId: s.id}, ToPeer: &metapb.Peer{StoreId: id},
				Extra: &raft_serverpb.ExtraMessage{Type: raft_serverpb.ExtraMessageType_StoreLiveness, Index: s.livenessSeq,
					SafeTs: s.safeTSOut[id]},
			})
			delete(s.safeTSOut, id)
		}
		// Never before the support window passed (support.go): until then
		// this store's held followers of its leaders must stay held.
		if l.down || now.Sub(l.heardAt) < s.supportWindow() {
			continue
		}
		switch {
		case s.ticks-l.heardTick > uint64(liveTimeoutElections*s.cfg.ElectionTicks):
			s.storeDown(id, "not heard from for two election timeouts")
		case l.unreachable:
			s.storeDown(id, "unreachable")
		}
	}
}

// storeUnreachable notes that a message to store id was lost: it is down
// now if the support window since it was last heard from passed, else at
// the first tick after (checkLiveness).
func (s *Store) storeUnreachable(id uint64) {
	l := s.live[id]
	if l == nil || l.down {
		return
	}
	l.unreachable = true
	if s.now().Sub(l.heardAt) >= s.supportWindow() {
		s.storeDown(id, "unreachable")
	}
}

// storeDown marks store id down and wakes the hibernated peers that
// depend on it: followers whose leader is there, leaders with a peer there.
func (s *Store) storeDown(id uint64, why string) {
	l := s.live[id]
	if l == nil || l.down {
		return
	}
	l.down = true
	l.epoch++ // support for it ends: followers held for it are released (support.go)
	l.unreachable = false
	storesDown.Inc()
	woken := 0
	for _, r := range s.meta.sorted() { // rare: key order keeps the loop deterministic
		p := s.peers[r.GetId()]
		if p == nil || !p.hibernated {
			continue
		}
		switch {
		case p.isLeader && p.peerOnStore(id) != nil:
			s.wake(p)
			woken++
		case !p.isLeader && p.storeOf(p.leaderID) == id:
			s.wake(p)
			l.woken = append(l.woken, p)
			woken++
		}
	}
	s.log.Info("store down", "down_store", id, "reason", why, "woken_peers", woken)
}

// sendExtra queues a raftstore message for store to; flushExtra sends the
// iteration's messages, one batch per store.
func (s *Store) sendExtra(to uint64, m *raft_serverpb.RaftMessage) {
	if s.extraOut == nil {
		s.extraOut = map[uint64]*raft_serverpb.BatchRaftMessage{}
	}
	b := s.extraOut[to]
	if b == nil {
		b = &raft_serverpb.BatchRaftMessage{}
		s.extraOut[to] = b
		s.extraTo = append(s.extraTo, to)
	}
	b.Msgs = append(b.Msgs, m)
}

func (s *Store) flushExtra() {
	if len(s.extraTo) == 0 {
		return
	}
	filter := s.raftFilter.Load()
	for _, to := range s.extraTo {
		b := s.extraOut[to]
		delete(s.extraOut, to)
		if filter != nil && (*filter)(to) {
			continue
		}
		if !s.sendBatch(to, b) {
			raftMessagesDropped.Add(float64(len(b.Msgs)))
			s.storeUnreachable(to)
		}
	}
	s.extraTo = s.extraTo[:0]
}

// heartbeatSleepers sends the region heartbeats of hibernated leaders:
// each is visited once per HibernatedHeartbeatInterval, a share of them
// per tick, and a round starts no sooner than one interval after the last
// one started (with fewer sleepers than ticks in an interval, a round
// ends early and the next waits).
func (s *Store) heartbeatSleepers() {
	n := len(s.sleepers)
	if n == 0 {
		return
	}
	period := max(int(s.cfg.HibernatedHeartbeatInterval/s.cfg.RaftTick), 1)
	if s.sleepCursor == 0 {
		if s.ticks < s.sleepRoundAt {
			return
		}
		s.sleepRoundAt = s.ticks + uint64(period)
	}
	k := (n + period - 1) / period
	for ; k > 0 && s.sleepCursor < n; k-- {
		p := s.sleepers[s.sleepCursor]
		s.sleepCursor++
		if p == nil {
			continue
		}
		if p.destroyed || !p.hibernated || !p.isLeader {
			p.inSleepers = false
			s.sleepers[s.sleepCursor-1] = nil
			continue
		}
		s.queueRegionHeartbeat(p)
	}
	if s.sleepCursor >= n {
		s.sleepers = slices.DeleteFunc(s.sleepers, func(p *peer) bool { return p == nil })
		s.sleepCursor = 0
	}
}
