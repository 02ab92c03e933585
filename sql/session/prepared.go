package session

import (
	"context"
	"sort"

	"github.com/pingcap/tidb/pkg/parser/ast"
	driver "github.com/pingcap/tidb/pkg/parser/test_driver"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/executor"
	"github.com/stratadb/strata/sql/types"
)

// MaxPreparedStmts is max_prepared_stmt_count's default: the bound on the
// prepared statements (binary-protocol and SQL-level together) one
// connection holds.
const MaxPreparedStmts = 16382

// Prepared is a statement parsed once by COM_STMT_PREPARE and executed many
// times with different parameters. It is owned by its session.
type Prepared struct {
	ID        uint32
	Stmt      ast.StmtNode
	NumParams int
	// Columns describes the result set for statements that return one
	// (planned with all parameters NULL); nil otherwise.
	Columns []executor.ResultColumn
	// ParamTypes holds the (type, flag) pairs the client last sent; clients
	// send them only when they change.
	ParamTypes []byte
	// LongData accumulates COM_STMT_SEND_LONG_DATA chunks per parameter until
	// the next execute or reset.
	LongData map[int][]byte
	// asOf are Stmt's AS OF TIMESTAMP clauses, found once at prepare
	// (stmtAsOf would walk the statement at every execution).
	asOf []*ast.AsOfClause
}

// markerCollector finds a statement's parameter markers and AS OF
// clauses in one walk.
type markerCollector struct {
	markers []*driver.ParamMarkerExpr
	asOf    asOfFinder
}

func (m *markerCollector) Enter(n ast.Node) (ast.Node, bool) {
	if pm, ok := n.(*driver.ParamMarkerExpr); ok {
		m.markers = append(m.markers, pm)
	}
	return m.asOf.Enter(n)
}

func (m *markerCollector) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// Prepare parses sql (exactly one statement) and registers it under a new
// binary-protocol statement id (COM_STMT_PREPARE).
func (s *Session) Prepare(ctx context.Context, sql string) (*Prepared, error) {
	if err := s.checkPreparedCount(); err != nil {
		return nil, err
	}
	stmts, aliases, err := s.parseWith(s.parser, sql)
	if err != nil {
		return nil, err
	}
	p, err := s.prepare(ctx, stmts, aliases, false)
	if err != nil {
		return nil, err
	}
	if s.stmts == nil {
		s.stmts = map[uint32]*Prepared{}
	}
	s.nextStmt++
	p.ID = s.nextStmt
	s.stmts[p.ID] = p
	return p, nil
}

// checkPreparedCount is ERROR 1461 when the session holds
// max_prepared_stmt_count statements (binary and SQL-level together).
func (s *Session) checkPreparedCount() error {
	limit := maxPreparedStmtCount.Load()
	if int64(len(s.stmts)+len(s.sqlStmts.byName)) >= limit {
		return errno.New(errno.ErrMaxPreparedStmtCount, "Can't create more than max_prepared_stmt_count statements (current value: %d)", limit)
	}
	return nil
}

// prepare makes the Prepared of a parsed statement text, shared by
// COM_STMT_PREPARE and SQL-level PREPARE (sqlLevel: only the statements
// MySQL lets PREPARE prepare; the binary protocol refuses just the
// prepared-statement statements themselves). A row alias (rowalias.go)
// is resolved here, once, as MySQL resolves it at prepare.
func (s *Session) prepare(ctx context.Context, stmts []ast.StmtNode, aliases rowAliases, sqlLevel bool) (*Prepared, error) {
	if len(stmts) != 1 {
		return nil, errno.New(errno.ErrParse, "You have an error in your SQL syntax; a prepared statement must contain exactly one statement")
	}
	if !preparable(stmts[0], sqlLevel) {
		return nil, errno.New(errno.ErrUnsupportedPS, "This command is not supported in the prepared statement protocol yet")
	}
	if ins, ok := stmts[0].(*ast.InsertStmt); ok && aliases[ins] != nil {
		if err := s.resolveRowAlias(ctx, ins, aliases[ins]); err != nil {
			return nil, err
		}
	}
	if s.privs.mgr != nil { // as MySQL, at prepare too (the columns would tell)
		if err := s.checkPrivileges(ctx, stmts[0]); err != nil {
			return nil, err
		}
	}
	mc := &markerCollector{}
	stmts[0].Accept(mc)
	sort.Slice(mc.markers, func(i, j int) bool { return mc.markers[i].Offset < mc.markers[j].Offset })
	for i, m := range mc.markers {
		m.SetOrder(i)
	}
	p := &Prepared{Stmt: stmts[0], NumParams: len(mc.markers), asOf: mc.asOf.clauses}
	switch q := stmts[0].(type) {
	case *ast.SelectStmt, *ast.SetOprStmt:
		params, prepared := s.params, s.prepared
		s.params = make([]types.Datum, p.NumParams) // all NULL
		cols, err := s.exec.QueryColumns(ctx, q, s)
		s.params, s.prepared = params, prepared
		if err != nil {
			return nil, errno.FromError(err)
		}
		p.Columns = cols
	}
	return p, nil
}

// PreparedStmt returns a registered statement.
func (s *Session) PreparedStmt(id uint32) (*Prepared, bool) {
	p, ok := s.stmts[id]
	return p, ok
}

// ClosePrepared forgets a statement (unknown ids are ignored).
func (s *Session) ClosePrepared(id uint32) {
	if p, ok := s.stmts[id]; ok {
		s.plans.Forget(p.Stmt)
	}
	delete(s.stmts, id)
}

// PlanCacheHits is the number of prepared executions that ran a cached
// plan (no planning).
func (s *Session) PlanCacheHits() uint64 { return s.plans.Hits }

// ExecutePrepared runs p with params bound to its markers in order.
func (s *Session) ExecutePrepared(ctx context.Context, p *Prepared, params []types.Datum) (*executor.Result, error) {
	if len(params) != p.NumParams {
		return nil, errno.New(errno.ErrWrongArguments, "Incorrect arguments to EXECUTE: %d parameters for %d markers", len(params), p.NumParams)
	}
	s.params, s.prepared, s.executing = params, true, p
	defer func() { s.params, s.prepared, s.executing = nil, false, nil }()
	return s.Execute(ctx, p.Stmt)
}
