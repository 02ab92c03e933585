package txn

import (
	"bytes"
	"math"

	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/store/mvcc"
)

// Percolator actions on one key: they read through a *mvcc.TxnReader,
// collect writes in a *mvcc.Txn and return *mvcc.KeyError for conditions
// the client handles. They follow TiKV's src/storage/txn/actions.

// physical is the wall-clock millisecond part of a PD timestamp.
func physical(ts uint64) uint64 { return ts >> 18 }

// lockExpired reports whether l's TTL has passed at currentTS.
func lockExpired(l *mvcc.Lock, currentTS uint64) bool {
	return physical(l.StartTS)+l.TTL < physical(currentTS)
}

// prewriteProps are the per-request properties of a prewrite.
type prewriteProps struct {
	startTS     uint64
	forUpdateTS uint64
	primary     []byte
	ttl         uint64
	txnSize     uint64
	minCommitTS uint64
	pessimistic bool
	skipCheck   bool // skip_constraint_check
	asyncCommit bool
	onePC       bool
	secondaries [][]byte
}

// prewriteResult is what prewriteKey decided for one key.
type prewriteResult struct {
	// lock is the lock to write (or to commit at once with 1PC); nil when
	// nothing is written (CheckNotExists, or already prewritten).
	lock *mvcc.Lock
	// hadPessimistic: the key held this txn's pessimistic lock.
	hadPessimistic bool
	// duplicate: the key was already prewritten by this txn; minCommitTS is
	// its lock's (async commit) min_commit_ts.
	duplicate   bool
	minCommitTS uint64
}

// prewriteKey evaluates one mutation of a prewrite (TiKV's
// actions::prewrite). The value of a long Put goes to t at once; the lock
// is returned for the caller to write or commit.
func prewriteKey(r *mvcc.TxnReader, t *mvcc.Txn, p *prewriteProps, m *kvrpcpb.Mutation, action kvrpcpb.PessimisticAction) (prewriteResult, error) {
	key := m.GetKey()
	var (
		lockType     mvcc.LockType
		shouldNotEx  bool
		shouldWrite  = true
		hasPessimist bool
	)
	switch m.GetOp() {
	case kvrpcpb.Op_Put:
		lockType = mvcc.LockPut
	case kvrpcpb.Op_Del:
		lockType = mvcc.LockDelete
	case kvrpcpb.Op_Insert:
		lockType, shouldNotEx = mvcc.LockPut, true
	case kvrpcpb.Op_Lock:
		lockType = mvcc.LockLock
	case kvrpcpb.Op_CheckNotExists:
		shouldNotEx, shouldWrite = true, false
	default:
		return prewriteResult{}, errAbort("prewrite: unsupported op %v on %q", m.GetOp(), key)
	}
	ttl, minCommitTS := p.ttl, p.minCommitTS

	l, err := r.LoadLock(key)
	if err != nil {
		return prewriteResult{}, err
	}
	switch {
	case l != nil && l.StartTS != p.startTS:
		if action == kvrpcpb.PessimisticAction_DoPessimisticCheck {
			return prewriteResult{}, errPessimisticLockNotFound(p.startTS, key)
		}
		return prewriteResult{}, mvcc.ErrLocked(key, l)
	case l != nil && l.Type == mvcc.LockPessimistic:
		if !p.pessimistic {
			return prewriteResult{}, errAbort("prewrite: optimistic txn %d meets its own pessimistic lock on %q", p.startTS, key)
		}
		hasPessimist = true
		ttl = max(ttl, l.TTL)
		minCommitTS = max(minCommitTS, l.MinCommitTS)
	case l != nil:
		// Already prewritten: a retried request.
		res := prewriteResult{duplicate: true}
		if l.UseAsyncCommit {
			res.minCommitTS = l.MinCommitTS
		}
		return res, nil
	}

	// Conflict and constraint checks against committed versions.
	check := !p.skipCheck
	if p.pessimistic {
		switch action {
		case kvrpcpb.PessimisticAction_DoPessimisticCheck:
			// Checked when the pessimistic lock was taken; a missing lock
			// is amended below if nothing was committed since start_ts.
			check = !hasPessimist
		case kvrpcpb.PessimisticAction_SkipPessimisticCheck:
			check = false
		}
	}
	if check {
		commitTS, w, err := r.SeekWrite(key, math.MaxUint64)
		if err != nil {
			return prewriteResult{}, err
		}
		if w != nil {
			if !p.pessimistic || action == kvrpcpb.PessimisticAction_DoConstraintCheck {
				if commitTS > p.startTS {
					return prewriteResult{}, errWriteConflict(p.startTS, key, p.primary, w, commitTS, kvrpcpb.WriteConflict_Optimistic)
				}
			} else if commitTS >= p.startTS {
				// DoPessimisticCheck without the lock: it was lost (its
				// leader crashed with it in memory). The value written was
				// computed from a read at the for_update_ts of the
				// statement that locked the key, which may be older than
				// the request's for_update_ts (the transaction's latest,
				// of a later statement): a commit between the two would
				// be overwritten. Only start_ts bounds every statement's
				// read, so anything committed since fails the prewrite
				// (TiKV's amend_pessimistic_lock).
				return prewriteResult{}, errPessimisticLockNotFound(p.startTS, key)
			}
			if err := checkSelfRollback(r, key, p.startTS, p.primary, commitTS, w); err != nil {
				return prewriteResult{}, err
			}
			if shouldNotEx {
				if err := checkNotExists(r, key, commitTS, w); err != nil {
					return prewriteResult{}, err
				}
			}
		}
	}
	if !shouldWrite {
		return prewriteResult{}, nil
	}
	if p.pessimistic && action == kvrpcpb.PessimisticAction_DoPessimisticCheck && !hasPessimist {
		prewriteAmended.Inc()
	}

	lock := &mvcc.Lock{
		Type:        lockType,
		Primary:     p.primary,
		StartTS:     p.startTS,
		TTL:         ttl,
		TxnSize:     p.txnSize,
		MinCommitTS: minCommitTS,
	}
	if p.pessimistic {
		lock.ForUpdateTS = p.forUpdateTS
	}
	if lockType == mvcc.LockPut {
		v := m.GetValue()
		if mvcc.IsShortValue(v) {
			lock.ShortValue, lock.HasShortValue = v, true
		} else {
			t.PutValue(key, p.startTS, v)
		}
	}
	if p.asyncCommit {
		lock.UseAsyncCommit = true
		if bytes.Equal(key, p.primary) {
			lock.Secondaries = p.secondaries
		}
	}
	return prewriteResult{lock: lock, hadPessimistic: hasPessimist}, nil
}

