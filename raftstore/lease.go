package raftstore

import (
	"sync/atomic"
	"time"

	"github.com/stratadb/strata/proto/metapb"
)

// leaderLease lets a leader serve reads without a ReadIndex round trip (the
// shape of TiKV's Lease, not raft's ReadOnlyLeaseBased). It is owned by the
// Ready loop; times are local monotonic readings (time.Time from time.Now
// compares by its monotonic clock), never wall clock.
//
// Invariant: while valid(now) holds, no other peer can have become leader.
// The lease is only extended from evidence that a quorum heard from this
// leader in term `term` at or after a local time `start`: a ReadIndex whose
// ReadState arrived (the heartbeat carrying its context was sent after the
// batch was issued at `start`) or an entry of this term that committed
// (proposed at `start`, so every MsgApp carrying it was sent later). Each
// acknowledging follower reset its election timer on receiving that message
// and, with CheckQuorum, rejects (pre-)votes until an election timeout of its
// own ticks has passed; so no new leader exists before start + the follower's
// election timeout, and the lease ends earlier: start + maxLease, maxLease <
// the minimum election timeout (see leaseFor). Votes forced by a leader
// transfer (MsgTimeoutNow) bypass that check, so a transfer ends the lease
// for the rest of the term before the MsgTimeoutNow can go out.
type leaderLease struct {
	maxLease time.Duration

	// term is the leader term the lease belongs to, 0 when none.
	term uint64
	// committed is set once an entry of term committed (the leader's no-op):
	// before that, the leader may not know every committed entry.
	committed bool
	// transferred is set when a leader transfer started in term: no renewal
	// in this term any more (the transferee may campaign with a forced vote
	// at any time, even after raft aborted the transfer here).
	transferred bool
	expiry      time.Time // zero: not valid

	// pub, when set, is where the peer publishes the lease for reads
	// served outside the Ready loop (readDelegate); every way the lease
	// ends clears it at once.
	pub *atomic.Pointer[readDelegate]
}

// readDelegate is a leader's lease as published for reads served on the
// caller's goroutine (TiKV's LocalReader), without a Ready loop iteration:
// while now is before expiry the peer leads region in term and has applied
// an entry of term, so every write acknowledged so far is applied (a
// leader answers writes only after applying them). Immutable.
//
// A hibernated leader's delegate also has support (the followers that
// acked its hibernation) and need (how many of them a quorum needs): its
// lease lasts while their stores' support grants do (support.go), or
// until expiry (the tick-based lease it hibernated with), whichever is
// later.
type readDelegate struct {
	region  *metapb.Region // shared, read-only
	term    uint64
	expiry  time.Time
	support []supportAck
	need    int
}

// remaining is the lease time d has left at s's now (<= 0: none).
func (d *readDelegate) remaining(s *Store) time.Duration {
	e := d.expiry
	if d.support != nil {
		if se := supportExpiry(d.support, d.need, s.grants()); se.After(e) {
			e = se
		}
	}
	if e.IsZero() {
		return 0
	}
	return e.Sub(s.now())
}

// unpublish withdraws the lease from local readers.
func (l *leaderLease) unpublish() {
	if l.pub != nil {
		l.pub.Store(nil)
	}
}

// leaseFor returns the longest lease that is safe for an election timeout of
// electionTicks ticks of length tick, capped by want when want > 0. A
// follower counts its election timeout in ticks from its Ready loop's ticker;
// the first tick may come right after it heard from the leader and one
// delayed tick may be buffered, so it can grant a vote after
// (electionTicks-2) * tick of real time as measured by its own clock. The
// lease is measured by the leader's clock, so it keeps a margin of
// leaseDriftMargin of that bound for clock-rate drift between the two: it is
// at most 0.9 x (electionTicks-2) ticks. The default is the smaller of that
// and 0.8x the election timeout; 0 (lease disabled) with fewer than 3
// election ticks.
func leaseFor(electionTicks int, tick, want time.Duration) time.Duration {
	if electionTicks < 3 || tick <= 0 {
		return 0
	}
	bound := time.Duration(electionTicks-2) * tick
	bound -= bound / leaseDriftMargin
	d := time.Duration(electionTicks) * tick * 8 / 10
	if want > 0 {
		d = want
	}
	return min(d, bound)
}

// leaseDriftMargin: the lease stays 1/leaseDriftMargin (10 %) below the
// time a follower refuses votes, far above the rate error of real clocks
// (~100 ppm) and enough for a VM whose clock is being slewed (NTP slews at
// most 500 ppm).
const leaseDriftMargin = 10

// becomeLeader starts a new term with no lease.
func (l *leaderLease) becomeLeader(term uint64) {
	l.unpublish()
	*l = leaderLease{maxLease: l.maxLease, term: term, pub: l.pub}
}

// expire drops the lease (step-down, term change, conf change).
func (l *leaderLease) expire() {
	l.unpublish()
	*l = leaderLease{maxLease: l.maxLease, pub: l.pub}
}

// transferStarted drops the lease and blocks renewal for the rest of term.
func (l *leaderLease) transferStarted() {
	l.unpublish()
	l.transferred = true
	l.expiry = time.Time{}
}

// committedInTerm records that an entry of term committed.
func (l *leaderLease) committedInTerm(term uint64) {
	if term == l.term && term != 0 {
		l.committed = true
	}
}

// renew extends the lease to start + maxLease after a quorum acknowledged a
// message of term sent at or after start. It never shortens the lease.
func (l *leaderLease) renew(term uint64, start time.Time) {
	if l.maxLease <= 0 || term != l.term || term == 0 || !l.committed || l.transferred {
		return
	}
	if e := start.Add(l.maxLease); e.After(l.expiry) {
		l.expiry = e
	}
}

// valid reports whether a read may be served under the lease at now by a
// peer whose raft state is leader (isLeader) in term with leadTransferee.
func (l *leaderLease) valid(now time.Time, isLeader bool, term, leadTransferee uint64) bool {
	return isLeader && leadTransferee == 0 && term == l.term && l.committed && !l.transferred &&
		!l.expiry.IsZero() && now.Before(l.expiry)
}

// remaining is the time left at now (<= 0 when expired or unset).
func (l *leaderLease) remaining(now time.Time) time.Duration {
	if l.expiry.IsZero() {
		return 0
	}
	return l.expiry.Sub(now)
}
