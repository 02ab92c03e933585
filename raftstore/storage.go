package raftstore

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/proto/metapb"
)

// entryCacheSize is how many of the newest log entries a peer keeps in
// memory: committed entries are usually applied (and sent to followers) from
// the cache, right after they were appended.
const entryCacheSize = 1024

// peerStorage is a region's raft.Storage backed by the store's Pebble. It is
// owned by the Ready loop goroutine: raft calls it from there and the loop
// updates it after each persisted Ready, so it needs no lock.
type peerStorage struct {
	db       *pebble.DB
	regionID uint64
	region   *metapb.Region

	hardState *raftpb.HardState
	apply     applyState
	lastIndex uint64
	lastTerm  uint64
	// cache holds the newest entries, contiguous, ending at lastIndex.
	cache []*raftpb.Entry
	// snap is the snapshot being generated or last generated (snapshot.go);
	// snaps the store's snapshot files and workers.
	snap  *snapGen
	snaps *snapshotSender
	// received are the snapshots whose files were received, by (index,
	// term), until raft installs one; install is the snapshot being
	// installed (snapinstall.go).
	received map[snapKey]string
	install  *snapInstall
	// pendingRegion is the region of a snapshot written to a batch not yet
	// committed (snapshotPersisted makes it region).
	pendingRegion *metapb.Region
	// sends is the store's budget for entries raft reads to send
	// (nil in tests that build a storage alone).
	sends *sendBudget
}

// sendBudget bounds the log entries all of a store's leaders read to send
// in one loop iteration. raft bounds them per follower (MaxInflightBytes),
// which after a store's restart still lets every region read and send
// megabytes at once: in a TPC-C kill run, 436 MB in one iteration, which
// stalled the loop for a second and broke the raft stream (larger than
// gRPC's message limit). Past the budget raft gets one entry per message
// (Storage.Entries must return at least one), its inflight count bounding
// the rest; the followers are sent the remainder in later iterations.
// It is on while the loop steps messages and proposals, where raft sends
// appends; off while raft collects committed entries to apply, which the
// budget must not slow.
type sendBudget struct {
	on   bool
	left uint64
}

// sendBytesPerIteration is a store's sendBudget per loop iteration: a few
// milliseconds of reading, tens of megabytes a second to a catching-up
// store even when the loop runs only every fsync.
const sendBytesPerIteration = 8 << 20

var _ raft.Storage = (*peerStorage)(nil)

// loadPeerStorage recovers a region's raft state from the engine.
func loadPeerStorage(db *pebble.DB, region *metapb.Region) (*peerStorage, error) {
	ps := &peerStorage{db: db, regionID: region.GetId(), region: region}
	hs := &raftpb.HardState{}
	if err := getProto(db, hardStateKey(ps.regionID), hs); err != nil {
		return nil, fmt.Errorf("load hard state of region %d: %w", ps.regionID, err)
	}
	ps.hardState = hs
	v, closer, err := db.Get(applyStateKey(ps.regionID))
	if err != nil {
		return nil, fmt.Errorf("load apply state of region %d: %w", ps.regionID, err)
	}
	ps.apply, err = decodeApplyState(v)
	closer.Close()
	if err != nil {
		return nil, err
	}
	ps.lastIndex, ps.lastTerm = ps.apply.truncatedIndex, ps.apply.truncatedTerm
	lo, hi := entryRange(ps.regionID)
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	if it.Last() {
		e := &raftpb.Entry{}
		if err := proto.Unmarshal(it.Value(), e); err != nil {
			return nil, fmt.Errorf("%w: entry of region %d: %v", ErrCorrupt, ps.regionID, err)
		}
		ps.lastIndex, ps.lastTerm = e.GetIndex(), e.GetTerm()
	}
	if ps.apply.applied > hs.GetCommit() {
		// Entries already in the local log may be applied before the
		// batch carrying the hard state that commits them is written
		// (Store.iterate): what was applied was committed.
		hs.Commit = new(ps.apply.applied)
	}
	if ps.hardState.GetCommit() > ps.lastIndex {
		return nil, fmt.Errorf("%w: region %d commit %d beyond last index %d", ErrCorrupt, ps.regionID, ps.hardState.GetCommit(), ps.lastIndex)
	}
	return ps, it.Error()
}

func getProto(db *pebble.DB, key []byte, m proto.Message) error {
	v, closer, err := db.Get(key)
	if err != nil {
		return err
	}
	defer closer.Close()
	if err := proto.Unmarshal(v, m); err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return nil
}

// writeInitialState appends a new region's local state and initial raft state
// to b.
func writeInitialState(b *pebble.Batch, region *metapb.Region) error {
	rs, err := encodeRegionState(peerStateNormal, region)
	if err != nil {
		return err
	}
	hs, err := proto.Marshal(&raftpb.HardState{Term: new(initTerm), Commit: new(initIndex)})
	if err != nil {
		return err
	}
	as := applyState{applied: initIndex, truncatedIndex: initIndex, truncatedTerm: initTerm}
	if err := b.Set(regionStateKey(region.GetId()), rs, nil); err != nil {
		return err
	}
	if err := b.Set(hardStateKey(region.GetId()), hs, nil); err != nil {
		return err
	}
	return b.Set(applyStateKey(region.GetId()), as.encode(), nil)
}

// InitialState implements raft.Storage. The configuration is the region's
// peers (voters and learners) as of the applied index: conf changes are
// applied to the region in the apply batch.
func (ps *peerStorage) InitialState() (*raftpb.HardState, *raftpb.ConfState, error) {
	return proto.Clone(ps.hardState).(*raftpb.HardState), ps.confState(), nil
}