// checkSelfRollback fails when the newest record (at commitTS) or the one at
// startTS says this transaction was rolled back on key.
func checkSelfRollback(r *mvcc.TxnReader, key []byte, startTS uint64, primary []byte, commitTS uint64, w *mvcc.Write) error {
	if commitTS > startTS {
		var err error
		commitTS, w, err = r.SeekWrite(key, startTS)
		if err != nil || w == nil {
			return err
		}
	}
	if commitTS == startTS && (w.Kind == mvcc.WriteRollback || w.OverlappedRollback) {
		return errWriteConflict(startTS, key, primary, w, commitTS, kvrpcpb.WriteConflict_SelfRolledBack)
	}
	return nil
}

// checkNotExists fails with AlreadyExist when key has a live version; w is
// its newest record, at commitTS.
func checkNotExists(r *mvcc.TxnReader, key []byte, commitTS uint64, w *mvcc.Write) error {
	switch w.Kind {
	case mvcc.WritePut:
		return errAlreadyExist(key)
	case mvcc.WriteDelete:
		return nil
	}
	_, w, err := r.GetWrite(key, commitTS)
	if err != nil {
		return err
	}
	if w != nil && w.Kind == mvcc.WritePut {
		return errAlreadyExist(key)
	}
	return nil
}

// commitKey commits key's lock of startTS at commitTS (TiKV's
// actions::commit). A key already committed by the txn is a no-op.
func commitKey(r *mvcc.TxnReader, t *mvcc.Txn, key []byte, startTS, commitTS uint64) (released *mvcc.Lock, err error) {
	l, err := r.LoadLock(key)
	if err != nil {
		return nil, err
	}
	if l == nil || l.StartTS != startTS {
		rec, err := r.TxnCommitRecord(key, startTS)
		if err != nil {
			return nil, err
		}
		if rec.Kind == mvcc.RecordCommitted {
			return nil, nil // committed before: idempotent
		}
		return nil, errTxnLockNotFound(key)
	}
	if commitTS < l.MinCommitTS {
		return nil, errCommitTSExpired(startTS, commitTS, l.MinCommitTS, key)
	}
	w := &mvcc.Write{Kind: mvcc.WriteKindOf(l.Type), StartTS: startTS, ShortValue: l.ShortValue, HasShortValue: l.HasShortValue}
	if err := markOverlappedRollback(r, key, commitTS, w); err != nil {
		return nil, err
	}
	t.PutWrite(key, commitTS, w)
	t.UnlockKey(key)
	return l, nil
}

