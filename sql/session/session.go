package session

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/charset"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver" // value expressions for the parser
	"github.com/stratadb/strata/sql/collate"
	"github.com/stratadb/strata/sql/domain"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/executor"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/infoschema"
	"github.com/stratadb/strata/sql/memory"
	"github.com/stratadb/strata/sql/planner"
	"github.com/stratadb/strata/sql/statistics"
	"github.com/stratadb/strata/sql/types"
)

// Session is one connection's state. Not safe for concurrent use.
type Session struct {
	// statusVars supplies the connection's SHOW STATUS rows (set by the
	// server; nil: none).
	statusVars func() []StatusVar

	dom      *domain.Domain
	exec     *executor.Executor
	parser   *parser.Parser
	connID   uint64
	user     string
	host     string
	db       string
	vars     map[string]sysVar // session overrides of defaultSysVars
	userVars map[string]types.Datum
	lastID   uint64
	// lastIDSet: LAST_INSERT_ID(expr) set lastID in the running statement.
	lastIDSet bool
	// rowCount and foundRows are the previous statement's ROW_COUNT() and
	// FOUND_ROWS(); calcFound, when >= 0, is the running SELECT
	// SQL_CALC_FOUND_ROWS's row count without its LIMIT.
	rowCount  int64
	foundRows uint64
	calcFound int64
	// warnings are the last statement's (SHOW WARNINGS, @@warning_count),
	// kept across statements that use no table and raise none, as MySQL
	// keeps its diagnostics area (keepsDiagnostics); stmtWarnings is the
	// last statement's own count, for its OK / EOF packet.
	warnings     []executor.Warning
	stmtWarnings int
	sqlMode      sqlModeCache  // SQLMode
	params       []types.Datum // bound while a prepared statement executes
	prepared     bool          // a prepared statement is executing
	executing    *Prepared     // the prepared statement executing (nil for a text statement)
	plans        executor.PlanCache
	// lastPlanFromCache: the previous statement ran a cached plan
	// (@@last_plan_from_cache).
	lastPlanFromCache bool
	stmts             map[uint32]*Prepared
	nextStmt          uint32
	sqlStmts          sqlPrepared // PREPARE / EXECUTE, sqlprepare.go
	// rowAliases are the row aliases of the statements the last Parse
	// returned, each resolved (and forgotten) when Execute runs it.
	rowAliases rowAliases

	txn  *txnState  // open explicit or implicit transaction
	stmt *stmtState // autocommit statement's transaction while it runs
	// stmtRows: rows the running statement added and modified, by table
	// (NoteRows), counted when it and its transaction commit.
	stmtRows map[int64]statistics.Delta
	// oneShotIsolation is SET TRANSACTION ISOLATION LEVEL's level for the
	// next transaction only ("" when none).
	oneShotIsolation string
	// snapshotTS is tidb_snapshot's read timestamp (0: none): every read
	// is at it and writes are refused (staleread.go).
	snapshotTS uint64

	privs sessPrivs // privs.go
	procs Processes // process.go
	// extraWarnings are warnings raised outside the executor during the
	// running statement (CLUSTER_PROCESSLIST's unreachable nodes); Execute
	// adds them to the statement's result.
	extraWarnings []executor.Warning
	warnMu        sync.Mutex  // extraWarnings, appended by parallel workers (divzero.go)
	divZeroErr    atomic.Bool // the running statement fails on division by zero
	truncErr      atomic.Bool // the running statement fails on a truncated value (1292)

	mem      *memory.Statement // memvars.go
	memDepth int               // nesting of Execute

	stmtDone <-chan struct{}             // StatementDone
	stmtTime time.Time                   // the running top-level statement's start (Now)
	userTime time.Time                   // SET timestamp's instant (zero: none; timestamp.go)
	tz       atomic.Pointer[sessionZone] // TimeZone's last answer
}

// New returns a session for connection connID of user@host on the node's
// domain.
func New(dom *domain.Domain, connID uint64, user, host string) *Session {
	return &Session{dom: dom, exec: executor.New(dom), parser: parser.New(), connID: connID, user: user, host: host,
		vars: globalOverrides(), userVars: map[string]types.Datum{}, mem: memory.NewStatement(connID)}
}

// CurrentDB implements expr.Env.
func (s *Session) CurrentDB() string { return s.db }

