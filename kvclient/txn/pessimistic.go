package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/kv/execdetails"
	"github.com/stratadb/strata/kvclient"
	"github.com/stratadb/strata/kvclient/locate"
	"github.com/stratadb/strata/kvclient/txn/memdb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/storepb"
)

// defaultLockWait is the wait for a conflicting lock when the caller gives
// none (innodb_lock_wait_timeout's default).
const defaultLockWait = 50 * time.Second

// errRetryLock: the key was committed after for_update_ts; lock again at a
// newer one.
var errRetryLock = errors.New("kvclient/txn: pessimistic lock must retry at a newer for_update_ts")

// afterPrimaryLocked, set only by tests before any transaction runs, is
// called between a lock round's primary lock and the rest: the window in
// which another transaction can queue behind the primary.
var afterPrimaryLocked func()

// LockKeys takes pessimistic locks on keys at a fresh for_update_ts (see
// kv.Txn). The first key ever locked becomes the primary. In optimistic
// mode the keys are only marked, to be checked for conflicts at commit.
// values (opts.ReturnValues) are the latest committed values, nil when
// absent, in the order of keys.
func (t *Txn) LockKeys(ctx context.Context, opts kv.LockOptions, keys ...[]byte) ([][]byte, error) {
	if err := t.checkWrite(); err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, nil
	}
	defer execdetails.From(ctx).Since(execdetails.LockKeys, time.Now())
	if !t.opts.Pessimistic {
		for _, k := range keys {
			t.mem.Lock(k, 0)
		}
		if !opts.ReturnValues {
			return nil, nil
		}
		m, err := t.BatchGet(ctx, keys)
		if err != nil {
			return nil, err
		}
		values := make([][]byte, len(keys))
		for i, k := range keys {
			values[i] = m[string(k)]
		}
		return values, nil
	}

	var need [][]byte
	for _, k := range keys {
		if e, ok := t.mem.Get(k); ok && e.Flags&memdb.Locked != 0 {
			continue
		}
		need = append(need, k)
	}
	slices.SortFunc(need, compareBytes)
	need = slices.CompactFunc(need, func(a, b []byte) bool { return compareBytes(a, b) == 0 })

	got := make(map[string][]byte)
	if len(need) > 0 {
		start := time.Now()
		if err := t.lockPessimistic(ctx, opts, need, got); err != nil {
			return nil, err
		}
		phaseLock.Observe(time.Since(start).Seconds())
	}
	if !opts.ReturnValues {
		return nil, nil
	}
	values := make([][]byte, len(keys))
	for i, k := range keys {
		if v, ok := got[string(k)]; ok {
			values[i] = v
			continue
		}
		// Locked before by this transaction: nobody committed it since,
		// so the buffer or the latest version answers.
		if e, ok := t.mem.Get(k); ok && e.HasValue() {
			if !e.Deleted() {
				values[i] = slices.Clone(e.Value)
			}
			continue
		}
		v, found, err := t.snapshotGet(ctx, k, t.forUpdateTS)
		if err != nil {
			return nil, mapErr(err)
		}
		if found {
			values[i] = v
		}
	}
	return values, nil
}