// markOverlappedRollback sets w's flag when a rollback record of another
// transaction sits at commitTS, where w will be written.
func markOverlappedRollback(r *mvcc.TxnReader, key []byte, commitTS uint64, w *mvcc.Write) error {
	ts, old, err := r.SeekWrite(key, commitTS)
	if err != nil {
		return err
	}
	if old != nil && ts == commitTS && (old.Kind == mvcc.WriteRollback || old.OverlappedRollback) {
		w.OverlappedRollback = true
	}
	return nil
}

// writeRollback records that startTS is rolled back on key: a Rollback
// record at startTS, or the flag on another txn's record there.
func writeRollback(t *mvcc.Txn, key []byte, startTS uint64, overlapped *mvcc.Write) {
	if overlapped != nil {
		w := *overlapped
		w.OverlappedRollback = true
		t.PutWrite(key, startTS, &w)
		return
	}
	t.PutWrite(key, startTS, &mvcc.Write{Kind: mvcc.WriteRollback, StartTS: startTS})
}

// rollbackLock removes l (held by startTS on key) and records the rollback
// (TiKV's actions::rollback_lock).
func rollbackLock(r *mvcc.TxnReader, t *mvcc.Txn, key []byte, l *mvcc.Lock) error {
	rec, err := r.TxnCommitRecord(key, l.StartTS)
	if err != nil {
		return err
	}
	switch rec.Kind {
	case mvcc.RecordCommitted:
		return errAbort("txn %d holds a lock on %q but is committed at %d", l.StartTS, key, rec.CommitTS)
	case mvcc.RecordNone:
		if l.Type == mvcc.LockPut && !l.HasShortValue {
			t.DeleteValue(key, l.StartTS)
		}
		writeRollback(t, key, l.StartTS, rec.Overlapped)
	}
	t.UnlockKey(key)
	return nil
}

// txnStatus is the outcome of checking a transaction with no lock on key.
type txnStatus int

const (
	statusCommitted txnStatus = iota
	statusRolledBack
	statusLockNotExist // rollback written (or nothing, see caller)
)

// checkMissingLock handles a key where startTS holds no lock: it reports a
// commit or a rollback, or writes a rollback record when rollback is set
// (TiKV's check_txn_status_missing_lock). Without rollback a missing
// transaction is TxnNotFound.
func checkMissingLock(r *mvcc.TxnReader, t *mvcc.Txn, key []byte, startTS uint64, rollback bool, primary []byte) (txnStatus, uint64, error) {
	rec, err := r.TxnCommitRecord(key, startTS)
	if err != nil {
		return 0, 0, err
	}
	switch rec.Kind {
	case mvcc.RecordCommitted:
		return statusCommitted, rec.CommitTS, nil
	case mvcc.RecordRolledBack:
		return statusRolledBack, 0, nil
	}
	if !rollback {
		return 0, 0, errTxnNotFound(startTS, primary)
	}
	writeRollback(t, key, startTS, rec.Overlapped)
	return statusLockNotExist, 0, nil
}

// cleanupKey rolls back startTS's lock on key if it expired at currentTS
// (0: unconditionally), or records a rollback when there is none. A
// committed key returns its commit ts (TiKV's actions::cleanup).
func cleanupKey(r *mvcc.TxnReader, t *mvcc.Txn, key []byte, startTS, currentTS uint64) (committedTS uint64, released *mvcc.Lock, err error) {
	l, err := r.LoadLock(key)
	if err != nil {
		return 0, nil, err
	}
	if l != nil && l.StartTS == startTS {
		if currentTS != 0 && !lockExpired(l, currentTS) {
			return 0, nil, mvcc.ErrLocked(key, l)
		}
		return 0, l, rollbackLock(r, t, key, l)
	}
	st, commitTS, err := checkMissingLock(r, t, key, startTS, true, key)
	if err != nil {
		return 0, nil, err
	}
	if st == statusCommitted {
		return commitTS, nil, nil
	}
	return 0, nil, nil
}