// User implements expr.Env.
func (s *Session) User() string { return s.user + "@" + s.host }

// ConnectionID implements expr.Env.
func (s *Session) ConnectionID() uint64 { return s.connID }

// LastInsertID implements expr.Env.
func (s *Session) LastInsertID() uint64 { return s.lastID }

// SetLastInsertID implements expr.LastInsertIDSetter: LAST_INSERT_ID(expr)
// sets the value LAST_INSERT_ID() returns from the next statement on, and
// the statement's OK packet carries it.
func (s *Session) SetLastInsertID(id uint64) { s.lastID, s.lastIDSet = id, true }

// RowCount implements expr.StatementCounts: the previous statement's
// affected rows, -1 when it returned a result set.
func (s *Session) RowCount() int64 { return s.rowCount }

// FoundRows implements expr.StatementCounts: the rows the last SELECT
// returned (without its LIMIT for SELECT SQL_CALC_FOUND_ROWS).
func (s *Session) FoundRows() uint64 { return s.foundRows }

// StatementDone implements expr.Env: the channel of the context
// the current (or last) statement runs under, closed by KILL QUERY.
func (s *Session) StatementDone() <-chan struct{} { return s.stmtDone }

// Now implements expr.Env: the time the running top-level statement
// started (one value for every NOW(), CURDATE() and UTC_TIMESTAMP() of a
// statement, as MySQL's), in the session time zone; the current time
// outside a statement; the instant SET timestamp fixed (timestamp.go).
func (s *Session) Now() time.Time {
	t := s.stmtTime
	if !s.userTime.IsZero() {
		t = s.userTime
	} else if t.IsZero() {
		t = time.Now()
	}
	return t.In(s.TimeZone())
}

// TimeZone implements expr.TimeZoner: the zone @@time_zone names
// (time.Local for SYSTEM).
func (s *Session) TimeZone() *time.Location {
	v := s.varValue("time_zone")
	if z := s.tz.Load(); z != nil && z.name == v {
		return z.loc
	}
	loc, _, ok := expr.ParseTimeZone(v)
	if !ok {
		loc = time.Local // never: SET checks the value
	}
	s.tz.Store(&sessionZone{name: v, loc: loc})
	return loc
}

// sessionZone is a parsed @@time_zone.
type sessionZone struct {
	name string
	loc  *time.Location
}

// Param implements expr.Env.
func (s *Session) Param(i int) (types.Datum, bool) {
	if i < 0 || i >= len(s.params) {
		return types.NullDatum, false
	}
	return s.params[i], true
}

// UserVar implements expr.Env.
func (s *Session) UserVar(name string) types.Datum { return s.userVars[name] }

// SysVar implements expr.Env.
func (s *Session) SysVar(name string, global bool) (types.Datum, types.FieldType, error) {
	if name == "last_insert_id" || name == "identity" {
		return types.NewUint(s.lastID), types.Uint64Type, nil
	}
	if name == "warning_count" || name == "error_count" {
		n := 0
		for _, w := range s.warnings {
			if name == "warning_count" || w.Level == "Error" {
				n++
			}
		}
		return types.NewInt(int64(n)), types.Int64Type, nil
	}
	if name == "timestamp" { // timestamp.go
		return s.timestampSysVar(global)
	}
	if name == "last_plan_from_cache" { // did the previous statement run a cached plan
		return boolInt(s.lastPlanFromCache), types.Int64Type, nil
	}
	if v, ok := s.vars[name]; ok && !global {
		d, ft := v.datum()
		return d, ft, nil
	}
	if d, ft, ok, err := s.gcSysVar(name); ok { // cluster-wide, gcvars.go
		return d, ft, err
	}
	if d, ft, ok := serverMemSysVar(name); ok { // this node's, memvars.go
		return d, ft, nil
	}
	if d, ft, ok := preparedSysVar(name); ok { // this node's, sqlprepare.go
		return d, ft, nil
	}
	if d, ft, ok := traceSysVar(name); ok { // this node's, tracevars.go
		return d, ft, nil
	}
	if d, ft, ok := checkSysVar(name); ok { // this node's, checkvars.go
		return d, ft, nil
	}
	if d, ft, ok := s.statsSysVar(name); ok { // cluster-wide, statsvars.go
		return d, ft, nil
	}
	if global {
		if v, ok := globalVar(name); ok {
			d, ft := v.datum()
			return d, ft, nil
		}
	}
	v, ok := defaultSysVars[name]
	if !ok {
		return types.NullDatum, types.FieldType{}, errno.New(errno.ErrUnknownSystemVar, "Unknown system variable '%s'", name)
	}
	d, ft := v.datum()
	return d, ft, nil
}

