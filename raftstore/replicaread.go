package raftstore

import (
	"context"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/proto/errorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/raft_serverpb"
)

// Reads on followers (issue 7; TiKV's follower read and stale read).
//
// Follower read (ReplicaReadIndex). A follower or learner asked for a
// linearizable read gets a read index from its region's leader (the layer
// above makes the round trip: store/server's ReadIndex RPC, where the leader
// confirms its leadership as for its own reads, records the read's
// timestamp and waits for the in-flight writes the read must see, then
// answers its applied index), and serves the read once its own applied
// index reached it. Everything acknowledged before the read started was
// applied on the leader at or below that index, and committed entries are
// the same on every replica, so the follower sees it. A follower that
// cannot reach the leader, or whose leader lost leadership, gets no index
// and fails the read (the client goes to another replica).
//
// Stale read (StaleRead). A replica serves a read at ts without any leader
// contact when ts <= its safe ts. Leaders compute a resolved ts per region
// every ResolvedTSInterval: a fresh PD timestamp T is fetched off the loop;
// on the loop the layer above raises its max read ts to T (so every write
// evaluated from then on commits above T) and reports the lowest commit ts
// of its in-flight writes (1PC, async commit) minus one, M; for each region
// this store leads under a valid lease (tick lease or hibernated support
// lease), with L the lowest start ts of the read-blocking locks in the
// region's lock key space at its applied index X (cached per peer,
// rescanned once a lock was written), resolved = min(T, M, L). Claim: every
// write of the region with commit_ts <= resolved is at an index <= X.
// A Percolator commit needs its lock first: if the lock was applied by X
// and still there, L <= start_ts < commit_ts; if it was applied after X,
// the prewrite was answered after X was captured, so the commit ts fetched
// after it is > T. A write that commits without a lock (1PC) or with a
// commit ts fixed at prewrite (async commit) either was in flight at the
// capture (then M < its commit ts) or was evaluated after max ts reached T
// (commit ts > T) or was already applied (index <= X). The lease makes X a
// fact about the region's committed log: no other leader can commit
// entries meanwhile, and a later leader raises its max ts from a fresh PD
// timestamp before serving. Pessimistic locks are ignored: they block no
// read, and a transaction prewrites (a read-blocking lock) before it takes
// its commit ts.
//
// The leader publishes (region, X, resolved) to the stores of its peers on
// the next StoreLiveness message (support.go; one message per store pair,
// no per-region raft traffic, hibernated regions stay asleep), packed as
// parallel arrays with the round's common ts (SafeTSBatch): a round for
// thousands of regions allocates a few slices, not an object per region.
// A replica's safe ts becomes resolved once its applied index reaches X
// (up to maxPendingSafeTS pairs wait per peer); the leader's own safe ts
// is resolved at once. A pair is a fact about the region's log, so it
// holds whatever the receiver's term or leader. Safe ts is published for
// readers off the loop (peer.safeTS) with a copy of the region
// (peer.staleRegion, stored before the first safe ts and replaced when an
// admin command changes the region). Leases disabled (MaxLeaderLease < 0)
// means no resolved ts: stale reads go to the leader.
//
// A read that passed these checks takes an engine snapshot and must then
// confirm that the peer still exists here (ReplicaPresent): a removed
// peer's data is deleted after it leaves the delegates map, and a snapshot
// install clears the region's ranges before its files are ingested
// (snapinstall.go); the peer is marked installing before that batch
// commits and until the ingest finished, and follower reads waiting on the
// loop are held until then.
//
// Metrics: strata_raftstore_reads_total{path="follower_read_index"|"stale"},
// strata_raftstore_stale_read_not_ready_total.

// pendingSafeTS is a resolved ts waiting for the applied index to reach index.
type pendingSafeTS struct{ index, ts uint64 }

const maxPendingSafeTS = 16

// ResolvedTSHooks connect the resolved-ts computation to the transaction
// layer, which knows timestamps and lock formats. All three must be set.
type ResolvedTSHooks struct {
	// TS returns a fresh PD timestamp; called off the loop.
	TS func(ctx context.Context) (uint64, error)
	// AdvanceMaxTS raises the max read ts to ts and returns one below the
	// lowest commit ts of the writes in flight (math.MaxUint64 when none),
	// atomically with the raise. Called on the loop: quick, no store calls.
	AdvanceMaxTS func(ts uint64) uint64
	// MinLockTS returns the lowest start ts of the locks in [start, end)
	// (user keys; end empty: no bound) that block reads, read from r's lock
	// key space, or math.MaxUint64. Called on the loop.
	MinLockTS func(r pebble.Reader, start, end []byte) (uint64, error)
}

