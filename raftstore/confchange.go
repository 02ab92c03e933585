package raftstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/pdpb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
	"github.com/stratadb/strata/proto/raft_serverpb"
)

// Conf changes and peer lifecycle (issue 7, driven by PD's operators).
//
// PD hands a region's leader one operator step per region heartbeat
// response: add a learner, promote a learner (AddNode of an existing
// learner), remove a peer, transfer the leadership, or split at keys
// (split.go's SplitRegion, run off the loop). The leader checks the
// step is safe now (the epoch is the one PD computed it for; a promoted
// learner has caught up; a removal leaves a live quorum, judged by raft's
// activity flags once they are fresh after a wake-up and by store liveness
// (quorumAfterRemoval); it never removes itself) and proposes it as a raft
// ConfChange (v1: each is a single-voter
// change, so raft needs no joint consensus) whose context is a
// RaftCmdRequest carrying the region epoch. Every replica applies it at
// the same index: the epoch is re-checked, the region's peers change and
// conf_ver is bumped in the apply batch (region state written with the
// applied index), and raft's configuration follows (ApplyConfChange).
//
// A store that receives a raft message for a region it does not have (a
// new learner) creates an uninitialized peer: no range, no log, an empty
// raft configuration (it can never campaign), only in memory. The leader
// finds its log empty and sends a snapshot, whose data starts with the
// region (snapshot.go); installing it persists the region and the peer
// becomes a normal learner.
//
// A peer removed from its region is destroyed: when it applies its own
// removal, or when a peer of a newer configuration answers its messages
// with a tombstone message (it was down while it was removed). Destroying
// deletes its data range and raft state and leaves a tombstone region
// state, so a delayed message of the old configuration never recreates
// it; a later re-add has a higher conf_ver and is created again.

// execPDStep runs an operator step PD returned for one of our regions.
func (s *Store) execPDStep(resp *pdpb.RegionHeartbeatResponse) {
	p := s.peers[resp.GetRegionId()]
	if p == nil || !p.isLeader {
		return
	}
	s.busy(p)
	if e := resp.GetRegionEpoch(); e != nil && !proto.Equal(e, p.region.GetRegionEpoch()) {
		return // computed for another epoch; the next heartbeat gets a fresh one
	}
	switch {
	case resp.GetTransferLeader() != nil:
		to := resp.GetTransferLeader().GetPeer()
		target := p.peerOnStore(to.GetStoreId())
		if target == nil || target.GetRole() != metapb.PeerRole_Voter || target.GetId() == p.meta.GetId() {
			return
		}
		if st := p.rn.BasicStatus(); st.RaftState != raft.StateLeader || st.LeadTransferee != 0 {
			return
		}
		if p.splitInFlight() {
			return // after the split (split.go); PD asks again
		}
		s.startTransfer(p, target.GetId())
	case resp.GetSplitRegion() != nil:
		// SplitRegion waits for PD's ids and the apply: off the loop.
		regionID, epoch, keys := p.region.GetId(), p.region.GetRegionEpoch(), resp.GetSplitRegion().GetKeys()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
			defer cancel()
			if _, rerr, err := s.SplitRegion(ctx, regionID, epoch, keys); err != nil || rerr != nil {
				s.log.Info("split from PD not done", "region", regionID, "region_error", rerr.GetMessage(), "err", err)
			}
		}()
	case resp.GetChangePeer() != nil:
		if err := s.proposeConfChange(p, resp.GetChangePeer()); err != nil {
			confChanges.WithLabelValues("refused").Inc()
			s.log.Info("conf change not proposed", "region", p.region.GetId(), "change", resp.GetChangePeer().String(), "reason", err)
		}
	}
}

// peerOnStore returns the region's peer on store sid.
func (p *peer) peerOnStore(sid uint64) *metapb.Peer {
	for _, pp := range p.region.GetPeers() {
		if pp.GetStoreId() == sid {
			return pp
		}
	}
	return nil
}

