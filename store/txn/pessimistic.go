package txn

import (
	"bytes"
	"context"
	"time"

	"github.com/stratadb/strata/proto/kvrpcpb"
)

// PessimisticLock serves a PessimisticLockRequest (TiKV's
// AcquirePessimisticLock): all keys are locked for the transaction at
// for_update_ts, or none is. A key committed after for_update_ts is a
// WriteConflict (PessimisticRetry); a key locked by another transaction
// makes the request wait for that lock's release (wait_timeout ms, 0 = the
// store's default, < 0 = NOWAIT: Locked at once), then evaluate again. A
// wait that would close a cycle of waiting transactions fails at once with
// Deadlock; one that outlasts its timeout with LockWaitTimeout; one whose
// holder's TTL ran out returns Locked so the client resolves it.
func (s *Storage) PessimisticLock(ctx context.Context, req *kvrpcpb.PessimisticLockRequest) (*kvrpcpb.PessimisticLockResponse, error) {
	start := time.Now()
	timeout := time.Duration(req.GetWaitTimeout()) * time.Millisecond
	if req.GetWaitTimeout() == 0 {
		timeout = s.cfg.LockWaitTimeout
	}
	deadline := start.Add(timeout)
	var prev *lockWaiter // this request's earlier waiter: keeps its place
	woken := false       // prev was woken by a release
	waited := false
	for {
		resp, w, err := s.tryPessimisticLock(ctx, req, prev, tsoNowMS(req, start))
		if woken && (w == nil || !bytes.Equal(w.key, prev.key)) {
			// The retry after a wake-up did not wait for that key again
			// (it took the lock, failed, or now waits for another key):
			// let the next waiter of that key try.
			s.waits.wakeNext(prev.key)
		}
		woken = false
		if err != nil || w == nil {
			if err == nil && len(resp.GetErrors()) == 0 && resp.GetRegionError() == nil {
				// Locked: whoever still waits for these keys now waits for
				// this transaction.
				for _, m := range req.GetMutations() {
					lockRechecks.Add(float64(s.waits.recheck(m.GetKey())))
				}
			}
			if waited {
				waitedFor := time.Since(start)
				lockWaitSeconds.WithLabelValues("acquired").Observe(waitedFor.Seconds())
				if wd := resp.GetExecDetails().GetWriteDetail(); wd != nil {
					wd.PessimisticLockWaitNanos = uint64(waitedFor)
				}
			}
			return resp, err
		}
		if req.GetWaitTimeout() < 0 || !time.Now().Before(deadline) {
			s.waits.remove(w)
			return lockedResponse(w.lock), nil
		}
		if dl := s.detector.Detect(w.startTS, w.lock.GetLockVersion(), w.key); dl != nil {
			if !s.waits.remove(w) {
				s.waits.wakeNext(w.key)
			}
			deadlocks.Inc()
			lockWaitSeconds.WithLabelValues("deadlock").Observe(time.Since(start).Seconds())
			return &kvrpcpb.PessimisticLockResponse{Errors: []*kvrpcpb.KeyError{{Deadlock: dl}}}, nil
		}
		waited = true
		ttlLeft := int64(physical(w.lock.GetLockVersion())+w.lock.GetLockTtl()) - int64(tsoNowMS(req, start))
		outcome := s.waits.wait(ctx, w, deadline, time.Now().Add(time.Duration(ttlLeft)*time.Millisecond))
		s.detector.CleanUp(w.startTS, w.lock.GetLockVersion())
		prev = w
		switch outcome {
		case waitWoken:
			woken = true
		case waitRecheck, waitExpired:
			woken = false
		case waitTimeout:
			lockWaitSeconds.WithLabelValues("timeout").Observe(time.Since(start).Seconds())
			return &kvrpcpb.PessimisticLockResponse{Errors: []*kvrpcpb.KeyError{{LockWaitTimeout: &kvrpcpb.LockWaitTimeout{
				Key: w.key, LockTs: w.lock.GetLockVersion(),
			}}}}, nil
		default:
			lockWaitSeconds.WithLabelValues("canceled").Observe(time.Since(start).Seconds())
			return nil, ctx.Err()
		}
	}
}

func lockedResponse(l *kvrpcpb.LockInfo) *kvrpcpb.PessimisticLockResponse {
	return &kvrpcpb.PessimisticLockResponse{Errors: []*kvrpcpb.KeyError{{Locked: l}}}
}

