package schedule

import (
	"slices"

	"github.com/stratadb/strata/proto/metapb"
)

// IDAllocator hands out cluster-unique ids (new peer ids).
type IDAllocator func() (uint64, error)

// ReplicaChecker finds regions whose replicas need repair and builds the
// operator that repairs them (PD's replica checker):
//
//   - a learner left without an operator is promoted (caught up) or removed
//     (the region has its voters already);
//   - fewer healthy voters than MaxReplicas: add one on the best store;
//   - a voter on a Down, Offline or Tombstone store: add a replacement, then
//     remove it;
//   - more voters than MaxReplicas: remove the one on the fullest store
//     (moving the leadership away first).
//
// A region of an affinity group gets its new replica on a target store
// when one is free and loses an extra replica off the target first; it is
// never moved for location labels (the group's target decides).
type ReplicaChecker struct {
	c     *Cluster
	alloc IDAllocator
	aff   *Affinity // nil: no affinity
}

// affinityTarget returns r's affinity target, if any.
func (rc *ReplicaChecker) affinityTarget(r *RegionInfo) (affinityTarget, bool) {
	return rc.aff.target(r)
}

// Check returns an operator for r, a label for the problem found, or nil.
func (rc *ReplicaChecker) Check(r *RegionInfo, inf map[uint64]*storeInfluence) (*Operator, string, error) {
	cfg := rc.c.Config()
	if r.Leader == nil {
		return nil, "", nil // nobody to run it
	}
	timeout := cfg.RegionOpTimeout.D()
	var healthy, unhealthy []*metapb.Peer
	for _, p := range r.Voters() {
		st := rc.c.StoreState(p.GetStoreId())
		if st.healthy() {
			healthy = append(healthy, p)
		} else {
			unhealthy = append(unhealthy, p)
		}
	}
	for _, l := range r.Learners() {
		if r.IsPending(l.GetId()) || r.IsDown(l.GetId()) {
			continue
		}
		if len(healthy) < cfg.MaxReplicas && rc.c.StoreState(l.GetStoreId()).placeable() {
			return NewOperator("promote-learner", OpReplica, r, timeout, PromoteLearner{ToStore: l.GetStoreId(), PeerID: l.GetId()}), "learner-peer", nil
		}
		return NewOperator("remove-learner", OpReplica, r, timeout, RemovePeer{FromStore: l.GetStoreId(), PeerID: l.GetId()}), "learner-peer", nil
	}
	switch {
	case len(healthy) < cfg.MaxReplicas:
		to := rc.bestTarget(r, inf)
		if to == 0 {
			return nil, "", nil
		}
		id, err := rc.alloc()
		if err != nil {
			return nil, "", err
		}
		steps := []OpStep{AddLearner{ToStore: to, PeerID: id}, PromoteLearner{ToStore: to, PeerID: id}}
		problem, desc := "miss-peer", "add-replica"
		if len(unhealthy) > 0 {
			// Replace a dead replica: remove it once the new one votes.
			// Removing a down voter never needs the leadership moved (a
			// down store does not lead).
			dead := unhealthy[0]
			steps = append(steps, RemovePeer{FromStore: dead.GetStoreId(), PeerID: dead.GetId()})
			problem, desc = "down-peer", "replace-down-replica"
			if rc.c.StoreState(dead.GetStoreId()) == StoreOffline {
				problem, desc = "offline-peer", "replace-offline-replica"
				if r.LeaderStore() == dead.GetStoreId() {
					// The new voter takes the leadership before the old
					// replica goes.
					steps = slices.Insert(steps, 2, OpStep(TransferLeader{FromStore: dead.GetStoreId(), ToStore: to}))
				}
			}
		}
		return NewOperator(desc, OpReplica, r, timeout, steps...), problem, nil
	case len(unhealthy) > 0:
		// Enough healthy voters: drop the dead one.
		dead := unhealthy[0]
		var steps []OpStep
		if r.LeaderStore() == dead.GetStoreId() {
			steps = append(steps, TransferLeader{FromStore: dead.GetStoreId(), ToStore: healthy[0].GetStoreId()})
		}
		steps = append(steps, RemovePeer{FromStore: dead.GetStoreId(), PeerID: dead.GetId()})
		return NewOperator("remove-down-replica", OpReplica, r, timeout, steps...), "down-peer", nil
	case len(healthy) > cfg.MaxReplicas:
		victim := rc.worstReplica(r, healthy, inf)
		var steps []OpStep
		if r.LeaderStore() == victim.GetStoreId() {
			for _, p := range healthy {
				if p.GetStoreId() != victim.GetStoreId() && !r.IsPending(p.GetId()) {
					steps = append(steps, TransferLeader{FromStore: victim.GetStoreId(), ToStore: p.GetStoreId()})
					break
				}
			}
		}
		steps = append(steps, RemovePeer{FromStore: victim.GetStoreId(), PeerID: victim.GetId()})
		return NewOperator("remove-extra-replica", OpReplica, r, timeout, steps...), "extra-peer", nil
	}
	if _, pinned := rc.affinityTarget(r); !pinned && len(r.PendingPeers) == 0 && len(r.DownPeers) == 0 {
		if from, to := rc.isolationMove(r, cfg.LocationLabels, inf); from != 0 {
			id, err := rc.alloc()
			if err != nil {
				return nil, "", err
			}
			return NewOperator("move-to-better-location", OpReplica, r, timeout, MovePeerSteps(r, from, to, id)...), "location", nil
		}
	}
	return nil, "", nil
}

