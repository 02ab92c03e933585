package kvclient

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratadb/strata/kv/execdetails"
)

// boReason is why a request backs off; each reason has its own exponential
// sequence within one call.
type boReason uint8

const (
	boPDRegion         boReason = iota // PD could not give us the region
	boPDStore                          // PD could not give us the store address
	boStoreUnreachable                 // connection failed / store down
	boRPCTimeout                       // read RPC timed out
	boNotLeader                        // NotLeader without hint, or leader unknown
	boRegionMiss                       // RegionNotFound, KeyNotInRegion, bad routing
	boServerBusy                       // ServerIsBusy
	boStaleCommand                     // StaleCommand on a read
	boImmediate                        // too many immediate retries in a row
	boTxnLock                          // a lock of another transaction is not resolvable yet
	numReasons
)

var reasonNames = [numReasons]string{
	"pd_region", "pd_store", "store_unreachable", "rpc_timeout", "not_leader",
	"region_miss", "server_busy", "stale_command", "immediate_retry_storm", "txn_lock",
}

func (r boReason) String() string { return reasonNames[r] }

var boCount, boSeconds [numReasons]prometheus.Counter

func init() {
	for r := range numReasons {
		boCount[r] = backoffs.WithLabelValues(reasonNames[r])
		boSeconds[r] = backoffSeconds.WithLabelValues(reasonNames[r])
	}
}

const (
	boBase = 2 * time.Millisecond
	boCap  = 500 * time.Millisecond
	// leaderWaitCap caps the backoff of not_leader and store_unreachable.
	leaderWaitCap = 100 * time.Millisecond
	// maxImmediate is how many retries in a row may skip the backoff
	// (NotLeader with hint, EpochNotMatch) before they start backing off, so
	// a routing loop cannot spin.
	maxImmediate = 8
)

// backoffer tracks the backoff of one client call. It is not safe for
// concurrent use; parallel sub-requests fork their own.
type backoffer struct {
	// leaderOnly: a replica read of this call failed on a replica; the
	// rest of the call reads from the leader.
	leaderOnly bool
	budget     time.Duration
	slept      time.Duration
	attempts   [numReasons]uint8
	immediate  int
}

func newBackoffer(budget time.Duration) backoffer {
	return backoffer{budget: budget}
}

// retries is how many times this call was retried so far (after a backoff
// or at once).
func (b *backoffer) retries() int {
	n := b.immediate
	for _, a := range b.attempts {
		n += int(a)
	}
	return n
}

// fork returns a backoffer for a parallel sub-request with what is left of
// the budget.
func (b *backoffer) fork() *backoffer {
	return &backoffer{budget: b.budget - b.slept}
}

// backoff sleeps for the next delay of reason, or fails with
// ErrRegionUnavailable (wrapping cause) when that would exceed the budget, or
// with ctx's error. regionID (0 if unknown) and cause go into the error.
func (b *backoffer) backoff(ctx context.Context, reason boReason, regionID uint64, cause error) error {
	b.immediate = 0
	n := b.attempts[reason]
	if n < 255 {
		b.attempts[reason]++
	}
	limit := boCap
	if reason == boNotLeader || reason == boStoreUnreachable {
		// Waiting for an election: a new leader is usually there within
		// tens of milliseconds (raftstore/failover.go), at worst within
		// two election timeouts; a short cap finds it soon after.
		limit = leaderWaitCap
	}
	d := limit
	if n < 16 {
		d = min(boBase<<n, limit)
	}
	// Equal jitter: half fixed, half random.
	d = d/2 + rand.N(d/2+1)
	if b.slept+d > b.budget {
		slog.Warn("kvclient: backoff budget spent", "region", regionID,
			"budget", b.budget, "reason", reason.String(), "err", cause)
		return fmt.Errorf("%w: region %d: backoff budget %v spent (last %s): %w",
			ErrRegionUnavailable, regionID, b.budget, reason, cause)
	}
	boCount[reason].Inc()
	boSeconds[reason].Add(d.Seconds())
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		b.slept += d
		execdetails.From(ctx).Add(execdetails.Backoff, d)
		return nil
	case <-ctx.Done():
		return fmt.Errorf("kvclient: region %d: %w (last error: %v)", regionID, ctx.Err(), cause)
	}
}

// retryNow notes a retry that skips the backoff; after maxImmediate of them
// in a row it backs off instead.
func (b *backoffer) retryNow(ctx context.Context, regionID uint64, cause error) error {
	b.immediate++
	if b.immediate <= maxImmediate {
		return ctx.Err()
	}
	return b.backoff(ctx, boImmediate, regionID, cause)
}
