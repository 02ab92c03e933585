package session

import (
	"context"
	"errors"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/kvclient/replicaread"
	"github.com/stratadb/strata/sql/catalog"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/executor"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/statistics"
	"github.com/stratadb/strata/sql/tablecodec"
)

// txnState is the session's open transaction: explicit (BEGIN), implicit
// (autocommit=0), or the one-statement transaction of an autocommit
// statement while that statement runs.
type txnState struct {
	txn        kv.Txn
	opts       kv.TxnOptions
	began      time.Time
	written    map[int64]*model.TableInfo // tables written: 1062 and 8028 at commit
	schema     *catalog.TxnSchema         // catalog version when it began (held until it ends)
	savepoints []string                   // oldest first
	rows       map[int64]statistics.Delta // rows its finished statements added and modified, by table
}

// NoteRows implements executor.TxnSource.
func (s *Session) NoteRows(tbl *model.TableInfo, added, modified int64) {
	if s.stmtRows == nil {
		s.stmtRows = map[int64]statistics.Delta{}
	}
	d := s.stmtRows[tbl.ID]
	d.Count += added
	d.Modify += modified
	s.stmtRows[tbl.ID] = d
}

// InTxn reports whether an explicit or implicit (autocommit=0) transaction
// is open: SERVER_STATUS_IN_TRANS.
func (s *Session) InTxn() bool { return s.txn != nil }

// serverStatusInTransReadonly is SERVER_STATUS_IN_TRANS_READONLY (MySQL
// 5.6.5+; the parser's mysql package lacks it).
const serverStatusInTransReadonly uint16 = 0x2000

// Status is the SERVER_STATUS flags of OK and EOF packets that describe
// the session: IN_TRANS, IN_TRANS_READONLY and AUTOCOMMIT.
func (s *Session) Status() uint16 {
	var st uint16
	if s.autocommit() {
		st |= mysql.ServerStatusAutocommit
	}
	if s.txn != nil {
		st |= mysql.ServerStatusInTrans
		if s.txn.opts.ReadOnly {
			st |= serverStatusInTransReadonly
		}
	}
	return st
}

// Close ends the session: an open transaction is rolled back (as MySQL does
// when a connection closes). Safe to call more than once.
func (s *Session) Close(ctx context.Context) {
	if s.txn != nil {
		s.rollbackTxn(ctx, outcomeRollback)
	}
}

// Abort rolls back whatever transaction is open after a statement was cut
// short by a panic: its buffer may be half-changed.
func (s *Session) Abort(ctx context.Context) {
	if s.stmt != nil {
		_ = s.stmt.txn.Rollback(ctx)
		s.stmt = nil
	}
	s.Close(ctx)
}

func (s *Session) autocommit() bool { return s.varValue("autocommit") == "1" }

// VarValue is a session variable's value as text (executor.SessionVars:
// the plan cache's key).
func (s *Session) VarValue(name string) string { return s.varValue(name) }

func (s *Session) varValue(name string) string {
	if v, ok := s.vars[name]; ok {
		return v.value
	}
	return defaultSysVars[name].value
}

// nextTxnOptions are the options a transaction begun now gets, from the
// session variables (and a one-shot SET TRANSACTION ISOLATION LEVEL).
func (s *Session) nextTxnOptions() kv.TxnOptions {
	opts := kv.TxnOptions{
		Pessimistic: !strings.EqualFold(s.varValue("tidb_txn_mode"), "optimistic"),
		ReadOnly:    s.varValue("transaction_read_only") == "1",
		AsyncCommit: s.varValue("tidb_enable_async_commit") == "1",
		OnePC:       s.varValue("tidb_enable_1pc") == "1",
	}
	iso := s.varValue("transaction_isolation")
	if s.oneShotIsolation != "" {
		iso = s.oneShotIsolation
	}
	if iso == "READ-COMMITTED" {
		opts.Isolation = kv.ReadCommitted
	}
	if s.snapshotTS != 0 { // tidb_snapshot: every transaction reads at it
		opts.StartTS, opts.ReadOnly = s.snapshotTS, true
	}
	return opts
}

// TxnOptions implements executor.TxnSource.
func (s *Session) TxnOptions() kv.TxnOptions {
	if s.stmt != nil {
		return s.stmt.opts
	}
	if s.txn != nil {
		return s.txn.opts
	}
	return s.nextTxnOptions()
}

// LockWaitTimeoutMs implements executor.TxnSource.
func (s *Session) LockWaitTimeoutMs() int64 {
	n, err := strconv.ParseInt(s.varValue("innodb_lock_wait_timeout"), 10, 64)
	if err != nil || n < 1 {
		n = 50
	}
	return n * 1000
}

