package session

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/charset"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver" // value expressions for the parser
	"github.com/stratadb/strata/kv/tablecodec"
	"github.com/stratadb/strata/sql/catalog"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/executor"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/types"
)

// Session is one connection's state. Not safe for concurrent use.
type Session struct {
	// statusVars supplies the connection's SHOW STATUS rows (set by the
	// server; nil: none).
	statusVars func() []StatusVar

	exec     *executor.Executor
	cat      *catalog.Catalog
	parser   *parser.Parser
	connID   uint64
	user     string
	host     string
	db       string
	vars     map[string]sysVar // session overrides of defaultSysVars
	userVars map[string]types.Datum
	lastID   uint64
	params   []types.Datum // bound while a prepared statement executes
	stmts    map[uint32]*Prepared
	nextStmt uint32
}

// New returns a session for connection connID of user@host.
func New(exec *executor.Executor, connID uint64, user, host string) *Session {
	return &Session{exec: exec, cat: exec.Catalog, parser: parser.New(), connID: connID, user: user, host: host,
		vars: map[string]sysVar{}, userVars: map[string]types.Datum{}}
}

// CurrentDB implements expr.Env.
func (s *Session) CurrentDB() string { return s.db }

// User implements expr.Env.
func (s *Session) User() string { return s.user + "@" + s.host }

// ConnectionID implements expr.Env.
func (s *Session) ConnectionID() uint64 { return s.connID }

// LastInsertID implements expr.Env.
func (s *Session) LastInsertID() uint64 { return s.lastID }

// Now implements expr.Env.
func (s *Session) Now() time.Time { return time.Now() }

// Param implements expr.Env.
func (s *Session) Param(i int) (types.Datum, bool) {
	if i < 0 || i >= len(s.params) {
		return tablecodec.NullDatum, false
	}
	return s.params[i], true
}

// UserVar implements expr.Env.
func (s *Session) UserVar(name string) types.Datum { return s.userVars[name] }

