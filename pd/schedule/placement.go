package schedule

import (
	"github.com/stratadb/strata/proto/metapb"
)

// Placement by location labels (PD's location-labels, e.g. ["zone",
// "host"]): replicas of a region should differ at the highest level
// possible, so that losing a host (or a zone) loses at most one replica
// when the cluster has enough hosts (zones).

// labelValue returns the store's value of label key ("" if unset).
func labelValue(s *metapb.Store, key string) string {
	for _, l := range s.GetLabels() {
		if l.GetKey() == key {
			return l.GetValue()
		}
	}
	return ""
}

// sharedLevels counts the leading location labels a and b share (0: they
// differ at the top level, e.g. different zones). Without location labels
// every pair of stores counts as fully distinct.
func sharedLevels(a, b *metapb.Store, labels []string) int {
	n := 0
	for _, k := range labels {
		va, vb := labelValue(a, k), labelValue(b, k)
		if va == "" || vb == "" || va != vb {
			break
		}
		n++
	}
	return n
}

// closeness is how many label levels store s shares with the closest of
// the other stores (0 when others is empty): lower is better isolated.
func (c *Cluster) closeness(s uint64, others []uint64, labels []string) int {
	st := c.GetStore(s)
	worst := 0
	for _, o := range others {
		if o == s {
			continue
		}
		if os := c.GetStore(o); st != nil && os != nil {
			worst = max(worst, sharedLevels(st.Meta, os.Meta, labels))
		}
	}
	return worst
}

// replicaStores returns the stores of r's voters other than except.
func replicaStores(r *RegionInfo, except uint64) []uint64 {
	var out []uint64
	for _, p := range r.Voters() {
		if p.GetStoreId() != except {
			out = append(out, p.GetStoreId())
		}
	}
	return out
}

// isolationMove finds a replica of r sharing more label levels with the
// others than a placeable store without a replica would: the replica to
// move and its better target (0, 0 when the placement is as isolated as
// the stores allow).
func (rc *ReplicaChecker) isolationMove(r *RegionInfo, labels []string, inf map[uint64]*storeInfluence) (from, to uint64) {
	if len(labels) == 0 {
		return 0, 0
	}
	worst, worstScore := uint64(0), 0
	for _, p := range r.Voters() {
		if sc := rc.c.closeness(p.GetStoreId(), replicaStores(r, p.GetStoreId()), labels); sc > worstScore {
			worst, worstScore = p.GetStoreId(), sc
		}
	}
	if worst == 0 {
		return 0, 0
	}
	others := replicaStores(r, worst)
	best, bestScore, bestLoad := uint64(0), worstScore, 0
	for _, s := range rc.c.Stores() {
		sid := s.Meta.GetId()
		if r.PeerOnStore(sid) != nil || !rc.c.StoreState(sid).placeable() {
			continue
		}
		sc, load := rc.c.closeness(sid, others, labels), rc.c.storeScore(sid, inf)
		if sc < bestScore || (sc == bestScore && best != 0 && load < bestLoad) {
			best, bestScore, bestLoad = sid, sc, load
		}
	}
	if best == 0 {
		return 0, 0
	}
	return worst, best
}