// NoteWrite implements executor.TxnSource.
func (s *Session) NoteWrite(tbl *model.TableInfo) {
	var st *txnState
	switch {
	case s.txn != nil:
		st = s.txn
	case s.stmt != nil:
		st = &s.stmt.txnState
	default:
		return
	}
	if st.written == nil {
		st.written = map[int64]*model.TableInfo{}
	}
	st.written[tbl.ID] = tbl
}

// Txn implements executor.TxnSource: the open transaction, or a new
// one-statement transaction for an autocommit statement.
func (s *Session) Txn(ctx context.Context, pointRead bool) (kv.Txn, error) {
	if s.txn != nil {
		return s.txn.txn, nil
	}
	if s.stmt == nil {
		return nil, errors.New("session: statement asked for a transaction outside one")
	}
	if s.stmt.txn == nil {
		opts := s.stmt.opts
		if pointRead && s.stmt.readOnlyStmt && opts.StartTS == 0 {
			// One key, read once: the newest committed version is a
			// snapshot as good as a fresh start_ts, without the TSO round
			// trip (the store checks locks for such reads).
			opts.StartTS, opts.ReadOnly = math.MaxUint64, true
		}
		txn, err := s.dom.Store().Begin(ctx, opts)
		if err != nil {
			return nil, err
		}
		s.stmt.txn, s.stmt.began = txn, time.Now()
	}
	return s.stmt.txn, nil
}

var _ executor.TxnSource = (*Session)(nil)

// stmtState is the one-statement transaction of an autocommit statement.
type stmtState struct {
	txnState
	readOnlyStmt bool
}

// beginTxn opens a transaction with opts (BEGIN, or the first statement
// under autocommit=0).
func (s *Session) beginTxn(ctx context.Context, opts kv.TxnOptions) error {
	txn, err := s.dom.Store().Begin(ctx, opts)
	if err != nil {
		return err
	}
	s.oneShotIsolation = ""
	s.txn = &txnState{txn: txn, opts: opts, began: time.Now(), schema: s.dom.Catalog().TxnBegin()}
	return nil
}

// commitTxn commits the open transaction. Whatever the outcome, it is over.
func (s *Session) commitTxn(ctx context.Context) error {
	t := s.txn
	s.txn = nil
	defer s.dom.Catalog().TxnEnd(t.schema)
	err := s.commitChecked(ctx, t)
	observeTxn(t.opts, t.began, outcomeOf(err))
	if err == nil {
		s.dom.Stats().NoteModified(t.rows)
	}
	return commitError(t, err)
}

// commitChecked commits t unless a table it wrote changed schema since it
// began (ERROR 8028; t is rolled back), also when the schema changes while
// the commit is under way (the guard CheckCommit returns).
func (s *Session) commitChecked(ctx context.Context, t *txnState) error {
	if len(t.written) > 0 {
		g, err := s.dom.Catalog().CheckCommit(ctx, t.schema, maps.Keys(t.written))
		if err != nil {
			_ = t.txn.Rollback(ctx)
			return err
		}
		t.txn.SetCommitGuard(g)
	}
	return t.txn.Commit(ctx)
}

func (s *Session) rollbackTxn(ctx context.Context, outcome string) {
	t := s.txn
	s.txn = nil
	defer s.dom.Catalog().TxnEnd(t.schema)
	// A failed rollback leaves locks that other transactions resolve once
	// their TTL passes: nothing the client could act on.
	_ = t.txn.Rollback(context.WithoutCancel(ctx)) // also after KILL QUERY
	observeTxn(t.opts, t.began, outcome)
}

// commitError maps a commit failure to what the client sees.
func commitError(t *txnState, err error) error {
	if err == nil {
		return nil
	}
	var ke *kv.KeyExistsError
	if errors.As(err, &ke) {
		var tbl *model.TableInfo
		if tid, ok := tablecodec.TableIDOf(ke.Key); ok {
			tbl = t.written[tid]
		}
		return executor.DupEntryError(tbl, ke.Key)
	}
	return err
}

// begin runs BEGIN / START TRANSACTION: an open transaction is committed
// first (MySQL's implicit commit).
func (s *Session) begin(ctx context.Context, x *ast.BeginStmt) (*executor.Result, error) {
	if s.txn != nil {
		if err := s.commitTxn(ctx); err != nil {
			return nil, err
		}
	}
	opts := s.nextTxnOptions()
	if x.AsOf != nil {
		// START TRANSACTION READ ONLY AS OF TIMESTAMP: every read of the
		// transaction is a stale read at that time (staleread.go).
		ts, err := s.evalAsOf(ctx, x.AsOf)
		if err != nil {
			return nil, err
		}
		opts.StartTS, opts.ReadOnly, opts.StaleRead = ts, true, true
	}
	switch x.Mode {
	case ast.Pessimistic:
		opts.Pessimistic = true
	case ast.Optimistic:
		opts.Pessimistic = false
	}
	if x.ReadOnly {
		opts.ReadOnly = true
	}
	return &executor.Result{}, s.beginTxn(ctx, opts)
}

