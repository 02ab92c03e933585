package raftstore

import (
	"bytes"
	"cmp"
	"errors"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/failpoint"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/raft_serverpb"
)

type peerReady struct {
	p  *peer
	rd raft.Ready
}

// run is the store-wide Ready loop.
func (s *Store) run() {
	defer s.wg.Done()
	defer close(s.done)
	ticker := time.NewTicker(s.cfg.RaftTick)
	defer ticker.Stop()
	again := false
	for {
		tick := false
		if again {
			select {
			case <-s.ctx.Done():
				s.shutdown()
				return
			case <-ticker.C:
				tick = true
			default:
			}
		} else {
			select {
			case <-s.ctx.Done():
				s.shutdown()
				return
			case <-s.inbox.signal:
			case <-ticker.C:
				tick = true
			}
		}
		again = s.iterate(tick)
		if len(s.drainWaiters) > 0 && s.drained() {
			for _, w := range s.drainWaiters {
				close(w)
			}
			s.drainWaiters = nil
			s.log.Info("leaders transferred away")
		}
	}
}

// shutdown answers everything the loop holds. Writes that were never
// proposed get a retryable region error; proposed ones ErrStopped (their
// outcome is unknown: the entry may still commit elsewhere).
func (s *Store) shutdown() {
	for _, p := range s.peers {
		p.lease.unpublish() // reads go to the closed inbox: ErrStopped
	}
	m := s.inbox.close()
	for _, pr := range m.proposals {
		pr.regionError(errStopping(pr.regionID()), "stopping")
	}
	for _, r := range m.reads {
		r.respond(readResult{err: ErrStopped})
	}
	for _, d := range m.drains {
		close(d) // nothing leads here any more
	}
	for _, d := range s.drainWaiters {
		close(d)
	}
	s.drainWaiters = nil
	for _, p := range s.peers {
		for _, pr := range p.parked {
			pr.regionError(errNotLeader(p.region.GetId(), p.leaderHint()), "stopping")
		}
		for _, pr := range p.unassigned {
			pr.respond(nil, errStoppedUndetermined, "stopped")
		}
		for _, pr := range p.pending {
			pr.respond(nil, errStoppedUndetermined, "stopped")
		}
		p.parked, p.unassigned, p.pending = nil, nil, nil
		p.failReads(nil, ErrStopped)
	}
	s.nParked = 0
}

// loopPhases times one loop iteration's phases for the stall warning.
type loopPhases struct {
	start, last time.Time
	n           int
	names       [12]string
	took        [12]time.Duration
}

func (lp *loopPhases) begin(now time.Time) { *lp = loopPhases{start: now, last: now} }

// mark ends the phase called name.
func (lp *loopPhases) mark(name string) {
	if lp.n == len(lp.names) {
		return
	}
	now := time.Now()
	lp.names[lp.n], lp.took[lp.n] = name, now.Sub(lp.last)
	lp.last, lp.n = now, lp.n+1
}

// endIteration records the iteration's duration and warns when it lasted
// an election timeout or more: this store then sent nothing, so the other
// stores may have called it down and elected new leaders for its regions
// (the in-memory pessimistic locks of those leaders are lost).
func (s *Store) endIteration() {
	d := time.Since(s.phases.start)
	loopIterationSeconds.Observe(d.Seconds())
	if s.cfg.manual || d < s.electionTimeout() {
		return
	}
	s.phases.mark("rest")
	attrs := make([]any, 0, 2*s.phases.n+2)
	attrs = append(attrs, "took", d)
	for i := range s.phases.n {
		attrs = append(attrs, s.phases.names[i], s.phases.took[i])
	}
	s.log.Warn("raftstore: a loop iteration took an election timeout or more; peers may have elected new leaders meanwhile (check disk fsync latency and CPU starvation)", attrs...)
}