var (
	errConfChangeUnsafe = errors.New("raftstore: conf change unsafe now")
	errConfChangeBad    = errors.New("raftstore: conf change does not fit the region")
)

// learnerCatchUpLag is how far behind the leader's commit index a learner
// may be when it is promoted: once it votes, commits may wait for it.
const learnerCatchUpLag = 100

// proposeConfChange checks a ChangePeer step against the region and raft's
// progress and proposes it.
func (s *Store) proposeConfChange(p *peer, cp *pdpb.ChangePeer) error {
	target := cp.GetPeer()
	cur := p.peerOnStore(target.GetStoreId())
	var typ raftpb.ConfChangeType
	switch cp.GetChangeType() {
	case pdpb.ConfChangeType_AddLearnerNode:
		if cur != nil {
			return fmt.Errorf("%w: store %d has peer %d already", errConfChangeBad, target.GetStoreId(), cur.GetId())
		}
		typ = raftpb.ConfChangeType_ConfChangeAddLearnerNode
	case pdpb.ConfChangeType_AddNode:
		if cur == nil || cur.GetId() != target.GetId() || cur.GetRole() != metapb.PeerRole_Learner {
			return fmt.Errorf("%w: no learner %d on store %d", errConfChangeBad, target.GetId(), target.GetStoreId())
		}
		if err := learnerCaughtUp(p.rn, target.GetId()); err != nil {
			return err
		}
		typ = raftpb.ConfChangeType_ConfChangeAddNode
	case pdpb.ConfChangeType_RemoveNode:
		if cur == nil || cur.GetId() != target.GetId() {
			return fmt.Errorf("%w: no peer %d on store %d", errConfChangeBad, target.GetId(), target.GetStoreId())
		}
		if target.GetId() == p.meta.GetId() {
			return fmt.Errorf("%w: the leader does not remove itself (transfer first)", errConfChangeUnsafe)
		}
		if cur.GetRole() == metapb.PeerRole_Voter {
			if err := s.quorumAfterRemoval(p, target.GetId()); err != nil {
				return err
			}
		}
		typ = raftpb.ConfChangeType_ConfChangeRemoveNode
	default:
		return fmt.Errorf("%w: change type %v", errConfChangeBad, cp.GetChangeType())
	}
	peer := &metapb.Peer{Id: target.GetId(), StoreId: target.GetStoreId()}
	if typ == raftpb.ConfChangeType_ConfChangeAddLearnerNode {
		peer.Role = metapb.PeerRole_Learner
	}
	cmd := &raft_cmdpb.RaftCmdRequest{
		Header: &raft_cmdpb.RaftRequestHeader{RegionId: p.region.GetId(), Peer: p.meta, RegionEpoch: p.region.GetRegionEpoch()},
		AdminRequest: &raft_cmdpb.AdminRequest{CmdType: raft_cmdpb.AdminCmdType_ChangePeer,
			ChangePeer: &raft_cmdpb.ChangePeerRequest{ChangeType: int32(typ), Peer: peer}},
	}
	ctx, err := encodeCmd(cmd)
	if err != nil {
		return err
	}
	if err := p.rn.ProposeConfChange(&raftpb.ConfChange{Type: typ.Enum(), NodeId: new(target.GetId()), Context: ctx}); err != nil {
		return fmt.Errorf("raft refused: %w", err)
	}
	confChanges.WithLabelValues("proposed").Inc()
	s.log.Info("conf change proposed", "region", p.region.GetId(), "type", typ.String(), "peer", target.GetId(), "store", target.GetStoreId())
	return nil
}

// learnerCaughtUp: the learner replicates and is within learnerCatchUpLag
// of the commit index.
func learnerCaughtUp(rn *raft.RawNode, id uint64) error {
	commit := rn.BasicStatus().HardState.GetCommit()
	var err error = fmt.Errorf("%w: learner %d not tracked", errConfChangeUnsafe, id)
	rn.WithProgress(func(pid uint64, _ raft.ProgressType, pr tracker.Progress) {
		if pid != id {
			return
		}
		if pr.State != tracker.StateReplicate || pr.Match+learnerCatchUpLag < commit {
			err = fmt.Errorf("%w: learner %d at %d (%v), commit %d", errConfChangeUnsafe, id, pr.Match, pr.State, commit)
			return
		}
		err = nil
	})
	return err
}

