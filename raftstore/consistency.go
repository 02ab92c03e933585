package raftstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc64"
	"sort"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/failpoint"
	"github.com/stratadb/strata/proto/errorpb"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
)

// Consistency check (TiKV's ComputeHash / VerifyHash). The leader proposes
// an admin ComputeHash; every replica, when it applies that entry, commits
// its apply batch so far (data and applied index together, as at the end
// of a batch), takes a Pebble snapshot, which is then exactly the region's
// state at that index, and hashes the region's data in every key space
// from it on a goroutine (off the Ready loop). Once the leader's own hash
// is done it proposes VerifyHash carrying it; every replica applying it
// compares its hash at that index: a mismatch is logged as an error and
// counted (strata_raftstore_consistency_checks_total{result="mismatch"}).
// A replica that never applied the ComputeHash entry itself (it caught up
// from a snapshot past it) counts "skipped".
//
// Each store keeps the last hash of each region it hosts (ConsistencyHashes),
// so a checker can also compare every replica's hash directly
// (/debug/consistency on the status port, tests/).

var crcTable = crc64.MakeTable(crc64.ECMA)

// HashRecord is a replica's hash of a region's data at an applied index.
type HashRecord struct {
	RegionID uint64 `json:"region_id"`
	Index    uint64 `json:"index"`
	// Hash is the CRC-64 (ECMA) of the region's range and every engine key
	// and value of the region in every key space, in key order; empty while
	// it is being computed.
	Hash []byte `json:"-"`
	// Verify is the outcome of the leader's VerifyHash on this replica:
	// "" (none applied yet), "match", "mismatch", "skipped" (no local hash
	// at that index) or "error" (hashing failed).
	Verify string `json:"verify,omitempty"`
}

// hashState is a replica's latest hash of one region.
type hashState struct {
	rec      HashRecord
	done     chan struct{} // closed once rec.Hash is set
	expected []byte        // a VerifyHash that applied before the hash was done
}

// consistency holds this store's hashes; safe for concurrent use.
type consistency struct {
	mu     sync.Mutex
	states map[uint64]*hashState // by region id
	wg     sync.WaitGroup        // hash goroutines (Stop waits before the engine closes)
}

// startHash records that region's hash at index is being computed from
// snap and computes it on a goroutine (in manual mode before it returns);
// it takes ownership of snap.
func (s *Store) startHash(region *metapb.Region, index uint64, snap *pebble.Snapshot) {
	c := &s.cons
	st := &hashState{rec: HashRecord{RegionID: region.GetId(), Index: index}, done: make(chan struct{})}
	c.mu.Lock()
	if c.states == nil {
		c.states = map[uint64]*hashState{}
	}
	c.states[region.GetId()] = st
	c.mu.Unlock()
	hash := func() {
		failpoint.Hit("consistency-hash") // a slow hash: the replica reports its index, no hash yet
		start := time.Now()
		h, err := hashRegion(snap, region)
		snap.Close()
		if err != nil {
			// The engine failed under us: report it, never a made-up hash.
			s.log.Error("consistency check: hash region", "region", region.GetId(), "index", index, "err", err)
			h = nil
		}
		consistencyHashSeconds.Observe(time.Since(start).Seconds())
		c.mu.Lock()
		st.rec.Hash = h
		exp := st.expected
		c.mu.Unlock()
		close(st.done)
		if exp != nil {
			s.verifyHash(region.GetId(), index, exp)
		}
	}
	if s.cfg.manual {
		hash() // the harness replays from a seed: no goroutine of ours may run
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		hash()
	}()
}

// hashRegion hashes region's range and its data in every key space of r.
func hashRegion(r pebble.Reader, region *metapb.Region) ([]byte, error) {
	h := crc64.New(crcTable)
	var lenBuf [binary.MaxVarintLen64]byte
	field := func(b []byte) {
		n := binary.PutUvarint(lenBuf[:], uint64(len(b)))
		h.Write(lenBuf[:n])
		h.Write(b)
	}
	field(region.GetStartKey())
	field(region.GetEndKey())
	err := scanRegion(r, region, func(k, v []byte) {
		field(k)
		field(v)
	})
	if err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

// verifyHash compares this replica's hash of regionID at index with the
// leader's (applied VerifyHash). Called from the loop when VerifyHash
// applies, or from the hash goroutine if the hash was not done by then.
func (s *Store) verifyHash(regionID, index uint64, leaderHash []byte) {
	c := &s.cons
	c.mu.Lock()
	st := c.states[regionID]
	switch {
	case st == nil || st.rec.Index != index:
		// This replica did not apply that ComputeHash (it caught up from a
		// snapshot taken after it) or has hashed again since.
		c.mu.Unlock()
		consistencyChecks.WithLabelValues("skipped").Inc()
		s.log.Info("consistency check skipped: no local hash at the leader's index", "region", regionID, "index", index)
		return
	case !isClosed(st.done):
		st.expected = bytes.Clone(leaderHash) // compared when the hash is done
		c.mu.Unlock()
		return
	}
	local := st.rec.Hash
	switch {
	case local == nil:
		st.rec.Verify = "error" // hashing failed, logged by startHash
	case bytes.Equal(local, leaderHash):
		st.rec.Verify = "match"
	default:
		st.rec.Verify = "mismatch"
	}
	verdict := st.rec.Verify
	c.mu.Unlock()
	consistencyChecks.WithLabelValues(verdict).Inc()
	if verdict == "mismatch" {
		s.log.Error("consistency check: replica hash differs from the leader's; this replica's data diverged (compare with /debug/consistency on every store, then replace the replica)",
			"region", regionID, "index", index, "local", fmt.Sprintf("%x", local), "leader", fmt.Sprintf("%x", leaderHash))
	}
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// ConsistencyHashes returns this store's latest hash of every region it
// hosts that was hashed since the store started (sorted by region id).
func (s *Store) ConsistencyHashes() []HashRecord {
	c := &s.cons
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]HashRecord, 0, len(c.states))
	for _, st := range c.states {
		r := st.rec
		r.Hash = bytes.Clone(r.Hash)
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].RegionID < out[j].RegionID })
	return out
}

