package raftstore

import (
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/stratadb/strata/kv/keys"
)

// ForgetAppliedForTest simulates losing every unsynced apply batch of a
// stopped store: it deletes all user data (every key space of kv/keys) and rewinds each region's applied
// index to the initial state, so the next Open must rebuild everything by
// re-applying the (synced) raft log. It fails if a region's log was
// compacted or the region was split. Tests only.
func ForgetAppliedForTest(dataDir string) error {
	db, err := openPebble(dataDir, engineOptions())
	if err != nil {
		return err
	}
	lo, hi := regionStateRange()
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		db.Close()
		return err
	}
	b := db.NewBatch()
	for valid := it.First(); valid; valid = it.Next() {
		_, r, err := decodeRegionState(it.Value())
		if err == nil && r.GetRegionEpoch().GetVersion() > 1 {
			// The region state is written with the applied index that
			// covers the split: rewinding one without the other is a
			// state no crash can produce.
			err = fmt.Errorf("raftstore: region %d was split: cannot rewind its applied index", r.GetId())
		}
		if err != nil {
			it.Close()
			db.Close()
			return err
		}
		v, closer, err := db.Get(applyStateKey(r.GetId()))
		if err != nil {
			it.Close()
			db.Close()
			return err
		}
		cur, err := decodeApplyState(v)
		closer.Close()
		if err == nil && cur.truncatedIndex != initIndex {
			err = fmt.Errorf("raftstore: region %d's log is compacted to %d: cannot replay it from the start (disable log GC in this test)", r.GetId(), cur.truncatedIndex)
		}
		if err != nil {
			it.Close()
			db.Close()
			return err
		}
		as := applyState{applied: initIndex, truncatedIndex: initIndex, truncatedTerm: initTerm}
		if err := b.Set(applyStateKey(r.GetId()), as.encode(), nil); err != nil {
			it.Close()
			db.Close()
			return err
		}
	}
	it.Close()
	for _, cf := range keys.CFs {
		p := keys.Prefix(cf)
		if err := b.DeleteRange([]byte{p}, []byte{p + 1}, nil); err != nil {
			db.Close()
			return err
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		db.Close()
		return fmt.Errorf("forget applied: %w", err)
	}
	return db.Close()
}

// LeaseEvent is what a lease hook sees (tests): a read served under the
// leader lease, or (Transfer) a leader transfer that just started, with
// raft's term and transferee and whether the lease was valid right after.
type LeaseEvent struct {
	Transfer       bool
	RegionID       uint64
	Term           uint64
	LeadTransferee uint64
	LeaseValid     bool
	Remaining      time.Duration
	// Seq orders the events of one store: a read takes it before it
	// checks the lease, a transfer after it withdrew the lease, so a read
	// with a larger Seq than its term's transfer checked a withdrawn lease
	// (hook calls themselves may interleave in any order).
	Seq uint64
}

// SetLeaseHookForTest installs f, called from the Ready loop on every lease
// read and transfer start (nil removes it). Tests only; f must not block.
func (s *Store) SetLeaseHookForTest(f func(LeaseEvent)) {
	if f == nil {
		s.leaseHook.Store(nil)
		return
	}
	s.leaseHook.Store(&f)
}

// SetRaftFilterForTest makes the store drop every raft message it would
// send to, or receives from, a store for which drop returns true: a network
// partition of the raft traffic only (clients still reach the store). nil
// heals it. Tests only.
func (s *Store) SetRaftFilterForTest(drop func(storeID uint64) bool) {
	if drop == nil {
		s.raftFilter.Store(nil)
		return
	}
	s.raftFilter.Store(&drop)
}

// PauseTicksForTest stops (or restarts) the raft ticks of every local peer,
// like a process whose raft clock stalled: a leader then never notices it
// lost its quorum. Wall-clock lease expiry is unaffected. Tests only.
func (s *Store) PauseTicksForTest(paused bool) { s.ticksPaused.Store(paused) }

// HibernatedLeaseForTest reports whether this store's peer of region
// leads it while hibernated, with a support lease published to readers
// (support.go). Safe from any goroutine. Tests only.
func (s *Store) HibernatedLeaseForTest(regionID uint64) bool {
	v, ok := s.delegates.Load(regionID)
	if !ok {
		return false
	}
	d := v.(*peer).delegate.Load()
	return d != nil && d.support != nil
}
