package raftstore

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/stratadb/strata/kv/mvcc"
)

// ForgetAppliedForTest simulates losing every unsynced apply batch of a
// stopped store: it deletes all MVCC data and rewinds each region's applied
// index to the initial state, so the next Open must rebuild everything by
// re-applying the (synced) raft log. Tests only.
func ForgetAppliedForTest(dataDir string) error {
	db, err := pebble.Open(dataDir, &pebble.Options{})
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
	if err := b.DeleteRange([]byte{mvcc.DataPrefix}, mvcc.DataSpanEnd(), nil); err != nil {
		db.Close()
		return err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		db.Close()
		return fmt.Errorf("forget applied: %w", err)
	}
	return db.Close()
}