// lockPessimistic locks sorted keys (none held yet), the primary's first.
// Nothing is marked locked until every key is: a call that fails releases
// every key it may have locked, the primary it chose included (see
// releaseFailed).
func (t *Txn) lockPessimistic(ctx context.Context, opts kv.LockOptions, keys [][]byte, got map[string][]byte) (err error) {
	wait := defaultLockWait
	if opts.WaitTimeoutMs > 0 {
		wait = time.Duration(opts.WaitTimeoutMs) * time.Millisecond
	}
	deadline := time.Now().Add(wait)
	choosePrimary := t.locked == 0
	if choosePrimary {
		t.primary = slices.Clone(keys[0])
	}
	primaryLocked := !choosePrimary
	rest := keys
	// sentTS is the newest for_update_ts a request of this call carried
	// (0: none sent); the locks it may have left carry no newer one.
	var sentTS uint64
	defer func() {
		if err != nil {
			t.releaseFailed(ctx, keys, sentTS, choosePrimary, err)
		}
	}()
	bo := t.c.kv.NewBackoffer()
	var mu sync.Mutex
	// The transaction's first lock round locks at the snapshot its
	// statement reads (start_ts, or READ COMMITTED's statement snapshot)
	// instead of fetching a new timestamp, as TiDB locks a first statement's
	// point gets: a store refuses a lock on a key committed after
	// for_update_ts (WriteConflict, PessimisticRetry), and then the round
	// runs again at a fresh timestamp, so a lock never returns a value
	// older than the newest committed one. An autocommit UPDATE saves one
	// of its two TSO round trips.
	reuseReadTS := t.lockTS == 0 && !t.rcStale && t.readTS >= t.startTS
	for {
		forUpdateTS := t.readTS
		if !reuseReadTS {
			if forUpdateTS, err = t.c.oracle.GetTS(ctx); err != nil {
				return fmt.Errorf("kvclient/txn: for_update_ts: %w", mapErr(err))
			}
		}
		reuseReadTS = false
		sentTS = forUpdateTS
		lockStart := time.Now()
		t.lockTS = max(t.lockTS, forUpdateTS)
		lock := func(bo *kvclient.Backoffer, ks [][]byte, first bool) error {
			return t.c.kv.OnSorted(ctx, bo, len(ks), func(i int) []byte { return ks[i] },
				func(r *locate.Region, lo, hi int) (bool, error) {
					vals, retry, err := t.lockRegion(ctx, bo, r, opts, ks[lo:hi], forUpdateTS, first, deadline)
					if err != nil || retry {
						return retry, err
					}
					mu.Lock()
					for i, k := range ks[lo:hi] {
						if i < len(vals) { // nil: absent, answered too (no read after the lock)
							got[string(k)] = vals[i]
						}
					}
					mu.Unlock()
					return false, nil
				})
		}
		if !primaryLocked {
			// The primary is locked before any secondary, so a resolver
			// that finds a secondary can always find the primary.
			if err = lock(bo, [][]byte{t.primary}, true); err == nil {
				primaryLocked = true
				rest = slices.DeleteFunc(slices.Clone(keys), func(k []byte) bool { return compareBytes(k, t.primary) == 0 })
				t.startHeartbeat(t.primary)
				if afterPrimaryLocked != nil {
					afterPrimaryLocked()
				}
			}
		}
		if err == nil && len(rest) > 0 {
			err = t.lockParallel(ctx, bo, rest, lock)
		}
		if errors.Is(err, errRetryLock) {
			continue // the locks taken stay, and are taken again (idempotent)
		}
		if err != nil {
			return mapErr(err)
		}
		t.forUpdateTS = max(t.forUpdateTS, forUpdateTS)
		t.renewed(lockStart)
		for _, k := range keys {
			t.mem.Lock(k, memdb.Locked)
		}
		t.locked += len(keys)
		return nil
	}
}

func (t *Txn) lockParallel(ctx context.Context, bo *kvclient.Backoffer, keys [][]byte, lock func(*kvclient.Backoffer, [][]byte, bool) error) error {
	return t.onRegions(ctx, bo, keys, func(bo *kvclient.Backoffer, ks [][]byte) error { return lock(bo, ks, false) })
}

// onRegions runs f on the sorted keys of each region, the regions in
// parallel (each with a fork of bo), and returns errRetryLock if any
// returned it, else firstErr of theirs.
func (t *Txn) onRegions(ctx context.Context, bo *kvclient.Backoffer, keys [][]byte, f func(*kvclient.Backoffer, [][]byte) error) error {
	groups, err := t.c.kv.GroupSorted(ctx, bo, len(keys), func(i int) []byte { return keys[i] })
	if err != nil {
		return err
	}
	if len(groups) == 1 {
		return f(bo, keys)
	}
	errs := make([]error, len(groups))
	var wg sync.WaitGroup
	for i, g := range groups[1:] {
		sub := bo.Fork()
		wg.Go(func() { errs[i+1] = f(sub, keys[g.Lo:g.Hi]) })
	}
	errs[0] = f(bo.Fork(), keys[groups[0].Lo:groups[0].Hi])
	wg.Wait()
	for _, err := range errs {
		if errors.Is(err, errRetryLock) {
			return err
		}
	}
	return firstErr(errs)
}

