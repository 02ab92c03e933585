package txn

import (
	"bytes"
	"context"
	"math"

	"github.com/stratadb/strata/kv/regionkeys"
	"github.com/stratadb/strata/proto/errorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/store/mvcc"
)

// Prewrite serves a PrewriteRequest (TiKV's Prewrite and
// PrewritePessimistic): it locks every mutation's key or reports every
// lock of another transaction it met (nothing is written then); other key
// errors end it at once. With use_async_commit or try_one_pc the keys are
// also locked in memory (store/concurrency) and min_commit_ts is raised above
// the store's max read timestamp; try_one_pc then commits at that
// timestamp directly. When max_commit_ts would be exceeded it falls back to
// a plain prewrite (min_commit_ts 0 and one_pc_commit_ts 0 in the
// response).
func (s *Storage) Prewrite(ctx context.Context, req *kvrpcpb.PrewriteRequest) (*kvrpcpb.PrewriteResponse, error) {
	muts := req.GetMutations()
	actions := req.GetPessimisticActions()
	pessimistic := len(actions) > 0
	if pessimistic && len(actions) != len(muts) {
		return nil, ErrInvalidRequest
	}
	p := &prewriteProps{
		startTS:     req.GetStartVersion(),
		forUpdateTS: req.GetForUpdateTs(),
		primary:     req.GetPrimaryLock(),
		ttl:         req.GetLockTtl(),
		txnSize:     req.GetTxnSize(),
		minCommitTS: req.GetMinCommitTs(),
		pessimistic: pessimistic,
		skipCheck:   req.GetSkipConstraintCheck(),
		asyncCommit: req.GetUseAsyncCommit(),
		onePC:       req.GetTryOnePc(),
		secondaries: req.GetSecondaries(),
	}
	var gen uint64
	if p.asyncCommit || p.onePC {
		var err error
		if gen, err = s.SyncMaxTS(ctx); err != nil {
			return &kvrpcpb.PrewriteResponse{RegionError: errServerIsBusy("syncing max timestamp with PD: " + err.Error())}, nil
		}
	}
	keys := keysOf(muts)
	c, rerr, err := s.begin(ctx, "prewrite", req.GetContext(), keys, gen)
	if err != nil || rerr != nil {
		return &kvrpcpb.PrewriteResponse{RegionError: rerr}, err
	}
	defer c.finish()

	if p.asyncCommit || p.onePC {
		cand := max(p.startTS+1, p.forUpdateTS+1, p.minCommitTS)
		ts, release, err := s.cm.LockKeys(ctx, keys, cand)
		if err != nil {
			return nil, err
		}
		if req.GetMaxCommitTs() > 0 && ts > req.GetMaxCommitTs() {
			release()
			p.asyncCommit, p.onePC = false, false
		} else {
			c.memRelease = release
			p.minCommitTS = ts
		}
	}

	type done struct {
		key []byte
		res prewriteResult
	}
	results := make([]done, 0, len(muts))
	resp := &kvrpcpb.PrewriteResponse{}
	finalMin := uint64(0)
	anyDuplicate := false
	for i, m := range muts {
		action := kvrpcpb.PessimisticAction_SkipPessimisticCheck
		if pessimistic {
			action = actions[i]
		}
		res, err := prewriteKey(c.r, &c.t, p, m, action)
		if err != nil {
			ke, ok := toKeyError(err)
			if !ok {
				return nil, err
			}
			resp.Errors = append(resp.Errors, ke)
			if ke.Locked == nil {
				return &kvrpcpb.PrewriteResponse{Errors: []*kvrpcpb.KeyError{ke}}, nil
			}
			continue
		}
		if res.duplicate {
			anyDuplicate = true
			finalMin = max(finalMin, res.minCommitTS)
			continue
		}
		if res.lock != nil {
			finalMin = max(finalMin, res.lock.MinCommitTS)
			results = append(results, done{key: m.GetKey(), res: res})
		}
	}
	if len(resp.Errors) > 0 {
		resp.ExecDetails = c.det
		return resp, nil // locked: write nothing
	}
	if p.onePC && req.GetMaxCommitTs() > 0 && finalMin > req.GetMaxCommitTs() {
		p.onePC = false
	}
	if p.onePC && !anyDuplicate {
		commitTS := finalMin
		for _, d := range results {
			l := d.res.lock
			w := &mvcc.Write{Kind: mvcc.WriteKindOf(l.Type), StartTS: p.startTS, ShortValue: l.ShortValue, HasShortValue: l.HasShortValue}
			if err := markOverlappedRollback(c.r, d.key, commitTS, w); err != nil {
				return nil, err
			}
			c.t.PutWrite(d.key, commitTS, w)
			if d.res.hadPessimistic {
				c.t.UnlockKey(d.key)
				c.released = append(c.released, releasedLock{key: d.key, startTS: p.startTS})
			}
		}
		resp.OnePcCommitTs = commitTS
		resp.MinCommitTs = commitTS
	} else {
		for _, d := range results {
			if !p.asyncCommit {
				d.res.lock.UseAsyncCommit = false
			}
			c.t.PutLock(d.key, d.res.lock)
		}
		if p.asyncCommit {
			resp.MinCommitTs = finalMin
		}
	}
	rerr, err = c.write(ctx, req.GetContext())
	if err != nil {
		return nil, err
	}
	if rerr != nil {
		return &kvrpcpb.PrewriteResponse{RegionError: rerr, ExecDetails: c.det}, nil
	}
	s.wake(c)
	resp.ExecDetails = c.det
	return resp, nil
}

