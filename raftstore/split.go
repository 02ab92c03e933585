package raftstore

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/failpoint"
	"github.com/stratadb/strata/proto/errorpb"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/pdpb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
	"github.com/stratadb/strata/proto/raft_serverpb"
)

// Region split (TiKV's model). The leader asks PD for the ids of the new
// regions and their peers (AskBatchSplit), then proposes an admin Split
// through the region's raft log. Every replica applies it at the same log
// position, in the apply batch and atomically with the applied index: the
// region keeps [start, split_keys[0]) and each new region takes the next
// range; all get version = old version + number of new regions (conf_ver is
// unchanged); the new regions' local state and initial raft state (log
// truncated at index 5, term 5, voters = their peers, as for a region from
// PD) are written in the same batch. No data moves: user keys stay where
// they are in the engine, and ranges decide which region owns them. After
// the batch is committed the new peers are created; on the store whose peer
// led the split, each new peer campaigns at once, so the new regions get
// their leaders without waiting for an election timeout (their peers on the
// other stores exist as soon as those apply the split; raft messages for a
// region this store does not know yet are held briefly, see orphans, so a
// vote that overtakes the split's commit is not lost). The leader then
// reports every region to PD at once (ReportBatchSplit); the new regions'
// leaders also send region heartbeats when elected.
//
// Apply re-checks the epoch of every command against the region at its
// index, so a command proposed before the split (with the old version)
// writes nothing and is answered EpochNotMatch carrying the region and the
// regions split off it. A Split itself needs the current version and
// conf_ver. A malformed Split (keys not strictly inside the region and
// ascending, wrong number of ids) is refused at apply on every replica
// alike. A leader with a split in flight starts no leader transfer (PD's
// or a graceful stop's) until it applied, so the new regions start with
// their leaders where the parent's is, decided by one apply (TiKV refuses
// such transfers too).

// splitResult is a split applied in the current apply batch, finished once
// the batch is committed.
type splitResult struct {
	p         *peer
	regions   []*metapb.Region // regions[0] is p's region after the split
	wasLeader bool
}

// SplitRegion splits region regionID, which this store must lead, at
// splitKeys (raw user keys; keys outside the region, on its start, or
// repeated are dropped) and returns every resulting region in key order
// (the original, shrunk, first). With no usable key it returns the region
// unchanged. epoch, when not nil, must match the region's current epoch.
// A region error means nothing was split (NotLeader, EpochNotMatch, ...);
// an error that the outcome is unknown (PD unreachable before proposing
// is an error too, with nothing proposed). Safe for concurrent use.
func (s *Store) SplitRegion(ctx context.Context, regionID uint64, epoch *metapb.RegionEpoch, splitKeys [][]byte) ([]*metapb.Region, *errorpb.Error, error) {
	region := s.meta.region(regionID)
	if region == nil {
		return nil, errRegionNotFound(regionID), nil
	}
	if epoch != nil && !epochMatches(epoch, region) {
		return nil, errEpochNotMatch(region), nil
	}
	keys := normalizeSplitKeys(region, splitKeys)
	if len(keys) == 0 {
		return []*metapb.Region{proto.Clone(region).(*metapb.Region)}, nil, nil
	}
	if !s.meta.isLeader(regionID) {
		return nil, errNotLeader(regionID, nil), nil
	}
	ids, err := s.pd.AskBatchSplit(ctx, region, uint32(len(keys)))
	if err != nil {
		splitsTotal.WithLabelValues("pd_error").Inc()
		return nil, nil, fmt.Errorf("raftstore: ask PD for the ids of a split of region %d: %w", regionID, err)
	}
	if len(ids) != len(keys) {
		splitsTotal.WithLabelValues("pd_error").Inc()
		return nil, nil, fmt.Errorf("raftstore: PD returned %d split ids for %d keys", len(ids), len(keys))
	}
	cmd := &raft_cmdpb.RaftCmdRequest{
		Header:       &raft_cmdpb.RaftRequestHeader{RegionId: regionID, RegionEpoch: region.GetRegionEpoch()},
		AdminRequest: &raft_cmdpb.AdminRequest{CmdType: raft_cmdpb.AdminCmdType_Split, Split: splitRequest(keys, ids)},
	}
	// The transaction layer's in-memory state of the region goes into the
	// log ahead of the split (queued first, so applied first).
	s.handover(region, s.queueHandover)
	start := time.Now()
	resp, _, err := s.proposeAndWait(ctx, cmd, 0)
	if err != nil {
		splitsTotal.WithLabelValues("undetermined").Inc()
		return nil, nil, err
	}
	if e := resp.GetRegionError(); e != nil {
		splitsTotal.WithLabelValues(splitErrorOutcome(e)).Inc()
		return nil, e, nil
	}
	regions := resp.GetAdminResponse().GetRegions()
	splitsTotal.WithLabelValues("ok").Inc()
	splitSeconds.Observe(time.Since(start).Seconds())
	rctx, cancel := context.WithTimeout(s.ctx, 3*s.cfg.StoreHeartbeatInterval)
	defer cancel()
	if err := s.pd.ReportBatchSplit(rctx, regions); err != nil {
		// The regions' leaders report them in heartbeats too.
		s.log.Warn("report split to PD", "region", regionID, "err", err)
	}
	s.log.Info("region split", "region", regionID, "regions", len(regions), "took", time.Since(start))
	return regions, nil, nil
}