// FirstIndex implements raft.Storage.
func (ps *peerStorage) FirstIndex() (uint64, error) { return ps.apply.truncatedIndex + 1, nil }

// LastIndex implements raft.Storage.
func (ps *peerStorage) LastIndex() (uint64, error) { return ps.lastIndex, nil }

// Term implements raft.Storage.
func (ps *peerStorage) Term(i uint64) (uint64, error) {
	switch {
	case i == ps.apply.truncatedIndex:
		return ps.apply.truncatedTerm, nil
	case i < ps.apply.truncatedIndex:
		return 0, raft.ErrCompacted
	case i > ps.lastIndex:
		return 0, raft.ErrUnavailable
	case i == ps.lastIndex:
		return ps.lastTerm, nil
	}
	if e := ps.cached(i); e != nil {
		return e.GetTerm(), nil
	}
	e := &raftpb.Entry{}
	if err := getProto(ps.db, entryKey(ps.regionID, i), e); err != nil {
		if errors.Is(err, pebble.ErrNotFound) {
			return 0, raft.ErrUnavailable
		}
		return 0, fmt.Errorf("raftstore: term %d of region %d: %w", i, ps.regionID, err)
	}
	return e.GetTerm(), nil
}

func (ps *peerStorage) cached(i uint64) *raftpb.Entry {
	if len(ps.cache) == 0 {
		return nil
	}
	first := ps.cache[0].GetIndex()
	if i < first || i > ps.lastIndex {
		return nil
	}
	return ps.cache[i-first]
}

// Entries implements raft.Storage.
func (ps *peerStorage) Entries(lo, hi, maxSize uint64) ([]*raftpb.Entry, error) {
	if lo <= ps.apply.truncatedIndex {
		return nil, raft.ErrCompacted
	}
	if hi > ps.lastIndex+1 || lo > hi {
		return nil, raft.ErrUnavailable
	}
	if lo == hi {
		return nil, nil
	}
	if b := ps.sends; b != nil && b.on {
		maxSize = min(maxSize, b.left)
	}
	var out []*raftpb.Entry
	var size uint64
	add := func(e *raftpb.Entry) bool {
		n := uint64(proto.Size(e))
		if len(out) > 0 && size+n > maxSize {
			return false
		}
		size += n
		out = append(out, e)
		return true
	}
	defer func() {
		if b := ps.sends; b != nil && b.on {
			b.left -= min(b.left, size)
		}
	}()
	if len(ps.cache) > 0 && lo >= ps.cache[0].GetIndex() {
		for i := lo; i < hi; i++ {
			if !add(ps.cached(i)) {
				break
			}
		}
		return out, nil
	}
	it, err := ps.db.NewIter(&pebble.IterOptions{
		LowerBound: entryKey(ps.regionID, lo),
		UpperBound: entryKey(ps.regionID, hi),
	})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	next := lo
	for valid := it.First(); valid; valid = it.Next() {
		e := &raftpb.Entry{}
		if err := proto.Unmarshal(it.Value(), e); err != nil {
			return nil, fmt.Errorf("%w: entry of region %d: %v", ErrCorrupt, ps.regionID, err)
		}
		if e.GetIndex() != next {
			return nil, raft.ErrUnavailable
		}
		next++
		if !add(e) {
			break
		}
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, raft.ErrUnavailable
	}
	return out, nil
}

// appendEntries writes entries (and deletes an overwritten log tail) into b.
// The in-memory view is updated by entriesPersisted once b is committed.
func (ps *peerStorage) appendEntries(b *pebble.Batch, ents []*raftpb.Entry) error {
	if len(ents) == 0 {
		return nil
	}
	for _, e := range ents {
		data, err := proto.Marshal(e)
		if err != nil {
			return fmt.Errorf("raftstore: marshal entry: %w", err)
		}
		if err := b.Set(entryKey(ps.regionID, e.GetIndex()), data, nil); err != nil {
			return err
		}
	}
	newLast := ents[len(ents)-1].GetIndex()
	if newLast < ps.lastIndex {
		if err := b.DeleteRange(entryKey(ps.regionID, newLast+1), entryKey(ps.regionID, ps.lastIndex+1), nil); err != nil {
			return err
		}
	}
	return nil
}

// entriesPersisted updates the cache and last index after the batch holding
// ents (and hs) committed.
func (ps *peerStorage) entriesPersisted(ents []*raftpb.Entry, hs *raftpb.HardState) {
	if hs != nil {
		ps.hardState = hs
	}
	if len(ents) == 0 {
		return
	}
	first := ents[0].GetIndex()
	if len(ps.cache) > 0 {
		cfirst := ps.cache[0].GetIndex()
		switch {
		case first <= cfirst:
			ps.cache = ps.cache[:0]
		case first <= ps.lastIndex+1:
			ps.cache = ps.cache[:first-cfirst]
		default:
			ps.cache = ps.cache[:0]
		}
	}
	ps.cache = append(ps.cache, ents...)
	if n := len(ps.cache); n > entryCacheSize {
		// Copy down so the backing array does not grow without bound.
		ps.cache = append(ps.cache[:0:0], ps.cache[n-entryCacheSize/2:]...)
	}
	last := ents[len(ents)-1]
	ps.lastIndex, ps.lastTerm = last.GetIndex(), last.GetTerm()
}