var _ expr.Env = (*Session)(nil)

// SetClientCollation records the collation a client announced in its
// handshake (character_set_* and collation_connection report it; Strata
// stores and compares everything as utf8mb4 bytes). Unknown ids are ignored.
func (s *Session) SetClientCollation(id int) {
	coll, err := charset.GetCollationByID(id)
	if err != nil || coll == nil {
		return
	}
	for _, n := range []string{"character_set_client", "character_set_connection", "character_set_results"} {
		s.vars[n] = sysVar{value: coll.CharsetName}
	}
	s.vars["collation_connection"] = sysVar{value: coll.Name}
}

// Account implements executor.StmtEnv.
func (s *Session) Account() (user, host string) { return s.user, s.host }

// ClearCurrentDB implements executor.StmtEnv.
func (s *Session) ClearCurrentDB() { s.db = "" }

var _ executor.StmtEnv = (*Session)(nil)

// UseDB switches the current database (USE, COM_INIT_DB, CONNECT_WITH_DB).
func (s *Session) UseDB(ctx context.Context, name string) error {
	if strings.EqualFold(name, infoschema.DBName) {
		s.db = infoschema.DBName // everyone may read it
		return nil
	}
	if err := s.mayUseDB(name); err != nil {
		return err
	}
	db, err := s.dom.Catalog().GetDB(ctx, name)
	if err != nil {
		return err
	}
	s.db = db.Name
	// @@collation_database and @@character_set_database follow the
	// current database's default, as in MySQL.
	if coll := collate.ByName(db.CollationName()); coll != nil {
		s.vars["collation_database"] = sysVar{value: coll.Name}
		s.vars["character_set_database"] = sysVar{value: coll.Charset}
	}
	return nil
}

// Parse splits sql into statements. Syntax errors are ERROR 1064. The
// row aliases among them (rowalias.go) are resolved when Execute runs
// each.
func (s *Session) Parse(sql string) ([]ast.StmtNode, error) {
	stmts, aliases, err := s.parseWith(s.parser, sql)
	s.rowAliases = aliases
	return stmts, err
}

// parseWith parses sql with p under the session's sql_mode.
func (s *Session) parseWith(p *parser.Parser, sql string) ([]ast.StmtNode, rowAliases, error) {
	mode := s.SQLMode()
	p.SetSQLMode(mode)
	return parseSQL(p, sql, mode)
}

// parseSQL parses sql with p (set to mode). When p refuses it, sql may
// still be MySQL syntax the parser lacks: CHECKSUM TABLE (checksum.go),
// or INSERTs with a row alias (rowalias.go), returned with their aliases.
func parseSQL(p *parser.Parser, sql string, mode mysql.SQLMode) ([]ast.StmtNode, rowAliases, error) {
	stmts, _, err := p.ParseSQL(sql)
	if err != nil {
		if st, ok := parseChecksumTable(p, sql); ok {
			checksumTableStatements.Inc()
			return []ast.StmtNode{st}, nil, nil
		}
		if rs, aliases, ok, rerr := parseRowAliases(p, sql, mode); ok {
			if rerr == nil {
				return rs, aliases, nil
			}
			err = rerr // the rest of the text's error, at the same offsets
		}
		return nil, nil, parseError(err)
	}
	return stmts, nil, nil
}

// parseError is the MySQL error of a parser error: ERROR 1064, or the
// code of a character set or collation name the parser checked.
func parseError(err error) error {
	msg := err.Error()
	if i := strings.Index(msg, "]"); strings.HasPrefix(msg, "[") && i > 0 {
		// The parser checks character set and collation names itself
		// ("[ddl:1273]Unknown collation: ..."): those keep their code.
		if _, c, ok := strings.Cut(msg[1:i], ":"); ok {
			switch c {
			case "1115", "1253", "1273":
				code, _ := strconv.Atoi(c)
				return errno.New(uint16(code), "%s", strings.TrimSpace(msg[i+1:]))
			}
		}
		msg = msg[i+1:]
	}
	return errno.New(errno.ErrParse, "You have an error in your SQL syntax; check the manual that corresponds to your Strata version for the right syntax to use %s", strings.TrimSpace(msg))
}