// acquirePessimisticLock takes this txn's pessimistic lock on key (TiKV's
// actions::acquire_pessimistic_lock). It returns the key's value at
// for_update_ts when needValue or needExist (found says whether it exists).
type pessimisticProps struct {
	startTS     uint64
	forUpdateTS uint64
	primary     []byte
	ttl         uint64
	minCommitTS uint64
	needValue   bool
	needExist   bool
	onlyIfExist bool
}

// valueFromNewest sets the value (and found) a pessimistic lock returns
// from w, the key's newest write record (committed at or below
// for_update_ts, or nil): a Put or Delete answers without a second seek of
// the key's versions; behind a Lock or Rollback record readValue reads on.
func valueFromNewest(r *mvcc.TxnReader, p *pessimisticProps, key []byte, w *mvcc.Write, value *[]byte, found *bool, readValue func() error) error {
	if !p.needValue && !p.needExist && !p.onlyIfExist {
		return nil
	}
	switch {
	case w == nil:
		*found = false
		return nil
	case w.Kind == mvcc.WriteDelete:
		*found = false
		return nil
	case w.Kind != mvcc.WritePut:
		return readValue()
	}
	*found = true
	if !p.needValue {
		return nil
	}
	if w.HasShortValue {
		*value = w.ShortValue // w is the reader's copy
		return nil
	}
	v, err := r.LoadData(key, w.StartTS)
	*value = v
	return err
}

func acquirePessimisticLock(r *mvcc.TxnReader, t *mvcc.Txn, p *pessimisticProps, key []byte, shouldNotExist bool) (value []byte, found bool, err error) {
	readValue := func() error {
		if !p.needValue && !p.needExist && !p.onlyIfExist {
			return nil
		}
		var v []byte
		v, found, err = r.Get(key, p.forUpdateTS)
		if p.needValue {
			value = v
		}
		return err
	}
	l, err := r.LoadLock(key)
	if err != nil {
		return nil, false, err
	}
	if l != nil {
		if l.StartTS != p.startTS {
			return nil, false, mvcc.ErrLocked(key, l)
		}
		if l.Type != mvcc.LockPessimistic {
			return nil, false, errAbort("pessimistic lock: txn %d already prewrote %q", p.startTS, key)
		}
		if shouldNotExist {
			commitTS, w, err := r.GetWrite(key, math.MaxUint64)
			if err != nil {
				return nil, false, err
			}
			if w != nil {
				if err := checkNotExists(r, key, commitTS, w); err != nil {
					return nil, false, err
				}
			}
		}
		if err := readValue(); err != nil {
			return nil, false, err
		}
		if p.forUpdateTS > l.ForUpdateTS {
			nl := *l
			nl.ForUpdateTS = p.forUpdateTS
			nl.TTL = max(nl.TTL, p.ttl)
			nl.MinCommitTS = max(nl.MinCommitTS, p.minCommitTS)
			t.PutLock(key, &nl)
		}
		return value, found, nil
	}
	commitTS, w, err := r.SeekWrite(key, math.MaxUint64)
	if err != nil {
		return nil, false, err
	}
	if w != nil {
		if commitTS > p.forUpdateTS {
			return nil, false, errWriteConflict(p.startTS, key, p.primary, w, commitTS, kvrpcpb.WriteConflict_PessimisticRetry)
		}
		if err := checkSelfRollback(r, key, p.startTS, p.primary, commitTS, w); err != nil {
			return nil, false, err
		}
		if shouldNotExist {
			if err := checkNotExists(r, key, commitTS, w); err != nil {
				return nil, false, err
			}
		}
	}
	if err := valueFromNewest(r, p, key, w, &value, &found, readValue); err != nil {
		return nil, false, err
	}
	if p.onlyIfExist && !found {
		return value, found, nil
	}
	t.PutLock(key, &mvcc.Lock{
		Type:        mvcc.LockPessimistic,
		Primary:     p.primary,
		StartTS:     p.startTS,
		TTL:         p.ttl,
		ForUpdateTS: p.forUpdateTS,
		MinCommitTS: p.minCommitTS,
	})
	return value, found, nil
}