// storeScore is a store's load for placement: its region count plus what
// running operators will add.
func (c *Cluster) storeScore(sid uint64, inf map[uint64]*storeInfluence) int {
	n, _, _ := c.StoreCounts(sid)
	if i := inf[sid]; i != nil {
		n += i.regions
	}
	return n
}

// bestTarget picks the placeable store without a replica of r with the
// fewest regions; 0 if none.
func (rc *ReplicaChecker) bestTarget(r *RegionInfo, inf map[uint64]*storeInfluence) uint64 {
	labels := rc.c.Config().LocationLabels
	others := replicaStores(r, 0)
	if t, ok := rc.affinityTarget(r); ok {
		for _, sid := range t.Voters {
			if r.PeerOnStore(sid) == nil && rc.c.StoreState(sid).placeable() {
				return sid
			}
		}
	}
	var best uint64
	bestScore, bestClose := 0, 0
	for _, s := range rc.c.Stores() {
		sid := s.Meta.GetId()
		if r.PeerOnStore(sid) != nil || !rc.c.StoreState(sid).placeable() {
			continue
		}
		// Best isolated from the other replicas first, then least loaded.
		cl, sc := rc.c.closeness(sid, others, labels), rc.c.storeScore(sid, inf)
		if best == 0 || cl < bestClose || (cl == bestClose && sc < bestScore) {
			best, bestScore, bestClose = sid, sc, cl
		}
	}
	return best
}

// worstReplica picks the replica on the store with the most regions.
func (rc *ReplicaChecker) worstReplica(r *RegionInfo, peers []*metapb.Peer, inf map[uint64]*storeInfluence) *metapb.Peer {
	if t, ok := rc.affinityTarget(r); ok {
		for _, p := range peers {
			if !t.hasVoter(p.GetStoreId()) {
				return p
			}
		}
	}
	labels := rc.c.Config().LocationLabels
	var worst *metapb.Peer
	worstScore, worstClose := 0, 0
	for _, p := range peers {
		var others []uint64
		for _, o := range peers {
			if o != p {
				others = append(others, o.GetStoreId())
			}
		}
		cl, sc := rc.c.closeness(p.GetStoreId(), others, labels), rc.c.storeScore(p.GetStoreId(), inf)
		if worst == nil || cl > worstClose || (cl == worstClose && sc > worstScore) {
			worst, worstScore, worstClose = p, sc, cl
		}
	}
	return worst
}
