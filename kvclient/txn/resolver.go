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
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/storepb"
	"github.com/stratadb/strata/tso"
)

// smallTxnKeys: locks of transactions with fewer keys are resolved key by
// key instead of with a region-wide ResolveLock.
const smallTxnKeys = 16

// resolvedCacheSize bounds the cache of finished transactions' outcomes.
const resolvedCacheSize = 4096

// TxnStatus is a transaction's state as its primary lock tells it.
type TxnStatus struct {
	TTL      uint64 // > 0: still locked
	CommitTS uint64 // > 0 with TTL 0: committed
	Action   kvrpcpb.Action
	Lock     *kvrpcpb.LockInfo // primary's lock while locked
}

// Final: committed or rolled back.
func (s TxnStatus) Final() bool { return s.TTL == 0 }

// LockResolver finds out the outcome of the transactions whose locks a
// request met and commits or rolls back those locks. Outcomes of finished
// transactions are cached; concurrent resolutions of one transaction share
// one status check (single flight). Safe for concurrent use.
type LockResolver struct {
	kv     *kvclient.Client
	oracle Oracle

	mu       sync.Mutex
	resolved map[uint64]TxnStatus  // final outcomes by start_ts
	flights  map[uint64]*txnFlight // status checks in progress
	regions  map[uint64]map[uint64]bool
}

type txnFlight struct {
	done   chan struct{}
	status TxnStatus
	err    error
}

func newLockResolver(kv *kvclient.Client, oracle Oracle) *LockResolver {
	return &LockResolver{kv: kv, oracle: oracle,
		resolved: make(map[uint64]TxnStatus),
		flights:  make(map[uint64]*txnFlight),
		regions:  make(map[uint64]map[uint64]bool)}
}

// ResolveResult says what a request that met locks should do next.
type ResolveResult struct {
	// Skip: start_ts of transactions whose locks the reader may read
	// through (they commit after its snapshot, or are rolled back); pass
	// them as Context.resolved_locks.
	Skip []uint64
	// Wait: some lock belongs to a live transaction; back off and retry.
	Wait bool
}

// Resolve handles locks met by a request at callerTS (a reader's snapshot;
// 0 for writers, which never push other transactions). Finished
// transactions' locks are committed or rolled back; live ones are pushed
// (readers only: a lock whose min_commit_ts is above callerTS is skipped)
// or waited for.
func (lr *LockResolver) Resolve(ctx context.Context, bo *kvclient.Backoffer, callerTS uint64, locks []*kvrpcpb.LockInfo) (ResolveResult, error) {
	defer execdetails.From(ctx).Since(execdetails.ResolveLock, time.Now())
	var res ResolveResult
	for _, l := range locks {
		if slices.Contains(res.Skip, l.LockVersion) {
			continue
		}
		st, err := lr.status(ctx, bo, l, callerTS)
		if err != nil {
			return res, err
		}
		if !st.Final() {
			if callerTS != 0 && l.LockType != kvrpcpb.Op_PessimisticLock &&
				(st.Action == kvrpcpb.Action_MinCommitTSPushed || (st.Lock != nil && st.Lock.MinCommitTs > callerTS)) {
				resolvePushed.Inc()
				res.Skip = append(res.Skip, l.LockVersion)
				continue
			}
			resolveWait.Inc()
			res.Wait = true
			continue
		}
		if callerTS != 0 && (st.CommitTS == 0 || st.CommitTS > callerTS) && l.LockType != kvrpcpb.Op_PessimisticLock {
			// Invisible to this reader either way: read through it while
			// the lock is cleaned up.
			res.Skip = append(res.Skip, l.LockVersion)
		}
		if err := lr.resolveLock(ctx, bo, l, st); err != nil {
			return res, err
		}
	}
	return res, nil
}

func expired(l *kvrpcpb.LockInfo, currentTS uint64) bool {
	return tso.Physical(currentTS) >= tso.Physical(l.LockVersion)+int64(l.LockTtl)
}

