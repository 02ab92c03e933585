package session

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/stratadb/strata/kvclient/replicaread"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/types"
)

// Replica reads (tidb_replica_read) and stale reads (AS OF TIMESTAMP), as
// TiDB has them. The mode travels to the KV client in the statement's
// context (kvclient/replicaread); only reads of SELECT statements without FOR
// UPDATE / LOCK IN SHARE MODE carry one, so writes, locking reads and the
// reads of writing statements stay on the leader.

// replicaReadMode is the tidb_replica_read mode of this session's
// non-locking reads.
func (s *Session) replicaReadMode() replicaread.Mode {
	switch s.varValue("tidb_replica_read") {
	case "follower":
		return replicaread.Follower
	case "leader-and-follower", "closest-replicas", "closest-adaptive":
		// No zone labels: every replica is as close as any other.
		return replicaread.LeaderAndFollower
	}
	return replicaread.Leader
}

// normalizeReplicaRead checks a tidb_replica_read value.
func normalizeReplicaRead(given, raw string) (string, error) {
	v := strings.ToLower(strings.TrimSpace(raw))
	switch v {
	case "leader", "follower", "leader-and-follower", "closest-replicas", "closest-adaptive":
		return v, nil
	}
	return "", wrongValue(given, raw)
}

// errAsOf is TiDB's ERROR 8135.
func errAsOf(cause string) error {
	return errno.New(errno.ErrAsOf, "invalid as of timestamp: %s", cause)
}

// asOfFinder collects the AS OF clauses of a statement's tables.
type asOfFinder struct{ clauses []*ast.AsOfClause }

func (v *asOfFinder) Enter(n ast.Node) (ast.Node, bool) {
	if tn, ok := n.(*ast.TableName); ok && tn.AsOf != nil {
		v.clauses = append(v.clauses, tn.AsOf)
	}
	return n, false
}

func (v *asOfFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }

func asOfClauses(n ast.Node) []*ast.AsOfClause {
	v := &asOfFinder{}
	n.Accept(v)
	return v.clauses
}

// stmtAsOf returns the read timestamp of a statement's AS OF TIMESTAMP
// clauses (0 when it has none). Every table must name the same time, the
// statement must read only, and no transaction may be open (TiDB's rules).
func (s *Session) stmtAsOf(ctx context.Context, n ast.Node, readOnly bool) (uint64, error) {
	var clauses []*ast.AsOfClause
	if p := s.executing; p != nil && ast.Node(p.Stmt) == n {
		clauses = p.asOf
	} else {
		clauses = asOfClauses(n)
	}
	if len(clauses) == 0 {
		return 0, nil
	}
	if !readOnly {
		return 0, errAsOf("as of timestamp can only be used in a read-only statement (SELECT without FOR UPDATE)")
	}
	if s.txn != nil {
		return 0, errAsOf("as of timestamp can't be set in transaction")
	}
	var ts uint64
	for i, c := range clauses {
		t, err := s.evalAsOf(ctx, c)
		if err != nil {
			return 0, err
		}
		if i > 0 && t != ts {
			return 0, errAsOf("can not set different time in the as of")
		}
		ts = t
	}
	return ts, nil
}

// evalAsOf evaluates an AS OF TIMESTAMP expression to a TSO timestamp no
// later than now: TIDB_PARSE_TSO(tso) names one exactly (a backup's
// TSO), anything else must give a datetime, in the session's time zone
// (physical milliseconds << 18).
func (s *Session) evalAsOf(ctx context.Context, c *ast.AsOfClause) (uint64, error) {
	arg, tso := c.TsExpr, false
	if fn, ok := c.TsExpr.(*ast.FuncCallExpr); ok {
		switch {
		case fn.FnName.L == "tidb_bounded_staleness":
			return 0, errno.NotSupported("AS OF TIMESTAMP TIDB_BOUNDED_STALENESS(); give a datetime or TIDB_PARSE_TSO(tso)")
		case fn.FnName.L == "tidb_parse_tso" && len(fn.Args) == 1:
			arg, tso = fn.Args[0], true
		}
	}
	e, err := expr.Compile(arg, &expr.Ctx{Env: s})
	if err != nil {
		return 0, err
	}
	d, err := e.Eval(nil)
	if err != nil {
		return 0, err
	}
	raw := string(types.AppendText(nil, d, nil))
	var ts uint64
	if tso {
		var perr error
		if ts, perr = strconv.ParseUint(strings.TrimSpace(raw), 10, 64); perr != nil || ts == 0 {
			return 0, errAsOf("'" + raw + "' is not a TSO")
		}
	} else if ts, err = datetimeTS(raw, errAsOf); err != nil {
		return 0, err
	}
	return s.notFuture(ctx, ts, errAsOf("cannot set read timestamp to a future time"))
}