// commit runs COMMIT (a no-op without an open transaction).
func (s *Session) commit(ctx context.Context) (*executor.Result, error) {
	if s.txn == nil {
		return &executor.Result{}, nil
	}
	return &executor.Result{}, s.commitTxn(ctx)
}

// rollback runs ROLLBACK and ROLLBACK TO SAVEPOINT.
func (s *Session) rollback(ctx context.Context, x *ast.RollbackStmt) (*executor.Result, error) {
	if x.SavepointName != "" {
		return &executor.Result{}, s.rollbackToSavepoint(x.SavepointName)
	}
	if s.txn != nil {
		s.rollbackTxn(ctx, outcomeRollback)
	}
	return &executor.Result{}, nil
}

func savepointIndex(sps []string, name string) int {
	return slices.IndexFunc(sps, func(n string) bool { return strings.EqualFold(n, name) })
}

func noSavepoint(name string) error {
	return errno.New(errno.ErrSpDoesNotExist, "SAVEPOINT %s does not exist", name)
}

func (s *Session) savepoint(ctx context.Context, name string) (*executor.Result, error) {
	if s.txn == nil {
		if s.autocommit() {
			// MySQL accepts it; the savepoint ends with the statement.
			return &executor.Result{}, nil
		}
		if err := s.beginTxn(ctx, s.nextTxnOptions()); err != nil {
			return nil, err
		}
	}
	t := s.txn
	if i := savepointIndex(t.savepoints, name); i >= 0 {
		t.savepoints = slices.Delete(t.savepoints, i, i+1)
	}
	t.txn.Savepoint(name)
	t.savepoints = append(t.savepoints, name)
	return &executor.Result{}, nil
}

// rollbackToSavepoint undoes the writes made after the savepoint; it and
// older savepoints stay, newer ones are dropped (MySQL's rule). Locks taken
// since stay held, as in InnoDB and TiDB.
func (s *Session) rollbackToSavepoint(name string) error {
	if s.txn == nil {
		return noSavepoint(name)
	}
	t := s.txn
	i := savepointIndex(t.savepoints, name)
	if i < 0 {
		return noSavepoint(name)
	}
	if err := t.txn.RollbackToSavepoint(t.savepoints[i]); err != nil {
		return err
	}
	t.savepoints = t.savepoints[:i+1]
	return nil
}

func (s *Session) releaseSavepoint(name string) (*executor.Result, error) {
	if s.txn == nil {
		return nil, noSavepoint(name)
	}
	t := s.txn
	i := savepointIndex(t.savepoints, name)
	if i < 0 {
		return nil, noSavepoint(name)
	}
	if err := t.txn.ReleaseSavepoint(t.savepoints[i]); err != nil {
		return nil, err
	}
	t.savepoints = t.savepoints[:i]
	return &executor.Result{}, nil
}

// implicitCommit commits the open transaction before a statement MySQL
// runs outside any transaction (DDL).
func (s *Session) implicitCommit(ctx context.Context) error {
	if s.txn == nil {
		return nil
	}
	return s.commitTxn(ctx)
}

func readOnlyTxnError() error {
	return errno.New(errno.ErrCantExecuteInReadOnlyTxn, "Cannot execute statement in a READ ONLY transaction.")
}

// runDML runs a SELECT, INSERT, UPDATE or DELETE (dml: one of the last
// three): inside the open transaction, or as its own transaction when
// autocommit is on.
func (s *Session) runDML(ctx context.Context, writes, dml bool, run func() (*executor.Result, error)) (*executor.Result, error) {
	if s.txn == nil && !s.autocommit() {
		if err := s.beginTxn(ctx, s.nextTxnOptions()); err != nil {
			return nil, err
		}
	}
	if s.txn != nil {
		if writes && s.txn.opts.ReadOnly {
			return nil, readOnlyTxnError()
		}
		return s.inTxn(ctx, run)
	}
	opts := s.nextTxnOptions()
	s.oneShotIsolation = ""
	if writes && opts.ReadOnly {
		return nil, readOnlyTxnError()
	}
	if writes {
		return s.autocommitWrite(ctx, opts, dml && opts.Pessimistic && !s.dom.PessimisticAutoCommit(), run)
	}
	return s.autocommitStmt(ctx, opts, writes, run)
}

// insertCommitted runs ins in a transaction of its own, committed
// whatever autocommit says: CREATE TABLE ... SELECT's rows, which MySQL
// commits with the table.
func (s *Session) insertCommitted(ctx context.Context, ins *ast.InsertStmt) (*executor.Result, error) {
	return s.autocommitWrite(ctx, s.nextTxnOptions(), false, func() (*executor.Result, error) { return s.exec.Insert(ctx, ins, s, s) })
}