// status returns the outcome of l's transaction, from the cache or one
// shared CheckTxnStatus on its primary.
func (lr *LockResolver) status(ctx context.Context, bo *kvclient.Backoffer, l *kvrpcpb.LockInfo, callerTS uint64) (TxnStatus, error) {
	lr.mu.Lock()
	if st, ok := lr.resolved[l.LockVersion]; ok {
		lr.mu.Unlock()
		resolveCached.Inc()
		return st, nil
	}
	if f, ok := lr.flights[l.LockVersion]; ok {
		lr.mu.Unlock()
		select {
		case <-f.done:
			if f.err == nil && !f.status.Final() {
				// A live status checked for another caller may not have
				// pushed past ours: check again ourselves.
				break
			}
			return f.status, f.err
		case <-ctx.Done():
			return TxnStatus{}, ctx.Err()
		}
		return lr.checkStatus(ctx, bo, l, callerTS)
	}
	f := &txnFlight{done: make(chan struct{})}
	lr.flights[l.LockVersion] = f
	lr.mu.Unlock()

	f.status, f.err = lr.checkStatus(ctx, bo, l, callerTS)
	lr.mu.Lock()
	delete(lr.flights, l.LockVersion)
	if f.err == nil && f.status.Final() {
		if len(lr.resolved) >= resolvedCacheSize {
			clear(lr.resolved)
			clear(lr.regions)
		}
		lr.resolved[l.LockVersion] = f.status
	}
	lr.mu.Unlock()
	close(f.done)
	return f.status, f.err
}

func (lr *LockResolver) checkStatus(ctx context.Context, bo *kvclient.Backoffer, l *kvrpcpb.LockInfo, callerTS uint64) (TxnStatus, error) {
	return lr.checkStatusMode(ctx, bo, l, callerTS, false)
}

// checkStatusMode is checkStatus; forceSync treats an async-commit primary
// as a two-phase one (its transaction fell back to two-phase commit: some
// region refused async commit, so its primary's commit decides).
func (lr *LockResolver) checkStatusMode(ctx context.Context, bo *kvclient.Backoffer, l *kvrpcpb.LockInfo, callerTS uint64, forceSync bool) (TxnStatus, error) {
	now, err := lr.oracle.GetTS(ctx)
	if err != nil {
		return TxnStatus{}, fmt.Errorf("kvclient/txn: resolve lock: %w", err)
	}
	isExpired := expired(l, now)
	req := &kvrpcpb.CheckTxnStatusRequest{
		PrimaryKey:               l.PrimaryLock,
		LockTs:                   l.LockVersion,
		CallerStartTs:            callerTS,
		CurrentTs:                now,
		RollbackIfNotExist:       isExpired,
		ResolvingPessimisticLock: l.LockType == kvrpcpb.Op_PessimisticLock,
		ForceSyncCommit:          forceSync,
	}
	for {
		r, err := lr.kv.Locate(ctx, bo, l.PrimaryLock)
		if err != nil {
			return TxnStatus{}, err
		}
		resp, retry, err := lr.kv.SendRequest(ctx, bo, r, &kvclient.Request{Cmd: &storepb.BatchCommandsRequest_Request_CheckTxnStatus{CheckTxnStatus: req}})
		if err != nil {
			return TxnStatus{}, err
		}
		if retry {
			continue
		}
		cr := resp.GetCheckTxnStatus()
		if ke := cr.GetError(); ke != nil {
			if ke.TxnNotFound != nil && !isExpired {
				// The primary's prewrite has not arrived (or is being
				// retried): treat as alive until the lock expires.
				return TxnStatus{TTL: l.LockTtl}, nil
			}
			if ke.Locked != nil {
				// Another lock on the primary key: wait.
				return TxnStatus{TTL: l.LockTtl}, nil
			}
			return TxnStatus{}, fmt.Errorf("kvclient/txn: check txn %d status: %w", l.LockVersion, keyError(ke, l.LockVersion))
		}
		st := TxnStatus{TTL: cr.LockTtl, CommitTS: cr.CommitVersion, Action: cr.Action, Lock: cr.LockInfo}
		if !forceSync && !st.Final() && st.Lock != nil && st.Lock.UseAsyncCommit && expired(st.Lock, now) {
			st, fellBack, err := lr.asyncCommitStatus(ctx, bo, st.Lock)
			if err != nil || !fellBack {
				return st, err
			}
			asyncFallbacksResolved.Inc()
			return lr.checkStatusMode(ctx, bo, l, callerTS, true)
		}
		return st, nil
	}
}