// datetimeTS converts a datetime in the session's time zone to the TSO
// timestamp of its millisecond; bad wraps what is wrong with it.
func datetimeTS(raw string, bad func(string) error) (uint64, error) {
	t, ok := types.ParseTime(raw)
	if !ok {
		return 0, bad("'" + raw + "' is not a datetime")
	}
	t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.Local)
	if t.UnixMilli() <= 0 {
		return 0, bad("'" + raw + "' is before 1970")
	}
	return uint64(t.UnixMilli()) << 18, nil
}

// notFuture returns ts, or future when ts is later than a fresh
// timestamp: a read there could miss commits still to come.
func (s *Session) notFuture(ctx context.Context, ts uint64, future error) (uint64, error) {
	now, err := s.dom.Store().GetTS(ctx)
	if err != nil {
		return 0, err
	}
	if ts > now {
		return 0, future
	}
	return ts, nil
}

// tidb_snapshot, as TiDB has it: SET @@tidb_snapshot = '<TSO>' or
// '<datetime>' makes every later read of the session a snapshot read at
// that timestamp (SELECT, CHECKSUM TABLE, ...), until it is set to ''.
// Writes (DML, DDL, locking reads) are refused meanwhile, with TiDB's
// error. Unlike TiDB, it cannot be set inside a transaction (the open
// transaction already has its snapshot), and tables are read with the
// current schema, not the schema of that time: a table dropped since is
// not found, and a column added since reads as its default.

// setSnapshot runs SET [SESSION] tidb_snapshot = val.
func (s *Session) setSnapshot(ctx context.Context, given string, global bool, val types.Datum) error {
	if global {
		return errno.New(errno.ErrLocalVariable, "Variable '%s' is a SESSION variable and can't be used with SET GLOBAL", given)
	}
	if s.txn != nil {
		return errno.New(1568, "Transaction characteristics can't be changed while a transaction is in progress (tidb_snapshot); COMMIT or ROLLBACK first")
	}
	raw := ""
	if !val.IsNull() {
		raw = strings.TrimSpace(string(types.AppendText(nil, val, nil)))
	}
	if raw == "" {
		s.snapshotTS = 0
		s.vars["tidb_snapshot"] = sysVar{}
		return nil
	}
	bad := func(cause string) error { return wrongValue(given, raw+"' ("+cause+")") }
	ts, err := strconv.ParseUint(raw, 10, 64)
	if err != nil {
		if ts, err = datetimeTS(raw, bad); err != nil {
			return err
		}
	}
	if ts, err = s.notFuture(ctx, ts, bad("a future time")); err != nil {
		return err
	}
	s.snapshotTS = ts
	s.vars["tidb_snapshot"] = sysVar{value: raw}
	return nil
}

// errSnapshotWrite is TiDB's refusal of a write while tidb_snapshot is set.
func errSnapshotWrite() error {
	return errno.New(errno.ErrUnknown, "can not execute write statement when 'tidb_snapshot' is set; SET @@tidb_snapshot = '' first")
}

// writesData reports whether stmt writes rows or schema (refused under
// tidb_snapshot; locking reads are refused where they are run).
func writesData(stmt ast.StmtNode) bool {
	switch stmt.(type) {
	case *ast.InsertStmt, *ast.UpdateStmt, *ast.DeleteStmt, *ast.CreateDatabaseStmt, *ast.DropDatabaseStmt, *ast.AlterDatabaseStmt,
		*ast.CreateTableStmt, *ast.DropTableStmt, *ast.CreateViewStmt, *ast.TruncateTableStmt,
		*ast.CreateIndexStmt, *ast.DropIndexStmt, *ast.AlterTableStmt, *ast.RenameTableStmt:
		return true
	}
	return false
}