// StmtLabel names a statement's type for metrics and logs.
func StmtLabel(stmt ast.StmtNode) string {
	rt := reflect.TypeOf(stmt)
	if l, ok := stmtLabels.Load(rt); ok {
		return l.(string) // once per statement: no formatting
	}
	t := fmt.Sprintf("%T", stmt)
	t = strings.TrimPrefix(strings.TrimPrefix(t, "*ast."), "*session.")
	t = strings.TrimSuffix(t, "Stmt")
	stmtLabels.Store(rt, t)
	return t
}

// stmtLabels caches StmtLabel by statement type (a few dozen).
var stmtLabels sync.Map

// Execute runs one statement.
func (s *Session) Execute(ctx context.Context, stmt ast.StmtNode) (*executor.Result, error) {
	top := s.memDepth == 0
	if top {
		s.stmtTime = time.Now()
		defer func() { s.stmtTime = time.Time{} }()
		s.lastIDSet, s.calcFound = false, -1
		s.decideWarnings(stmt)
	}
	end := s.startStatementMemory()
	s.stmtDone = ctx.Done()
	res, err := s.checkedExecute(ctx, stmt)
	end()
	if top {
		s.warnMu.Lock()
		if err == nil && len(s.extraWarnings) > 0 {
			res.Warnings = append(res.Warnings, s.extraWarnings...)
		}
		s.extraWarnings = nil
		s.warnMu.Unlock()
	}
	if err != nil {
		var e *errno.Error
		if !errors.As(err, &e) {
			e = errno.FromError(err)
			err = e
		}
		if top {
			s.rowCount = -1 // MySQL's my_error() sets ROW_COUNT() so
			s.warnings = append(s.warnings[:0], executor.Warning{Level: "Error", Code: e.Code, Msg: e.Msg})
		}
		return nil, err
	}
	if top {
		s.stmtWarnings = len(res.Warnings)
		if len(res.Warnings) > 0 || !keepsDiagnostics(stmt) {
			s.warnings = append(s.warnings[:0], res.Warnings...)
		}
	}
	switch {
	case res.LastInsertID != 0:
		s.lastID = res.LastInsertID
	case s.lastIDSet && top:
		res.LastInsertID = s.lastID
	}
	if top {
		s.noteCounts(res)
	}
	return res, nil
}

// WarningCount is the number of warnings the last statement raised, for
// its OK and EOF packets (SHOW WARNINGS may list an earlier statement's).
func (s *Session) WarningCount() int { return s.stmtWarnings }

// keepsDiagnostics reports whether stmt, when it raises no warning, leaves
// the previous statement's warnings in place: the diagnostic statements
// (SHOW WARNINGS / ERRORS) and those that use no table (SELECT without
// FROM, SET), as in MySQL, so that SELECT @@warning_count and SHOW
// WARNINGS both see the statement before.
func keepsDiagnostics(stmt ast.StmtNode) bool {
	switch x := stmt.(type) {
	case *ast.ShowStmt:
		return x.Tp == ast.ShowWarnings || x.Tp == ast.ShowErrors
	case *ast.SelectStmt:
		return x.From == nil
	case *ast.SetStmt:
		return true
	}
	return false
}

// noteCounts keeps what ROW_COUNT() and FOUND_ROWS() of the next
// statement return. Only a result set changes FOUND_ROWS(); a statement
// that fails makes ROW_COUNT() -1 (Execute).
func (s *Session) noteCounts(res *executor.Result) {
	if !res.IsQuery() {
		s.rowCount = int64(res.AffectedRows)
		return
	}
	s.rowCount, s.foundRows = -1, uint64(len(res.Rows))
	if s.calcFound >= 0 {
		s.foundRows = uint64(s.calcFound)
	}
}

