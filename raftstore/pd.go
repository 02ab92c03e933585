package raftstore

import (
	"context"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/tracker"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/pdpb"
)

// minHeartbeatGap bounds how often a nudge (raft message for an unknown
// region) may trigger an extra store heartbeat.
const minHeartbeatGap = 50 * time.Millisecond

// storeHeartbeatLoop sends store heartbeats and creates the regions PD says
// this store must host.
func (s *Store) storeHeartbeatLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.StoreHeartbeatInterval)
	defer t.Stop()
	var last time.Time
	for {
		s.storeHeartbeat()
		last = time.Now()
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		case <-s.hbNudge:
			if d := time.Until(last.Add(minHeartbeatGap)); d > 0 {
				select {
				case <-s.ctx.Done():
					return
				case <-time.After(d):
				}
			}
		}
	}
}

func (s *Store) storeHeartbeat() {
	ids := s.meta.ids()
	_, leaders := s.meta.counts()
	stats := &pdpb.StoreStats{StoreId: s.id, RegionCount: uint32(len(ids)), LeaderCount: uint32(leaders)}
	s.fillStoreStats(stats)
	ctx, cancel := context.WithTimeout(s.ctx, 3*s.cfg.StoreHeartbeatInterval)
	defer cancel()
	resp, err := s.pd.StoreHeartbeat(ctx, &pdpb.StoreHeartbeatRequest{
		Stats:     stats,
		RegionIds: ids,
	})
	if err != nil {
		if s.ctx.Err() == nil {
			s.log.Warn("store heartbeat", "err", err)
		}
		return
	}
	for _, r := range resp.GetCreateRegions() {
		if err := s.maybeCreateRegion(r); err != nil {
			s.log.Error("create region", "region", r.GetId(), "err", err)
		}
	}
	if ids := resp.GetAwakenRegions(); len(ids) > 0 {
		s.inbox.push(func(m *inboxMsgs) { m.awaken = append(m.awaken, ids...) })
	}
}

// maybeCreateRegion persists (synced) the local and initial raft state of a
// region new to this store, then asks the Ready loop to create its peer.
// A region overlapping one this store hosts is not created: it comes from a
// split this store has not applied yet, and applying it creates the peer
// with its data (an empty peer created here would vote and accept the
// region's log without the data from before the split). Nor is a region
// born from a split (version above 1) that this store does not host: its
// parent here was replaced by a snapshot taken after the split (the
// replica lagged past log GC), so the data before the split is not here
// either; the region's leader creates this replica with a raft message
// and fills it with a snapshot (maybeCreatePeer).
func (s *Store) maybeCreateRegion(r *metapb.Region) error {
	if s.meta.has(r.GetId()) {
		return nil
	}
	if r.GetRegionEpoch().GetVersion() > 1 {
		s.log.Warn("region from PD was split off a region this store does not hold any more; not creating an empty replica",
			"region", r.GetId(), "version", r.GetRegionEpoch().GetVersion())
		return nil
	}
	if o := s.meta.overlapping(r.GetStartKey(), r.GetEndKey()); len(o) > 0 {
		s.log.Debug("region from PD overlaps a local region; waiting for the split", "region", r.GetId(), "local", o[0].GetId())
		return nil
	}
	onStore := false
	for _, p := range r.GetPeers() {
		onStore = onStore || p.GetStoreId() == s.id
	}
	if !onStore {
		return nil
	}
	r = proto.Clone(r).(*metapb.Region)
	b := s.db.NewBatch()
	defer b.Close()
	if err := writeInitialState(b, r); err != nil {
		return err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return err
	}
	s.stepPersisted("region-create")
	s.meta.setRegion(r)
	s.log.Info("region created from PD", "region", r.GetId(), "peers", len(r.GetPeers()))
	s.inbox.push(func(m *inboxMsgs) { m.creates = append(m.creates, r) })
	return nil
}

// queueRegionHeartbeat hands a leader's region heartbeat to the PD worker;
// it never blocks the Ready loop (a full queue drops it, the next period
// retries).
func (s *Store) queueRegionHeartbeat(p *peer) {
	p.ticksSinceHeartbeat = 0
	st := s.approximate(p.region.GetId())
	req := &pdpb.RegionHeartbeatRequest{
		Region:          proto.Clone(p.region).(*metapb.Region),
		Leader:          proto.Clone(p.meta).(*metapb.Peer),
		Term:            p.rn.BasicStatus().GetTerm(),
		ApproximateSize: st.size,
		ApproximateKeys: st.keys,
		BytesWritten:    p.writtenBytes,
		KeysWritten:     p.writtenKeys,
	}
	now := time.Now()
	if !p.lastHB.IsZero() {
		req.IntervalMs = uint64(now.Sub(p.lastHB).Milliseconds())
	}
	s.fillPeerHealth(p, req)
	select {
	case s.regionHeartbeats <- req:
		p.lastHB, p.writtenBytes, p.writtenKeys = now, 0, 0
		p.hbDropped = false
	default:
		// Retried after the next interval; a leader does not hibernate
		// before PD has heard from it (a split's new regions must reach
		// PD, or clients cannot find them).
		p.hbDropped = true
	}
}

