package session

import (
	"context"
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
	clauses := asOfClauses(n)
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

// evalAsOf evaluates an AS OF TIMESTAMP expression (a datetime literal or
// an expression giving one, in the session's time zone) to a TSO timestamp
// (physical milliseconds << 18) no later than now.
func (s *Session) evalAsOf(ctx context.Context, c *ast.AsOfClause) (uint64, error) {
	if fn, ok := c.TsExpr.(*ast.FuncCallExpr); ok {
		switch name := fn.FnName.L; name {
		case "tidb_bounded_staleness", "tidb_parse_tso":
			return 0, errno.NotSupported("AS OF TIMESTAMP " + strings.ToUpper(name) + "(); give a datetime")
		}
	}
	e, err := expr.Compile(c.TsExpr, &expr.Ctx{Env: s})
	if err != nil {
		return 0, err
	}
	d, err := e.Eval(nil)
	if err != nil {
		return 0, err
	}
	raw := string(types.AppendText(nil, d, nil))
	t, ok := types.ParseTime(raw)
	if !ok {
		return 0, errAsOf("'" + raw + "' is not a datetime")
	}
	t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.Local)
	if t.UnixMilli() <= 0 {
		return 0, errAsOf("'" + raw + "' is before 1970")
	}
	ts := uint64(t.UnixMilli()) << 18
	now, err := s.dom.Store().GetTS(ctx)
	if err != nil {
		return 0, err
	}
	if ts > now {
		return 0, errAsOf("cannot set read timestamp to a future time")
	}
	return ts, nil
}