// selectCalcFoundRows runs SELECT SQL_CALC_FOUND_ROWS ... LIMIT: the whole
// result is computed (MySQL reads every row too), counted for
// FOUND_ROWS(), and then limited.
func (s *Session) selectCalcFoundRows(ctx context.Context, x *ast.SelectStmt) (*executor.Result, error) {
	var off, cnt uint64
	var err error
	if cnt, err = planner.LimitValue(x.Limit.Count, s); err != nil {
		return nil, err
	}
	if x.Limit.Offset != nil {
		if off, err = planner.LimitValue(x.Limit.Offset, s); err != nil {
			return nil, err
		}
	}
	all := *x
	all.Limit = nil
	prepared := s.prepared
	s.prepared = false // plan the copy afresh: the plan cache keys statements by address
	res, err := s.execute(ctx, &all)
	s.prepared = prepared
	if err != nil {
		return nil, err
	}
	n := uint64(len(res.Rows))
	s.calcFound = int64(n)
	res.Rows = res.Rows[min(off, n):min(planner.SatAdd(off, cnt), n)]
	return res, nil
}

// planCache is the plan cache the statement executing goes through: the
// session's for a prepared statement while tidb_enable_prepared_plan_cache
// is ON (as TiDB), else nil.
func (s *Session) planCache() *executor.PlanCache {
	if s.prepared && s.varValue("tidb_enable_prepared_plan_cache") == "1" {
		return &s.plans
	}
	return nil
}

