package raftstore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/proto/metapb"
)

// fakeClock is a monotonic clock the test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time               { return c.t }
func (c *fakeClock) advance(d time.Duration)      { c.t = c.t.Add(d) }
func (c *fakeClock) at(d time.Duration) time.Time { return c.t.Add(d) }

func newTestLease(maxLease time.Duration) (*leaderLease, *fakeClock) {
	return &leaderLease{maxLease: maxLease}, &fakeClock{t: time.Unix(1000, 0)}
}

func TestLeaseFor(t *testing.T) {
	tick := 100 * time.Millisecond
	require.Equal(t, 720*time.Millisecond, leaseFor(10, tick, 0), "0.9 x (ticks-2) x tick is below 0.8x election timeout")
	require.Equal(t, 1600*time.Millisecond, leaseFor(20, tick, 0), "0.8x election timeout")
	require.Equal(t, 500*time.Millisecond, leaseFor(10, tick, 500*time.Millisecond), "configured shorter")
	require.Equal(t, 720*time.Millisecond, leaseFor(10, tick, 5*time.Second), "capped at 0.9 x (ticks-2) x tick")
	require.Equal(t, 270*time.Millisecond, leaseFor(5, tick, 0), "few ticks: the tick bound wins over 0.8x")
	require.Zero(t, leaseFor(2, tick, 0), "no safe lease")
	for ticks := 3; ticks < 50; ticks++ {
		require.Less(t, leaseFor(ticks, tick, 0), time.Duration(ticks)*tick)
	}
}

func TestLeaseRenewFromSendTime(t *testing.T) {
	l, c := newTestLease(800 * time.Millisecond)
	l.becomeLeader(7)
	l.committedInTerm(7)
	sent := c.now()
	c.advance(300 * time.Millisecond) // the quorum's acks arrive later
	l.renew(7, sent)
	require.True(t, l.valid(c.now(), true, 7, 0))
	require.Equal(t, 500*time.Millisecond, l.remaining(c.now()), "counted from the send, not the ack")
	require.True(t, l.valid(c.at(499*time.Millisecond), true, 7, 0))
	require.False(t, l.valid(c.at(500*time.Millisecond), true, 7, 0), "expired at send + maxLease")

	// An older confirmation never shortens the lease; a newer one extends it.
	l.renew(7, sent.Add(-time.Second))
	require.Equal(t, sent.Add(800*time.Millisecond), l.expiry)
	l.renew(7, sent.Add(200*time.Millisecond))
	require.Equal(t, sent.Add(time.Second), l.expiry)
	c.advance(time.Second)
	require.False(t, l.valid(c.now(), true, 7, 0))
}

func TestLeaseNotBeforeCommitInTerm(t *testing.T) {
	l, c := newTestLease(800 * time.Millisecond)
	l.becomeLeader(7)
	l.renew(7, c.now())
	require.False(t, l.valid(c.now(), true, 7, 0), "no lease before an entry of the term committed")
	l.committedInTerm(6) // an older term's entry proves nothing
	l.renew(7, c.now())
	require.False(t, l.valid(c.now(), true, 7, 0))
	l.committedInTerm(7)
	l.renew(7, c.now())
	require.True(t, l.valid(c.now(), true, 7, 0))
}

func TestLeaseInvalidation(t *testing.T) {
	valid := func() (*leaderLease, *fakeClock) {
		l, c := newTestLease(800 * time.Millisecond)
		l.becomeLeader(7)
		l.committedInTerm(7)
		l.renew(7, c.now())
		require.True(t, l.valid(c.now(), true, 7, 0))
		return l, c
	}
	t.Run("transfer", func(t *testing.T) {
		l, c := valid()
		require.False(t, l.valid(c.now(), true, 7, 3), "raft's LeadTransferee alone ends it")
		l.transferStarted()
		require.False(t, l.valid(c.now(), true, 7, 0), "also after raft aborted the transfer")
		l.renew(7, c.now())
		require.False(t, l.valid(c.now(), true, 7, 0), "no renewal for the rest of the term")
		l.becomeLeader(9)
		l.committedInTerm(9)
		l.renew(9, c.now())
		require.True(t, l.valid(c.now(), true, 9, 0), "a later term starts afresh")
	})
	t.Run("step-down", func(t *testing.T) {
		l, c := valid()
		require.False(t, l.valid(c.now(), false, 7, 0))
		l.expire()
		require.False(t, l.valid(c.now(), true, 7, 0))
		l.renew(7, c.now())
		require.False(t, l.valid(c.now(), true, 7, 0), "a late ack of the old term renews nothing")
	})
	t.Run("term-change", func(t *testing.T) {
		l, c := valid()
		require.False(t, l.valid(c.now(), true, 8, 0))
		l.becomeLeader(8)
		require.False(t, l.valid(c.now(), true, 8, 0))
		l.committedInTerm(8)
		l.renew(7, c.now())
		require.False(t, l.valid(c.now(), true, 8, 0), "a confirmation from term 7 does not count in term 8")
	})
	t.Run("disabled", func(t *testing.T) {
		l, c := newTestLease(0)
		l.becomeLeader(7)
		l.committedInTerm(7)
		l.renew(7, c.now())
		require.False(t, l.valid(c.now(), true, 7, 0))
	})
}

