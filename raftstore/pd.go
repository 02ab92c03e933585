package raftstore

import (
	"context"
	"time"

	"github.com/cockroachdb/pebble/v2"
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
	ctx, cancel := context.WithTimeout(s.ctx, 3*s.cfg.StoreHeartbeatInterval)
	defer cancel()
	resp, err := s.pd.StoreHeartbeat(ctx, &pdpb.StoreHeartbeatRequest{
		Stats:     &pdpb.StoreStats{StoreId: s.id, RegionCount: uint32(len(ids))},
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
}

// maybeCreateRegion persists (synced) the local and initial raft state of a
// region new to this store, then asks the Ready loop to create its peer.
// A region overlapping one this store hosts is not created: it comes from a
// split this store has not applied yet, and applying it creates the peer
// with its data (an empty peer created here would vote and accept the
// region's log without the data from before the split).
func (s *Store) maybeCreateRegion(r *metapb.Region) error {
	if s.meta.has(r.GetId()) {
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
	p.lastHB, p.writtenBytes, p.writtenKeys = now, 0, 0
	select {
	case s.regionHeartbeats <- req:
	default:
	}
}

func (s *Store) regionHeartbeatLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case req := <-s.regionHeartbeats:
			ctx, cancel := context.WithTimeout(s.ctx, 3*s.cfg.StoreHeartbeatInterval)
			_, err := s.pd.RegionHeartbeat(ctx, req)
			cancel()
			if err != nil && s.ctx.Err() == nil {
				s.log.Warn("region heartbeat", "region", req.GetRegion().GetId(), "err", err)
			}
		}
	}
}