// iterate runs one loop iteration and reports whether some peer still has
// a Ready (so the loop must run again without waiting).
func (s *Store) iterate(tick bool) bool {
	s.phases.begin(time.Now())
	defer s.endIteration()
	s.iter++
	s.sends = sendBudget{on: true, left: s.cfg.sendBytesPerIteration}
	if tick && !s.ticksPaused.Load() {
		s.tick()
	}
	s.phases.mark("tick")
	m := s.inbox.take()
	for _, r := range m.creates {
		if _, ok := s.peers[r.GetId()]; ok {
			continue
		}
		if err := s.createPeer(r, false); err != nil {
			s.log.Error("create peer", "region", r.GetId(), "err", err)
		}
	}
	for _, rm := range m.raft {
		s.heard(rm.GetFromPeer().GetStoreId())
		s.stepRaftMessage(rm)
	}
	s.phases.mark("step")
	s.stepReceivedSnapshots(m.snaps)
	for _, r := range m.ingested {
		s.installDone(r.p, r.inst, r.err)
	}
	for _, st := range m.snapStatus {
		if p := s.peers[st.regionID]; p != nil {
			status := raft.SnapshotFailure
			if st.ok {
				status = raft.SnapshotFinish
				// Do not keep the files: a later request builds a
				// fresher one.
				if g := p.ps.snap; g != nil && g.isDone() {
					p.ps.dropSnap()
				}
			}
			p.rn.ReportSnapshot(st.peerID, status)
			s.wake(p)
		}
	}
	for _, st := range m.pdSteps {
		s.execPDStep(st)
	}
	for _, id := range m.awaken {
		if p := s.peers[id]; p != nil && p.isLeader {
			s.queueRegionHeartbeat(p) // PD answers with the step (execPDStep wakes it)
		}
	}
	for _, id := range m.gone {
		s.storeGone(id)
	}
	for _, u := range m.unreachable {
		if u.regionID == 0 {
			s.storeUnreachable(u.storeID) // a StoreLiveness message was lost
			continue
		}
		if p := s.peers[u.regionID]; p != nil {
			p.rn.ReportUnreachable(u.peerID)
			s.touch(p)
		}
	}
	if len(m.drains) > 0 {
		if !s.draining {
			s.log.Info("transferring leaders away", "regions", len(s.peers))
		}
		s.draining = true
		s.drainWaiters = append(s.drainWaiters, m.drains...)
	}
	if s.draining {
		s.transferLeaders()
	}
	if s.nParked > 0 {
		s.unparkAborted()
	}
	for _, pr := range m.proposals {
		s.propose(pr)
	}
	for _, rr := range m.reads {
		s.queueRead(rr)
	}
	if m.resolveTS != 0 {
		s.resolveRegions(m.resolveTS)
	}
	s.flushExtra()
	s.sends.on = false
	if s.sends.left == 0 {
		sendBudgetSpent.Inc()
	}
	s.phases.mark("inbox")

	// Only the peers touched since the last iteration can have reads to
	// issue or a Ready (hibernate.go); whatever touches a peer from here on
	// is for the next iteration.
	polling := s.active
	s.active, s.polling = s.polling[:0], nil
	defer func() {
		clear(polling)
		s.polling = polling[:0]
	}()
	activePeers.Observe(float64(len(polling)))
	for _, p := range polling {
		p.inActive = false
	}
	for _, p := range polling {
		if p.destroyed {
			continue
		}
		if len(p.reads) > 0 || (p.renewLease && p.isLeader && !p.readIndexInFlight()) {
			s.issueReadIndex(p)
		}
		p.renewLease = false
	}

	readies := s.readies[:0]
	for _, p := range polling {
		// A peer installing a snapshot neither applies nor sends until
		// its ingest finished (snapinstall.go).
		if !p.destroyed && !p.ps.installing() && p.rn.HasReady() {
			readies = append(readies, peerReady{p: p, rd: p.rn.Ready()})
		}
	}
	if len(readies) == 0 {
		return len(s.active) > 0
	}
	// In region order, not Go's random map order: what is sent, and so
	// what other stores step first, is then a function of the inputs
	// (the harness replays runs from a seed).
	slices.SortFunc(readies, func(a, b peerReady) int { return cmp.Compare(a.p.region.GetId(), b.p.region.GetId()) })
	s.phases.mark("collect")
	start := time.Now()
	readyRegions.Observe(float64(len(readies)))
	s.handleSoftState(readies)
	// A leader's appends go out before its own fsync (raft thesis 10.2.1):
	// the leader's disk write overlaps the followers' round trip. A leader
	// only counts itself for commit once persisted (raft self-acks after
	// Advance), and everything else waits for the fsync.
	s.sendMessages(readies, true)
	s.phases.mark("early_send")
	// Committed entries already in the local log (and not rewritten by
	// this Ready) are applied, and their writers answered, before this
	// Ready's new entries are fsynced: they are durable on a quorum, and
	// waiting for an fsync of unrelated entries would add its whole
	// duration to every write under load.
	s.apply(readies, true)
	s.phases.mark("apply_before_fsync")
	s.persist(readies)
	s.phases.mark("persist")
	s.sendMessages(readies, false)
	s.phases.mark("send")
	s.apply(readies, false)
	s.phases.mark("apply")
	for i := range readies {
		r := &readies[i]
		for _, rs := range r.rd.ReadStates {
			for _, b := range r.p.readBatches {
				if b.ctx != nil && bytes.Equal(b.ctx, rs.RequestCtx) {
					b.index = rs.Index
					// A quorum acknowledged a heartbeat sent after b.issued.
					r.p.lease.renew(b.term, b.issued)
					r.p.publishLease()
				}
			}
		}
		r.p.serveReads()
		r.p.serveApplyWaits()
		r.p.applySafeTS()
		r.p.rn.Advance(r.rd)
		if r.p.rn.HasReady() && !r.p.ps.installing() {
			s.touch(r.p)
		}
		readies[i] = peerReady{}
	}
	s.readies = readies[:0]
	s.destroyRemoved()
	readyLoopSeconds.Observe(time.Since(start).Seconds())
	s.newPeers = false // peers created by a split are touched (addPeer)
	return len(s.active) > 0
}