func (s *Session) execute(ctx context.Context, stmt ast.StmtNode) (*executor.Result, error) {
	s.lastPlanFromCache, s.plans.LastHit = s.plans.LastHit, false
	switch stmt.(type) {
	case *ast.CreateDatabaseStmt, *ast.DropDatabaseStmt, *ast.AlterDatabaseStmt, *ast.CreateTableStmt, *ast.DropTableStmt, *ast.TruncateTableStmt,
		*ast.CreateIndexStmt, *ast.DropIndexStmt, *ast.AlterTableStmt, *ast.RenameTableStmt,
		*ast.CreateUserStmt, *ast.AlterUserStmt, *ast.DropUserStmt, *ast.RenameUserStmt, *ast.SetPwdStmt, *ast.GrantStmt, *ast.RevokeStmt:
		// DDL and account statements commit the open transaction first, as in
		// MySQL; a READ ONLY session may not run them.
		if s.varValue("transaction_read_only") == "1" {
			return nil, readOnlyTxnError()
		}
		if err := s.implicitCommit(ctx); err != nil {
			return nil, err
		}
	}
	if s.snapshotTS != 0 && writesData(stmt) {
		return nil, errSnapshotWrite()
	}
	switch stmt.(type) {
	case *ast.InsertStmt, *ast.UpdateStmt, *ast.DeleteStmt:
		if _, err := s.stmtAsOf(ctx, stmt, false); err != nil {
			return nil, err
		}
	}
	switch x := stmt.(type) {
	case *ast.SelectStmt:
		if x.SelectStmtOpts != nil && x.SelectStmtOpts.CalcFoundRows && x.Limit != nil {
			return s.selectCalcFoundRows(ctx, x)
		}
		if x.From == nil && x.LockInfo == nil && !hasSubquery(x) {
			return s.exec.Select(ctx, x, s, s) // no table: no transaction needed
		}
		lock := x.LockInfo != nil && x.LockInfo.LockType != ast.SelectLockNone
		run := func(ctx context.Context) (*executor.Result, error) { return s.exec.Select(ctx, x, s, s) }
		if pc := s.planCache(); pc != nil {
			run = func(ctx context.Context) (*executor.Result, error) {
				return s.exec.SelectPrepared(ctx, x, pc, s, s)
			}
		}
		return s.runRead(ctx, x, lock, run)
	case *ast.SetOprStmt:
		return s.runRead(ctx, x, false, func(ctx context.Context) (*executor.Result, error) { return s.exec.Query(ctx, x, s, s) })
	case *ast.InsertStmt:
		return s.runDML(ctx, true, true, func() (*executor.Result, error) { return s.exec.Insert(ctx, x, s, s) })
	case *ast.UpdateStmt:
		pc := s.planCache()
		return s.runDML(ctx, true, true, func() (*executor.Result, error) { return s.exec.UpdatePrepared(ctx, x, pc, s, s) })
	case *ast.DeleteStmt:
		pc := s.planCache()
		return s.runDML(ctx, true, true, func() (*executor.Result, error) { return s.exec.DeletePrepared(ctx, x, pc, s, s) })
	case *ast.BeginStmt:
		return s.begin(ctx, x)
	case *ast.CommitStmt:
		return s.commit(ctx)
	case *ast.RollbackStmt:
		return s.rollback(ctx, x)
	case *ast.SavepointStmt:
		return s.savepoint(ctx, x.Name)
	case *ast.ReleaseSavepointStmt:
		return s.releaseSavepoint(x.Name)
	case *ast.UseStmt:
		return &executor.Result{}, s.UseDB(ctx, x.DBName)
	case *ast.CreateTableStmt:
		if x.Select != nil {
			return s.exec.CreateTableSelect(ctx, x, s, s.insertCommitted)
		}
		return s.exec.ExecuteDDL(ctx, stmt, s)
	case *ast.CreateDatabaseStmt, *ast.DropDatabaseStmt, *ast.AlterDatabaseStmt, *ast.DropTableStmt, *ast.CreateViewStmt,
		*ast.TruncateTableStmt, *ast.CreateIndexStmt, *ast.DropIndexStmt, *ast.AlterTableStmt, *ast.RenameTableStmt:
		return s.exec.ExecuteDDL(ctx, stmt, s)
	case *ast.AdminStmt:
		return s.exec.Admin(ctx, x, s)
	case *ast.ShowStmt:
		return s.show(ctx, x) // show.go: the session's own, else the executor's
	case *ast.SplitRegionStmt:
		return s.exec.Split(ctx, x, s)
	case *ast.AnalyzeTableStmt:
		return s.exec.Analyze(ctx, x, s)
	case *ast.ExplainStmt:
		if show, ok := x.Stmt.(*ast.ShowStmt); ok { // DESC t
			return s.show(ctx, show)
		}
		if x.Analyze { // runs the statement
			return s.runDML(ctx, false, false, func() (*executor.Result, error) { return s.exec.Explain(ctx, x, s, s) })
		}
		return s.exec.Explain(ctx, x, s, s)
	case *ast.SetStmt:
		return &executor.Result{}, s.set(ctx, x)
	case *ast.DoStmt:
		for _, e := range x.Exprs {
			ce, err := expr.Compile(e, &expr.Ctx{Env: s})
			if err != nil {
				return nil, err
			}
			if _, err := ce.Eval(nil); err != nil {
				return nil, err
			}
		}
		return &executor.Result{}, nil
	case *ast.CreateUserStmt, *ast.AlterUserStmt, *ast.DropUserStmt, *ast.RenameUserStmt, *ast.SetPwdStmt,
		*ast.GrantStmt, *ast.RevokeStmt, *ast.FlushStmt:
		return s.exec.ExecuteAccount(ctx, stmt, s)
	case *ast.KillStmt:
		return s.kill(ctx, x) // process.go
	case *ast.PrepareStmt: // sqlprepare.go
		return s.sqlPrepare(ctx, x)
	case *ast.ExecuteStmt:
		return s.sqlExecute(ctx, x)
	case *ast.DeallocateStmt:
		return s.sqlDeallocate(x)
	case *ast.LockTablesStmt: // executor/locktables.go: accepted, locks nothing
		if err := s.implicitCommit(ctx); err != nil {
			return nil, err
		}
		return s.exec.LockTables(ctx, x, s)
	case *ast.UnlockTablesStmt:
		return s.exec.UnlockTables(), nil
	case *ChecksumTableStmt: // checksum.go
		return s.exec.ChecksumTable(ctx, x.Tables, x.Quick, s.snapshotTS, s)
	}
	return nil, errno.NotSupported(strings.ToUpper(StmtLabel(stmt)))
}

