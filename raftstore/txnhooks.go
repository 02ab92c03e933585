package raftstore

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
)

// TxnHooks connect state the transaction layer keeps only in the leader's
// memory for a region (TiKV's in-memory pessimistic locks) with the events
// that move the region's leadership or change its range. raftstore knows
// nothing of what the state is: it only tells the layer above when
// leadership changes and lets it put writes into the log ahead of a leader
// transfer or a split.
type TxnHooks struct {
	// LeaderChanged is called on the Ready loop when a peer of this store
	// becomes leader of regionID (leader true) or stops being it, before
	// anything is served in the new role. It must be quick and must not
	// call the store.
	LeaderChanged func(regionID uint64, leader bool)
	// Handover is called before this store starts a leader transfer of
	// region (on the Ready loop) or proposes a split of it (on the caller's
	// goroutine). The hook may call propose (at most once, with writes
	// inside region) to put writes into the log ahead of the transfer or
	// split: they are proposed before Handover returns, so they precede
	// every write proposed after it, and the transfer or split does not
	// wait for their outcome. done receives the outcome later (nil once
	// they applied here), on the Ready loop or, when they were refused at
	// once, on Handover's goroutine after the hook returned: it must be
	// quick and must not call the store. region is shared and read-only.
	Handover func(region *metapb.Region, propose func(reqs []*raft_cmdpb.Request, done func(error)))
}

// SetTxnHooks installs h (nil removes them). Call it before the store
// serves requests; it is safe to call at any time.
func (s *Store) SetTxnHooks(h *TxnHooks) { s.txnHooks.Store(h) }

func (s *Store) leaderChanged(regionID uint64, leader bool) {
	if h := s.txnHooks.Load(); h != nil && h.LeaderChanged != nil {
		h.LeaderChanged(regionID, leader)
	}
}

// errHandoverRefused wraps the region error of a refused handover write.
var errHandoverRefused = errors.New("raftstore: handover write refused")

// handover runs the Handover hook for region. queue hands a proposal to
// raft (the loop's propose, or the inbox off the loop); a proposal answered
// before the hook returns gets its done call after it. refused reports
// that a proposal was refused before the hook returned (with the loop's
// propose: raft would not take it, e.g. too many uncommitted bytes on a
// hot region); the caller must not hand leadership over then.
func (s *Store) handover(region *metapb.Region, queue func(pr *proposal)) (refused bool) {
	h := s.txnHooks.Load()
	if h == nil || h.Handover == nil {
		return false
	}
	var (
		mu     sync.Mutex
		early  []func() // outcomes known while the hook runs
		inHook = true
	)
	h.Handover(region, func(reqs []*raft_cmdpb.Request, done func(error)) {
		if len(reqs) == 0 {
			mu.Lock()
			early = append(early, func() { done(nil) })
			mu.Unlock()
			return
		}
		pr := &proposal{
			cmd: &raft_cmdpb.RaftCmdRequest{
				Header:   &raft_cmdpb.RaftRequestHeader{RegionId: region.GetId(), RegionEpoch: region.GetRegionEpoch()},
				Requests: reqs,
			},
			start: time.Now(),
		}
		pr.cb = func(resp *raft_cmdpb.RaftCmdResponse, err error) {
			if err == nil && resp.GetRegionError() != nil {
				err = fmt.Errorf("%w: %s", errHandoverRefused, resp.GetRegionError().GetMessage())
			}
			mu.Lock()
			if inHook {
				refused = refused || err != nil
				early = append(early, func() { done(err) })
				mu.Unlock()
				return
			}
			mu.Unlock()
			done(err)
		}
		handoverWrites.Inc()
		queue(pr)
	})
	mu.Lock()
	inHook = false
	fs := early
	mu.Unlock()
	for _, f := range fs {
		f()
	}
	return refused
}

// queueHandover is handover's queue off the Ready loop: the inbox, which
// keeps the order of proposals pushed to it.
func (s *Store) queueHandover(pr *proposal) {
	if resp := s.queueProposal(pr); resp != nil {
		pr.cb(resp, nil)
	}
}