func (s *Store) tick() {
	hbTicks := int(s.cfg.RegionHeartbeatInterval / s.cfg.RaftTick)
	s.ticks++
	gc := false
	if s.cfg.LogGCInterval > 0 {
		gcTicks := max(uint64(s.cfg.LogGCInterval/s.cfg.RaftTick), 1)
		gc = s.ticks%gcTicks == 0
	}
	readTimeout := 4 * time.Duration(s.cfg.ElectionTicks) * s.cfg.RaftTick
	if hbTicks > 0 && s.ticks%uint64(hbTicks) == 0 {
		n, leaders := s.meta.counts()
		regionsGauge.WithLabelValues("peers").Set(float64(n))
		regionsGauge.WithLabelValues("leaders").Set(float64(leaders))
		s.expireOrphans(s.now())
	}
	if s.cfg.SplitCheckInterval > 0 && s.ticks%max(uint64(s.cfg.SplitCheckInterval/s.cfg.RaftTick), 1) == 0 {
		s.splitCandidates()
	}
	if len(s.failovers) > 0 {
		s.checkFailovers()
	}
	now := s.now()
	// Only awake peers tick (hibernate.go); a leader idle long enough
	// hibernates here instead. The slice is compacted in place, in order.
	// In manual mode (the harness) they tick in region order: a tick may
	// start an election, which draws its randomized timeout from one
	// process-wide source, so the order of the draws must be replayable.
	if s.cfg.manual {
		slices.SortFunc(s.awake, func(a, b *peer) int { return cmp.Compare(a.region.GetId(), b.region.GetId()) })
	}
	awake := s.awake[:0]
	for _, p := range s.awake {
		if p.destroyed || p.hibernated || s.maybeHibernate(p) {
			p.inAwake = false
			continue
		}
		awake = append(awake, p)
		p.rn.Tick()
		s.touch(p)
		if p.isLeader {
			s.samplePeerActivity(p, now)
			p.ticksSinceHeartbeat++
			if p.ticksSinceHeartbeat >= hbTicks {
				s.queueRegionHeartbeat(p)
			}
		}
		// Safety net: a ReadIndex that never completes (lost leadership
		// without noticing) is failed so its callers can retry.
		if len(p.readBatches) > 0 && now.Sub(p.readBatches[0].issued) > readTimeout {
			p.failReads(errStaleCommand(), nil)
		}
		if len(p.pending) > 0 {
			p.expireOverwritten(now, readTimeout)
		}
		if gc && p.isLeader {
			s.maybeCompactLog(p)
		}
	}
	clear(s.awake[len(awake):])
	s.awake = awake
	s.heartbeatSleepers()
	s.checkLiveness()
}