func (s *Session) set(ctx context.Context, x *ast.SetStmt) error {
	for _, v := range x.Variables {
		name := strings.ToLower(v.Name)
		if v.Name == ast.SetNames || v.Name == ast.SetCharset {
			cs := "utf8mb4"
			if ve, ok := v.Value.(ast.ValueExpr); ok && ve.GetValue() != nil {
				cs = strings.ToLower(fmt.Sprint(ve.GetValue()))
			}
			info, err := charset.GetCharsetInfo(cs)
			if err != nil {
				return errno.New(1115, "Unknown character set: '%s'", cs)
			}
			coll := info.DefaultCollation
			if ve, ok := v.ExtendValue.(ast.ValueExpr); ok && ve.GetValue() != nil {
				coll = strings.ToLower(fmt.Sprint(ve.GetValue()))
				if _, err := charset.GetCollationByName(coll); err != nil {
					return errno.New(1273, "Unknown collation: '%s'", coll)
				}
			}
			// Recorded for clients that read them back; Strata itself
			// stores and compares everything as utf8mb4 bytes.
			for _, n := range []string{"character_set_client", "character_set_connection", "character_set_results"} {
				s.vars[n] = sysVar{value: info.Name}
			}
			s.vars["collation_connection"] = sysVar{value: coll}
			continue
		}
		var val types.Datum
		if _, isDef := v.Value.(*ast.DefaultExpr); isDef || v.Value == nil {
			val = types.NullDatum
			if def, ok := defaultSysVars[name]; ok {
				val, _ = def.datum()
			}
		} else {
			ve, err := expr.Compile(v.Value, &expr.Ctx{Env: s})
			if err != nil {
				// SET x = ON / OFF / identifiers parse as column names.
				cn, ok := v.Value.(*ast.ColumnNameExpr)
				if !ok {
					return err
				}
				val = types.NewString(cn.Name.Name.O)
			} else if val, err = ve.Eval(nil); err != nil {
				return err
			}
		}
		if !v.IsSystem {
			s.userVars[name] = copyDatum(val)
			continue
		}
		if handled, err := s.setGCSysVar(ctx, name, v.IsGlobal, val); handled { // gcvars.go
			if err != nil {
				return err
			}
			continue
		}
		if handled, err := s.setStatsSysVar(ctx, name, v.IsGlobal, val); handled { // statsvars.go
			if err != nil {
				return err
			}
			continue
		}
		if handled, err := setServerMemSysVar(name, v.IsGlobal, val); handled { // memvars.go
			if err != nil {
				return err
			}
			continue
		}
		if handled, err := setPreparedSysVar(name, v.IsGlobal, val); handled { // sqlprepare.go
			if err != nil {
				return err
			}
			continue
		}
		if name == "timestamp" { // timestamp.go
			if err := s.setTimestamp(v.Name, v.IsGlobal, val); err != nil {
				return err
			}
			continue
		}
		if name == "tidb_snapshot" { // staleread.go
			if err := s.setSnapshot(ctx, v.Name, v.IsGlobal, val); err != nil {
				return err
			}
			continue
		}
		if handled, err := setTraceSysVar(name, v.IsGlobal, val); handled { // tracevars.go
			if err != nil {
				return err
			}
			continue
		}
		if handled, err := setCheckSysVar(name, v.IsGlobal, val); handled { // checkvars.go
			if err != nil {
				return err
			}
			continue
		}
		if err := s.setSysVar(ctx, name, v.Name, v.IsGlobal, val); err != nil {
			return err
		}
	}
	return nil
}

// setSysVar runs SET [GLOBAL] name = val for a system variable.
func (s *Session) setSysVar(ctx context.Context, name, given string, global bool, val types.Datum) error {
	if name == "tx_isolation_one_shot" { // SET TRANSACTION ISOLATION LEVEL
		if s.txn != nil {
			return errno.New(1568, "Transaction characteristics can't be changed while a transaction is in progress")
		}
		text, err := s.normalizeSysVar("transaction_isolation", "transaction_isolation", val)
		if err != nil {
			return err
		}
		s.oneShotIsolation = text
		return nil
	}
	def, ok := defaultSysVars[name]
	if !ok {
		return errno.New(errno.ErrUnknownSystemVar, "Unknown system variable '%s'", given)
	}
	text, err := s.normalizeSysVar(name, given, val)
	if err != nil {
		return err
	}
	names := []string{name}
	if alias, ok := sysVarAliases[name]; ok {
		names = append(names, alias)
	}
	if global {
		if !globalSettable[name] {
			return errno.NotSupported("SET GLOBAL " + given)
		}
		for _, n := range names {
			setGlobal(n, sysVar{value: text, numeric: def.numeric})
		}
		return nil
	}
	if name == "autocommit" && text == "1" && s.txn != nil {
		// Turning autocommit on commits the open transaction (MySQL).
		if err := s.commitTxn(ctx); err != nil {
			return err
		}
	}
	for _, n := range names {
		s.vars[n] = sysVar{value: text, numeric: def.numeric}
	}
	return nil
}

func wrongValue(name, text string) error {
	return errno.New(errno.ErrWrongValueForVar, "Variable '%s' can't be set to the value of '%s'", name, text)
}