// asyncCommitStatus decides an expired async-commit transaction from its
// secondaries: committed if any is committed or all are still locked (at
// the largest min_commit_ts), else rolled back (CheckSecondaryLocks leaves
// a rollback record on a missing lock, so the prewrite cannot land later).
// A secondary locked without async commit means a region refused it (its
// max_commit_ts would have been passed) and the committer fell back to
// two-phase commit: fellBack, nothing is decided or resolved here, and the
// primary's fate decides as for any two-phase transaction (counting such
// a lock as "still locked" would commit a transaction its client may be
// rolling back, at a timestamp it never chose).
func (lr *LockResolver) asyncCommitStatus(ctx context.Context, bo *kvclient.Backoffer, primary *kvrpcpb.LockInfo) (st TxnStatus, fellBack bool, err error) {
	keys := slices.Clone(primary.Secondaries)
	slices.SortFunc(keys, func(a, b []byte) int { return compareBytes(a, b) })
	commitTS := primary.MinCommitTs
	missing := false
	committed := uint64(0)
	err = lr.kv.OnSorted(ctx, bo, len(keys), func(i int) []byte { return keys[i] },
		func(r *locate.Region, lo, hi int) (bool, error) {
			req := &kvrpcpb.CheckSecondaryLocksRequest{Keys: keys[lo:hi], StartVersion: primary.LockVersion}
			resp, retry, err := lr.kv.SendRequest(ctx, bo, r, &kvclient.Request{Cmd: &storepb.BatchCommandsRequest_Request_CheckSecondaryLocks{CheckSecondaryLocks: req}})
			if err != nil || retry {
				return retry, err
			}
			cr := resp.GetCheckSecondaryLocks()
			if ke := cr.GetError(); ke != nil {
				return false, keyError(ke, primary.LockVersion)
			}
			if cr.CommitTs > 0 {
				committed = cr.CommitTs
			}
			if len(cr.Locks) < hi-lo {
				missing = true
			}
			for _, l := range cr.Locks {
				commitTS = max(commitTS, l.MinCommitTs)
				if !l.UseAsyncCommit {
					fellBack = true
				}
			}
			return false, nil
		})
	if err != nil {
		return TxnStatus{}, false, fmt.Errorf("kvclient/txn: check secondaries of txn %d: %w", primary.LockVersion, err)
	}
	if fellBack && committed == 0 {
		return TxnStatus{}, true, nil
	}
	st = TxnStatus{Action: kvrpcpb.Action_NoAction}
	switch {
	case committed > 0:
		st.CommitTS = committed
	case missing:
		st.CommitTS = 0
	default:
		st.CommitTS = commitTS
	}
	// Resolve the whole transaction now: the primary first would be the
	// usual order, but every key gets the same decision.
	all := append(keys, primary.Key)
	slices.SortFunc(all, compareBytes)
	all = slices.CompactFunc(all, func(a, b []byte) bool { return compareBytes(a, b) == 0 })
	if err := lr.resolveKeys(ctx, bo, primary.LockVersion, st.CommitTS, all); err != nil {
		return TxnStatus{}, false, err
	}
	return st, false, nil
}

// resolveLock commits or rolls back l as st says: the key itself, and for
// a big transaction also the rest of its locks in the region, once per
// transaction and region, in the background. The reader waits only for
// its own key: a region-wide ResolveLock scans the region's lock space
// (after a bulk load, millions of deleted locks), which took longer than
// the RPC timeout in go-tpc and failed every reader behind it with 9005.
func (lr *LockResolver) resolveLock(ctx context.Context, bo *kvclient.Backoffer, l *kvrpcpb.LockInfo, st TxnStatus) error {
	if st.CommitTS > 0 {
		resolveCommitted.Inc()
	} else {
		resolveRolledBack.Inc()
	}
	if l.LockType == kvrpcpb.Op_PessimisticLock && st.CommitTS == 0 {
		return lr.pessimisticRollback(ctx, bo, l)
	}
	if err := lr.resolveKeys(ctx, bo, l.LockVersion, st.CommitTS, [][]byte{l.Key}); err != nil {
		return err
	}
	if l.TxnSize >= smallTxnKeys {
		lr.resolveRegionAsync(ctx, bo, l, st.CommitTS)
	}
	return nil
}

// regionResolveTimeout bounds a background region-wide ResolveLock.
const regionResolveTimeout = 30 * time.Second

// resolveRegionAsync resolves the locks of l's transaction in l's region
// on its own goroutine, unless that was started before (a lock written
// later, or in a region split off since, is resolved by the next reader
// that meets it, key by key).
func (lr *LockResolver) resolveRegionAsync(ctx context.Context, bo *kvclient.Backoffer, l *kvrpcpb.LockInfo, commitTS uint64) {
	r, err := lr.kv.Locate(ctx, bo, l.Key) // the region cache: the key was just resolved
	if err != nil {
		return // the next reader that meets a lock of the transaction tries again
	}
	lr.mu.Lock()
	if lr.regions[l.LockVersion][r.ID()] {
		lr.mu.Unlock()
		return
	}
	if lr.regions[l.LockVersion] == nil {
		lr.regions[l.LockVersion] = make(map[uint64]bool)
	}
	lr.regions[l.LockVersion][r.ID()] = true
	lr.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), regionResolveTimeout)
		defer cancel()
		if err := lr.resolveRegion(ctx, l, commitTS); err != nil {
			slog.Debug("kvclient/txn: background region resolve failed", "txn", l.LockVersion, "err", err)
		}
	}()
}

