package pd

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// leaderLease is the PD leader's local view of its etcd lease: the time
// before which the lease is certainly still alive on the etcd side.
//
// etcd expires a lease TTL after it processed the last renewal. A renewal is
// processed after the client sent it, so "send time + TTL" is never later
// than the server's expiry, however long the response took (a paused or
// partitioned leader may receive it seconds later). The local expiry is send
// time + TTL - margin (margin absorbs clock-rate differences) and only ever
// moves forward. etcd's own client computes its deadline from when the
// response *arrived* and checks it every 500 ms, which is why the session's
// Done() alone cannot fence TSO (issue 10).
//
// The expiry is read with valid() on every TSO batch; it is lock-free.
type leaderLease struct {
	cli    *clientv3.Client
	id     clientv3.LeaseID
	ttl    time.Duration
	margin time.Duration
	base   time.Time    // monotonic origin of expire
	expire atomic.Int64 // nanoseconds after base; 0 = never valid
}

// leaseMargin is subtracted from every local expiry: a fifth of the TTL, at
// most 500 ms.
func leaseMargin(ttl time.Duration) time.Duration { return min(ttl/5, 500*time.Millisecond) }

// grantLease grants an etcd lease of ttl (whole seconds) and returns its
// local view, valid from the grant's send time.
func grantLease(ctx context.Context, cli *clientv3.Client, ttl time.Duration) (*leaderLease, error) {
	l := &leaderLease{cli: cli, ttl: ttl, margin: leaseMargin(ttl), base: time.Now()}
	sent := time.Now()
	resp, err := cli.Grant(ctx, int64(ttl/time.Second))
	if err != nil {
		return nil, fmt.Errorf("grant lease: %w", err)
	}
	l.id = resp.ID
	l.extend(sent, time.Duration(resp.TTL)*time.Second)
	return l, nil
}

// extend moves the local expiry to sent + ttl - margin if that is later.
func (l *leaderLease) extend(sent time.Time, ttl time.Duration) {
	if ttl <= 0 {
		return
	}
	exp := int64(sent.Add(ttl - l.margin).Sub(l.base))
	for {
		cur := l.expire.Load()
		if exp <= cur || l.expire.CompareAndSwap(cur, exp) {
			return
		}
	}
}

// valid reports whether the lease is certainly alive in etcd now.
func (l *leaderLease) valid() bool {
	return int64(time.Since(l.base)) < l.expire.Load()
}

// remaining is the time left on the local lease (negative once expired).
func (l *leaderLease) remaining() time.Duration {
	return time.Duration(l.expire.Load() - int64(time.Since(l.base)))
}

// keepAlive renews the lease every ttl/3 until ctx is done or etcd reports
// the lease gone. Each renewal is bounded by ttl/3 so one lost response does
// not delay the next renewal; the local expiry is taken from the send time.
func (l *leaderLease) keepAlive(ctx context.Context) {
	interval := l.ttl / 3
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		sent := time.Now()
		rctx, cancel := context.WithTimeout(ctx, interval)
		resp, err := l.cli.KeepAliveOnce(rctx, l.id)
		cancel()
		if err == nil {
			l.extend(sent, time.Duration(resp.TTL)*time.Second)
		} else if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return // expired on the etcd side; valid() will turn false
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