// normalizeSysVar checks val for variable name and returns its canonical
// text.
func (s *Session) normalizeSysVar(name, given string, val types.Datum) (string, error) {
	raw := string(types.AppendText(nil, val, nil))
	text := strings.ToUpper(raw)
	switch name {
	case "autocommit", "transaction_read_only", "tx_read_only", "tidb_enable_async_commit", "tidb_enable_1pc",
		"tidb_skip_isolation_level_check", "strata_allow_pushdown", "tidb_enable_tmp_storage_on_oom",
		"strata_index_lookup_pushdown", "foreign_key_checks", "tidb_enable_prepared_plan_cache":
		switch text {
		case "1", "ON", "TRUE":
			return "1", nil
		case "0", "OFF", "FALSE":
			return "0", nil
		}
		return "", wrongValue(given, raw)
	case "transaction_isolation", "tx_isolation":
		text = strings.NewReplacer(" ", "-", "_", "-").Replace(strings.TrimSpace(text))
		switch text {
		case "REPEATABLE-READ", "READ-COMMITTED":
			return text, nil
		case "SERIALIZABLE", "READ-UNCOMMITTED":
			// As TiDB: refused unless the check is skipped; then the
			// transaction runs with snapshot isolation (REPEATABLE-READ).
			if s.varValue("tidb_skip_isolation_level_check") != "1" {
				return "", errno.New(errno.ErrIsolationLevelNotSupported,
					"The isolation level '%s' is not supported. Set tidb_skip_isolation_level_check=1 to skip this error", text)
			}
			return text, nil
		}
		return "", wrongValue(given, raw)
	case "tidb_replica_read":
		return normalizeReplicaRead(given, raw)
	case "tidb_enable_clustered_index":
		// TiDB's enum: 1 and 0 are ON and OFF.
		switch text {
		case "ON", "1":
			return "ON", nil
		case "OFF", "0":
			return "OFF", nil
		case "INT_ONLY":
			return text, nil
		}
		return "", wrongValue(given, raw)
	case "sql_mode":
		return normalizeSQLMode(given, raw)
	case "time_zone":
		if val.IsNull() {
			return "", wrongValue(given, "NULL")
		}
		_, name, ok := expr.ParseTimeZone(raw)
		if !ok {
			return "", errno.New(errno.ErrUnknownTimeZone, "Unknown or incorrect time zone: '%s'", raw)
		}
		return name, nil
	case "tidb_txn_mode":
		switch strings.ToLower(strings.TrimSpace(raw)) {
		case "pessimistic", "":
			return "pessimistic", nil
		case "optimistic":
			return "optimistic", nil
		}
		return "", wrongValue(given, raw)
	case "tidb_mem_quota_query":
		n, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
		if err != nil {
			return "", errno.New(1232, "Incorrect argument type to variable '%s'", given)
		}
		return strconv.FormatInt(max(n, -1), 10), nil // <= 0: no quota
	case "innodb_lock_wait_timeout":
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return "", errno.New(1232, "Incorrect argument type to variable '%s'", given)
		}
		// MySQL clamps to [1, 1073741824].
		return strconv.FormatInt(min(max(n, 1), 1073741824), 10), nil
	}
	if !defaultSysVars[name].numeric {
		return raw, nil
	}
	switch text {
	case "ON", "TRUE":
		text = "1"
	case "OFF", "FALSE":
		text = "0"
	}
	if _, err := strconv.ParseFloat(text, 64); err != nil {
		return "", errno.New(1232, "Incorrect argument type to variable '%s'", given)
	}
	return text, nil
}

func copyDatum(d types.Datum) types.Datum {
	return d.Clone()
}

func boolInt(b bool) types.Datum {
	if b {
		return types.NewInt(1)
	}
	return types.NewInt(0)
}

// hasSubquery reports whether n contains a subquery (which reads tables,
// so in a transaction).
func hasSubquery(n ast.Node) bool {
	v := &subqueryFinder{}
	n.Accept(v)
	return v.found
}

type subqueryFinder struct{ found bool }

func (v *subqueryFinder) Enter(n ast.Node) (ast.Node, bool) {
	if _, ok := n.(*ast.SubqueryExpr); ok {
		v.found = true
	}
	return n, v.found
}

func (v *subqueryFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }
