package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/stratadb/strata/failpoint"
	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/kv/execdetails"
	"github.com/stratadb/strata/kvclient"
	"github.com/stratadb/strata/kvclient/locate"
	"github.com/stratadb/strata/kvclient/txn/memdb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/storepb"
)

// commitMode is how a transaction commits (a metric label).
type commitMode string

const (
	modeReadOnly commitMode = "read_only"
	modeOnePC    commitMode = "one_pc"
	modeAsync    commitMode = "async_commit"
	mode2PC      commitMode = "two_pc"
	modeRollback commitMode = "rollback"
)

// secondaryCommitTimeout bounds the background commit of secondaries (a
// lock left behind is resolved by readers from the primary).
const secondaryCommitTimeout = 30 * time.Second

// committer runs the commit of one transaction.
type committer struct {
	t         *Txn
	muts      []*kvrpcpb.Mutation // sorted by key
	actions   []kvrpcpb.PessimisticAction
	primary   []byte
	groups    []kvclient.Group // of muts
	ttl       uint64
	onePC     bool
	async     bool
	minCommit uint64

	mu           sync.Mutex
	maxMinCommit uint64
	onePCTS      uint64
	declined     bool // a region refused async commit / 1PC
	prewritten   bool // some prewrite may have left locks
}

// Commit makes the buffered writes durable at one commit_ts. See kv.Txn.
func (t *Txn) Commit(ctx context.Context) (err error) {
	if t.finished {
		return ErrFinished
	}
	t.finished = true
	defer execdetails.From(ctx).Since(execdetails.Commit, time.Now())
	defer t.c.active.remove(t.startTS)
	defer t.stopHeartbeat()
	cm := &committer{t: t}
	cm.collect()
	if cm.primary == nil {
		// Nothing to write (at most keys inserted and deleted again).
		cm.muts = nil
	}
	if len(cm.muts) == 0 {
		txnTotal.WithLabelValues(string(modeReadOnly), "committed").Inc()
		return nil
	}
	mode, err := cm.run(ctx)
	txnTotal.WithLabelValues(string(mode), outcome(err)).Inc()
	return err
}

func outcome(err error) string {
	var wc *kv.WriteConflictError
	switch {
	case err == nil:
		return "committed"
	case isUndetermined(err):
		return "undetermined"
	case errors.As(err, &wc):
		return "conflict"
	case errors.Is(err, ErrTxnAborted):
		return "aborted"
	}
	return "error"
}

// collect turns the buffer into mutations in key order.
//
// A key the transaction inserted and then deleted is buffered as
// Op_CheckNotExists. Locked (pessimistic), nobody else can have written it
// since: it is simply deleted, as TiDB does. Otherwise it is prewrite-only:
// the store checks it and leaves no lock, so it is never the primary, nor
// an async-commit secondary, nor committed (prewriteOnly); a resolver
// would find no lock there and roll the whole transaction back.
func (cm *committer) collect() {
	t := cm.t
	for k, e := range t.mem.Iter(nil, nil, false) {
		// A Lock entry (a locked key, or one an optimistic LockKeys marked)
		// is prewritten as Op_Lock: conflicts are checked, nothing written.
		op := e.Op
		if op == kvrpcpb.Op_CheckNotExists && t.opts.Pessimistic && e.Flags&memdb.Locked != 0 {
			op = kvrpcpb.Op_Del
		}
		cm.muts = append(cm.muts, &kvrpcpb.Mutation{Op: op, Key: k, Value: e.Value})
		if t.opts.Pessimistic {
			a := kvrpcpb.PessimisticAction_DoConstraintCheck
			if e.Flags&memdb.Locked != 0 {
				a = kvrpcpb.PessimisticAction_DoPessimisticCheck
			}
			cm.actions = append(cm.actions, a)
		}
	}
	cm.primary = t.primary
	if cm.primary == nil {
		if i := slices.IndexFunc(cm.muts, func(m *kvrpcpb.Mutation) bool { return !prewriteOnly(m) }); i >= 0 {
			cm.primary = cm.muts[i].Key
		}
	}
}

// prewriteOnly: the mutation is checked by the prewrite and leaves no lock.
func prewriteOnly(m *kvrpcpb.Mutation) bool { return m.GetOp() == kvrpcpb.Op_CheckNotExists }

func (cm *committer) key(i int) []byte { return cm.muts[i].Key }