// TestPeerSyncLease drives syncLease with raft statuses as the Ready loop
// sees them.
func TestPeerSyncLease(t *testing.T) {
	c := &fakeClock{t: time.Unix(1000, 0)}
	p := &peer{lease: leaderLease{maxLease: 800 * time.Millisecond}}
	status := func(state raft.StateType, term, transferee uint64) *raft.BasicStatus {
		return &raft.BasicStatus{HardState: &raftpb.HardState{Term: &term}, SoftState: raft.SoftState{RaftState: state}, LeadTransferee: transferee}
	}
	p.syncLease(status(raft.StateLeader, 7, 0))
	p.lease.committedInTerm(7)
	p.lease.renew(7, c.now())
	require.True(t, p.lease.valid(c.now(), true, 7, 0))

	p.syncLease(status(raft.StateLeader, 7, 0))
	require.True(t, p.lease.valid(c.now(), true, 7, 0), "same term, same lease")

	p.syncLease(status(raft.StateLeader, 7, 2)) // e.g. a follower's MsgTransferLeader
	require.True(t, p.lease.transferred)
	require.False(t, p.lease.valid(c.now(), true, 7, 0))

	p.syncLease(status(raft.StateLeader, 9, 0))
	p.lease.committedInTerm(9)
	p.lease.renew(9, c.now())
	require.True(t, p.lease.valid(c.now(), true, 9, 0))
	p.syncLease(status(raft.StateFollower, 10, 0))
	require.Zero(t, p.lease.term)
	require.False(t, p.lease.valid(c.now(), true, 9, 0))
}

// TestPublishedLeaseWithdrawn: the lease a leader publishes to reads served
// outside the Ready loop appears only once it is valid for reads and is
// withdrawn by every way the lease ends, and by an admin command's apply.
func TestPublishedLeaseWithdrawn(t *testing.T) {
	region := &metapb.Region{Id: 1, RegionEpoch: &metapb.RegionEpoch{Version: 1, ConfVer: 1}}
	leading := func(t *testing.T) *peer {
		p := &peer{region: region, lease: leaderLease{maxLease: 800 * time.Millisecond}}
		p.lease.pub = &p.delegate
		p.lease.becomeLeader(7)
		p.lease.renew(7, time.Now())
		p.publishLease()
		require.Nil(t, p.delegate.Load(), "not before an entry of the term applied")
		p.lease.committedInTerm(7)
		p.lease.renew(7, time.Now())
		p.publishLease()
		d := p.delegate.Load()
		require.NotNil(t, d)
		require.Equal(t, uint64(7), d.term)
		require.Equal(t, p.lease.expiry, d.expiry)
		require.True(t, proto.Equal(region, d.region))
		return p
	}
	for _, tc := range []struct {
		name string
		end  func(p *peer)
	}{
		{"step-down", func(p *peer) { p.lease.expire() }},
		{"new-term", func(p *peer) { p.lease.becomeLeader(8) }},
		{"transfer", func(p *peer) { p.lease.transferStarted() }},
		{"admin-command", func(p *peer) { p.lease.unpublish() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := leading(t)
			tc.end(p)
			require.Nil(t, p.delegate.Load())
			if tc.name == "transfer" {
				p.lease.renew(7, time.Now())
				p.publishLease()
				require.Nil(t, p.delegate.Load(), "no publication for the rest of the term")
			}
		})
	}
	t.Run("region-change", func(t *testing.T) {
		p := leading(t)
		old := p.delegate.Load()
		p.region = &metapb.Region{Id: 1, EndKey: []byte("m"), RegionEpoch: &metapb.RegionEpoch{Version: 2, ConfVer: 1}}
		p.lease.renew(7, time.Now().Add(time.Millisecond))
		p.publishLease()
		d := p.delegate.Load()
		require.NotSame(t, old, d)
		require.Equal(t, uint64(2), d.region.GetRegionEpoch().GetVersion())
	})
}