// SetResolvedTSHooks installs h (nil removes them): leaders then compute
// resolved ts every ResolvedTSInterval and replicas serve stale reads.
func (s *Store) SetResolvedTSHooks(h *ResolvedTSHooks) { s.resolvedHooks.Store(h) }

// ReplicaReadIndex waits until a linearizable read of the region in rctx
// may be served from this store's engine by a follower or learner:
// leaderIndex asks the leader (the peer given) for its read index, then
// this replica waits until its applied index reached it. On the leader it
// is ReadIndex. It returns the region at that point (shared, read-only) or
// a region error; leaderIndex's region error is passed on.
func (s *Store) ReplicaReadIndex(ctx context.Context, rctx *kvrpcpb.Context,
	leaderIndex func(ctx context.Context, leader *metapb.Peer) (uint64, *errorpb.Error, error)) (*metapb.Region, *errorpb.Error, error) {
	id := rctx.GetRegionId()
	if s.meta.isLeader(id) {
		return s.ReadIndex(ctx, rctx)
	}
	v, ok := s.delegates.Load(id)
	if !ok {
		return nil, errRegionNotFound(id), nil
	}
	p := v.(*peer)
	lead := p.leaderPub.Load()
	var leader *metapb.Peer
	if r := s.meta.region(id); r != nil && lead != 0 {
		for _, pm := range r.GetPeers() {
			if pm.GetId() == lead {
				leader = proto.Clone(pm).(*metapb.Peer)
			}
		}
	}
	switch {
	case leader == nil:
		return nil, errNotLeader(id, nil), nil
	case leader.GetStoreId() == s.id:
		return s.ReadIndex(ctx, rctx)
	}
	idx, rerr, err := leaderIndex(ctx, leader)
	if err != nil || rerr != nil {
		return nil, rerr, err
	}
	return s.submitRead(ctx, &readRequest{rctx: rctx, waitIndex: max(idx, 1), start: time.Now(), done: make(chan readResult, 1)})
}

// AppliedIndex returns the applied index of this store's peer of regionID
// whose apply batch is in the engine (0 when there is no such peer). Every
// write this peer answered is at or below it.
func (s *Store) AppliedIndex(regionID uint64) uint64 {
	v, ok := s.delegates.Load(regionID)
	if !ok {
		return 0
	}
	return v.(*peer).appliedPub.Load()
}

// StaleRead checks, on the caller's goroutine, that this store's replica
// of the region in rctx may serve a read at ts with no leader contact: its
// safe ts is >= ts and the request's epoch matches. It returns the region
// (shared, read-only) or a region error: DataIsNotReady when the safe ts is
// lower (the client retries on the leader).
func (s *Store) StaleRead(rctx *kvrpcpb.Context, ts uint64) (*metapb.Region, *errorpb.Error) {
	id := rctx.GetRegionId()
	v, ok := s.delegates.Load(id)
	if !ok {
		return nil, errRegionNotFound(id)
	}
	p := v.(*peer)
	safe := p.safeTS.Load()
	region := p.staleRegion.Load() // stored before the first safe ts
	if region == nil || safe < ts || p.installingPub.Load() {
		staleReadNotReady.Inc()
		return nil, &errorpb.Error{Message: "raftstore: stale read above the replica's safe ts",
			DataIsNotReady: &errorpb.DataIsNotReady{RegionId: id, PeerId: p.meta.GetId(), SafeTs: safe}}
	}
	if !epochMatches(rctx.GetRegionEpoch(), region) {
		return nil, &errorpb.Error{Message: "raftstore: epoch not match",
			EpochNotMatch: &errorpb.EpochNotMatch{CurrentRegions: []*metapb.Region{region}}}
	}
	readsStale.Inc()
	return region, nil
}

// SafeTS returns the safe ts of this store's replica of regionID (0 when
// unknown).
func (s *Store) SafeTS(regionID uint64) uint64 {
	v, ok := s.delegates.Load(regionID)
	if !ok {
		return 0
	}
	return v.(*peer).safeTS.Load()
}

