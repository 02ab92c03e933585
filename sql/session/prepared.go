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

// MaxPreparedStmts bounds prepared statements per connection
// (max_prepared_stmt_count).
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
}

type markerCollector struct{ markers []*driver.ParamMarkerExpr }

func (m *markerCollector) Enter(n ast.Node) (ast.Node, bool) {
	if pm, ok := n.(*driver.ParamMarkerExpr); ok {
		m.markers = append(m.markers, pm)
	}
	return n, false
}

func (m *markerCollector) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// Prepare parses sql (exactly one statement) and registers it.
func (s *Session) Prepare(ctx context.Context, sql string) (*Prepared, error) {
	if len(s.stmts) >= MaxPreparedStmts {
		return nil, errno.New(1461, "Can't create more than max_prepared_stmt_count statements (current value: %d); close unused statements", MaxPreparedStmts)
	}
	stmts, err := s.Parse(sql)
	if err != nil {
		return nil, err
	}
	if len(stmts) != 1 {
		return nil, errno.New(errno.ErrParse, "You have an error in your SQL syntax; a prepared statement must contain exactly one statement")
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
	p := &Prepared{Stmt: stmts[0], NumParams: len(mc.markers)}
	switch q := stmts[0].(type) {
	case *ast.SelectStmt, *ast.SetOprStmt:
		s.params = make([]types.Datum, p.NumParams) // all NULL
		p.Columns, err = s.exec.QueryColumns(ctx, q, s)
		s.params = nil
		if err != nil {
			return nil, errno.FromError(err)
		}
	}
	if s.stmts == nil {
		s.stmts = map[uint32]*Prepared{}
	}
	s.nextStmt++
	p.ID = s.nextStmt
	s.stmts[p.ID] = p
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
		return nil, errno.New(1210, "Incorrect arguments to EXECUTE: %d parameters for %d markers", len(params), p.NumParams)
	}
	s.params, s.prepared = params, true
	defer func() { s.params, s.prepared = nil, false }()
	return s.Execute(ctx, p.Stmt)
}