// Commit serves a CommitRequest: every key's lock of start_version becomes
// a write record at commit_version. Keys already committed by the
// transaction are skipped; a missing lock is TxnLockNotFound, a commit_ts
// below a lock's min_commit_ts is CommitTsExpired, and nothing is written
// then.
func (s *Storage) Commit(ctx context.Context, req *kvrpcpb.CommitRequest) (*kvrpcpb.CommitResponse, error) {
	if req.GetCommitVersion() <= req.GetStartVersion() {
		return &kvrpcpb.CommitResponse{Error: errAbort("invalid commit ts %d for txn %d", req.GetCommitVersion(), req.GetStartVersion()).Err}, nil
	}
	var c0 *command
	rerr, ke, err := s.run(ctx, "commit", req.GetContext(), req.GetKeys(), func(c *command) error {
		c0 = c
		for _, k := range req.GetKeys() {
			l, err := commitKey(c.r, &c.t, k, req.GetStartVersion(), req.GetCommitVersion())
			if err != nil {
				return err
			}
			if l != nil {
				c.released = append(c.released, releasedLock{key: k, startTS: req.GetStartVersion()})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if rerr == nil && ke == nil {
		s.wake(c0)
	}
	resp := &kvrpcpb.CommitResponse{RegionError: rerr, Error: ke, CommitVersion: req.GetCommitVersion()}
	if c0 != nil {
		resp.ExecDetails = c0.det
	}
	return resp, nil
}

// BatchRollback serves a BatchRollbackRequest: the transaction's locks on
// keys are removed and rollback records written (also where it has no
// lock, so a late prewrite fails). A committed key is an abort error.
func (s *Storage) BatchRollback(ctx context.Context, req *kvrpcpb.BatchRollbackRequest) (*kvrpcpb.BatchRollbackResponse, error) {
	var c0 *command
	rerr, ke, err := s.run(ctx, "batch_rollback", req.GetContext(), req.GetKeys(), func(c *command) error {
		c0 = c
		for _, k := range req.GetKeys() {
			committed, l, err := cleanupKey(c.r, &c.t, k, req.GetStartVersion(), 0)
			if err != nil {
				return err
			}
			if committed != 0 {
				return errAbort("txn %d already committed at %d on %q", req.GetStartVersion(), committed, k)
			}
			if l != nil {
				c.released = append(c.released, releasedLock{key: k, startTS: req.GetStartVersion()})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if rerr == nil && ke == nil {
		s.wake(c0)
	}
	return &kvrpcpb.BatchRollbackResponse{RegionError: rerr, Error: ke}, nil
}

// Cleanup serves a CleanupRequest: it rolls back key's lock of
// start_version when its TTL expired at current_ts (0: always), reports a
// live lock as Locked, and a commit as commit_version.
func (s *Storage) Cleanup(ctx context.Context, req *kvrpcpb.CleanupRequest) (*kvrpcpb.CleanupResponse, error) {
	var (
		c0        *command
		committed uint64
	)
	rerr, ke, err := s.run(ctx, "cleanup", req.GetContext(), [][]byte{req.GetKey()}, func(c *command) error {
		c0 = c
		ts, l, err := cleanupKey(c.r, &c.t, req.GetKey(), req.GetStartVersion(), req.GetCurrentTs())
		if err != nil {
			return err
		}
		committed = ts
		if l != nil {
			c.released = append(c.released, releasedLock{key: req.GetKey(), startTS: req.GetStartVersion()})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if rerr == nil && ke == nil {
		s.wake(c0)
	}
	return &kvrpcpb.CleanupResponse{RegionError: rerr, Error: ke, CommitVersion: committed}, nil
}

// CheckTxnStatus serves a CheckTxnStatusRequest on the primary's region
// (TiKV's check_txn_status): a live lock reports its TTL, gets its
// min_commit_ts pushed above caller_start_ts, or is rolled back once its
// TTL expired at current_ts (async-commit primaries are only reported
// unless force_sync_commit); a missing lock reports the commit or rollback,
// or writes a rollback when rollback_if_not_exist.
func (s *Storage) CheckTxnStatus(ctx context.Context, req *kvrpcpb.CheckTxnStatusRequest) (*kvrpcpb.CheckTxnStatusResponse, error) {
	if cts := req.GetCallerStartTs(); cts != 0 && cts != math.MaxUint64 {
		// The caller reads at caller_start_ts: commits from now on must be
		// above it.
		s.cm.SyncMaxTS(cts)
	}
	key, startTS := req.GetPrimaryKey(), req.GetLockTs()
	resp := &kvrpcpb.CheckTxnStatusResponse{}
	var c0 *command
	rerr, ke, err := s.run(ctx, "check_txn_status", req.GetContext(), [][]byte{key}, func(c *command) error {
		c0 = c
		l, err := c.r.LoadLock(key)
		if err != nil {
			return err
		}
		if l == nil || l.StartTS != startTS {
			if req.GetResolvingPessimisticLock() {
				rec, err := c.r.TxnCommitRecord(key, startTS)
				if err != nil {
					return err
				}
				switch rec.Kind {
				case mvcc.RecordCommitted:
					resp.CommitVersion = rec.CommitTS
				case mvcc.RecordNone:
					resp.Action = kvrpcpb.Action_LockNotExistDoNothing
				}
				return nil
			}
			st, commitTS, err := checkMissingLock(c.r, &c.t, key, startTS, req.GetRollbackIfNotExist(), key)
			if err != nil {
				return err
			}
			switch st {
			case statusCommitted:
				resp.CommitVersion = commitTS
			case statusLockNotExist:
				resp.Action = kvrpcpb.Action_LockNotExistRollback
			}
			return nil
		}
		if l.UseAsyncCommit && !req.GetForceSyncCommit() {
			resp.LockTtl = l.TTL
			resp.LockInfo = l.Info(key)
			return nil
		}
		if lockExpired(l, req.GetCurrentTs()) {
			c.released = append(c.released, releasedLock{key: key, startTS: startTS})
			if req.GetResolvingPessimisticLock() && l.Type == mvcc.LockPessimistic {
				c.t.UnlockKey(key)
				resp.Action = kvrpcpb.Action_TTLExpirePessimisticRollback
				return nil
			}
			resp.Action = kvrpcpb.Action_TTLExpireRollback
			return rollbackLock(c.r, &c.t, key, l)
		}
		cts := req.GetCallerStartTs()
		if l.MinCommitTS != 0 && cts != math.MaxUint64 && cts >= l.MinCommitTS {
			nl := *l
			nl.MinCommitTS = max(cts+1, req.GetCurrentTs())
			c.t.PutLock(key, &nl)
			l = &nl
		}
		if (cts != 0 && l.MinCommitTS > cts) || cts == math.MaxUint64 {
			resp.Action = kvrpcpb.Action_MinCommitTSPushed
		}
		resp.LockTtl = l.TTL
		resp.LockInfo = l.Info(key)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if rerr != nil || ke != nil {
		return &kvrpcpb.CheckTxnStatusResponse{RegionError: rerr, Error: ke}, nil
	}
	s.wake(c0)
	return resp, nil
}

// CheckSecondaryLocks serves a CheckSecondaryLocksRequest (async commit
// recovery): all keys still locked by start_version are returned; a
// committed key gives commit_ts; a key with neither lock nor commit is
// rolled back (a rollback record prevents a late prewrite) and the answer
// is "rolled back" (no locks, commit_ts 0). Pessimistic locks found are
// rolled back.
func (s *Storage) CheckSecondaryLocks(ctx context.Context, req *kvrpcpb.CheckSecondaryLocksRequest) (*kvrpcpb.CheckSecondaryLocksResponse, error) {
	startTS := req.GetStartVersion()
	resp := &kvrpcpb.CheckSecondaryLocksResponse{}
	var c0 *command
	rerr, ke, err := s.run(ctx, "check_secondary_locks", req.GetContext(), req.GetKeys(), func(c *command) error {
		c0 = c
		for _, k := range req.GetKeys() {
			l, err := c.r.LoadLock(k)
			if err != nil {
				return err
			}
			if l != nil && l.StartTS == startTS {
				if l.Type != mvcc.LockPessimistic {
					resp.Locks = append(resp.Locks, l.Info(k))
					continue
				}
				if err := rollbackLock(c.r, &c.t, k, l); err != nil {
					return err
				}
				c.released = append(c.released, releasedLock{key: k, startTS: startTS})
				resp.Locks, resp.CommitTs = nil, 0
				return nil
			}
			st, commitTS, err := checkMissingLock(c.r, &c.t, k, startTS, true, k)
			if err != nil {
				return err
			}
			resp.Locks = nil
			if st == statusCommitted {
				resp.CommitTs = commitTS
			}
			return nil
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if rerr != nil || ke != nil {
		return &kvrpcpb.CheckSecondaryLocksResponse{RegionError: rerr, Error: ke}, nil
	}
	s.wake(c0)
	return resp, nil
}

// ResolveLock serves a ResolveLockRequest: the locks of the given
// transactions (start_version/commit_version or txn_infos) are committed
// (commit ts > 0) or rolled back, at keys when given, else in the whole
// region (scanned in batches of Config.ResolveBatch, one write each).
func (s *Storage) ResolveLock(ctx context.Context, req *kvrpcpb.ResolveLockRequest) (*kvrpcpb.ResolveLockResponse, error) {
	status := map[uint64]uint64{}
	if req.GetStartVersion() != 0 {
		status[req.GetStartVersion()] = req.GetCommitVersion()
	}
	for _, ti := range req.GetTxnInfos() {
		status[ti.GetTxn()] = ti.GetStatus()
	}
	if len(req.GetKeys()) > 0 {
		if req.GetStartVersion() == 0 {
			return nil, ErrInvalidRequest
		}
		rerr, ke, err := s.resolveKeys(ctx, req.GetContext(), req.GetKeys(), status)
		if err != nil {
			return nil, err
		}
		return &kvrpcpb.ResolveLockResponse{RegionError: rerr, Error: ke}, nil
	}
	var from []byte
	for {
		region, rerr, err := s.engine.ReadIndex(ctx, req.GetContext())
		if err != nil {
			return nil, err
		}
		if rerr != nil {
			return &kvrpcpb.ResolveLockResponse{RegionError: rerr}, nil
		}
		snap := s.engine.Snapshot()
		r := s.newReader(snap, region.GetId())
		var batch [][]byte
		err = r.ScanLocks(regionkeys.ClampStart(from, region), region.GetEndKey(), func(k []byte, l *mvcc.Lock) bool {
			if _, ok := status[l.StartTS]; ok {
				batch = append(batch, k)
			}
			return len(batch) < s.cfg.ResolveBatch
		})
		r.Close()
		snap.Close()
		if err != nil {
			return nil, err
		}
		if len(batch) == 0 {
			return &kvrpcpb.ResolveLockResponse{}, nil
		}
		rerr, ke, err := s.resolveKeys(ctx, req.GetContext(), batch, status)
		if err != nil || rerr != nil || ke != nil {
			return &kvrpcpb.ResolveLockResponse{RegionError: rerr, Error: ke}, err
		}
		if len(batch) < s.cfg.ResolveBatch {
			return &kvrpcpb.ResolveLockResponse{}, nil
		}
		from = append(bytes.Clone(batch[len(batch)-1]), 0)
	}
}

// resolveKeys commits or rolls back the locks on keys by their
// transaction's status (start_ts -> commit_ts, 0 = rolled back). Keys whose
// lock belongs to no transaction in status are left alone.
func (s *Storage) resolveKeys(ctx context.Context, rctx *kvrpcpb.Context, keys [][]byte, status map[uint64]uint64) (*errorpb.Error, *kvrpcpb.KeyError, error) {
	var c0 *command
	rerr, ke, err := s.run(ctx, "resolve_lock", rctx, keys, func(c *command) error {
		c0 = c
		for _, k := range keys {
			l, err := c.r.LoadLock(k)
			if err != nil {
				return err
			}
			if l == nil {
				continue
			}
			commitTS, ok := status[l.StartTS]
			if !ok {
				continue
			}
			if commitTS == 0 {
				if err := rollbackLock(c.r, &c.t, k, l); err != nil {
					return err
				}
			} else {
				if commitTS <= l.StartTS {
					return errAbort("resolve lock: commit ts %d not above start ts %d", commitTS, l.StartTS)
				}
				if _, err := commitKey(c.r, &c.t, k, l.StartTS, commitTS); err != nil {
					return err
				}
			}
			c.released = append(c.released, releasedLock{key: k, startTS: l.StartTS})
		}
		return nil
	})
	if err == nil && rerr == nil && ke == nil {
		s.wake(c0)
	}
	return rerr, ke, err
}

// TxnHeartBeat serves a TxnHeartBeatRequest: the primary lock's TTL is
// raised to advise_lock_ttl; the response has the TTL now in force.
func (s *Storage) TxnHeartBeat(ctx context.Context, req *kvrpcpb.TxnHeartBeatRequest) (*kvrpcpb.TxnHeartBeatResponse, error) {
	key := req.GetPrimaryLock()
	var ttl uint64
	rerr, ke, err := s.run(ctx, "txn_heart_beat", req.GetContext(), [][]byte{key}, func(c *command) error {
		l, err := c.r.LoadLock(key)
		if err != nil {
			return err
		}
		if l == nil || l.StartTS != req.GetStartVersion() {
			return errTxnNotFound(req.GetStartVersion(), key)
		}
		if l.TTL < req.GetAdviseLockTtl() {
			nl := *l
			nl.TTL = req.GetAdviseLockTtl()
			c.t.PutLock(key, &nl)
			l = &nl
		}
		ttl = l.TTL
		return nil
	})
	if err != nil {
		return nil, err
	}
	if rerr != nil || ke != nil {
		return &kvrpcpb.TxnHeartBeatResponse{RegionError: rerr, Error: ke}, nil
	}
	return &kvrpcpb.TxnHeartBeatResponse{LockTtl: ttl}, nil
}

// PessimisticRollback serves a PessimisticRollbackRequest: this
// transaction's pessimistic locks with for_update_ts <= for_update_ts are
// removed (no rollback record: the transaction may lock again).
func (s *Storage) PessimisticRollback(ctx context.Context, req *kvrpcpb.PessimisticRollbackRequest) (*kvrpcpb.PessimisticRollbackResponse, error) {
	var c0 *command
	rerr, ke, err := s.run(ctx, "pessimistic_rollback", req.GetContext(), req.GetKeys(), func(c *command) error {
		c0 = c
		for _, k := range req.GetKeys() {
			l, err := c.r.LoadLock(k)
			if err != nil {
				return err
			}
			if l != nil && l.Type == mvcc.LockPessimistic && l.StartTS == req.GetStartVersion() &&
				(req.GetForUpdateTs() == 0 || l.ForUpdateTS <= req.GetForUpdateTs()) {
				c.t.UnlockKey(k)
				c.released = append(c.released, releasedLock{key: k, startTS: l.StartTS})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	resp := &kvrpcpb.PessimisticRollbackResponse{RegionError: rerr}
	if ke != nil {
		resp.Errors = []*kvrpcpb.KeyError{ke}
	} else if rerr == nil {
		s.wake(c0)
	}
	return resp, nil
}

// wake tells lock waiters that c released locks (pessimistic lock waiting).
func (s *Storage) wake(c *command) {
	if c == nil || len(c.released) == 0 {
		return
	}
	s.onReleased(c.released)
}