// quorumAfterRemoval: the voters left after removing id from leader p's
// region include a majority that is active (the leader counts itself).
//
// raft's RecentActive alone is stale: CheckQuorum clears it once per
// election timeout of the leader's ticks, so it may say active for an
// election timeout after a voter died, and a hibernated leader does not
// tick at all: right after it wakes, every voter it had when it fell asleep
// still looks active. So a voter counts only when RecentActive, with a
// CheckQuorum since the leader last woke (p.activeFrom: until then nothing
// counts), and its store is not down and was heard from within an election
// timeout (store liveness, hibernate.go).
func (s *Store) quorumAfterRemoval(p *peer, id uint64) error {
	if s.ticks < p.activeFrom {
		return fmt.Errorf("%w: the leader woke from hibernation less than an election timeout ago; raft's view of the voters' activity predates it",
			errConfChangeUnsafe)
	}
	voters, active := 0, 0
	self := p.meta.GetId()
	p.rn.WithProgress(func(pid uint64, _ raft.ProgressType, pr tracker.Progress) {
		if pid == id || pr.IsLearner {
			return
		}
		voters++
		if pid == self || pr.RecentActive && s.storeHeardRecently(p.storeOf(pid)) {
			active++
		}
	})
	if voters == 0 || active <= voters/2 {
		return fmt.Errorf("%w: removing %d leaves %d of %d voters active", errConfChangeUnsafe, id, active, voters)
	}
	return nil
}

// storeHeardRecently reports whether store id is not down and was heard
// from within an election timeout.
func (s *Store) storeHeardRecently(id uint64) bool {
	l := s.live[id]
	return l != nil && !l.down && s.ticks-l.heardTick <= uint64(s.cfg.ElectionTicks)
}

// applyConfChange applies a committed conf change entry of p into b and
// returns the command's response; raft and the store learn of it after the
// batch commits (confChangeApplied). Deterministic: every replica decides
// the same from the region at this index.
func (a *applier) applyConfChange(b *pebble.Batch, p *peer, e *raftpb.Entry) *raft_cmdpb.RaftCmdResponse {
	index := e.GetIndex()
	var cc raftpb.ConfChangeI
	if e.GetType() == raftpb.EntryType_EntryConfChangeV2 {
		v2 := &raftpb.ConfChangeV2{}
		if err := proto.Unmarshal(e.GetData(), v2); err != nil {
			a.host.fatal("decode conf change", err)
		}
		if len(v2.GetChanges()) == 0 {
			// raft's own (leave joint): no region change
			a.res.confChanges = append(a.res.confChanges, confChangeResult{p: p, cc: v2})
			return nil
		}
		cc = v2
	} else {
		v1 := &raftpb.ConfChange{}
		if err := proto.Unmarshal(e.GetData(), v1); err != nil {
			a.host.fatal("decode conf change", err)
		}
		cc = v1
	}
	v1, ok := cc.AsV1()
	if !ok {
		a.host.fatal("apply conf change", fmt.Errorf("%w: joint conf change at index %d of region %d", ErrCorrupt, index, p.region.GetId()))
	}
	cmd, err := decodeCmd(v1.GetContext())
	if err != nil {
		a.host.fatal("decode conf change command", err)
	}
	if e := checkCmdEpoch(cmd, p.region); e != nil {
		applyEpochNotMatch.Inc()
		confChanges.WithLabelValues("epoch_not_match").Inc()
		return &raft_cmdpb.RaftCmdResponse{RegionError: e, AppliedIndex: index}
	}
	change := cmd.GetAdminRequest().GetChangePeer()
	region, ok := changedRegion(p.region, raftpb.ConfChangeType(change.GetChangeType()), change.GetPeer())
	if !ok {
		// Does not fit the region (e.g. a duplicate): neither the region
		// nor raft's configuration changes, on every replica alike.
		confChanges.WithLabelValues("skipped").Inc()
		a.log.Warn("conf change skipped", "region", p.region.GetId(), "index", index, "change", change.String())
		return &raft_cmdpb.RaftCmdResponse{AppliedIndex: index, AdminResponse: &raft_cmdpb.AdminResponse{Region: p.region}}
	}
	rs, err := encodeRegionState(peerStateNormal, region)
	if err != nil {
		a.host.fatal("encode region state", err)
	}
	if err := b.Set(regionStateKey(region.GetId()), rs, nil); err != nil {
		a.host.fatal("write region state", err)
	}
	p.setRegion(region) // later entries of the round are checked against it
	confChanges.WithLabelValues("applied").Inc()
	a.log.Info("conf change applied", "region", region.GetId(), "index", index, "type", raftpb.ConfChangeType(change.GetChangeType()).String(),
		"peer", change.GetPeer().GetId(), "store", change.GetPeer().GetStoreId(), "conf_ver", region.GetRegionEpoch().GetConfVer())
	if v1.GetType() == raftpb.ConfChangeType_ConfChangeRemoveNode && v1.GetNodeId() == p.meta.GetId() {
		p.removed = true // destroyed at the end of this iteration
	}
	a.res.confChanges = append(a.res.confChanges, confChangeResult{p: p, cc: v1, region: region})
	return &raft_cmdpb.RaftCmdResponse{AppliedIndex: index, AdminResponse: &raft_cmdpb.AdminResponse{Region: region}}
}