// resolveRegion sends one region-wide ResolveLock for l's transaction to
// the region holding l.Key.
func (lr *LockResolver) resolveRegion(ctx context.Context, l *kvrpcpb.LockInfo, commitTS uint64) error {
	bo := lr.kv.NewBackoffer()
	for {
		r, err := lr.kv.Locate(ctx, bo, l.Key)
		if err != nil {
			return err
		}
		req := &kvrpcpb.ResolveLockRequest{StartVersion: l.LockVersion, CommitVersion: commitTS}
		resp, retry, err := lr.kv.SendRequest(ctx, bo, r, &kvclient.Request{Cmd: &storepb.BatchCommandsRequest_Request_ResolveLock{ResolveLock: req}})
		if err != nil {
			return resolveErr(l.LockVersion, err)
		}
		if retry {
			continue
		}
		if ke := resp.GetResolveLock().GetError(); ke != nil {
			return fmt.Errorf("kvclient/txn: resolve txn %d: %w", l.LockVersion, keyError(ke, l.LockVersion))
		}
		return nil
	}
}

// resolveKeys commits (commitTS > 0) or rolls back the locks of txn
// startTS on sorted keys.
func (lr *LockResolver) resolveKeys(ctx context.Context, bo *kvclient.Backoffer, startTS, commitTS uint64, keys [][]byte) error {
	err := lr.kv.OnSorted(ctx, bo, len(keys), func(i int) []byte { return keys[i] },
		func(r *locate.Region, lo, hi int) (bool, error) {
			req := &kvrpcpb.ResolveLockRequest{StartVersion: startTS, CommitVersion: commitTS, Keys: keys[lo:hi]}
			resp, retry, err := lr.kv.SendRequest(ctx, bo, r, &kvclient.Request{Cmd: &storepb.BatchCommandsRequest_Request_ResolveLock{ResolveLock: req}})
			if err != nil || retry {
				return retry, err
			}
			if ke := resp.GetResolveLock().GetError(); ke != nil {
				return false, keyError(ke, startTS)
			}
			return false, nil
		})
	return resolveErr(startTS, err)
}

func (lr *LockResolver) pessimisticRollback(ctx context.Context, bo *kvclient.Backoffer, l *kvrpcpb.LockInfo) error {
	for {
		r, err := lr.kv.Locate(ctx, bo, l.Key)
		if err != nil {
			return err
		}
		req := &kvrpcpb.PessimisticRollbackRequest{StartVersion: l.LockVersion, ForUpdateTs: l.LockForUpdateTs, Keys: [][]byte{l.Key}}
		resp, retry, err := lr.kv.SendRequest(ctx, bo, r, &kvclient.Request{Cmd: &storepb.BatchCommandsRequest_Request_PessimisticRollback{PessimisticRollback: req}})
		if err != nil {
			return resolveErr(l.LockVersion, err)
		}
		if retry {
			continue
		}
		if kes := resp.GetPessimisticRollback().GetErrors(); len(kes) > 0 {
			return fmt.Errorf("kvclient/txn: pessimistic rollback of txn %d: %w", l.LockVersion, keyError(kes[0], l.LockVersion))
		}
		return nil
	}
}

// resolveErr: resolving is idempotent, so an undetermined resolve is just a
// failed one for the reader (it retries); never report it as the reader's
// own undetermined write.
func resolveErr(startTS uint64, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, kvclient.ErrUndetermined) {
		slog.Debug("kvclient/txn: lock resolve outcome unknown", "txn", startTS, "err", err)
		// The caller's request did nothing yet: a retryable failure (9005).
		return fmt.Errorf("%w: kvclient/txn: resolve locks of txn %d: %v", kv.ErrRegionUnavailable, startTS, err)
	}
	return fmt.Errorf("kvclient/txn: resolve locks of txn %d: %w", startTS, err)
}

func compareBytes(a, b []byte) int {
	switch {
	case string(a) < string(b):
		return -1
	case string(a) > string(b):
		return 1
	}
	return 0
}