func (cm *committer) run(ctx context.Context) (commitMode, error) {
	t := cm.t
	bo := t.c.kv.NewBackoffer()
	var err error
	cm.groups, err = t.c.kv.GroupSorted(ctx, bo, len(cm.muts), cm.key)
	if err != nil {
		return mode2PC, cm.fail(ctx, mapErr(err))
	}
	cm.onePC = t.opts.OnePC && len(cm.groups) == 1 && cm.chunkEnd(0, len(cm.muts)) == len(cm.muts)
	cm.async = !cm.onePC && t.opts.AsyncCommit && len(cm.muts) <= t.c.cfg.AsyncCommitMaxKeys
	cm.ttl = t.lockTTL()
	cm.minCommit = max(t.startTS, t.forUpdateTS) + 1
	mode := mode2PC
	switch {
	case cm.onePC:
		mode = modeOnePC
	case cm.async:
		mode = modeAsync
	}
	if len(cm.muts) > 64 || time.Since(t.began) > t.c.cfg.HeartbeatInterval {
		t.startHeartbeat(cm.primary)
	}

	start := time.Now()
	failpoint.Hit("txn-before-prewrite")
	if err := cm.prewrite(ctx, bo); err != nil {
		if cm.onePC && isUndetermined(err) {
			switch commitTS, rolledBack := cm.settleOnePC(ctx); {
			case commitTS != 0:
				cm.onePCTS = commitTS
				return mode, nil
			case rolledBack:
				// Decided, not undetermined: fail rolls back the other
				// keys' locks and the client may run it again.
				err = fmt.Errorf("%w: %w (the answer was lost: %v)", ErrTxnAborted, kv.ErrCommitLost, err)
				cm.onePC = false
			}
		}
		return mode, cm.fail(ctx, err)
	}
	if cm.onePC && !cm.declined {
		phaseOnePC.Observe(time.Since(start).Seconds())
		return mode, nil
	}
	// Locks are left on every key (async commit or 2PC).
	failpoint.Hit("txn-after-prewrite")
	switch {
	case cm.async && !cm.declined:
		// Every prewrite succeeded: the transaction is committed at the
		// largest min_commit_ts; tell the client now, commit the locks in
		// the background.
		phaseAsync.Observe(time.Since(start).Seconds())
		commitTS := cm.maxMinCommit
		go cm.commitAll(commitTS)
		return mode, nil
	}
	phasePrewrite.Observe(time.Since(start).Seconds())
	if mode != mode2PC {
		mode = mode2PC // a region declined, or split under 1PC: fall back
	}
	return mode, cm.commit2PC(ctx, bo)
}

// fail rolls back what prewrite may have left and returns err. The
// rollback is done before err is returned, so a retry of the transaction
// (or any other writer) does not meet its locks; only when the store
// itself failed (undetermined, region unavailable) is it left to the
// background, not to delay the error by a second timeout. An undetermined
// 1PC or async-commit prewrite may have committed the transaction: it
// stays undetermined unless the primary is rolled back.
func (cm *committer) fail(ctx context.Context, err error) error {
	if !cm.prewritten {
		cm.t.releaseAll(ctx, "failed_commit") // pessimistic locks taken before the commit
		return err
	}
	if isUndetermined(err) && cm.onePC {
		return mapErr(err)
	}
	if isUndetermined(err) && cm.async {
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cm.t.c.kv.RPCTimeout())
		defer cancel()
		if rerr := cm.rollbackKeys(bctx, [][]byte{cm.primary}); rerr != nil {
			return mapErr(err)
		}
	}
	rollback := func() {
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		defer cancel()
		keys := make([][]byte, len(cm.muts))
		for i, m := range cm.muts {
			keys[i] = m.Key
		}
		rerr := cm.rollbackKeys(bctx, keys)
		lockReleases.WithLabelValues("failed_commit", outcomeLabel(rerr)).Inc()
		if rerr != nil {
			slog.Info("kvclient/txn: rollback after failed prewrite (locks left to their TTL)", "txn", cm.t.startTS, "err", rerr)
		}
	}
	if isUndetermined(err) || errors.Is(err, kv.ErrRegionUnavailable) || errors.Is(err, kvclient.ErrRegionUnavailable) {
		go rollback()
	} else {
		rollback()
	}
	if isUndetermined(err) {
		// The primary is not committed (2PC) or was rolled back (async):
		// the transaction did not commit.
		// Nothing committed: the client sees 9005 (retry), not 1105.
		return fmt.Errorf("%w: %w: prewrite outcome unknown, transaction rolled back: %v", kv.ErrRegionUnavailable, ErrTxnAborted, err)
	}
	return mapErr(err)
}