// runRead runs a SELECT (lock: FOR UPDATE / LOCK IN SHARE MODE): a stale
// read in a read-only transaction at its AS OF TIMESTAMP, or in the open
// stale transaction (START TRANSACTION READ ONLY AS OF TIMESTAMP), on any
// replica whose safe ts covers it; else a non-locking one with the
// session's tidb_replica_read (staleread.go).
func (s *Session) runRead(ctx context.Context, n ast.Node, lock bool, run func(context.Context) (*executor.Result, error)) (*executor.Result, error) {
	ts, err := s.stmtAsOf(ctx, n, !lock)
	if err != nil {
		return nil, err
	}
	if lock && s.snapshotTS != 0 {
		return nil, errSnapshotWrite()
	}
	switch {
	case ts != 0:
		opts := s.nextTxnOptions()
		opts.StartTS, opts.ReadOnly, opts.StaleRead = ts, true, true
		ctx = replicaread.With(ctx, replicaread.Stale)
		return s.autocommitStmt(ctx, opts, false, func() (*executor.Result, error) { return run(ctx) })
	case s.txn != nil && s.txn.opts.StaleRead:
		ctx = replicaread.With(ctx, replicaread.Stale)
	case !lock:
		ctx = replicaread.With(ctx, s.replicaReadMode())
	}
	return s.runDML(ctx, lock, false, func() (*executor.Result, error) { return run(ctx) })
}

// lostBeforeCommit: a request the statement sent before any commit (a
// pessimistic lock, whose answer was lost with its store) has an unknown
// outcome. That is not an undetermined commit: nothing commits before
// Txn.Commit, and a lock that was taken after all is released by the
// transaction's rollback or end. The statement failed cleanly.
func lostBeforeCommit(err error) error {
	if !errors.Is(err, kv.ErrUndetermined) {
		return err
	}
	return errno.New(errno.ErrStoreTimeout, "A request to a store was lost before commit (%v); nothing was committed, run the statement again", err)
}

// inTxn runs one statement of an open transaction with statement-level
// staging: a failed statement rolls back only its own writes. A deadlock
// rolls back the whole transaction (the victim's locks must go so the
// other can proceed), as MySQL and TiDB do; a lock wait timeout only the
// statement (innodb_rollback_on_timeout=OFF).
func (s *Session) inTxn(ctx context.Context, run func() (*executor.Result, error)) (*executor.Result, error) {
	t := s.txn.txn
	t.StmtBegin()
	s.stmtRows = nil
	res, err := run()
	rows := s.stmtRows
	s.stmtRows = nil
	if err == nil {
		t.StmtCommit()
		s.txn.rows = statistics.AddDeltas(s.txn.rows, rows)
		return res, nil
	}
	t.StmtRollback()
	err = lostBeforeCommit(err)
	var dl *kv.DeadlockError
	if errors.As(err, &dl) {
		s.rollbackTxn(ctx, outcomeDeadlock)
	}
	return nil, err
}

// autocommitStmt runs one statement as its own transaction: begun when
// the statement first reads or writes, committed when it succeeds.
func (s *Session) autocommitStmt(ctx context.Context, opts kv.TxnOptions, writes bool, run func() (*executor.Result, error)) (*executor.Result, error) {
	st := &stmtState{txnState: txnState{opts: opts, schema: s.dom.Catalog().TxnBegin()}, readOnlyStmt: !writes}
	defer s.dom.Catalog().TxnEnd(st.schema) // also when run panics
	s.stmt = st
	s.stmtRows = nil
	res, err := run()
	s.stmt = nil
	rows := s.stmtRows
	s.stmtRows = nil
	if st.txn == nil { // nothing read or written
		return res, err
	}
	if err != nil {
		_ = st.txn.Rollback(context.WithoutCancel(ctx)) // also after KILL QUERY
		err = lostBeforeCommit(err)
		observeTxn(st.opts, st.began, outcomeOf(err))
		return nil, err
	}
	if !writes {
		// Nothing buffered: ending it releases any locks (autocommit
		// SELECT ... FOR UPDATE) without a commit round.
		err = st.txn.Rollback(ctx)
		observeTxn(st.opts, st.began, outcomeCommit)
		if err != nil {
			return nil, err
		}
		return res, nil
	}
	err = s.commitChecked(ctx, &st.txnState)
	observeTxn(st.opts, st.began, outcomeOf(err))
	if err != nil {
		return nil, commitError(&st.txnState, err)
	}
	s.dom.Stats().NoteModified(rows)
	return res, nil
}