// ReplicaPresent reports whether this store still has its peer of regionID
// with its data in place. A replica read calls it after taking its engine
// snapshot: a destroyed peer leaves the delegates map before its data is
// deleted, and a peer starting a snapshot install is marked installing
// before its ranges are cleared, so true means the snapshot holds the
// region's data at an applied index at least the one the read checked.
func (s *Store) ReplicaPresent(regionID uint64) bool {
	v, ok := s.delegates.Load(regionID)
	return ok && !v.(*peer).installingPub.Load()
}

// submitRead queues rr for the loop and waits for its answer.
func (s *Store) submitRead(ctx context.Context, rr *readRequest) (*metapb.Region, *errorpb.Error, error) {
	busy := false
	if !s.inbox.push(func(m *inboxMsgs) {
		if busy = len(m.reads) >= maxQueuedRequests; !busy {
			m.reads = append(m.reads, rr)
		}
	}) {
		return nil, nil, ErrStopped
	}
	if busy {
		return nil, ErrServerIsBusy("too many queued reads"), nil
	}
	select {
	case res := <-rr.done:
		return res.region, res.rerr, res.err
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	case <-s.done:
		select {
		case res := <-rr.done:
			return res.region, res.rerr, res.err
		default:
			return nil, nil, ErrStopped
		}
	}
}

// queueApplyWait serves a follower read once p applied its read index.
func (s *Store) queueApplyWait(p *peer, rr *readRequest) {
	switch {
	case p.uninitialized:
		rr.respond(readResult{rerr: errRegionNotFound(p.region.GetId())})
	case !epochMatches(rr.rctx.GetRegionEpoch(), p.region):
		rr.respond(readResult{rerr: p.epochNotMatch()})
	case p.ps.apply.applied >= rr.waitIndex && !p.ps.installing():
		readsFollower.Inc()
		rr.respond(readResult{region: proto.Clone(p.region).(*metapb.Region)})
	default:
		p.applyWaits = append(p.applyWaits, rr)
	}
}

// serveApplyWaits answers the follower reads whose index p applied (not
// while a snapshot install is under way: its data is not all there).
func (p *peer) serveApplyWaits() {
	if len(p.applyWaits) == 0 || p.ps.installing() {
		return
	}
	applied := p.ps.apply.applied
	var region *metapb.Region
	kept := p.applyWaits[:0]
	for _, rr := range p.applyWaits {
		if rr.waitIndex > applied {
			kept = append(kept, rr)
			continue
		}
		if region == nil {
			region = proto.Clone(p.region).(*metapb.Region)
		}
		readsFollower.Inc()
		rr.respond(readResult{region: region})
	}
	clear(p.applyWaits[len(kept):])
	p.applyWaits = kept
}

// resolveLoop fetches a PD timestamp every ResolvedTSInterval and hands it
// to the loop (resolveRegions).
func (s *Store) resolveLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.ResolvedTSInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		h := s.resolvedHooks.Load()
		if h == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(s.ctx, s.cfg.ResolvedTSInterval)
		ts, err := h.TS(ctx)
		cancel()
		if err != nil {
			s.log.Debug("resolved ts: no timestamp", "err", err)
			continue
		}
		s.inbox.push(func(m *inboxMsgs) { m.resolveTS = max(m.resolveTS, ts) })
	}
}