// prewrite prewrites every region's mutations in parallel.
func (cm *committer) prewrite(ctx context.Context, bo *kvclient.Backoffer) error {
	if len(cm.groups) == 1 {
		return cm.prewriteRange(ctx, bo, cm.groups[0].Lo, cm.groups[0].Hi)
	}
	errs := make([]error, len(cm.groups))
	var wg sync.WaitGroup
	for i, g := range cm.groups[1:] {
		sub := bo.Fork()
		wg.Go(func() { errs[i+1] = cm.prewriteRange(ctx, sub, g.Lo, g.Hi) })
	}
	errs[0] = cm.prewriteRange(ctx, bo.Fork(), cm.groups[0].Lo, cm.groups[0].Hi)
	wg.Wait()
	return firstErr(errs)
}

// firstErr prefers an undetermined error, then a key error, then any.
func firstErr(errs []error) error {
	var first error
	for _, err := range errs {
		if err == nil {
			continue
		}
		if isUndetermined(err) {
			return err
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// Prewrite requests carry at most this many mutations or bytes; larger
// region batches are several requests.
const (
	maxChunkKeys  = 2048
	maxChunkBytes = 1 << 20
)

// chunkEnd returns the end of the chunk of muts starting at a (< b).
func (cm *committer) chunkEnd(a, b int) int {
	size := 0
	for i := a; i < b; i++ {
		size += len(cm.muts[i].Key) + len(cm.muts[i].Value)
		if i > a && (i-a >= maxChunkKeys || size > maxChunkBytes) {
			return i
		}
	}
	return b
}

func (cm *committer) prewriteRange(ctx context.Context, bo *kvclient.Backoffer, lo, hi int) error {
	return cm.t.c.kv.OnSorted(ctx, bo, hi-lo, func(i int) []byte { return cm.muts[lo+i].Key },
		func(r *locate.Region, a, b int) (bool, error) {
			if cm.onePC && (a > 0 || b < hi-lo) {
				// The region split after the mutations were grouped (a
				// 1PC attempt got EpochNotMatch and wrote nothing): 1PC
				// per part would commit each part on its own, at its own
				// timestamp. Fall back to 2PC (prewrite is serial here:
				// 1PC means one group).
				cm.onePC = false
				onePCFallbacks.Inc()
			}
			for a, b = a+lo, b+lo; a < b; {
				e := cm.chunkEnd(a, b)
				if retry, err := cm.prewriteChunk(ctx, bo, r, a, e); err != nil || retry {
					return retry, err
				}
				a = e
			}
			return false, nil
		})
}

// settleOnePC decides a 1PC commit whose answer was lost (its store died
// under it) at the primary's current leader: Cleanup of the primary at
// current_ts 0 reports its commit if the 1PC was applied, else removes
// this transaction's lock and writes a rollback record there, under the
// key's latch and after everything the region committed (a new leader
// reads only after an entry of its term committed, which commits the old
// leader's entries it has). The rollback record fences the 1PC for good:
// a prewrite still to come finds it and fails. So commitTS != 0: committed
// (at commitTS); rolledBack: it never commits; neither (the Cleanup failed
// too): still undetermined.
func (cm *committer) settleOnePC(ctx context.Context) (commitTS uint64, rolledBack bool) {
	t := cm.t
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*t.c.kv.RPCTimeout())
	defer cancel()
	bo := t.c.kv.NewBackoffer()
	err := t.c.kv.OnSorted(sctx, bo, 1, func(int) []byte { return cm.primary },
		func(r *locate.Region, _, _ int) (bool, error) {
			req := &kvrpcpb.CleanupRequest{Key: cm.primary, StartVersion: t.startTS}
			resp, retry, err := t.c.kv.SendRequest(sctx, bo, r, &kvclient.Request{Cmd: &storepb.BatchCommandsRequest_Request_Cleanup{Cleanup: req}})
			if err != nil || retry {
				return retry, err
			}
			if ke := resp.GetCleanup().GetError(); ke != nil {
				return false, keyError(ke, t.startTS)
			}
			commitTS = resp.GetCleanup().GetCommitVersion()
			return false, nil
		})
	outcome := "undetermined"
	switch {
	case err != nil:
		commitTS = 0
	case commitTS != 0:
		outcome = "committed"
	default:
		outcome, rolledBack = "rolled_back", true
	}
	onePCSettled.WithLabelValues(outcome).Inc()
	slog.Info("kvclient/txn: settled a 1PC commit whose answer was lost", "txn", t.startTS, "outcome", outcome, "commit_ts", commitTS, "err", err)
	return commitTS, rolledBack
}

// resendPrewrite reports whether a 2PC prewrite whose outcome is
// undetermined (its store died or its answer was lost after it was sent)
// is to be sent again, after a backoff, to the region's leader found anew,
// as TiDB's client retries a prewrite on a send failure. A 2PC prewrite
// is idempotent: a key this transaction already prewrote answers success
// (store/txn), and nothing is committed before the primary's commit. A 1PC
// or async-commit prewrite may have committed the transaction by itself:
// it stays undetermined (fail).
func (cm *committer) resendPrewrite(ctx context.Context, bo *kvclient.Backoffer, r *locate.Region, err error) bool {
	if cm.onePC || cm.async || !isUndetermined(err) || ctx.Err() != nil {
		return false
	}
	if bo.Backoff(ctx, err) != nil {
		return false
	}
	prewriteResends.Inc()
	slog.Info("kvclient/txn: prewrite undetermined, resending at the region's current leader",
		"txn", cm.t.startTS, "region", r.ID(), "err", err)
	return true
}

// prewriteChunk prewrites muts[a:b], all in region r.
func (cm *committer) prewriteChunk(ctx context.Context, bo *kvclient.Backoffer, r *locate.Region, a, b int) (bool, error) {
	t := cm.t
	for {
		req := &kvrpcpb.PrewriteRequest{
			Mutations:      cm.muts[a:b],
			PrimaryLock:    cm.primary,
			StartVersion:   t.startTS,
			LockTtl:        cm.ttl,
			TxnSize:        uint64(len(cm.muts)),
			ForUpdateTs:    t.forUpdateTS,
			MinCommitTs:    cm.minCommit,
			UseAsyncCommit: cm.async,
			TryOnePc:       cm.onePC,
		}
		if (cm.async || cm.onePC) && t.guard.Check != nil {
			req.MaxCommitTs = t.guard.MaxCommitTS
		}
		if t.opts.Pessimistic {
			req.PessimisticActions = cm.actions[a:b]
		}
		if cm.async && a <= cm.primaryIndex() && cm.primaryIndex() < b {
			for _, m := range cm.muts {
				if compareBytes(m.Key, cm.primary) != 0 && !prewriteOnly(m) {
					req.Secondaries = append(req.Secondaries, m.Key)
				}
			}
		}
		cm.mu.Lock()
		cm.prewritten = true
		cm.mu.Unlock()
		resp, retry, err := t.c.kv.SendRequest(ctx, bo, r, &kvclient.Request{Cmd: &storepb.BatchCommandsRequest_Request_Prewrite{Prewrite: req}})
		if err != nil && cm.resendPrewrite(ctx, bo, r, err) {
			return true, nil
		}
		if err != nil || retry {
			return retry, err
		}
		pr := resp.GetPrewrite()
		if kes := pr.GetErrors(); len(kes) > 0 {
			var locks []*kvrpcpb.LockInfo
			for _, ke := range kes {
				if ke.Retryable != "" {
					return false, t.lockLost(keyError(ke, t.startTS))
				}
				if ke.Locked == nil {
					return false, keyError(ke, t.startTS)
				}
				locks = append(locks, ke.Locked)
			}
			if t.opts.FailOnLock {
				return false, fmt.Errorf("%w: txn %d on key %x", kv.ErrWriteLocked, locks[0].LockVersion, locks[0].Key)
			}
			res, err := t.c.resolver.Resolve(ctx, bo, 0, locks)
			if err != nil {
				return false, err
			}
			if res.Wait {
				if err := bo.Backoff(ctx, fmt.Errorf("%w: prewrite met txn %d", errLocked, locks[0].LockVersion)); err != nil {
					return false, err
				}
			}
			continue
		}
		cm.mu.Lock()
		switch {
		case cm.onePC:
			if pr.OnePcCommitTs == 0 {
				cm.declined = true
			}
			cm.onePCTS = pr.OnePcCommitTs
		case cm.async:
			if pr.MinCommitTs == 0 {
				cm.declined = true
			}
			cm.maxMinCommit = max(cm.maxMinCommit, pr.MinCommitTs)
		}
		cm.mu.Unlock()
		return false, nil
	}
}

func (cm *committer) primaryIndex() int {
	for i, m := range cm.muts {
		if compareBytes(m.Key, cm.primary) == 0 {
			return i
		}
	}
	return -1
}

// commit2PC commits the primary at a fresh commit_ts (the commit point),
// then the secondaries in the background.
func (cm *committer) commit2PC(ctx context.Context, bo *kvclient.Backoffer) error {
	t := cm.t
	start := time.Now()
	commitTS, err := t.c.oracle.GetTS(ctx)
	if err != nil {
		// Not committed: roll back.
		return cm.fail(ctx, fmt.Errorf("kvclient/txn: commit ts: %w", err))
	}
	commitTS = max(commitTS, cm.maxMinCommit)
	for {
		if !t.guard.Allows(commitTS) {
			// Later than the schema vouches for: ask it (not committed).
			if err := t.guard.Check(ctx, commitTS); err != nil {
				return cm.fail(ctx, err)
			}
		}
		err = cm.commitKeys(ctx, bo, commitTS, [][]byte{cm.primary})
		var expired *commitTSExpired
		if errors.As(err, &expired) {
			// A reader pushed the primary's min_commit_ts: commit later.
			ts, terr := t.c.oracle.GetTS(ctx)
			if terr != nil {
				return cm.fail(ctx, terr)
			}
			commitTS = max(ts, expired.min)
			continue
		}
		break
	}
	phaseCommit.Observe(time.Since(start).Seconds())
	if err != nil {
		if isUndetermined(err) {
			return mapErr(err)
		}
		if errors.Is(err, ErrTxnAborted) {
			// The primary's lock is gone and not committed: rolled back by a
			// resolver; clean up the rest.
			return cm.fail(ctx, err)
		}
		return cm.fail(ctx, mapErr(err))
	}
	failpoint.Hit("txn-after-primary-commit")
	go cm.commitAll(commitTS)
	return nil
}

type commitTSExpired struct{ min uint64 }

func (e *commitTSExpired) Error() string {
	return fmt.Sprintf("kvclient/txn: commit ts below min_commit_ts %d", e.min)
}

// commitAll commits every key but the primary (async commit: the primary
// too) in the background.
func (cm *committer) commitAll(commitTS uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), secondaryCommitTimeout)
	defer cancel()
	keys := make([][]byte, 0, len(cm.muts))
	for _, m := range cm.muts {
		if prewriteOnly(m) || !cm.async && compareBytes(m.Key, cm.primary) == 0 {
			continue
		}
		keys = append(keys, m.Key)
	}
	if len(keys) == 0 {
		return
	}
	bo := cm.t.c.kv.NewBackoffer()
	if err := cm.commitKeys(ctx, bo, commitTS, keys); err != nil {
		slog.Debug("kvclient/txn: commit secondaries (readers resolve what is left)", "txn", cm.t.startTS, "commit_ts", commitTS, "err", err)
	}
}

