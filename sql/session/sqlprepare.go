package session

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/executor"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/types"
)

// SQL-level prepared statements: PREPARE name FROM 'text' | @var,
// EXECUTE name [USING @a, ...], DEALLOCATE PREPARE name / DROP PREPARE
// name, with MySQL's semantics. A statement is prepared exactly as
// COM_STMT_PREPARE prepares one (prepare, prepared.go) and runs through
// the same path (params, prepared, the plan cache), so a repeated EXECUTE
// of a point select runs its cached plan. The names are a namespace of
// their own, case-insensitive, apart from the binary protocol's ids; both
// count towards max_prepared_stmt_count. The session owns them: COM_RESET_
// CONNECTION (a new session) and the connection's end drop them.

// maxPreparedStmtCount is max_prepared_stmt_count (GLOBAL only, as in
// MySQL; this SQL node's): the prepared statements one session may hold.
var maxPreparedStmtCount atomic.Int64

func init() { maxPreparedStmtCount.Store(MaxPreparedStmts) }

// maxPreparedStmtLimit is MySQL's upper bound of max_prepared_stmt_count.
const maxPreparedStmtLimit = 4194304

const maxPreparedStmtVar = "max_prepared_stmt_count"

// sqlPrepared is the session's SQL-level prepared statements.
type sqlPrepared struct {
	byName map[string]*Prepared // by lower-cased name
	// parser parses PREPARE's text: not the session's parser, whose
	// result slice the statements of the running query may still be
	// (ParseSQL reuses it).
	parser *parser.Parser
}

// preparable reports whether PREPARE may prepare stmt: MySQL's list of
// the statements permitted in prepared statements, plus TiDB's ADMIN and
// SPLIT and EXPLAIN; everything else (PREPARE / EXECUTE / DEALLOCATE
// themselves, BEGIN, ROLLBACK, SAVEPOINT, USE, LOAD DATA, ...) is ERROR
// 1295. The binary protocol (sqlLevel false) refuses only the
// prepared-statement statements.
func preparable(stmt ast.StmtNode, sqlLevel bool) bool {
	switch stmt.(type) {
	case *ast.PrepareStmt, *ast.ExecuteStmt, *ast.DeallocateStmt:
		return false
	}
	if !sqlLevel {
		return true
	}
	switch stmt.(type) {
	case *ast.SelectStmt, *ast.SetOprStmt, *ast.InsertStmt, *ast.UpdateStmt, *ast.DeleteStmt, *ast.DoStmt, *ast.SetStmt,
		*ast.ShowStmt, *ast.ExplainStmt, *ast.CommitStmt, *ast.KillStmt,
		*ast.CreateDatabaseStmt, *ast.DropDatabaseStmt, *ast.CreateTableStmt, *ast.DropTableStmt, *ast.CreateViewStmt,
		*ast.TruncateTableStmt, *ast.CreateIndexStmt, *ast.DropIndexStmt, *ast.AlterTableStmt, *ast.RenameTableStmt,
		*ast.AnalyzeTableStmt, *ast.AdminStmt, *ast.SplitRegionStmt,
		*ast.CreateUserStmt, *ast.AlterUserStmt, *ast.DropUserStmt, *ast.RenameUserStmt, *ast.SetPwdStmt,
		*ast.GrantStmt, *ast.RevokeStmt, *ast.FlushStmt:
		return true
	}
	return false
}

// sqlPrepare runs PREPARE. An existing statement of the name is
// deallocated first, so a PREPARE that fails leaves none (MySQL).
func (s *Session) sqlPrepare(ctx context.Context, x *ast.PrepareStmt) (*executor.Result, error) {
	key := strings.ToLower(x.Name)
	s.dropSQLPrepared(key)
	if err := s.checkPreparedCount(); err != nil {
		return nil, err
	}
	text := x.SQLText
	if x.SQLVar != nil {
		v := s.userVars[strings.ToLower(x.SQLVar.Name)]
		if v.IsNull() {
			text = "NULL" // as MySQL: a syntax error near 'NULL'
		} else {
			text = string(types.AppendText(nil, v, nil))
		}
	}
	sp := &s.sqlStmts
	if sp.parser == nil {
		sp.parser = parser.New()
	}
	stmts, aliases, err := s.parseWith(sp.parser, text)
	if err != nil {
		return nil, err
	}
	if len(stmts) == 0 {
		return nil, errno.New(errno.ErrEmptyQuery, "Query was empty")
	}
	p, err := s.prepare(ctx, stmts, aliases, true)
	if err != nil {
		return nil, err
	}
	if sp.byName == nil {
		sp.byName = map[string]*Prepared{}
	}
	sp.byName[key] = p
	return &executor.Result{Info: "Statement prepared"}, nil
}