// confChangeResult is a conf change an apply round applied to p: cc for
// raft, and the region after it (nil when raft's own, leaving a joint
// configuration, changed no region).
type confChangeResult struct {
	p      *peer
	cc     raftpb.ConfChangeI
	region *metapb.Region
}

// confChangeApplied runs a conf change after the apply batch holding it
// committed: raft's configuration, the shared region view, the removal of
// this store's own peer and PD's view of a region this store leads.
func (s *Store) confChangeApplied(cc confChangeResult) {
	p := cc.p
	p.rn.ApplyConfChange(cc.cc)
	if cc.region == nil {
		return
	}
	s.publishRegion(cc.region)
	if v1, ok := cc.cc.AsV1(); ok && v1.GetType() == raftpb.ConfChangeType_ConfChangeRemoveNode && v1.GetNodeId() == p.meta.GetId() {
		s.removed = append(s.removed, p)
	}
	if p.isLeader {
		s.queueRegionHeartbeat(p) // PD sees the step done at once
	}
}

// changedRegion returns region after the change, with conf_ver bumped, or
// false when the change does not fit it.
func changedRegion(region *metapb.Region, typ raftpb.ConfChangeType, target *metapb.Peer) (*metapb.Region, bool) {
	out := proto.CloneOf(region)
	idx := -1
	for i, pp := range out.GetPeers() {
		if pp.GetId() == target.GetId() {
			idx = i
		} else if pp.GetStoreId() == target.GetStoreId() {
			return nil, false // another peer on that store
		}
	}
	switch typ {
	case raftpb.ConfChangeType_ConfChangeAddLearnerNode:
		if idx >= 0 {
			return nil, false
		}
		out.Peers = append(out.Peers, &metapb.Peer{Id: target.GetId(), StoreId: target.GetStoreId(), Role: metapb.PeerRole_Learner})
	case raftpb.ConfChangeType_ConfChangeAddNode:
		switch {
		case idx < 0:
			out.Peers = append(out.Peers, &metapb.Peer{Id: target.GetId(), StoreId: target.GetStoreId()})
		case out.Peers[idx].GetRole() == metapb.PeerRole_Learner:
			out.Peers[idx].Role = metapb.PeerRole_Voter
		default:
			return nil, false
		}
	case raftpb.ConfChangeType_ConfChangeRemoveNode:
		if idx < 0 {
			return nil, false
		}
		out.Peers = append(out.Peers[:idx], out.Peers[idx+1:]...)
		voters := 0
		for _, pp := range out.Peers {
			if pp.GetRole() == metapb.PeerRole_Voter {
				voters++
			}
		}
		if voters == 0 {
			return nil, false
		}
	default:
		return nil, false
	}
	if out.RegionEpoch == nil {
		out.RegionEpoch = &metapb.RegionEpoch{}
	}
	out.RegionEpoch.ConfVer++
	return out, true
}