func (s *Store) stepRaftMessage(rm *raft_serverpb.RaftMessage) {
	switch rm.GetExtra().GetType() {
	case raft_serverpb.ExtraMessageType_Hibernate:
		s.handleHibernate(rm)
		return
	case raft_serverpb.ExtraMessageType_StoreLiveness:
		s.handleLivenessPing(rm) // heard() noted it
		return
	case raft_serverpb.ExtraMessageType_StoreLivenessResp:
		s.handleLivenessResp(rm)
		return
	case raft_serverpb.ExtraMessageType_HibernateAck:
		s.handleHibernateAck(rm)
		return
	}
	p := s.routeRaftMessage(rm) // confchange.go
	if p == nil {
		return
	}
	msg := &raftpb.Message{}
	if err := proto.Unmarshal(rm.GetMessage(), msg); err != nil {
		s.log.Warn("bad raft message", "region", rm.GetRegionId(), "err", err)
		return
	}
	s.stepMessage(p, rm, msg)
}

func (s *Store) stepMessage(p *peer, rm *raft_serverpb.RaftMessage, msg *raftpb.Message) {
	if t := msg.GetType(); (t == raftpb.MessageType_MsgVote || t == raftpb.MessageType_MsgPreVote) &&
		p.mayHaveAcked && s.now().Sub(p.created) < s.electionTimeout() {
		// Restarted without knowing the leader it may have acknowledged
		// just before: voting now could elect a leader while the old one
		// still holds a lease (see createPeer). Dropping a vote request is
		// always safe for raft; the candidate retries.
		return
	}
	if msg.GetFrom() != 0 && msg.GetFrom() == p.leaderID {
		switch msg.GetType() {
		case raftpb.MessageType_MsgApp, raftpb.MessageType_MsgHeartbeat, raftpb.MessageType_MsgSnap:
			p.leaderMsgTick = s.ticks // raft resets its election timer on these
		}
	}
	if p.hold && msg.GetFrom() == p.holdLeader {
		p.hold = false // the leader is awake: its hibernated lease is gone (support.go)
	}
	var before raft.BasicStatus
	forced := isForcedVote(msg)
	if forced {
		before = p.rn.BasicStatus()
	}
	if err := p.rn.Step(msg); err != nil && !errors.Is(err, raft.ErrStepPeerNotFound) && !errors.Is(err, raft.ErrStepLocalMsg) {
		s.log.Debug("step raft message", "region", rm.GetRegionId(), "err", err)
	}
	if forced {
		s.afterForcedVote(p, &before, msg)
	}
	if p.hibernated && !wakesOnMessage(p, msg) {
		s.touch(p)
		return
	}
	s.wake(p)
}

func (s *Store) electionTimeout() time.Duration {
	return time.Duration(s.cfg.ElectionTicks) * s.cfg.RaftTick
}

