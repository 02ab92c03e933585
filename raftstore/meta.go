package raftstore

import (
	"bytes"
	"sync"

	"github.com/google/btree"

	"github.com/stratadb/strata/proto/metapb"
)

// storeMeta is the store-wide view of the regions this store hosts: by id
// and ordered by key range, plus which of them this store leads. The Ready
// loop is the only writer (create, split); the PD heartbeat loops, the KV
// service and tests read it. Regions stored here are never mutated (an
// update stores a new *metapb.Region), so readers may keep them.
type storeMeta struct {
	mu      sync.RWMutex
	byID    map[uint64]*metapb.Region
	byRange *btree.BTreeG[*metapb.Region] // by start key; ranges do not overlap
	leaders map[uint64]bool
}

func newStoreMeta() *storeMeta {
	return &storeMeta{
		byID:    map[uint64]*metapb.Region{},
		byRange: btree.NewG(16, func(a, b *metapb.Region) bool { return bytes.Compare(a.GetStartKey(), b.GetStartKey()) < 0 }),
		leaders: map[uint64]bool{},
	}
}

// setRegion inserts or replaces r (by id). The caller guarantees r overlaps
// no other region's range (a split first shrinks the original).
func (m *storeMeta) setRegion(r *metapb.Region) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.byID[r.GetId()]; ok {
		m.byRange.Delete(old)
	}
	m.byID[r.GetId()] = r
	m.byRange.ReplaceOrInsert(r)
}

// remove drops region id (its peer here was destroyed).
func (m *storeMeta) remove(id uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.byID[id]; ok {
		m.byRange.Delete(old)
		delete(m.byID, id)
	}
	delete(m.leaders, id)
}

func (m *storeMeta) region(id uint64) *metapb.Region {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.byID[id]
}

func (m *storeMeta) has(id uint64) bool { return m.region(id) != nil }

// overlapping returns the regions intersecting [start, end) (empty end:
// +inf), in key order.
func (m *storeMeta) overlapping(start, end []byte) []*metapb.Region {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []*metapb.Region
	pivot := &metapb.Region{StartKey: start}
	m.byRange.DescendLessOrEqual(pivot, func(r *metapb.Region) bool {
		if endAfter(r.GetEndKey(), start) {
			out = append(out, r)
		}
		return false
	})
	m.byRange.AscendGreaterOrEqual(pivot, func(r *metapb.Region) bool {
		if len(end) > 0 && bytes.Compare(r.GetStartKey(), end) >= 0 {
			return false
		}
		if len(out) == 0 || out[len(out)-1] != r {
			out = append(out, r)
		}
		return true
	})
	return out
}

// regionAt returns the region holding key, or nil.
func (m *storeMeta) regionAt(key []byte) *metapb.Region {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out *metapb.Region
	m.byRange.DescendLessOrEqual(&metapb.Region{StartKey: key}, func(r *metapb.Region) bool {
		if endAfter(r.GetEndKey(), key) {
			out = r
		}
		return false
	})
	return out
}

// endAfter reports whether the exclusive end e lies after key k (empty e
// is +inf).
func endAfter(e, k []byte) bool { return len(e) == 0 || bytes.Compare(e, k) > 0 }

// sorted returns every region in key order.
func (m *storeMeta) sorted() []*metapb.Region {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*metapb.Region, 0, len(m.byID))
	m.byRange.Ascend(func(r *metapb.Region) bool { out = append(out, r); return true })
	return out
}

func (m *storeMeta) ids() []uint64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]uint64, 0, len(m.byID))
	for id := range m.byID {
		out = append(out, id)
	}
	return out
}

func (m *storeMeta) setLeader(id uint64, leader bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.leaders[id] = leader
}

func (m *storeMeta) isLeader(id uint64) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.leaders[id]
}

// counts returns the number of regions and of leaders.
func (m *storeMeta) counts() (regions, leaders int) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, l := range m.leaders {
		if l {
			leaders++
		}
	}
	return len(m.byID), leaders
}
