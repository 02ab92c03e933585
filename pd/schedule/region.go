package schedule

import (
	"bytes"
	"cmp"
	"slices"
	"sort"

	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/pdpb"
)

// RegionInfo is PD's view of one region. Never mutated once stored in a
// Cluster: heartbeats replace it, so a reader may keep the pointer.
type RegionInfo struct {
	Meta         *metapb.Region
	Leader       *metapb.Peer // nil until a leader reports
	Term         uint64
	DownPeers    []*pdpb.PeerStats
	PendingPeers []*metapb.Peer
	// ApproximateSize (bytes) and ApproximateKeys as the leader reported.
	ApproximateSize uint64
	ApproximateKeys uint64
	// Flow in the leader's last reporting period.
	BytesWritten, KeysWritten, BytesRead, KeysRead uint64
	IntervalMs                                     uint64
}

// RegionFromHeartbeat builds the RegionInfo a heartbeat reports.
func RegionFromHeartbeat(req *pdpb.RegionHeartbeatRequest) *RegionInfo {
	return &RegionInfo{
		Meta: req.GetRegion(), Leader: req.GetLeader(), Term: req.GetTerm(),
		DownPeers: req.GetDownPeers(), PendingPeers: req.GetPendingPeers(),
		ApproximateSize: req.GetApproximateSize(), ApproximateKeys: req.GetApproximateKeys(),
		BytesWritten: req.GetBytesWritten(), KeysWritten: req.GetKeysWritten(),
		BytesRead: req.GetBytesRead(), KeysRead: req.GetKeysRead(), IntervalMs: req.GetIntervalMs(),
	}
}

// ID is the region id.
func (r *RegionInfo) ID() uint64 { return r.Meta.GetId() }

// Epoch is the region epoch (never nil).
func (r *RegionInfo) Epoch() *metapb.RegionEpoch {
	if e := r.Meta.GetRegionEpoch(); e != nil {
		return e
	}
	return &metapb.RegionEpoch{}
}

// PeerOnStore returns the region's peer on store sid, or nil.
func (r *RegionInfo) PeerOnStore(sid uint64) *metapb.Peer {
	for _, p := range r.Meta.GetPeers() {
		if p.GetStoreId() == sid {
			return p
		}
	}
	return nil
}

// LeaderStore is the store of the leader, 0 when unknown.
func (r *RegionInfo) LeaderStore() uint64 { return r.Leader.GetStoreId() }

// Voters returns the voter peers.
func (r *RegionInfo) Voters() []*metapb.Peer {
	var out []*metapb.Peer
	for _, p := range r.Meta.GetPeers() {
		if p.GetRole() == metapb.PeerRole_Voter {
			out = append(out, p)
		}
	}
	return out
}

// Learners returns the learner peers.
func (r *RegionInfo) Learners() []*metapb.Peer {
	var out []*metapb.Peer
	for _, p := range r.Meta.GetPeers() {
		if p.GetRole() == metapb.PeerRole_Learner {
			out = append(out, p)
		}
	}
	return out
}

// IsPending reports whether peer id is behind the leader's log.
func (r *RegionInfo) IsPending(id uint64) bool {
	for _, p := range r.PendingPeers {
		if p.GetId() == id {
			return true
		}
	}
	return false
}

// IsDown reports whether the leader has not heard from peer id recently.
func (r *RegionInfo) IsDown(id uint64) bool {
	for _, p := range r.DownPeers {
		if p.GetPeer().GetId() == id {
			return true
		}
	}
	return false
}

// minRegionSize is the size an empty region counts for balancing (as PD:
// balance by size degrades to balance by count).
const minRegionSize = 1 << 20

// size is the region's size for balancing.
func (r *RegionInfo) size() uint64 { return max(r.ApproximateSize, minRegionSize) }

// writeRate is the region's write bytes per second in its last period.
func (r *RegionInfo) writeRate() float64 {
	if r.IntervalMs == 0 {
		return 0
	}
	return float64(r.BytesWritten) * 1000 / float64(r.IntervalMs)
}

// endAfter reports whether the exclusive end e lies after key k
// (empty end = +inf).
func endAfter(e, k []byte) bool { return len(e) == 0 || bytes.Compare(e, k) > 0 }

// RegionTree is an ordered index of non-overlapping regions by start key,
// a by-id map and per-store indexes of peers and leaders. Not safe for
// concurrent use; Cluster's lock guards it.
//
// The ordered part is a sorted slice: lookups are a binary search, inserts
// copy O(n) pointers, fine for tens of thousands of regions.
type RegionTree struct {
	byID    map[uint64]*RegionInfo
	sorted  []*RegionInfo                     // by Meta.StartKey, non-overlapping
	peers   map[uint64]map[uint64]*RegionInfo // store -> region id -> region
	leaders map[uint64]map[uint64]*RegionInfo
}