// sqlExecute runs EXECUTE: the prepared statement with the user
// variables bound to its markers in order (with their types; an unset
// variable is NULL), checked and run as if the client had sent it
// directly: its privileges, its transaction (and retries), and the
// ROW_COUNT() / LAST_INSERT_ID() it leaves are its own.
func (s *Session) sqlExecute(ctx context.Context, x *ast.ExecuteStmt) (*executor.Result, error) {
	p, ok := s.sqlStmts.byName[strings.ToLower(x.Name)]
	if !ok {
		return nil, unknownStmtHandler(x.Name, "EXECUTE")
	}
	if len(x.UsingVars) != p.NumParams {
		return nil, errno.New(errno.ErrWrongArguments, "Incorrect arguments to EXECUTE")
	}
	params := make([]types.Datum, len(x.UsingVars))
	for i, e := range x.UsingVars {
		ce, err := expr.Compile(e, &expr.Ctx{Env: s})
		if err != nil {
			return nil, err
		}
		v, err := ce.Eval(nil)
		if err != nil {
			return nil, err
		}
		params[i] = copyDatum(v)
	}
	oldParams, oldPrepared := s.params, s.prepared
	s.params, s.prepared = params, true
	defer func() { s.params, s.prepared = oldParams, oldPrepared }()
	// execute (for EXECUTE itself) moved the previous statement's plan
	// cache hit to last_plan_from_cache; the inner statement's execute
	// does it again, so give it the same.
	s.plans.LastHit = s.lastPlanFromCache
	s.decideWarnings(p.Stmt) // Execute decided for EXECUTE itself
	res, err := s.checkedExecute(ctx, p.Stmt)
	if err != nil {
		s.plans.LastHit = false // refused before its execute cleared it
	}
	return res, err
}

// sqlDeallocate runs DEALLOCATE PREPARE / DROP PREPARE.
func (s *Session) sqlDeallocate(x *ast.DeallocateStmt) (*executor.Result, error) {
	if !s.dropSQLPrepared(strings.ToLower(x.Name)) {
		return nil, unknownStmtHandler(x.Name, "DEALLOCATE PREPARE")
	}
	return &executor.Result{}, nil
}

// dropSQLPrepared forgets the statement of a (lower-cased) name and its
// cached plan; false when there is none.
func (s *Session) dropSQLPrepared(key string) bool {
	p, ok := s.sqlStmts.byName[key]
	if !ok {
		return false
	}
	s.plans.Forget(p.Stmt)
	delete(s.sqlStmts.byName, key)
	return true
}

func unknownStmtHandler(name, what string) error {
	return errno.New(errno.ErrUnknownStmtHandler, "Unknown prepared statement handler (%s) given to %s", name, what)
}

// preparedSysVar reads max_prepared_stmt_count (ok false for other names).
func preparedSysVar(name string) (types.Datum, types.FieldType, bool) {
	if name != maxPreparedStmtVar {
		return types.Datum{}, types.FieldType{}, false
	}
	return types.NewInt(maxPreparedStmtCount.Load()), types.Int64Type, true
}

// setPreparedSysVar runs SET GLOBAL max_prepared_stmt_count (handled false
// for other names). Values are clamped to MySQL's [0, 4194304]; lowering
// it keeps the statements sessions hold and refuses new ones.
func setPreparedSysVar(name string, global bool, val types.Datum) (handled bool, err error) {
	if name != maxPreparedStmtVar {
		return false, nil
	}
	if !global {
		return true, errno.New(1229, "Variable '%s' is a GLOBAL variable and should be set with SET GLOBAL", name)
	}
	text := strings.TrimSpace(string(types.AppendText(nil, val, nil)))
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return true, errno.New(1232, "Incorrect argument type to variable '%s'", name)
	}
	maxPreparedStmtCount.Store(min(max(n, 0), maxPreparedStmtLimit))
	return true, nil
}