// tsoNowMS estimates PD's clock (the physical part of a timestamp taken
// now) for req: the physical part of its for_update_ts, taken from PD when
// the lock round began, plus how long the request has been served here
// since start (a monotonic measure). Lock TTLs run on PD's clock, as
// CheckTxnStatus judges them with the client's current timestamp; this
// store's wall clock may be minutes off PD's (a clock stepped back, a PD
// whose timestamps stay ahead of a clock that jumped), and must not judge
// them. The estimate lags PD's clock by the client's round trip, so a lock
// is at worst deemed expired that much late.
func tsoNowMS(req *kvrpcpb.PessimisticLockRequest, start time.Time) uint64 {
	return physical(req.GetForUpdateTs()) + uint64(time.Since(start).Milliseconds())
}

// lockInfoExpired reports whether l's TTL ran out by nowMS, an estimate of
// PD's clock (tsoNowMS).
func lockInfoExpired(l *kvrpcpb.LockInfo, nowMS uint64) bool {
	return physical(l.GetLockVersion())+l.GetLockTtl() < nowMS
}

// tryPessimisticLock evaluates the request once. When a key is locked by
// another transaction it registers a waiter on that key before the latches
// are released (so the holder's release cannot be missed) and returns it.
// prev is the waiter of an earlier round, whose place in the queue a new
// waiter keeps.
func (s *Storage) tryPessimisticLock(ctx context.Context, req *kvrpcpb.PessimisticLockRequest, prev *lockWaiter, nowMS uint64) (*kvrpcpb.PessimisticLockResponse, *lockWaiter, error) {
	muts := req.GetMutations()
	p := &pessimisticProps{
		startTS:     req.GetStartVersion(),
		forUpdateTS: req.GetForUpdateTs(),
		primary:     req.GetPrimaryLock(),
		ttl:         req.GetLockTtl(),
		minCommitTS: req.GetMinCommitTs(),
		needValue:   req.GetReturnValues(),
		needExist:   req.GetCheckExistence(),
		onlyIfExist: req.GetLockOnlyIfExists(),
	}
	if p.onlyIfExist && !p.needValue {
		return &kvrpcpb.PessimisticLockResponse{Errors: []*kvrpcpb.KeyError{
			errAbort("lock_only_if_exists needs return_values").Err}}, nil, nil
	}
	c, rerr, err := s.begin(ctx, "pessimistic_lock", req.GetContext(), keysOf(muts), 0)
	if err != nil || rerr != nil {
		return &kvrpcpb.PessimisticLockResponse{RegionError: rerr}, nil, err
	}
	defer c.finish()
	resp := &kvrpcpb.PessimisticLockResponse{}
	for _, m := range muts {
		shouldNotExist := m.GetOp() == kvrpcpb.Op_Insert || m.GetOp() == kvrpcpb.Op_CheckNotExists
		v, found, err := acquirePessimisticLock(c.r, &c.t, p, m.GetKey(), shouldNotExist)
		if err != nil {
			ke, ok := toKeyError(err)
			if !ok {
				return nil, nil, err
			}
			if ke.Locked != nil && lockInfoExpired(ke.Locked, nowMS) {
				// The holder may be gone: the client resolves the lock.
				lockWaitSeconds.WithLabelValues("lock_expired").Observe(0)
				return lockedResponse(ke.Locked), nil, nil
			}
			if ke.Locked != nil && ke.Locked.GetLockType() != kvrpcpb.Op_PessimisticLock {
				// A prewrite lock: its owner is committing and waits for
				// no one. The client asks its primary: a committed or
				// rolled-back owner's locks are resolved region-wide at
				// once (a large transaction's secondaries, committed in
				// the background, would otherwise wake waiters one key at
				// a time); a live one is backed off, briefly.
				lockWaitSeconds.WithLabelValues("prewrite_lock").Observe(0)
				return lockedResponse(ke.Locked), nil, nil
			}
			if ke.Locked != nil {
				w := s.waits.add(m.GetKey(), req.GetContext().GetRegionId(), p.startTS, ke.Locked, prev)
				return nil, w, nil
			}
			return &kvrpcpb.PessimisticLockResponse{Errors: []*kvrpcpb.KeyError{ke}}, nil, nil
		}
		if p.needValue {
			resp.Values = append(resp.Values, v)
		}
		if p.needValue || p.needExist {
			resp.NotFounds = append(resp.NotFounds, !found)
		}
	}
	rerr, err = c.write(ctx, req.GetContext())
	if err != nil {
		return nil, nil, err
	}
	if rerr != nil {
		return &kvrpcpb.PessimisticLockResponse{RegionError: rerr, ExecDetails: c.det}, nil, nil
	}
	resp.ExecDetails = c.det
	return resp, nil, nil
}

// onReleased wakes the first waiter of each released key.
func (s *Storage) onReleased(released []releasedLock) {
	for _, r := range released {
		s.waits.wakeNext(r.key)
	}
}