func (s *Store) handleSoftState(readies []peerReady) {
	for _, r := range readies {
		st := r.p.rn.BasicStatus()
		r.p.syncLease(&st)
		ss := r.rd.SoftState
		p := r.p
		if p.isLeader && st.RaftState == raft.StateLeader && st.GetTerm() != p.leaderTerm {
			// Re-elected in a later term between two Readies (no
			// SoftState change to see): what the old term's leadership
			// kept in memory is void all the same.
			s.leaderChanged(p.region.GetId(), false)
			s.leaderChanged(p.region.GetId(), true)
			p.leaderTerm = st.GetTerm()
			p.leadTermPub.Store(p.leaderTerm)
		}
		if ss == nil {
			continue
		}
		wasLeader := p.isLeader
		p.leaderID = ss.Lead
		p.leaderPub.Store(ss.Lead)
		p.isLeader = ss.RaftState == raft.StateLeader
		if wasLeader && !p.isLeader {
			p.steppedDown = s.now()
		}
		if p.isLeader {
			p.leadTermPub.Store(st.GetTerm())
		} else {
			p.leadTermPub.Store(0)
		}
		if p.isLeader && !wasLeader {
			// Before the leadership is published: whoever sees this store
			// lead the region sees the generation that counts it.
			s.leaderGen.Add(1)
		}
		if p.isLeader != wasLeader {
			p.leaderTerm = st.GetTerm()
			s.leaderChanged(p.region.GetId(), p.isLeader)
			s.meta.setLeader(p.region.GetId(), p.isLeader)
			if p.isLeader {
				s.led[p.region.GetId()] = p
			} else {
				delete(s.led, p.region.GetId())
			}
			s.log.Info("leadership changed", "region", p.region.GetId(), "leader", p.isLeader, "lead", ss.Lead)
		}
		if p.isLeader && !wasLeader {
			leaderChanges.Inc()
			p.transferee = 0
			s.queueRegionHeartbeat(p)
			s.markSplitDirty(p) // written while following: the checker looks at it now
		}
		if !p.isLeader {
			p.failReads(errNotLeader(p.region.GetId(), p.leaderHint()), nil)
			s.nParked -= p.answerParked()
			if ss.Lead != 0 {
				p.transferee = 0 // the real leader is known now
			}
		}
	}
}

// persist writes every Ready's entries and hard state in one batch with one
// fsync (group commit across regions).
func (s *Store) persist(readies []peerReady) {
	b := s.db.NewBatch()
	defer b.Close()
	nEntries, nRegions := 0, 0
	mustSync := false
	for _, r := range readies {
		// raft's MustSync ignores a snapshot, but once it is applied raft
		// acknowledges it (MsgAppResp at its index): it must be durable
		// first, or a crash leaves the leader counting entries this
		// replica lost (found by TestHarnessChaos).
		mustSync = mustSync || r.rd.MustSync || (r.rd.Snapshot != nil && !raft.IsEmptySnap(r.rd.Snapshot))
		if len(r.rd.Entries) > 0 || r.rd.HardState != nil {
			nRegions++
		}
		if r.rd.Snapshot != nil && !raft.IsEmptySnap(r.rd.Snapshot) {
			r.p.installingPub.Store(true) // before the ranges are cleared (replicaread.go)
			if err := r.p.ps.writeSnapshot(b, r.rd.Snapshot); err != nil {
				s.fatal("apply snapshot", err)
			}
		}
		if err := r.p.ps.appendEntries(b, r.rd.Entries); err != nil {
			s.fatal("append raft entries", err)
		}
		nEntries += len(r.rd.Entries)
		if r.rd.HardState != nil {
			data, err := proto.Marshal(r.rd.HardState)
			if err != nil {
				s.fatal("marshal hard state", err)
			}
			if err := b.Set(hardStateKey(r.p.region.GetId()), data, nil); err != nil {
				s.fatal("write hard state", err)
			}
		}
	}
	switch {
	case mustSync:
		failpoint.Hit("raft-before-fsync")
		start := time.Now()
		if err := b.Commit(pebble.Sync); err != nil {
			s.fatal("commit raft batch", err)
		}
		failpoint.Hit("raft-after-fsync")
		raftLogFsyncSeconds.Observe(time.Since(start).Seconds())
		appendedEntries.Observe(float64(nEntries))
		fsyncRegions.Observe(float64(nRegions))
	case !b.Empty():
		// Only the commit index moved: losing it in a crash is harmless
		// (it is learnt again), so no fsync.
		if err := b.Commit(pebble.NoSync); err != nil {
			s.fatal("commit raft batch", err)
		}
	}
	if !b.Empty() {
		s.stepPersisted("raft-log")
	}
	now := s.now()
	for _, r := range readies {
		if r.rd.Snapshot != nil && !raft.IsEmptySnap(r.rd.Snapshot) {
			s.snapshotWritten(r.p, r.rd.Snapshot) // starts the ingest
		}
		r.p.ps.entriesPersisted(r.rd.Entries, r.rd.HardState)
		for _, e := range r.rd.Entries {
			r.p.logBytes += uint64(len(e.GetData())) + 16
		}
		r.p.trackProposals(r.rd.Entries, now)
	}
}

