package raftstore

import (
	"context"
	"encoding/binary"
	"time"

	"go.etcd.io/raft/v3"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/kv/regionkeys"
	"github.com/stratadb/strata/proto/errorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/metapb"
)

// ReadIndex waits until a linearizable read of the region in rctx may be
// served from the engine: this peer is leader, its lease is valid or a
// ReadIndex round confirmed it, and its applied index reached the commit
// index of that moment (the read index). It returns the region at
// that point (shared, do not modify) or a region error. The caller then
// checks keys against the region and reads Engine().
func (s *Store) ReadIndex(ctx context.Context, rctx *kvrpcpb.Context) (*metapb.Region, *errorpb.Error, error) {
	if d := s.localRead(rctx); d != nil {
		return d.region, nil, nil
	}
	return s.ReadIndexQueued(ctx, rctx)
}

// ReadIndexQueued is ReadIndex through the Ready loop, for a caller whose
// LocalRead just returned nil: the local lease is not checked again (the
// loop serves the read under its lease when that is valid there, renewing
// it when half of it is gone, else after a ReadIndex round).
func (s *Store) ReadIndexQueued(ctx context.Context, rctx *kvrpcpb.Context) (*metapb.Region, *errorpb.Error, error) {
	return s.submitRead(ctx, &readRequest{rctx: rctx, start: time.Now(), done: make(chan readResult, 1)})
}

// initLease sets up a new peer's lease (at most maxLease long; none when
// not positive) and its publication to local readers.
func (p *peer) initLease(maxLease time.Duration) {
	p.lease.maxLease = maxLease
	if maxLease > 0 {
		p.lease.pub = &p.delegate
	}
}

// localRead serves a read on the caller's goroutine when the region's
// leader here has published a lease (readDelegate) that is valid now, with
// at least half of it left (else the loop serves the read and renews the
// lease in the background), and the request's epoch matches. It returns
// the lease (its region and term), or nil when the read must go through
// the Ready loop.
func (s *Store) localRead(rctx *kvrpcpb.Context) *readDelegate {
	h := s.leaseHook.Load()
	var seq uint64
	if h != nil {
		seq = s.leaseSeq.Add(1)
	}
	d, rem := s.localLease(rctx)
	if d == nil {
		return nil
	}
	if d.support != nil {
		readsLocalHibernated.Inc()
	} else {
		readsLocalLease.Inc()
	}
	leaseRemainingSeconds.Observe(rem.Seconds())
	if h != nil {
		(*h)(LeaseEvent{RegionID: d.region.GetId(), Term: d.term, LeaseValid: true, Remaining: rem, Seq: seq})
	}
	return d
}

// localLease returns the published lease of the region of rctx when a read
// may be served under it now, and the time it has left; nil otherwise.
func (s *Store) localLease(rctx *kvrpcpb.Context) (*readDelegate, time.Duration) {
	v, ok := s.delegates.Load(rctx.GetRegionId())
	if !ok {
		return nil, 0
	}
	d := v.(*peer).delegate.Load()
	if d == nil || !epochMatches(rctx.GetRegionEpoch(), d.region) {
		return nil, 0
	}
	rem := d.remaining(s)
	// A hibernated leader's support lease renews itself with the stores'
	// liveness answers: any time left will do.
	if (d.support != nil && rem <= 0) || (d.support == nil && rem < s.maxLease/2) {
		return nil, 0
	}
	return d, rem
}

// LocalRead is ReadIndex when it is served on the caller's goroutine now,
// without waiting for the Ready loop (a valid lease): it returns the
// region (shared, read-only) and the term of the leadership the lease
// belongs to, which is what LeaderTerm returns while that leadership
// lasts (a delegate is published only after the loop published the
// term), else nil and the caller must use ReadIndex (or
// ReadIndexQueued). A caller that must not block (a stream's receiving
// goroutine) runs the read itself only then.
func (s *Store) LocalRead(rctx *kvrpcpb.Context) (*metapb.Region, uint64) {
	d := s.localRead(rctx)
	if d == nil {
		return nil, 0
	}
	return d.region, d.term
}

// LeasedRegion returns the region holding key when this store leads it and
// may serve a read of it on the caller's goroutine now, on localRead's
// terms: a published lease (the peer applied an entry of its term) valid
// for at least half its length. An engine snapshot taken after it returns
// then holds every write the region acknowledged. nil otherwise: a
// follower, no valid lease, leases disabled. The region is shared and
// read-only.
func (s *Store) LeasedRegion(key []byte) *metapb.Region {
	if s.maxLease <= 0 {
		return nil
	}
	r := s.meta.regionAt(key)
	if r == nil {
		return nil
	}
	v, ok := s.delegates.Load(r.GetId())
	if !ok {
		return nil
	}
	d := v.(*peer).delegate.Load()
	if d == nil || !regionkeys.KeyIn(key, d.region) {
		return nil
	}
	if rem := d.remaining(s); rem <= 0 || d.support == nil && rem < s.maxLease/2 {
		return nil
	}
	return d.region
}