// commitKeys commits sorted keys at commitTS, one request per region.
func (cm *committer) commitKeys(ctx context.Context, bo *kvclient.Backoffer, commitTS uint64, keys [][]byte) error {
	t := cm.t
	return t.c.kv.OnSorted(ctx, bo, len(keys), func(i int) []byte { return keys[i] },
		func(r *locate.Region, lo, hi int) (bool, error) {
			for ; lo < hi; lo += maxChunkKeys {
				req := &kvrpcpb.CommitRequest{StartVersion: t.startTS, Keys: keys[lo:min(hi, lo+maxChunkKeys)], CommitVersion: commitTS}
				resp, retry, err := t.c.kv.SendRequest(ctx, bo, r, &kvclient.Request{Cmd: &storepb.BatchCommandsRequest_Request_Commit{Commit: req}})
				if err != nil || retry {
					return retry, err
				}
				if ke := resp.GetCommit().GetError(); ke != nil {
					if ke.CommitTsExpired != nil {
						return false, &commitTSExpired{min: ke.CommitTsExpired.MinCommitTs}
					}
					return false, keyError(ke, t.startTS)
				}
			}
			return false, nil
		})
}

// rollbackKeys writes rollback records for sorted keys: the regions in
// parallel, one that fails does not stop the others.
func (cm *committer) rollbackKeys(ctx context.Context, keys [][]byte) error {
	t := cm.t
	return t.onRegions(ctx, t.c.kv.NewBackoffer(), keys, func(bo *kvclient.Backoffer, ks [][]byte) error {
		return t.c.kv.OnSorted(ctx, bo, len(ks), func(i int) []byte { return ks[i] },
			func(r *locate.Region, lo, hi int) (bool, error) {
				for ; lo < hi; lo += maxChunkKeys {
					req := &kvrpcpb.BatchRollbackRequest{StartVersion: t.startTS, Keys: ks[lo:min(hi, lo+maxChunkKeys)]}
					resp, retry, err := t.c.kv.SendRequest(ctx, bo, r, &kvclient.Request{Cmd: &storepb.BatchCommandsRequest_Request_BatchRollback{BatchRollback: req}})
					if err != nil || retry {
						return retry, err
					}
					if ke := resp.GetBatchRollback().GetError(); ke != nil {
						return false, keyError(ke, t.startTS)
					}
				}
				return false, nil
			})
	})
}