// SysVar implements expr.Env.
func (s *Session) SysVar(name string, global bool) (types.Datum, types.FieldType, error) {
	if name == "last_insert_id" || name == "identity" {
		return tablecodec.NewUint(s.lastID), types.Uint64Type, nil
	}
	if v, ok := s.vars[name]; ok && !global {
		d, ft := v.datum()
		return d, ft, nil
	}
	if d, ft, ok, err := s.gcSysVar(name); ok { // cluster-wide, gcvars.go
		return d, ft, err
	}
	v, ok := defaultSysVars[name]
	if !ok {
		return tablecodec.NullDatum, types.FieldType{}, errno.New(errno.ErrUnknownSystemVar, "Unknown system variable '%s'", name)
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

// UseDB switches the current database (USE, COM_INIT_DB, CONNECT_WITH_DB).
func (s *Session) UseDB(ctx context.Context, name string) error {
	db, err := s.cat.GetDB(ctx, name)
	if err != nil {
		return err
	}
	s.db = db.Name
	return nil
}

// Parse splits sql into statements. Syntax errors are ERROR 1064.
func (s *Session) Parse(sql string) ([]ast.StmtNode, error) {
	stmts, _, err := s.parser.ParseSQL(sql)
	if err != nil {
		msg := err.Error()
		if i := strings.Index(msg, "]"); strings.HasPrefix(msg, "[") && i > 0 {
			msg = msg[i+1:]
		}
		return nil, errno.New(errno.ErrParse, "You have an error in your SQL syntax; check the manual that corresponds to your Strata version for the right syntax to use %s", strings.TrimSpace(msg))
	}
	return stmts, nil
}

// StmtLabel names a statement's type for metrics and logs.
func StmtLabel(stmt ast.StmtNode) string {
	t := fmt.Sprintf("%T", stmt)
	t = strings.TrimPrefix(t, "*ast.")
	return strings.TrimSuffix(t, "Stmt")
}

// Execute runs one statement.
func (s *Session) Execute(ctx context.Context, stmt ast.StmtNode) (*executor.Result, error) {
	res, err := s.execute(ctx, stmt)
	if err != nil {
		var e *errno.Error
		if !errors.As(err, &e) {
			err = errno.FromError(err)
		}
		return nil, err
	}
	if res.LastInsertID != 0 {
		s.lastID = res.LastInsertID
	}
	return res, nil
}

func (s *Session) execute(ctx context.Context, stmt ast.StmtNode) (*executor.Result, error) {
	switch x := stmt.(type) {
	case *ast.SelectStmt:
		return s.exec.Select(ctx, x, s)
	case *ast.InsertStmt:
		return retryOnConflict(ctx, func() (*executor.Result, error) { return s.exec.Insert(ctx, x, s) })
	case *ast.UpdateStmt:
		return retryOnConflict(ctx, func() (*executor.Result, error) { return s.exec.Update(ctx, x, s) })
	case *ast.DeleteStmt:
		return retryOnConflict(ctx, func() (*executor.Result, error) { return s.exec.Delete(ctx, x, s) })
	case *ast.UseStmt:
		return &executor.Result{}, s.UseDB(ctx, x.DBName)
	case *ast.CreateDatabaseStmt:
		return &executor.Result{AffectedRows: 1}, s.cat.CreateDB(ctx, x.Name.O, x.IfNotExists)
	case *ast.DropDatabaseStmt:
		if err := s.cat.DropDB(ctx, x.Name.O, x.IfExists); err != nil {
			return nil, err
		}
		if strings.EqualFold(s.db, x.Name.O) {
			s.db = ""
		}
		return &executor.Result{}, nil
	case *ast.CreateTableStmt:
		return s.createTable(ctx, x)
	case *ast.DropTableStmt:
		return s.dropTable(ctx, x)
	case *ast.TruncateTableStmt:
		return s.truncateTable(ctx, x)
	case *ast.ShowStmt:
		return s.show(ctx, x)
	case *ast.ExplainStmt:
		if show, ok := x.Stmt.(*ast.ShowStmt); ok { // DESC t
			return s.show(ctx, show)
		}
		return nil, errno.NotSupported("EXPLAIN")
	case *ast.SetStmt:
		return &executor.Result{}, s.set(ctx, x)
	case *ast.BeginStmt:
		return nil, errno.NotSupported("multi-statement transactions (BEGIN / START TRANSACTION); every statement autocommits")
	case *ast.CommitStmt, *ast.RollbackStmt:
		// No transaction is ever open: every statement has committed already.
		return &executor.Result{}, nil
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
	case *ast.SetOprStmt:
		return nil, errno.NotSupported("UNION / INTERSECT / EXCEPT")
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
			val = tablecodec.NullDatum
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
				val = tablecodec.NewString(cn.Name.Name.O)
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
		def, ok := defaultSysVars[name]
		if !ok {
			return errno.New(errno.ErrUnknownSystemVar, "Unknown system variable '%s'", v.Name)
		}
		if v.IsGlobal {
			return errno.NotSupported("SET GLOBAL")
		}
		text := strings.ToUpper(string(types.AppendText(nil, val, nil)))
		if name == "autocommit" {
			if text == "0" || text == "OFF" || text == "FALSE" {
				return errno.NotSupported("autocommit=0 (multi-statement transactions)")
			}
			text = "1"
		}
		if def.numeric {
			switch text {
			case "ON", "TRUE":
				text = "1"
			case "OFF", "FALSE":
				text = "0"
			}
			if _, err := strconv.ParseFloat(text, 64); err != nil {
				return errno.New(1232, "Incorrect argument type to variable '%s'", v.Name)
			}
		} else {
			text = string(types.AppendText(nil, val, nil))
		}
		s.vars[name] = sysVar{value: text, numeric: def.numeric}
	}
	return nil
}

func copyDatum(d types.Datum) types.Datum {
	if d.Kind() == tablecodec.KindBytes {
		return tablecodec.NewBytes(append([]byte(nil), d.Bytes()...))
	}
	return d
}

func (s *Session) dbFor(ctx context.Context, schema string) (*catalog.DBInfo, error) {
	if schema == "" {
		schema = s.db
	}
	if schema == "" {
		return nil, errno.New(errno.ErrNoDB, "No database selected; run USE <database> or qualify the table name")
	}
	return s.cat.GetDB(ctx, schema)
}

func (s *Session) dropTable(ctx context.Context, x *ast.DropTableStmt) (*executor.Result, error) {
	if x.IsView {
		return nil, errno.NotSupported("views")
	}
	for _, tn := range x.Tables {
		db, err := s.dbFor(ctx, tn.Schema.O)
		if err != nil {
			var e *errno.Error
			if x.IfExists && errors.As(err, &e) && e.Code == errno.ErrBadDB {
				continue
			}
			return nil, err
		}
		if err := s.cat.DropTable(ctx, db, tn.Name.O, x.IfExists); err != nil {
			return nil, err
		}
	}
	return &executor.Result{}, nil
}

// truncateTable gives the table a new id: the old rows become unreachable
// at once, whatever their number.
func (s *Session) truncateTable(ctx context.Context, x *ast.TruncateTableStmt) (*executor.Result, error) {
	db, err := s.dbFor(ctx, x.Table.Schema.O)
	if err != nil {
		return nil, err
	}
	t, err := s.cat.GetTable(ctx, db, x.Table.Name.O)
	if err != nil {
		return nil, err
	}
	return &executor.Result{}, s.cat.TruncateTable(ctx, db, t)
}