// setRegion makes region p's region everywhere it is kept in memory.
func (s *Store) setRegion(p *peer, region *metapb.Region) {
	p.setRegion(region)
	s.publishRegion(region)
}

// setRegion makes region p's.
func (p *peer) setRegion(region *metapb.Region) {
	p.lease.unpublish() // local readers wait for a renewal with the new region
	p.region = region
	p.ps.region = region
	if m := p.peerMeta(p.meta.GetId()); m != nil {
		p.meta = m
	}
}

// publishRegion puts region into the shared view and tracks its stores.
func (s *Store) publishRegion(region *metapb.Region) {
	s.meta.setRegion(region)
	for _, pm := range region.GetPeers() {
		s.trackStore(pm.GetStoreId())
	}
}

// snapshotInstalled runs after a snapshot was persisted for p: the region
// it carried becomes p's (an uninitialized peer becomes a normal one).
func (s *Store) snapshotInstalled(p *peer) {
	if r := p.ps.region; r != p.region || p.uninitialized {
		p.uninitialized = false
		s.setRegion(p, r)
		s.log.Info("peer initialized from snapshot", "region", r.GetId(), "peer", p.meta.GetId(), "conf_ver", r.GetRegionEpoch().GetConfVer())
	}
}

// isInitialMsg reports whether m may come from a leader or candidate of a
// configuration that includes the receiver: only those create a peer.
func isInitialMsg(t raftpb.MessageType) bool {
	switch t {
	case raftpb.MessageType_MsgApp, raftpb.MessageType_MsgHeartbeat, raftpb.MessageType_MsgSnap,
		raftpb.MessageType_MsgVote, raftpb.MessageType_MsgPreVote:
		return true
	}
	return false
}

// maybeCreatePeer handles a raft message for a region this store has no
// peer of. It creates an uninitialized peer when the region was
// conf-changed or split off another (only the bootstrap region, never
// changed, comes from PD's store heartbeat with its shared initial state),
// the message is one a leader or candidate sends, no tombstone of a newer
// configuration exists here and no local region overlaps its range. A
// region split off one this store hosts is created by applying the split
// while the parent still overlaps it; once the parent here was replaced by
// a snapshot taken after the split (this replica lagged past log GC), the
// parent no longer overlaps and the split-off region's replica here starts
// empty and is filled by a snapshot. It reports whether it created one.
func (s *Store) maybeCreatePeer(rm *raft_serverpb.RaftMessage, msg *raftpb.Message) bool {
	e := rm.GetRegionEpoch()
	if (e.GetConfVer() <= 1 && e.GetVersion() <= 1) || !isInitialMsg(msg.GetType()) || rm.GetToPeer().GetStoreId() != s.id {
		return false
	}
	rid := rm.GetRegionId()
	if ts := s.tombstone(rid); ts != nil && ts.GetRegionEpoch().GetConfVer() >= rm.GetRegionEpoch().GetConfVer() {
		return false // a message of the configuration that removed us
	}
	if len(s.meta.overlapping(rm.GetStartKey(), rm.GetEndKey())) > 0 {
		return false // wait until the local region splits or goes
	}
	meta := proto.CloneOf(rm.GetToPeer())
	region := &metapb.Region{Id: rid, RegionEpoch: &metapb.RegionEpoch{}}
	ps := &peerStorage{db: s.db, regionID: rid, region: region, hardState: &raftpb.HardState{}, snaps: &s.snaps, sends: &s.sends}
	rn, err := s.newRawNode(meta, ps, region)
	if err != nil {
		s.log.Error("create uninitialized peer", "region", rid, "err", err)
		return false
	}
	p := &peer{meta: meta, region: region, rn: rn, ps: ps, unassigned: map[uint64]*proposal{}, created: s.now(), uninitialized: true}
	p.initLease(s.maxLease)
	s.addPeer(p)
	peersCreated.WithLabelValues("raft_message").Inc()
	s.log.Info("uninitialized peer created", "region", rid, "peer", meta.GetId(), "from_store", rm.GetFromPeer().GetStoreId())
	return true
}