// localHash waits for this store's hash of regionID at index.
func (s *Store) localHash(ctx context.Context, regionID, index uint64) ([]byte, error) {
	c := &s.cons
	c.mu.Lock()
	st := c.states[regionID]
	c.mu.Unlock()
	if st == nil || st.rec.Index != index {
		return nil, fmt.Errorf("raftstore: region %d: no local hash at index %d (hashed again since?)", regionID, index)
	}
	select {
	case <-st.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	c.mu.Lock()
	h := st.rec.Hash
	c.mu.Unlock()
	if h == nil {
		return nil, fmt.Errorf("raftstore: region %d: hashing at index %d failed (see the store's log)", regionID, index)
	}
	return h, nil
}

// ErrNoLeaderHere: CheckConsistency was asked of a store that does not lead
// the region; ask the leader's store.
var ErrNoLeaderHere = errors.New("raftstore: this store does not lead the region")

// CheckConsistency runs a consistency check of a region this store leads:
// it proposes ComputeHash, waits for its own hash at that index and
// proposes VerifyHash with it, so every replica compares. It returns the
// leader's record, or a region error (not leader, epoch changed: retry),
// or an error. Replicas report their comparison in their own metrics and
// logs, and their hashes through ConsistencyHashes.
func (s *Store) CheckConsistency(ctx context.Context, regionID uint64) (HashRecord, *errorpb.Error, error) {
	region := s.meta.region(regionID)
	if region == nil {
		return HashRecord{}, errRegionNotFound(regionID), nil
	}
	if !s.meta.isLeader(regionID) {
		return HashRecord{}, nil, ErrNoLeaderHere
	}
	adminCmd := func(req *raft_cmdpb.AdminRequest) *raft_cmdpb.RaftCmdRequest {
		return &raft_cmdpb.RaftCmdRequest{
			Header:       &raft_cmdpb.RaftRequestHeader{RegionId: regionID, RegionEpoch: proto.Clone(region.GetRegionEpoch()).(*metapb.RegionEpoch)},
			AdminRequest: req,
		}
	}
	resp, _, err := s.proposeAndWait(ctx, adminCmd(&raft_cmdpb.AdminRequest{CmdType: raft_cmdpb.AdminCmdType_ComputeHash}), 0)
	if err != nil || resp.GetRegionError() != nil {
		return HashRecord{}, resp.GetRegionError(), err
	}
	index := resp.GetAppliedIndex()
	h, err := s.localHash(ctx, regionID, index)
	if err != nil {
		return HashRecord{}, nil, err
	}
	resp, _, err = s.proposeAndWait(ctx, adminCmd(&raft_cmdpb.AdminRequest{
		CmdType:    raft_cmdpb.AdminCmdType_VerifyHash,
		VerifyHash: &raft_cmdpb.VerifyHashRequest{Index: index, Hash: h},
	}), 0)
	if err != nil || resp.GetRegionError() != nil {
		return HashRecord{}, resp.GetRegionError(), err
	}
	return HashRecord{RegionID: regionID, Index: index, Hash: h, Verify: "match"}, nil, nil
}

// applyHashAdmin handles a committed ComputeHash or VerifyHash of p at
// index (the epoch was checked). For ComputeHash it commits b (which holds
// as, p's apply state at index) so that a snapshot sees exactly the region
// at index, starts the hash and returns the batch to continue with.
func (a *applier) applyHashAdmin(b *pebble.Batch, p *peer, as applyState, admin *raft_cmdpb.AdminRequest) *pebble.Batch {
	if admin.GetCmdType() == raft_cmdpb.AdminCmdType_VerifyHash {
		a.host.verifyHash(p.region.GetId(), admin.GetVerifyHash().GetIndex(), admin.GetVerifyHash().GetHash())
		return b
	}
	if err := b.Set(applyStateKey(p.region.GetId()), as.encode(), nil); err != nil {
		a.host.fatal("write apply state", err)
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		a.host.fatal("commit apply batch", err)
	}
	b.Close()
	a.host.startHash(proto.Clone(p.region).(*metapb.Region), as.applied, a.db.NewSnapshot())
	return a.db.NewBatch()
}

func isHashAdmin(a *raft_cmdpb.AdminRequest) bool {
	t := a.GetCmdType()
	return a != nil && (t == raft_cmdpb.AdminCmdType_ComputeHash || t == raft_cmdpb.AdminCmdType_VerifyHash)
}