// earlySendable reports whether m may be sent before this Ready is
// persisted: only a leader's appends and heartbeats (their term is already
// durable since the election).
func earlySendable(p *peer, m *raftpb.Message) bool {
	if !p.isLeader {
		return false
	}
	switch m.GetType() {
	case raftpb.MessageType_MsgApp, raftpb.MessageType_MsgHeartbeat:
		return true
	}
	return false
}

// sendMessages hands the Ready's messages that may go early (early) or the
// rest (!early) to the transport, one batch per destination store.
func (s *Store) sendMessages(readies []peerReady, early bool) {
	// One batch per destination store, cut at maxBytesPerSend: a catch-up
	// can make one iteration's messages to a store far larger than a gRPC
	// message may be.
	var byStore map[uint64]*outBatch
	filter := s.raftFilter.Load()
	for _, r := range readies {
		p := r.p
		for _, m := range r.rd.Messages {
			if earlySendable(p, m) != early {
				continue
			}
			to := p.storeOf(m.GetTo())
			if to == 0 {
				continue
			}
			if m.GetType() == raftpb.MessageType_MsgSnap {
				s.sendSnapshot(p, to, m)
				continue
			}
			data, err := proto.Marshal(m)
			if err != nil {
				s.fatal("marshal raft message", err)
			}
			if byStore == nil {
				byStore = map[uint64]*outBatch{}
			}
			b := byStore[to]
			if b == nil {
				b = &outBatch{}
				byStore[to] = b
			}
			rm := &raft_serverpb.RaftMessage{
				RegionId:    p.region.GetId(),
				FromPeer:    p.meta,
				ToPeer:      &metapb.Peer{Id: m.GetTo(), StoreId: to},
				RegionEpoch: p.region.GetRegionEpoch(),
				StartKey:    p.region.GetStartKey(),
				EndKey:      p.region.GetEndKey(),
				Message:     data,
			}
			n := raftMessageBytes(rm)
			if b.size > 0 && b.size+n > s.cfg.maxBatchBytes {
				s.flushBatch(to, b.msgs, filter)
				b.msgs, b.size = nil, 0
			}
			b.msgs = append(b.msgs, rm)
			b.size += n
		}
	}
	for storeID, b := range byStore {
		s.flushBatch(storeID, b.msgs, filter)
	}
}

// outBatch is the batch sendMessages is filling for one store.
type outBatch struct {
	msgs []*raft_serverpb.RaftMessage
	size int // raftMessageBytes of msgs
}

// flushBatch sends msgs to store to in one batch (unless a test
// partitioned it) and reports their peers unreachable if the transport
// dropped it.
func (s *Store) flushBatch(to uint64, msgs []*raft_serverpb.RaftMessage, filter *func(uint64) bool) {
	if len(msgs) == 0 || (filter != nil && (*filter)(to)) {
		return
	}
	if s.sendBatch(to, &raft_serverpb.BatchRaftMessage{Msgs: msgs}) {
		raftMessagesSent.Add(float64(len(msgs)))
		return
	}
	raftMessagesDropped.Add(float64(len(msgs)))
	for _, m := range msgs {
		if p := s.peers[m.GetRegionId()]; p != nil {
			p.rn.ReportUnreachable(m.GetToPeer().GetId())
		}
	}
}

// sendBatch hands b to the transport; false means it was dropped.
func (s *Store) sendBatch(to uint64, b *raft_serverpb.BatchRaftMessage) bool {
	if s.cfg.net != nil {
		return s.cfg.net.send(s.id, to, b)
	}
	return s.trans.send(to, b)
}
