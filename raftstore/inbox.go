package raftstore

import (
	"sync"

	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/pdpb"
	"github.com/stratadb/strata/proto/raft_serverpb"
)

// maxQueuedRequests bounds the writes (and, separately, the reads) waiting
// for one Ready loop iteration; beyond it requests get ServerIsBusy instead
// of queueing without bound.
const maxQueuedRequests = 20000

// HandleRaftMessages queues raft messages received from another store for
// the Ready loop. It does not block on the loop.
func (s *Store) HandleRaftMessages(msgs []*raft_serverpb.RaftMessage) {
	if f := s.raftFilter.Load(); f != nil {
		kept := make([]*raft_serverpb.RaftMessage, 0, len(msgs))
		for _, m := range msgs {
			if !(*f)(m.GetFromPeer().GetStoreId()) {
				kept = append(kept, m)
			}
		}
		msgs = kept
	}
	s.inbox.push(func(m *inboxMsgs) { m.raft = append(m.raft, msgs...) })
}

// inbox hands requests and messages to the Ready loop: producers append
// under a mutex and signal; the loop swaps the whole batch out at once.
type inbox struct {
	mu     sync.Mutex
	cur    inboxMsgs
	spare  inboxMsgs
	closed bool
	signal chan struct{} // cap 1
}

type inboxMsgs struct {
	raft        []*raft_serverpb.RaftMessage
	proposals   []*proposal
	reads       []*readRequest
	creates     []*metapb.Region
	unreachable []unreachable
	gone        []uint64                        // stores that refused a connection (failover.go)
	drains      []chan struct{}                 // TransferLeaders waiters
	resolveTS   uint64                          // a PD timestamp for resolveRegions (replicaread.go)
	snaps       []receivedSnap                  // MsgSnaps received on the Snapshot RPC
	snapStatus  []snapshotStatus                // outcomes of snapshot sends
	ingested    []ingestResult                  // snapshot ingests done off the loop
	pdSteps     []*pdpb.RegionHeartbeatResponse // operator steps from PD (confchange.go)
	awaken      []uint64                        // regions PD has an operator step for (heartbeat now)
}

// unreachable is a raft message the transport lost (regionID 0: a
// StoreLiveness message to storeID).
type unreachable struct{ regionID, peerID, storeID uint64 }

func (m *inboxMsgs) reset() {
	clear(m.raft)
	clear(m.proposals)
	clear(m.reads)
	clear(m.creates)
	clear(m.drains)
	clear(m.snaps)
	clear(m.ingested)
	m.snaps, m.snapStatus, m.ingested = m.snaps[:0], m.snapStatus[:0], m.ingested[:0]
	clear(m.pdSteps)
	m.pdSteps, m.awaken = m.pdSteps[:0], m.awaken[:0]
	m.raft, m.proposals, m.reads, m.creates, m.unreachable, m.gone = m.raft[:0], m.proposals[:0], m.reads[:0], m.creates[:0], m.unreachable[:0], m.gone[:0]
	m.drains = m.drains[:0]
	m.resolveTS = 0
}

func (in *inbox) push(f func(*inboxMsgs)) bool {
	in.mu.Lock()
	if in.closed {
		in.mu.Unlock()
		return false
	}
	f(&in.cur)
	in.mu.Unlock()
	select {
	case in.signal <- struct{}{}:
	default:
	}
	return true
}

// take swaps out everything queued; the returned batch is valid until the
// next take.
func (in *inbox) take() *inboxMsgs {
	in.mu.Lock()
	in.spare.reset()
	in.cur, in.spare = in.spare, in.cur
	in.mu.Unlock()
	return &in.spare
}

func (in *inbox) close() *inboxMsgs {
	in.mu.Lock()
	in.closed = true
	in.mu.Unlock()
	return in.take()
}