func (s *Store) regionHeartbeatLoop() {
	defer s.wg.Done()
	batch := make([]*pdpb.RegionHeartbeatRequest, 0, maxHeartbeatBatch)
	for {
		clear(batch) // the last batch's requests are not kept alive
		batch = batch[:0]
		select {
		case <-s.ctx.Done():
			return
		case req := <-s.regionHeartbeats:
			batch = append(batch, req)
		}
	more:
		for len(batch) < maxHeartbeatBatch {
			select {
			case req := <-s.regionHeartbeats:
				batch = append(batch, req)
			default:
				break more
			}
		}
		ctx, cancel := context.WithTimeout(s.ctx, 3*s.cfg.StoreHeartbeatInterval)
		resps, err := s.pd.RegionHeartbeats(ctx, batch)
		cancel()
		if err != nil {
			if s.ctx.Err() == nil {
				s.log.Warn("region heartbeats", "regions", len(batch), "first_region", batch[0].GetRegion().GetId(), "err", err)
			}
			continue
		}
		var steps []*pdpb.RegionHeartbeatResponse
		for i, resp := range resps {
			if herr := resp.GetHeader().GetError(); herr != nil {
				s.log.Warn("region heartbeat", "region", batch[i].GetRegion().GetId(), "err", herr.GetMessage())
				continue
			}
			if resp.GetChangePeer() != nil || resp.GetTransferLeader() != nil || resp.GetSplitRegion() != nil {
				steps = append(steps, resp)
			}
		}
		if len(steps) > 0 {
			s.inbox.push(func(m *inboxMsgs) { m.pdSteps = append(m.pdSteps, steps...) })
		}
	}
}

// maxHeartbeatBatch bounds the region heartbeats of one RegionHeartbeats
// call: the ones queued while the last call was out go together.
const maxHeartbeatBatch = 256

// fillStoreStats sets the disk figures of a store heartbeat: capacity and
// available space of the data directory's file system, bytes used by the
// engine.
func (s *Store) fillStoreStats(st *pdpb.StoreStats) {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(s.cfg.DataDir, &fs); err == nil {
		st.Capacity = fs.Blocks * uint64(fs.Bsize)
		st.Available = fs.Bavail * uint64(fs.Bsize)
	}
	st.UsedSize = s.db.Metrics().DiskSpaceUsage()
	st.IntervalMs = uint64(s.cfg.StoreHeartbeatInterval.Milliseconds())
}

// samplePeerActivity runs every tick on a leader: raft's RecentActive
// (reset every election timeout by CheckQuorum) becomes a last-heard time
// per peer that does not flicker.
func (s *Store) samplePeerActivity(p *peer, now time.Time) {
	if p.peerActive == nil || p.activeTerm != p.rn.BasicStatus().GetTerm() {
		// A new term: every peer starts as just heard from.
		p.peerActive, p.activeTerm, p.activeSince = map[uint64]time.Time{}, p.rn.BasicStatus().GetTerm(), now
	}
	p.rn.WithProgress(func(id uint64, _ raft.ProgressType, pr tracker.Progress) {
		if _, ok := p.peerActive[id]; !ok || pr.RecentActive {
			p.peerActive[id] = now
		}
	})
}

// fillPeerHealth lists the peers a leader's heartbeat reports as down (not
// heard from for two election timeouts) or pending (receiving a snapshot,
// or behind the leader's log start once the term is an election timeout
// old: a new leader knows no follower's progress yet).
//
// A hibernated leader samples nothing: a peer counts as heard from when
// its store was (store liveness, hibernate.go).
func (s *Store) fillPeerHealth(p *peer, req *pdpb.RegionHeartbeatRequest) {
	now := s.now()
	et := s.electionTimeout()
	first := p.ps.apply.truncatedIndex
	settled := !p.activeSince.IsZero() && now.Sub(p.activeSince) > et
	p.rn.WithProgress(func(id uint64, _ raft.ProgressType, pr tracker.Progress) {
		if id == p.meta.GetId() {
			return
		}
		m := p.peerMeta(id)
		if m == nil {
			return
		}
		last, ok := p.peerActive[id]
		if l := s.live[m.GetStoreId()]; p.hibernated && l != nil && l.heardAt.After(last) {
			last, ok = l.heardAt, true
		}
		if ok && now.Sub(last) > 2*et {
			req.DownPeers = append(req.DownPeers, &pdpb.PeerStats{Peer: m, DownSeconds: uint64(now.Sub(last).Seconds())})
		}
		if pr.State == tracker.StateSnapshot || (settled && pr.Match < first) {
			req.PendingPeers = append(req.PendingPeers, m)
		}
	})
}