// lockRegion locks keys of region r, waiting for conflicting locks until
// deadline.
func (t *Txn) lockRegion(ctx context.Context, bo *kvclient.Backoffer, r *locate.Region, opts kv.LockOptions,
	keys [][]byte, forUpdateTS uint64, first bool, deadline time.Time) ([][]byte, bool, error) {
	muts := make([]*kvrpcpb.Mutation, len(keys))
	for i, k := range keys {
		muts[i] = &kvrpcpb.Mutation{Op: kvrpcpb.Op_PessimisticLock, Key: k}
	}
	polls := 0
	for {
		// The store waits at most this long per request, below the RPC
		// timeout (a lock request timing out in flight is undetermined);
		// longer waits are several requests.
		wait := min(time.Until(deadline), t.c.kv.RPCTimeout()/2)
		// Rounded up: a remainder under 1 ms still waits, so the
		// statement never gives up before its lock wait timeout.
		waitMs := int64((wait + time.Millisecond - 1) / time.Millisecond)
		if opts.NoWait {
			waitMs = -1
		} else if wait <= 0 {
			return nil, false, fmt.Errorf("%w: key %x", kv.ErrLockWaitTimeout, keys[0])
		}
		req := &kvrpcpb.PessimisticLockRequest{
			Mutations:    muts,
			PrimaryLock:  t.primary,
			StartVersion: t.startTS,
			LockTtl:      t.lockTTL(),
			ForUpdateTs:  forUpdateTS,
			IsFirstLock:  first,
			WaitTimeout:  waitMs,
			ReturnValues: opts.ReturnValues,
		}
		resp, retry, err := t.c.kv.SendRequest(ctx, bo, r, &kvclient.Request{Cmd: &storepb.BatchCommandsRequest_Request_PessimisticLock{PessimisticLock: req}})
		if err != nil && t.resendLock(ctx, bo, r, err, deadline) {
			return nil, true, nil
		}
		if err != nil || retry {
			return nil, retry, err
		}
		pr := resp.GetPessimisticLock()
		var locks []*kvrpcpb.LockInfo
		for _, ke := range pr.GetErrors() {
			switch {
			case ke.Locked != nil:
				locks = append(locks, ke.Locked)
			case ke.Conflict != nil && ke.Conflict.Reason == kvrpcpb.WriteConflict_PessimisticRetry:
				return nil, false, errRetryLock
			case ke.LockWaitTimeout != nil:
				if opts.NoWait {
					return nil, false, &kv.LockConflictError{Key: ke.LockWaitTimeout.Key}
				}
				if time.Now().Before(deadline) {
					locks = append(locks, nil) // waited one slice: try again
					continue
				}
				return nil, false, keyError(ke, t.startTS)
			default:
				return nil, false, keyError(ke, t.startTS)
			}
		}
		if len(locks) == 0 {
			if !opts.ReturnValues {
				return nil, false, nil
			}
			vals := make([][]byte, len(keys))
			for i := range keys {
				if i < len(pr.Values) && (i >= len(pr.NotFounds) || !pr.NotFounds[i]) {
					vals[i] = pr.Values[i]
				}
			}
			return vals, false, nil
		}
		real := slices.DeleteFunc(locks, func(l *kvrpcpb.LockInfo) bool { return l == nil })
		if len(real) > 0 {
			// Finished or expired holders are resolved and the lock
			// retried, even with NOWAIT.
			res, err := t.c.resolver.Resolve(ctx, bo, 0, real)
			if err != nil {
				return nil, false, err
			}
			if res.Wait && opts.NoWait {
				return nil, false, &kv.LockConflictError{Key: real[0].Key}
			}
			if res.Wait {
				// A live owner's prewrite lock (the store queues waiters
				// only behind pessimistic locks): poll with backoff until
				// the statement's lock wait timeout, as a queued wait would.
				if err := waitLockOwner(ctx, &polls, deadline); err != nil {
					return nil, false, fmt.Errorf("%w: key %x locked by txn %d", err, real[0].Key, real[0].LockVersion)
				}
			}
		}
	}
}

// resendLock reports whether a lock request whose outcome is undetermined
// (its store died or its answer was lost after it was sent: a leader
// killed mid-request) is to be sent again, after a backoff, to the
// region's leader found anew, as TiDB's client retries a pessimistic lock
// on a send failure. Locking is idempotent: a store answers success for a
// key this transaction already locks (at the same or a newer
// for_update_ts), so a request that did land costs only the resend. It
// resends until the statement's lock wait deadline or the backoff budget,
// whichever comes first; ctx cancelled, it does not.
func (t *Txn) resendLock(ctx context.Context, bo *kvclient.Backoffer, r *locate.Region, err error, deadline time.Time) bool {
	if !isUndetermined(err) || ctx.Err() != nil || !time.Now().Before(deadline) {
		return false
	}
	if bo.Backoff(ctx, err) != nil || !time.Now().Before(deadline) {
		return false
	}
	lockResends.Inc()
	slog.Info("kvclient/txn: pessimistic lock undetermined, resending at the region's current leader",
		"txn", t.startTS, "region", r.ID(), "err", err)
	return true
}