// tombstone returns the region recorded when region id's peer here was
// destroyed, or nil.
func (s *Store) tombstone(id uint64) *metapb.Region {
	v, closer, err := s.db.Get(regionStateKey(id))
	if err != nil {
		return nil
	}
	defer closer.Close()
	state, r, err := decodeRegionState(v)
	if err != nil || state != peerStateTombstone {
		return nil
	}
	return r
}

// staleSender answers a message from a peer that is no longer in our
// (newer) configuration with a tombstone message, so it destroys itself.
// It reports whether rm was such a message.
func (s *Store) staleSender(p *peer, rm *raft_serverpb.RaftMessage) bool {
	from := rm.GetFromPeer()
	if p.uninitialized || p.peerMeta(from.GetId()) != nil ||
		rm.GetRegionEpoch().GetConfVer() >= p.region.GetRegionEpoch().GetConfVer() {
		return false
	}
	gc := &raft_serverpb.RaftMessage{
		RegionId: p.region.GetId(), FromPeer: p.meta, ToPeer: from,
		RegionEpoch: p.region.GetRegionEpoch(), IsTombstone: true,
	}
	s.sendBatch(from.GetStoreId(), &raft_serverpb.BatchRaftMessage{Msgs: []*raft_serverpb.RaftMessage{gc}})
	return true
}

// handleTombstoneMsg destroys our peer if a newer configuration of its
// region says it was removed.
func (s *Store) handleTombstoneMsg(rm *raft_serverpb.RaftMessage) {
	p := s.peers[rm.GetRegionId()]
	if p == nil || p.meta.GetId() != rm.GetToPeer().GetId() {
		return
	}
	if rm.GetRegionEpoch().GetConfVer() <= p.region.GetRegionEpoch().GetConfVer() {
		return
	}
	s.log.Info("peer removed from its region while away: destroying", "region", p.region.GetId(), "peer", p.meta.GetId(),
		"our_conf_ver", p.region.GetRegionEpoch().GetConfVer(), "their_conf_ver", rm.GetRegionEpoch().GetConfVer())
	s.destroyPeer(p)
}

// destroyRemoved destroys the peers that applied their own removal in this
// iteration.
func (s *Store) destroyRemoved() {
	for i, p := range s.removed {
		if !p.destroyed {
			s.destroyPeer(p)
		}
		s.removed[i] = nil
	}
	s.removed = s.removed[:0]
}