// resolveRegions computes the resolved ts of every region this store leads
// under a valid lease from the PD timestamp ts (see the comment at the top)
// and queues it for the stores of its other peers.
func (s *Store) resolveRegions(ts uint64) {
	h := s.resolvedHooks.Load()
	if h == nil || s.maxLease <= 0 {
		return
	}
	common := min(ts, h.AdvanceMaxTS(ts))
	now := s.now()
	clear(s.safeTSOut) // this round's values supersede what was not sent yet
	for id, p := range s.led {
		if p.destroyed || p.uninitialized || !p.isLeader || s.peers[id] != p || !s.leaseHeld(p, now) {
			continue
		}
		if !p.locksKnown {
			l, err := h.MinLockTS(s.db, p.region.GetStartKey(), p.region.GetEndKey())
			if err != nil {
				s.log.Warn("resolved ts: lock scan", "region", id, "err", err)
				continue
			}
			p.minLock, p.locksKnown = l, true
		}
		resolved := min(common, p.minLock)
		if resolved == 0 {
			continue // nothing to publish (and 0 means "the common ts" on the wire)
		}
		idx := p.ps.apply.applied
		p.advanceSafeTS(resolved)
		for _, pm := range p.region.GetPeers() {
			st := pm.GetStoreId()
			if st == s.id {
				continue
			}
			if s.safeTSOut == nil {
				s.safeTSOut = make(map[uint64]*raft_serverpb.SafeTSBatch)
			}
			b := s.safeTSOut[st]
			if b == nil {
				b = &raft_serverpb.SafeTSBatch{Ts: common}
				s.safeTSOut[st] = b
			}
			if resolved != common && b.RegionTs == nil {
				b.RegionTs = make([]uint64, len(b.RegionIds), cap(b.RegionIds)) // 0: the common ts
			}
			b.RegionIds = append(b.RegionIds, id)
			b.AppliedIndexes = append(b.AppliedIndexes, idx)
			if b.RegionTs != nil {
				b.RegionTs = append(b.RegionTs, resolved) // resolved == common is sent as is
			}
		}
	}
}

// leaseHeld reports whether leader p holds a lease now: the tick lease, or
// as a hibernated leader the support lease (support.go). A hibernated
// leader's tick lease, which reads accept until the followers' acks
// arrive (hibernatedLeaseRead), is not counted: its resolved ts waits for
// the support lease.
func (s *Store) leaseHeld(p *peer, now time.Time) bool {
	if p.hibernated {
		return s.supportLease(p, now) != nil
	}
	return p.tickLeaseHeld(now)
}

// receiveSafeTS records the resolved ts a leader's store sent.
func (s *Store) receiveSafeTS(from uint64, b *raft_serverpb.SafeTSBatch) {
	ids, idxs, rts := b.GetRegionIds(), b.GetAppliedIndexes(), b.GetRegionTs()
	if len(idxs) != len(ids) || (rts != nil && len(rts) != len(ids)) {
		s.log.Warn("resolved ts: malformed batch ignored", "from_store", from,
			"regions", len(ids), "indexes", len(idxs), "region_ts", len(rts))
		return
	}
	for i, id := range ids {
		p := s.peers[id]
		if p == nil || p.destroyed || p.uninitialized || p.isLeader {
			continue
		}
		ts := b.GetTs()
		if rts != nil && rts[i] != 0 {
			ts = rts[i]
		}
		if p.ps.apply.applied >= idxs[i] {
			p.advanceSafeTS(ts)
			continue
		}
		pd := pendingSafeTS{index: idxs[i], ts: ts}
		if n := len(p.pendingSafe); n >= maxPendingSafeTS {
			p.pendingSafe[n-1] = pd // keep the newest; the older ones still advance it
		} else {
			p.pendingSafe = append(p.pendingSafe, pd)
		}
	}
}

// applySafeTS advances p's safe ts by the pending pairs its applied index
// reached. Called after the apply batch is in the engine.
func (p *peer) applySafeTS() {
	if len(p.pendingSafe) == 0 {
		return
	}
	applied := p.ps.apply.applied
	var best uint64
	kept := p.pendingSafe[:0]
	for _, pd := range p.pendingSafe {
		if pd.index <= applied {
			best = max(best, pd.ts)
			continue
		}
		kept = append(kept, pd)
	}
	p.pendingSafe = kept
	if best > 0 {
		p.advanceSafeTS(best)
	}
}

// advanceSafeTS publishes ts as p's safe ts if it is higher (the loop is
// the only writer). The region copy is stored first, so a reader that sees
// a safe ts sees a region.
func (p *peer) advanceSafeTS(ts uint64) {
	if ts <= p.safeTS.Load() {
		return
	}
	if p.staleRegion.Load() == nil {
		p.staleRegion.Store(proto.Clone(p.region).(*metapb.Region))
	}
	p.safeTS.Store(ts)
}

// regionChangedStale republishes the region for stale readers after an
// admin command changed it: a safe ts is a fact about the region's log, so
// it stays valid for the region's current range.
func (p *peer) regionChangedStale() {
	if r := p.staleRegion.Load(); r != nil && !sameRegion(r, p.region) {
		p.staleRegion.Store(proto.Clone(p.region).(*metapb.Region))
	}
}