// LedRegionAt returns the region holding key when this store's peer of it
// is the raft leader as far as the store knows (no lease implied: confirm
// with ReadIndex before reading), else nil.
func (s *Store) LedRegionAt(key []byte) *metapb.Region {
	r := s.meta.regionAt(key)
	if r == nil || !s.meta.isLeader(r.GetId()) {
		return nil
	}
	return r
}

func (s *Store) queueRead(rr *readRequest) {
	p := s.peers[rr.rctx.GetRegionId()]
	switch {
	case p == nil:
		rr.respond(readResult{rerr: errRegionNotFound(rr.rctx.GetRegionId())})
	case rr.waitIndex > 0:
		s.queueApplyWait(p, rr) // a follower read (replicaread.go)
	case !p.isLeader:
		rr.respond(readResult{rerr: errNotLeader(p.region.GetId(), p.leaderHint())})
	case !epochMatches(rr.rctx.GetRegionEpoch(), p.region):
		rr.respond(readResult{rerr: p.epochNotMatch()})
	case s.hibernatedLeaseRead(p, rr): // served without waking the region (support.go)
	default:
		// Not busy: a read served under the lease (or waiting for its
		// ReadIndex, which leaderIdle sees) is no work that keeps the
		// region from hibernating.
		s.wake(p)
		if s.maxLease > 0 && s.leaseRead(p, rr) {
			return
		}
		p.reads = append(p.reads, rr)
	}
}

// status returns raft's status of p, computed once per loop iteration
// (iter): reads are queued after every message, transfer and proposal of
// the iteration was stepped, and nothing in between changes raft's term,
// state or transferee.
func (p *peer) status(iter uint64) *raft.BasicStatus {
	if p.stIter != iter {
		p.st, p.stIter = p.rn.BasicStatus(), iter
	}
	return &p.st
}

// leaseRead serves rr under p's lease if it is valid now: at once when the
// applied index has reached raft's commit index, else once it does (as a
// ReadIndex would). It reports false when the read needs a ReadIndex.
func (s *Store) leaseRead(p *peer, rr *readRequest) bool {
	st := p.status(s.iter)
	now := s.now()
	rem, ok := p.leaseLeft(st, now)
	if !ok {
		return false
	}
	readsTotal.WithLabelValues("lease").Inc()
	leaseRemainingSeconds.Observe(rem.Seconds())
	if h := s.leaseHook.Load(); h != nil {
		(*h)(LeaseEvent{RegionID: p.region.GetId(), Term: st.GetTerm(), LeadTransferee: st.LeadTransferee, LeaseValid: true, Remaining: rem,
			Seq: s.leaseSeq.Add(1)})
	}
	if rem < s.maxLease/2 {
		p.renewLease = true // renew in the background, before it runs out
	}
	p.readAtCommit(rr, st, now)
	return true
}

// leaseLeft syncs p's lease with raft's status st and returns the time it
// has left at now, or false when it is not valid.
func (p *peer) leaseLeft(st *raft.BasicStatus, now time.Time) (time.Duration, bool) {
	p.syncLease(st)
	if !p.lease.valid(now, st.RaftState == raft.StateLeader, st.GetTerm(), st.LeadTransferee) {
		return 0, false
	}
	return p.lease.remaining(now), true
}

// readAtCommit serves rr once p's applied index reaches raft's commit
// index in st: at once, or with the read batch waiting for that index.
func (p *peer) readAtCommit(rr *readRequest, st *raft.BasicStatus, now time.Time) {
	commit := st.GetCommit()
	if p.ps.apply.applied >= commit {
		rr.respond(readResult{region: proto.Clone(p.region).(*metapb.Region)})
		return
	}
	if n := len(p.readBatches); n > 0 && p.readBatches[n-1].ctx == nil && p.readBatches[n-1].index == commit {
		p.readBatches[n-1].reqs = append(p.readBatches[n-1].reqs, rr)
		return
	}
	p.readBatches = append(p.readBatches, &readBatch{index: commit, reqs: []*readRequest{rr}, issued: now, term: st.GetTerm()})
}

// issueReadIndex puts p's queued reads (possibly none: a lease renewal)
// behind one ReadIndex with a unique context.
func (s *Store) issueReadIndex(p *peer) {
	s.readSeq++
	// issued is taken before raft can send the heartbeat carrying the
	// context, so the lease this ReadIndex renews starts no later than
	// that send.
	p.issueReadIndex(s.readSeq, s.now())
}

// issueReadIndex puts p's queued reads behind one ReadIndex whose context
// is seq (unique in the store), issued at issued.
func (p *peer) issueReadIndex(seq uint64, issued time.Time) {
	ctx := binary.BigEndian.AppendUint64(make([]byte, 0, 8), seq)
	readsTotal.WithLabelValues("read_index").Add(float64(len(p.reads)))
	term := p.rn.BasicStatus().GetTerm()
	p.rn.ReadIndex(ctx)
	p.readBatches = append(p.readBatches, &readBatch{ctx: ctx, reqs: p.reads, issued: issued, term: term})
	p.reads = nil
}
