package pd

import (
	"bytes"
	"slices"
	"sort"

	"github.com/stratadb/strata/proto/metapb"
)

// regionInfo is PD's view of one region. meta is never mutated once stored
// (updates replace it), so it may be handed to gRPC marshalling without a
// copy. leader and term are guarded by the cluster lock.
type regionInfo struct {
	meta   *metapb.Region
	leader *metapb.Peer
	term   uint64
}

// regionIndex is an ordered index of non-overlapping regions by start key,
// plus a by-id map. Not safe for concurrent use; the cluster lock guards it.
//
// The ordered part is a sorted slice: lookups are a binary search, updates
// copy O(n) pointers. That is fine for the region counts we expect (up to
// tens of thousands); swap for a B-tree if splits become frequent at scale.
type regionIndex struct {
	byID   map[uint64]*regionInfo
	sorted []*regionInfo // by meta.StartKey, non-overlapping
}

func newRegionIndex() *regionIndex {
	return &regionIndex{byID: map[uint64]*regionInfo{}}
}

func (ri *regionIndex) len() int { return len(ri.byID) }

// endAfter reports whether the exclusive end e lies after key k
// (empty end = +inf).
func endAfter(e, k []byte) bool { return len(e) == 0 || bytes.Compare(e, k) > 0 }

// find returns the region containing key, or nil.
func (ri *regionIndex) find(key []byte) *regionInfo {
	// First region whose start key is > key; the candidate is the one before.
	i := sort.Search(len(ri.sorted), func(i int) bool {
		return bytes.Compare(ri.sorted[i].meta.StartKey, key) > 0
	})
	if i == 0 {
		return nil
	}
	r := ri.sorted[i-1]
	if endAfter(r.meta.EndKey, key) {
		return r
	}
	return nil
}

// overlaps returns the regions (other than id) intersecting [start, end).
func (ri *regionIndex) overlaps(id uint64, start, end []byte) []*regionInfo {
	var out []*regionInfo
	i := sort.Search(len(ri.sorted), func(i int) bool {
		return bytes.Compare(ri.sorted[i].meta.StartKey, start) > 0
	})
	if i > 0 {
		i-- // the region before may extend into [start, end)
	}
	for ; i < len(ri.sorted); i++ {
		r := ri.sorted[i].meta
		if len(end) > 0 && bytes.Compare(r.StartKey, end) >= 0 {
			break
		}
		if r.Id != id && endAfter(r.EndKey, start) {
			out = append(out, ri.sorted[i])
		}
	}
	return out
}

func (ri *regionIndex) remove(id uint64) {
	r, ok := ri.byID[id]
	if !ok {
		return
	}
	delete(ri.byID, id)
	if i := ri.pos(r.meta.StartKey); i < len(ri.sorted) && ri.sorted[i] == r {
		ri.sorted = slices.Delete(ri.sorted, i, i+1)
	}
}

func (ri *regionIndex) pos(start []byte) int {
	return sort.Search(len(ri.sorted), func(i int) bool {
		return bytes.Compare(ri.sorted[i].meta.StartKey, start) >= 0
	})
}

// put inserts or replaces r, removing every other region it overlaps.
func (ri *regionIndex) put(r *regionInfo) {
	ri.remove(r.meta.Id)
	for _, o := range ri.overlaps(r.meta.Id, r.meta.StartKey, r.meta.EndKey) {
		ri.remove(o.meta.Id)
	}
	ri.byID[r.meta.Id] = r
	ri.sorted = slices.Insert(ri.sorted, ri.pos(r.meta.StartKey), r)
}