// waitLockOwner sleeps before the n-th poll of a live transaction's lock:
// 2 ms doubling to 200 ms, never past deadline (then ErrLockWaitTimeout).
func waitLockOwner(ctx context.Context, n *int, deadline time.Time) error {
	d := min(2*time.Millisecond<<min(*n, 7), 200*time.Millisecond, time.Until(deadline))
	if d <= 0 {
		return kv.ErrLockWaitTimeout
	}
	*n++
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// releaseTimeout bounds a synchronous release of pessimistic locks (a
// failed lock round, Rollback): past it the locks are left to their TTL.
const releaseTimeout = 10 * time.Second

// releaseFailed releases the locks a failed LockKeys call may have taken
// on keys (none was held before it) at sentTS, the newest for_update_ts
// it sent, and forgets the primary the call chose. It waits for the
// release, so a deadlock victim's or a timed-out statement's locks are gone
// before its error is returned, and the next writer of the keys is not
// stalled until their TTL; only when the store itself failed (cause
// undetermined or region unavailable) is the release left to the
// background, so the error is not delayed by a second timeout.
func (t *Txn) releaseFailed(ctx context.Context, keys [][]byte, sentTS uint64, chosePrimary bool, cause error) {
	if chosePrimary {
		t.stopHeartbeat()
		t.primary = nil
	}
	if sentTS == 0 {
		return // no lock request was sent
	}
	keys = cloneKeys(keys) // the caller's; kept past the return
	release := func() error {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		defer cancel()
		err := t.pessimisticRollback(rctx, keys, sentTS)
		lockReleases.WithLabelValues("failed_lock", outcomeLabel(err)).Inc()
		if err != nil {
			slog.Info("kvclient/txn: release locks of failed lock request (left to their TTL)", "txn", t.startTS, "keys", len(keys), "err", err)
		}
		return err
	}
	if isUndetermined(cause) || errors.Is(cause, kv.ErrRegionUnavailable) {
		// Rollback releases them again should this release not land.
		t.maybeLocked = append(t.maybeLocked, keys...)
		go func() { _ = release() }()
		return
	}
	if release() != nil {
		t.maybeLocked = append(t.maybeLocked, keys...)
	}
}

func cloneKeys(keys [][]byte) [][]byte {
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = slices.Clone(k)
	}
	return out
}

// pessimisticRollback releases this transaction's pessimistic locks on
// sorted keys with for_update_ts <= forUpdateTS: one request per region,
// the regions in parallel; a region that fails does not stop the others.
func (t *Txn) pessimisticRollback(ctx context.Context, keys [][]byte, forUpdateTS uint64) error {
	return t.onRegions(ctx, t.c.kv.NewBackoffer(), keys, func(bo *kvclient.Backoffer, ks [][]byte) error {
		return t.c.kv.OnSorted(ctx, bo, len(ks), func(i int) []byte { return ks[i] },
			func(r *locate.Region, lo, hi int) (bool, error) {
				req := &kvrpcpb.PessimisticRollbackRequest{StartVersion: t.startTS, ForUpdateTs: forUpdateTS, Keys: ks[lo:hi]}
				resp, retry, err := t.c.kv.SendRequest(ctx, bo, r, &kvclient.Request{Cmd: &storepb.BatchCommandsRequest_Request_PessimisticRollback{PessimisticRollback: req}})
				if err != nil || retry {
					return retry, err
				}
				if kes := resp.GetPessimisticRollback().GetErrors(); len(kes) > 0 {
					return false, keyError(kes[0], t.startTS)
				}
				return false, nil
			})
	})
}

// Rollback discards the transaction and releases its pessimistic locks
// (also those a failed lock round could not release), at the newest
// for_update_ts any of its lock requests carried, one request per region,
// before it returns. It does not give up when ctx is cancelled (KILL, a
// client gone): the release is bounded by releaseTimeout instead.
func (t *Txn) Rollback(ctx context.Context) error {
	if t.finished {
		return nil
	}
	t.finished = true
	defer t.c.active.remove(t.startTS)
	t.stopHeartbeat()
	txnTotal.WithLabelValues(string(modeRollback), "rolled_back").Inc()
	t.releaseAll(ctx, "rollback")
	return nil
}