// destroyPeer deletes p: its data range, raft log and states, leaving a
// tombstone region state; answers whatever waits on it. Synced.
func (s *Store) destroyPeer(p *peer) {
	rid := p.region.GetId()
	delete(s.peers, rid)
	if s.led[rid] == p {
		delete(s.led, rid)
	}
	p.destroyed = true
	if p.hibernated {
		p.hibernated = false
		hibernatedPeers.Dec()
	}
	s.delegates.CompareAndDelete(rid, p)
	p.lease.unpublish()
	nf := errRegionNotFound(rid)
	for _, pr := range p.parked {
		pr.regionError(nf, "region_not_found")
	}
	s.nParked -= len(p.parked)
	for _, pr := range p.unassigned {
		pr.respond(nil, fmt.Errorf("%w: region %d removed from this store", ErrUndetermined, rid), "undetermined")
	}
	for _, pr := range p.pending {
		pr.respond(nil, fmt.Errorf("%w: region %d removed from this store", ErrUndetermined, rid), "undetermined")
	}
	p.parked, p.unassigned, p.pending = nil, nil, nil
	p.failReads(nf, nil)
	if !p.uninitialized {
		s.meta.remove(rid)
	}
	if p.uninitialized {
		s.dropSnapshotFiles(p)
		peersDestroyed.Inc()
		return // nothing persisted
	}
	s.waitSnapshotIngest(p) // its data must not come back after the deletion
	b := s.db.NewBatch()
	defer b.Close()
	err := func() error {
		for _, cf := range keys.CFs {
			lo, hi := keys.CFBounds(cf, p.region.GetStartKey(), p.region.GetEndKey())
			if err := b.DeleteRange(lo, hi, nil); err != nil {
				return err
			}
		}
		lo, hi := entryRange(rid)
		if err := b.DeleteRange(lo, hi, nil); err != nil {
			return err
		}
		if err := b.Delete(hardStateKey(rid), nil); err != nil {
			return err
		}
		if err := b.Delete(applyStateKey(rid), nil); err != nil {
			return err
		}
		if err := b.Delete(snapApplyKey(rid), nil); err != nil {
			return err
		}
		rs, err := encodeRegionState(peerStateTombstone, p.region)
		if err != nil {
			return err
		}
		if err := b.Set(regionStateKey(rid), rs, nil); err != nil {
			return err
		}
		return b.Commit(pebble.Sync)
	}()
	if err != nil {
		s.fatal("destroy peer", err)
	}
	s.stepPersisted("peer-destroy")
	s.dropSnapshotFiles(p)
	peersDestroyed.Inc()
	s.log.Info("peer destroyed", "region", rid, "peer", p.meta.GetId(), "conf_ver", p.region.GetRegionEpoch().GetConfVer())
}

// routeRaftMessage returns the local peer rm is for, first acting on what
// the message shows about membership: a tombstone message destroys our
// peer; a message to a newer peer of ours (the store was re-added after
// our peer was removed while away) destroys the old one; a message from a
// peer removed from our newer configuration is answered with a tombstone;
// a message for an unknown region may create an uninitialized peer. nil:
// drop the message.
func (s *Store) routeRaftMessage(rm *raft_serverpb.RaftMessage) *peer {
	if rm.GetIsTombstone() {
		s.handleTombstoneMsg(rm)
		return nil
	}
	rid := rm.GetRegionId()
	p := s.peers[rid]
	if p != nil && rm.GetToPeer().GetId() != p.meta.GetId() {
		if rm.GetToPeer().GetId() < p.meta.GetId() || rm.GetRegionEpoch().GetConfVer() <= p.region.GetRegionEpoch().GetConfVer() {
			return nil // to an older peer of ours
		}
		s.log.Info("peer replaced by a newer peer of the region on this store: destroying", "region", rid,
			"peer", p.meta.GetId(), "new_peer", rm.GetToPeer().GetId())
		s.destroyPeer(p)
		p = nil
	}
	if p == nil {
		msg := &raftpb.Message{}
		if err := proto.Unmarshal(rm.GetMessage(), msg); err != nil || !s.maybeCreatePeer(rm, msg) {
			// A split this store has not applied yet creates it, or PD
			// has not told us about it yet: hold the message briefly
			// (split.go), and ask PD now.
			s.holdOrphan(rm)
			select {
			case s.hbNudge <- struct{}{}:
			default:
			}
			return nil
		}
		p = s.peers[rid]
	}
	if s.staleSender(p, rm) {
		return nil
	}
	if p.uninitialized {
		p.rememberPeer(rm.GetFromPeer())
	}
	return p
}

// rememberPeer records the store of a peer an uninitialized peer heard
// from (its region has no peers yet, and answers must find the store).
func (p *peer) rememberPeer(from *metapb.Peer) {
	if p.peerCache == nil {
		p.peerCache = map[uint64]uint64{}
	}
	p.peerCache[from.GetId()] = from.GetStoreId()
}