// NewRegionTree returns an empty tree.
func NewRegionTree() *RegionTree {
	return &RegionTree{byID: map[uint64]*RegionInfo{}, peers: map[uint64]map[uint64]*RegionInfo{}, leaders: map[uint64]map[uint64]*RegionInfo{}}
}

// Len is the number of regions.
func (t *RegionTree) Len() int { return len(t.byID) }

// Get returns region id or nil.
func (t *RegionTree) Get(id uint64) *RegionInfo { return t.byID[id] }

// Find returns the region containing key, or nil.
func (t *RegionTree) Find(key []byte) *RegionInfo {
	i := sort.Search(len(t.sorted), func(i int) bool {
		return bytes.Compare(t.sorted[i].Meta.GetStartKey(), key) > 0
	})
	if i == 0 {
		return nil
	}
	if r := t.sorted[i-1]; endAfter(r.Meta.GetEndKey(), key) {
		return r
	}
	return nil
}

// Overlaps returns the regions other than id intersecting [start, end).
func (t *RegionTree) Overlaps(id uint64, start, end []byte) []*RegionInfo {
	var out []*RegionInfo
	i := sort.Search(len(t.sorted), func(i int) bool {
		return bytes.Compare(t.sorted[i].Meta.GetStartKey(), start) > 0
	})
	if i > 0 {
		i-- // the region before may extend into [start, end)
	}
	for ; i < len(t.sorted); i++ {
		r := t.sorted[i].Meta
		if len(end) > 0 && bytes.Compare(r.GetStartKey(), end) >= 0 {
			break
		}
		if r.GetId() != id && endAfter(r.GetEndKey(), start) {
			out = append(out, t.sorted[i])
		}
	}
	return out
}

// Scan returns up to limit regions (0: all) intersecting [start, end) in
// key order (empty end = +inf).
func (t *RegionTree) Scan(start, end []byte, limit int) []*RegionInfo {
	var out []*RegionInfo
	i := sort.Search(len(t.sorted), func(i int) bool {
		return bytes.Compare(t.sorted[i].Meta.GetStartKey(), start) > 0
	})
	if i > 0 && endAfter(t.sorted[i-1].Meta.GetEndKey(), start) {
		i--
	}
	for ; i < len(t.sorted) && (limit <= 0 || len(out) < limit); i++ {
		r := t.sorted[i]
		if len(end) > 0 && bytes.Compare(r.Meta.GetStartKey(), end) >= 0 {
			break
		}
		out = append(out, r)
	}
	return out
}

func (t *RegionTree) remove(id uint64) {
	r, ok := t.byID[id]
	if !ok {
		return
	}
	delete(t.byID, id)
	if i := t.pos(r.Meta.GetStartKey()); i < len(t.sorted) && t.sorted[i] == r {
		t.sorted = slices.Delete(t.sorted, i, i+1)
	}
	for _, p := range r.Meta.GetPeers() {
		delete(t.peers[p.GetStoreId()], id)
	}
	if ls := r.LeaderStore(); ls != 0 {
		delete(t.leaders[ls], id)
	}
}

func (t *RegionTree) pos(start []byte) int {
	return sort.Search(len(t.sorted), func(i int) bool {
		return bytes.Compare(t.sorted[i].Meta.GetStartKey(), start) >= 0
	})
}

func addIndex(m map[uint64]map[uint64]*RegionInfo, sid uint64, r *RegionInfo) {
	rs := m[sid]
	if rs == nil {
		rs = map[uint64]*RegionInfo{}
		m[sid] = rs
	}
	rs[r.ID()] = r
}

// Put inserts or replaces r, removing every other region it overlaps, and
// returns the removed overlapping regions.
func (t *RegionTree) Put(r *RegionInfo) []*RegionInfo {
	t.remove(r.ID())
	overlaps := t.Overlaps(r.ID(), r.Meta.GetStartKey(), r.Meta.GetEndKey())
	for _, o := range overlaps {
		t.remove(o.ID())
	}
	t.byID[r.ID()] = r
	t.sorted = slices.Insert(t.sorted, t.pos(r.Meta.GetStartKey()), r)
	for _, p := range r.Meta.GetPeers() {
		addIndex(t.peers, p.GetStoreId(), r)
	}
	if ls := r.LeaderStore(); ls != 0 {
		addIndex(t.leaders, ls, r)
	}
	return overlaps
}

// StoreRegions returns the regions with a peer on store sid (any order).
func (t *RegionTree) StoreRegions(sid uint64) []*RegionInfo { return mapValues(t.peers[sid]) }

// StoreLeaders returns the regions led from store sid (any order).
func (t *RegionTree) StoreLeaders(sid uint64) []*RegionInfo { return mapValues(t.leaders[sid]) }

func mapValues(m map[uint64]*RegionInfo) []*RegionInfo {
	out := make([]*RegionInfo, 0, len(m))
	for _, r := range m {
		out = append(out, r)
	}
	// Deterministic order for tests and logs.
	slices.SortFunc(out, func(a, b *RegionInfo) int { return cmp.Compare(a.ID(), b.ID()) })
	return out
}