// releaseAll releases every pessimistic lock the transaction holds or may
// hold, at the newest for_update_ts any of its lock requests carried, and
// waits for it (bounded by releaseTimeout, whatever ctx's cancellation).
// A failure is logged: the locks expire with their TTL (no heartbeats).
func (t *Txn) releaseAll(ctx context.Context, cause string) {
	if t.mem.Len() == 0 && len(t.maybeLocked) == 0 {
		return // nothing buffered, nothing locked (a read-only transaction)
	}
	keys := t.maybeLocked
	for k, e := range t.mem.Iter(nil, nil, false) {
		if e.Flags&memdb.Locked != 0 {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return
	}
	slices.SortFunc(keys, compareBytes)
	keys = slices.CompactFunc(keys, func(a, b []byte) bool { return compareBytes(a, b) == 0 })
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	err := t.pessimisticRollback(rctx, keys, max(t.forUpdateTS, t.lockTS))
	lockReleases.WithLabelValues(cause, outcomeLabel(err)).Inc()
	if err != nil {
		slog.Info("kvclient/txn: release pessimistic locks (left to their TTL)", "txn", t.startTS, "cause", cause, "keys", len(keys), "err", err)
	}
}

// startHeartbeat keeps the transaction's locks alive (TxnHeartBeat on the
// primary every HeartbeatInterval) until stopHeartbeat.
func (t *Txn) startHeartbeat(primary []byte) {
	t.hbMu.Lock()
	defer t.hbMu.Unlock()
	if t.hbStop != nil {
		return
	}
	stop := make(chan struct{})
	t.hbStop = stop
	primary = slices.Clone(primary)
	c, startTS := t.c, t.startTS
	go func() {
		// t's fields other than aliveUntil are not touched here (lockTTL
		// reads only what never changes).
		tick := time.NewTicker(c.cfg.HeartbeatInterval)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			ttl := t.lockTTL()
			ctx, cancel := context.WithTimeout(context.Background(), c.kv.RPCTimeout())
			sent := time.Now()
			err := c.heartbeat(ctx, primary, startTS, ttl)
			cancel()
			if err == nil {
				t.renewed(sent)
			}
			if err != nil {
				slog.Debug("kvclient/txn: heartbeat", "txn", startTS, "err", err)
				var ke *heartbeatKeyError
				if errors.As(err, &ke) {
					return // the lock is gone: nothing left to keep alive
				}
			}
		}
	}()
}

// renewed notes that the locks' TTL was extended by a request sent at
// sent: they live LockTTL past it.
func (t *Txn) renewed(sent time.Time) {
	until := sent.Add(t.c.cfg.LockTTL).UnixMilli()
	for {
		cur := t.aliveUntil.Load()
		if cur >= until || t.aliveUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// lockLost is the error for a pessimistic lock found missing at prewrite:
// kv.ErrPessimisticLockExpired when its TTL had run out by this client's
// clock (it was resolved by another transaction), else err (its region's
// leader lost it).
func (t *Txn) lockLost(err error) error {
	if until := t.aliveUntil.Load(); until != 0 && time.Now().UnixMilli() > until {
		return fmt.Errorf("%w: %w", kv.ErrPessimisticLockExpired, err)
	}
	return err
}

func (t *Txn) stopHeartbeat() {
	t.hbMu.Lock()
	defer t.hbMu.Unlock()
	if t.hbStop != nil {
		close(t.hbStop)
		t.hbStop = nil
	}
}

type heartbeatKeyError struct{ err error }

func (e *heartbeatKeyError) Error() string { return e.err.Error() }

func (c *Client) heartbeat(ctx context.Context, primary []byte, startTS, ttl uint64) error {
	bo := c.kv.NewBackoffer()
	for {
		r, err := c.kv.Locate(ctx, bo, primary)
		if err != nil {
			return err
		}
		req := &kvrpcpb.TxnHeartBeatRequest{PrimaryLock: primary, StartVersion: startTS, AdviseLockTtl: ttl}
		resp, retry, err := c.kv.SendRequest(ctx, bo, r, &kvclient.Request{Cmd: &storepb.BatchCommandsRequest_Request_TxnHeartBeat{TxnHeartBeat: req}})
		if err != nil {
			return err
		}
		if retry {
			continue
		}
		if ke := resp.GetTxnHeartBeat().GetError(); ke != nil {
			return &heartbeatKeyError{keyError(ke, startTS)}
		}
		return nil
	}
}