func splitErrorOutcome(e *errorpb.Error) string {
	switch {
	case e.GetEpochNotMatch() != nil:
		return "epoch_not_match"
	case e.GetNotLeader() != nil:
		return "not_leader"
	default:
		return "region_error"
	}
}

// normalizeSplitKeys sorts and dedupes keys and keeps those strictly inside
// region (after its start, before its end).
func normalizeSplitKeys(region *metapb.Region, keys [][]byte) [][]byte {
	out := make([][]byte, 0, len(keys))
	for _, k := range keys {
		if bytes.Compare(k, region.GetStartKey()) > 0 && endAfter(region.GetEndKey(), k) {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, bytes.Compare)
	return slices.CompactFunc(out, bytes.Equal)
}

// splitRegions computes the regions a Split of region produces: region
// shrunk to [start, keys[0]) first, then one per key. It validates the
// request the same way on every replica.
func splitRegions(region *metapb.Region, req *raft_cmdpb.SplitRequest) ([]*metapb.Region, error) {
	keys := req.GetSplitKeys()
	n := len(keys)
	if n == 0 || len(req.GetNewRegionIds()) != n || len(req.GetNewPeerIds()) != n {
		return nil, fmt.Errorf("split of region %d: %d keys, %d region ids, %d peer id lists", region.GetId(), n,
			len(req.GetNewRegionIds()), len(req.GetNewPeerIds()))
	}
	prev := region.GetStartKey()
	for i, k := range keys {
		if bytes.Compare(k, prev) <= 0 || !endAfter(region.GetEndKey(), k) {
			return nil, fmt.Errorf("split key %d (%x) of region %d is not ascending inside [%x, %x)", i, k,
				region.GetId(), region.GetStartKey(), region.GetEndKey())
		}
		if len(req.GetNewPeerIds()[i].GetIds()) != len(region.GetPeers()) {
			return nil, fmt.Errorf("split of region %d: %d peer ids for %d peers", region.GetId(),
				len(req.GetNewPeerIds()[i].GetIds()), len(region.GetPeers()))
		}
		prev = k
	}
	epoch := &metapb.RegionEpoch{ConfVer: region.GetRegionEpoch().GetConfVer(), Version: region.GetRegionEpoch().GetVersion() + uint64(n)}
	left := proto.Clone(region).(*metapb.Region)
	left.EndKey = keys[0]
	left.RegionEpoch = proto.Clone(epoch).(*metapb.RegionEpoch)
	out := []*metapb.Region{left}
	for i, k := range keys {
		r := &metapb.Region{Id: req.GetNewRegionIds()[i], StartKey: k, EndKey: region.GetEndKey(),
			RegionEpoch: proto.Clone(epoch).(*metapb.RegionEpoch)}
		if i+1 < n {
			r.EndKey = keys[i+1]
		}
		for j, p := range region.GetPeers() {
			r.Peers = append(r.Peers, &metapb.Peer{Id: req.GetNewPeerIds()[i].GetIds()[j], StoreId: p.GetStoreId(), Role: p.GetRole()})
		}
		out = append(out, r)
	}
	return out, nil
}

// applySplit executes a committed Split of p into b. The peer's region
// changes at once (later entries of the same batch are checked against
// it); the new peers are created by finishSplits after the batch commits.
func (a *applier) applySplit(b *pebble.Batch, p *peer, req *raft_cmdpb.SplitRequest, index uint64) *raft_cmdpb.RaftCmdResponse {
	failpoint.Hit("raft-split-apply")
	regions, err := splitRegions(p.region, req)
	if err != nil {
		a.log.Warn("split refused at apply", "region", p.region.GetId(), "index", index, "err", err)
		return &raft_cmdpb.RaftCmdResponse{AppliedIndex: index, RegionError: &errorpb.Error{Message: err.Error()}}
	}
	rs, err := encodeRegionState(peerStateNormal, regions[0])
	if err != nil {
		a.host.fatal("encode split region", err)
	}
	if err := b.Set(regionStateKey(regions[0].GetId()), rs, nil); err != nil {
		a.host.fatal("write split region", err)
	}
	for _, r := range regions[1:] {
		if a.host.hosts(r.GetId()) {
			a.log.Warn("split: new region already exists here, keeping it", "region", r.GetId())
			continue
		}
		if err := writeInitialState(b, r); err != nil {
			a.host.fatal("write split region state", err)
		}
	}
	p.lease.unpublish() // local readers wait for a renewal with the new range
	p.region, p.ps.region = regions[0], regions[0]
	p.siblings = regions[1:]
	p.checked = false // measure the shrunk region again
	a.res.splits = append(a.res.splits, splitResult{p: p, regions: regions, wasLeader: p.isLeader})
	out := make([]*metapb.Region, len(regions))
	for i, r := range regions {
		out[i] = proto.Clone(r).(*metapb.Region)
	}
	return &raft_cmdpb.RaftCmdResponse{AppliedIndex: index, AdminResponse: &raft_cmdpb.AdminResponse{Regions: out}}
}

// finishSplits runs after the apply batch holding splits committed:
// publishes the regions, creates the new peers, and lets the new peers of a
// split this store led campaign at once.
func (s *Store) finishSplits(splits []splitResult) {
	for _, sp := range splits {
		s.meta.setRegion(sp.regions[0])
		for _, r := range sp.regions[1:] {
			if _, ok := s.peers[r.GetId()]; ok {
				continue
			}
			s.meta.setRegion(r)
			if err := s.createPeer(r, true); err != nil {
				s.fatal("create split peer", err)
			}
			np := s.peers[r.GetId()]
			if sp.wasLeader {
				if err := np.rn.Campaign(); err != nil {
					s.log.Warn("campaign after split", "region", r.GetId(), "err", err)
				}
			}
			s.stepOrphans(np)
			s.newPeers = true
		}
		if sp.p.isLeader {
			s.queueRegionHeartbeat(sp.p)
		}
		splitsApplied.Inc()
		s.log.Info("split applied", "region", sp.regions[0].GetId(), "new_regions", len(sp.regions)-1,
			"version", sp.regions[0].GetRegionEpoch().GetVersion(), "leader", sp.wasLeader)
	}
}

// splitInFlight reports whether a Split this peer proposed is not applied
// yet. O(proposals in flight); called only before leader transfers.
func (p *peer) splitInFlight() bool {
	isSplit := func(pr *proposal) bool {
		return pr.cmd.GetAdminRequest().GetCmdType() == raft_cmdpb.AdminCmdType_Split
	}
	for _, pr := range p.unassigned {
		if isSplit(pr) {
			return true
		}
	}
	for _, pr := range p.pending {
		if isSplit(pr) {
			return true
		}
	}
	return false
}

// epochNotMatch is the EpochNotMatch answer of p: its current region and
// the regions its last split created (the client replaces its stale region
// with all of them at once).
func (p *peer) epochNotMatch() *errorpb.Error {
	e := errEpochNotMatch(p.region)
	for _, r := range p.siblings {
		e.EpochNotMatch.CurrentRegions = append(e.EpochNotMatch.CurrentRegions, proto.Clone(r).(*metapb.Region))
	}
	return e
}

// Orphan raft messages: a message for a region this store does not host
// (yet). Right after a split commits, the new region's leader may send its
// vote requests before this store applied the split; they are held for
// orphanTTL and stepped when the peer appears.
const (
	orphanTTL        = 2 * time.Second
	maxOrphanRegions = 1024
	maxOrphanMsgs    = 8
)

type orphanMsgs struct {
	first time.Time
	msgs  []*raft_serverpb.RaftMessage
}

func (s *Store) holdOrphan(rm *raft_serverpb.RaftMessage) {
	if s.orphans == nil {
		s.orphans = map[uint64]*orphanMsgs{}
	}
	o := s.orphans[rm.GetRegionId()]
	if o == nil {
		if len(s.orphans) >= maxOrphanRegions {
			return
		}
		o = &orphanMsgs{first: s.now()}
		s.orphans[rm.GetRegionId()] = o
	}
	if len(o.msgs) >= maxOrphanMsgs {
		copy(o.msgs, o.msgs[1:])
		o.msgs = o.msgs[:len(o.msgs)-1]
	}
	o.msgs = append(o.msgs, rm)
}

func (s *Store) stepOrphans(p *peer) {
	o := s.orphans[p.region.GetId()]
	if o == nil {
		return
	}
	delete(s.orphans, p.region.GetId())
	for _, rm := range o.msgs {
		s.stepRaftMessage(rm)
	}
}

// expireOrphans drops held messages older than orphanTTL (on tick).
func (s *Store) expireOrphans(now time.Time) {
	for id, o := range s.orphans {
		if now.Sub(o.first) > orphanTTL {
			delete(s.orphans, id)
		}
	}
}

// splitRequest builds the Split of keys with the ids PD allocated.
func splitRequest(keys [][]byte, ids []*pdpb.SplitID) *raft_cmdpb.SplitRequest {
	req := &raft_cmdpb.SplitRequest{SplitKeys: keys}
	for _, id := range ids {
		req.NewRegionIds = append(req.NewRegionIds, id.GetNewRegionId())
		req.NewPeerIds = append(req.NewPeerIds, &raft_cmdpb.NewPeerIDs{Ids: id.GetNewPeerIds()})
	}
	return req
}
