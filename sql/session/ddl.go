package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/catalog"
	"github.com/stratadb/strata/sql/ddl"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/executor"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/types"
)

func (s *Session) createTable(ctx context.Context, x *ast.CreateTableStmt) (*executor.Result, error) {
	switch {
	case x.ReferTable != nil:
		return nil, errno.NotSupported("CREATE TABLE ... LIKE")
	case x.Select != nil:
		return nil, errno.NotSupported("CREATE TABLE ... SELECT")
	case x.Partition != nil:
		return nil, errno.NotSupported("partitioned tables")
	case x.TemporaryKeyword != ast.TemporaryNone:
		return nil, errno.NotSupported("temporary tables")
	}
	db, err := s.dbFor(ctx, x.Table.Schema.O)
	if err != nil {
		return nil, err
	}
	t, err := BuildTableInfo(x, s)
	if err != nil {
		return nil, err
	}
	if _, err := s.cat.GetTable(ctx, db, t.Name); err == nil {
		if x.IfNotExists {
			return &executor.Result{}, nil
		}
		return nil, errno.New(errno.ErrTableExists, "Table '%s' already exists", t.Name)
	}
	id, err := s.dom.Store().AllocID(ctx, 1)
	if err != nil {
		return nil, err
	}
	t.ID, t.DBID = int64(id), db.ID
	err = s.submitDDL(ctx, x, &ddl.Job{Type: ddl.ActionCreateTable, SchemaID: db.ID, SchemaName: db.Name,
		TableID: t.ID, TableName: t.Name, Table: t, IfNotExists: x.IfNotExists})
	if err != nil {
		return nil, err
	}
	for _, o := range x.Options {
		// AUTO_INCREMENT=N: the first automatic value is N (the table is
		// new, so the stored bound is raised to N-1 before any insert).
		if o.Tp == ast.TableOptionAutoIncrement && o.UintValue > 1 && t.AutoIncOffset >= 0 {
			if err := s.dom.AutoInc().Rebase(ctx, t.ID, int64(min(o.UintValue-1, 1<<62))); err != nil {
				return nil, err
			}
		}
	}
	return &executor.Result{}, nil
}

// submitDDL runs job through the cluster's DDL job queue (package ddl) and
// waits for it to end.
func (s *Session) submitDDL(ctx context.Context, stmt ast.StmtNode, job *ddl.Job) error {
	job.Query = stmt.Text()
	return s.dom.DDL().Submit(ctx, job)
}

func (s *Session) createDatabase(ctx context.Context, x *ast.CreateDatabaseStmt) (*executor.Result, error) {
	if err := catalog.CheckDBName(x.Name.O); err != nil {
		return nil, err
	}
	if _, err := s.cat.GetDB(ctx, x.Name.O); err == nil {
		if x.IfNotExists {
			return &executor.Result{AffectedRows: 1}, nil
		}
		return nil, errno.New(errno.ErrDBCreateExists, "Can't create database '%s'; database exists", x.Name.O)
	}
	id, err := s.dom.Store().AllocID(ctx, 1)
	if err != nil {
		return nil, err
	}
	err = s.submitDDL(ctx, x, &ddl.Job{Type: ddl.ActionCreateSchema, SchemaID: int64(id), SchemaName: x.Name.O,
		DB: &catalog.DBInfo{ID: int64(id), Name: x.Name.O}, IfNotExists: x.IfNotExists})
	if err != nil {
		return nil, err
	}
	return &executor.Result{AffectedRows: 1}, nil
}

func (s *Session) dropDatabase(ctx context.Context, x *ast.DropDatabaseStmt) (*executor.Result, error) {
	db, err := s.cat.GetDB(ctx, x.Name.O)
	if err != nil {
		if errno.FromError(err).Code == errno.ErrBadDB {
			if x.IfExists {
				return &executor.Result{}, nil
			}
			return nil, errno.New(errno.ErrDBDropExists, "Can't drop database '%s'; database doesn't exist", x.Name.O)
		}
		return nil, err
	}
	err = s.submitDDL(ctx, x, &ddl.Job{Type: ddl.ActionDropSchema, SchemaID: db.ID, SchemaName: db.Name, IfExists: x.IfExists})
	if err != nil {
		return nil, err
	}
	if strings.EqualFold(s.db, x.Name.O) {
		s.db = ""
	}
	return &executor.Result{}, nil
}

// dropTable drops each table in its own job; it returns once no SQL node
// writes under the dropped ids any more.
func (s *Session) dropTable(ctx context.Context, x *ast.DropTableStmt) (*executor.Result, error) {
	if x.IsView {
		return s.dropViews(ctx, x)
	}
	for _, tn := range x.Tables {
		db, err := s.dbFor(ctx, tn.Schema.O)
		if err != nil {
			if x.IfExists && errno.FromError(err).Code == errno.ErrBadDB {
				continue
			}
			return nil, err
		}
		t, err := s.cat.GetTable(ctx, db, tn.Name.O)
		if err != nil {
			if errno.FromError(err).Code == errno.ErrNoSuchTable {
				if x.IfExists {
					continue
				}
				return nil, errno.New(errno.ErrBadTable, "Unknown table '%s.%s'", db.Name, tn.Name.O)
			}
			return nil, err
		}
		if t.IsView() { // DROP TABLE does not drop views (MySQL)
			if x.IfExists {
				continue
			}
			return nil, errno.New(errno.ErrBadTable, "Unknown table '%s.%s'", db.Name, tn.Name.O)
		}
		err = s.submitDDL(ctx, x, &ddl.Job{Type: ddl.ActionDropTable, SchemaID: db.ID, SchemaName: db.Name,
			TableID: t.ID, TableName: t.Name, IfExists: x.IfExists})
		if err != nil {
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
	if t.IsView() {
		return nil, errno.New(errno.ErrNoSuchTable, "Table '%s.%s' doesn't exist", db.Name, t.Name)
	}
	id, err := s.dom.Store().AllocID(ctx, 1)
	if err != nil {
		return nil, err
	}
	return &executor.Result{}, s.submitDDL(ctx, x, &ddl.Job{Type: ddl.ActionTruncateTable, SchemaID: db.ID, SchemaName: db.Name,
		TableID: t.ID, TableName: t.Name, NewTableID: int64(id)})
}

// adminShowDDL answers ADMIN SHOW DDL: the schema version, the owner and
// the running jobs, with TiDB's columns.
func (s *Session) adminShowDDL(ctx context.Context) (*executor.Result, error) {
	o, _, err := s.dom.DDL().Owner(ctx)
	if err != nil {
		return nil, err
	}
	running, _, err := s.dom.DDL().Jobs(ctx, 0)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(running))
	for i, j := range running {
		ids[i] = fmt.Sprintf("ID:%d, Type:%s, State:%s, SchemaState:%s, SchemaID:%d, TableID:%d, RowCount:%d", j.ID, j.Type, j.State, j.SchemaState, j.SchemaID, j.TableID, j.RowCount)
	}
	res := &executor.Result{Columns: []executor.ResultColumn{
		{Name: "SCHEMA_VER", OrgName: "SCHEMA_VER", Type: types.Int64Type}, strCol("OWNER_ID", 64), strCol("OWNER_ADDRESS", 64),
		strCol("RUNNING_JOBS", 1024), strCol("SELF_ID", 64), strCol("QUERY", 1024),
	}}
	query := ""
	if len(running) > 0 {
		query = running[0].Query
	}
	res.Rows = append(res.Rows, []types.Datum{types.NewInt(s.cat.Version()), types.NewString(o.NodeID), types.NewString(o.Addr),
		types.NewString(strings.Join(ids, "\n")), types.NewString(s.dom.DDL().NodeID()), types.NewString(query)})
	return res, nil
}

// adminShowDDLJobs answers ADMIN SHOW DDL JOBS [n] [WHERE ...]: the queued
// jobs, then the last n (10) ended ones, newest first, in TiDB's columns.
func (s *Session) adminShowDDLJobs(ctx context.Context, x *ast.AdminStmt) (*executor.Result, error) {
	n := 10
	if x.JobNumber > 0 {
		n = int(x.JobNumber)
	}
	running, history, err := s.dom.DDL().Jobs(ctx, n)
	if err != nil {
		return nil, err
	}
	intCol := func(name string) executor.ResultColumn {
		return executor.ResultColumn{Name: name, OrgName: name, Type: types.Int64Type}
	}
	res := &executor.Result{Columns: []executor.ResultColumn{
		intCol("JOB_ID"), strCol("DB_NAME", 64), strCol("TABLE_NAME", 64), strCol("JOB_TYPE", 64), strCol("SCHEMA_STATE", 64),
		intCol("SCHEMA_ID"), intCol("TABLE_ID"), intCol("ROW_COUNT"), strCol("CREATE_TIME", 19), strCol("START_TIME", 19),
		strCol("END_TIME", 19), strCol("STATE", 64),
	}}
	at := func(ms int64) types.Datum {
		if ms == 0 {
			return types.NullDatum
		}
		return types.NewString(time.UnixMilli(ms).Format(time.DateTime))
	}
	for i := len(running) - 1; i >= 0; i-- { // newest first, as TiDB
		history = append([]*ddl.Job{running[i]}, history...)
	}
	for _, j := range history {
		res.Rows = append(res.Rows, []types.Datum{
			types.NewInt(j.ID), types.NewString(j.SchemaName), types.NewString(j.TableName), types.NewString(string(j.Type)),
			types.NewString(j.SchemaState), types.NewInt(j.SchemaID), types.NewInt(j.TableID), types.NewInt(j.RowCount),
			at(j.CreateMs), at(j.StartMs), at(j.EndMs), types.NewString(string(j.State)),
		})
	}
	if x.Where != nil {
		return filterShow(res, &ast.ShowStmt{Where: x.Where}, s)
	}
	return res, nil
}

// adminCancelDDLJobs answers ADMIN CANCEL DDL JOBS id, ...: one row per
// job, "successful" or the error (8224 not found, 8225 finished, 8226 too
// late), as TiDB. It needs SUPER.
func (s *Session) adminCancelDDLJobs(ctx context.Context, x *ast.AdminStmt) (*executor.Result, error) {
	if err := s.CheckGlobal(mysql.SuperPriv, "SUPER"); err != nil {
		return nil, err
	}
	res := &executor.Result{Columns: []executor.ResultColumn{
		{Name: "JOB_ID", OrgName: "JOB_ID", Type: types.Int64Type}, strCol("RESULT", 128),
	}}
	for _, id := range x.JobIDs {
		msg := "successful"
		if err := s.dom.DDL().Cancel(ctx, id); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			e := errno.FromError(err)
			msg = fmt.Sprintf("error: [%d]%s", e.Code, e.Msg)
		}
		res.Rows = append(res.Rows, []types.Datum{types.NewInt(id), types.NewString(msg)})
	}
	return res, nil
}

// BuildTableInfo validates a CREATE TABLE and converts it to a TableInfo
// (without an id).
func BuildTableInfo(x *ast.CreateTableStmt, env expr.Env) (*catalog.TableInfo, error) {
	t := &catalog.TableInfo{Name: x.Table.Name.O, HandleOffset: -1, AutoIncOffset: -1}
	if len(x.Cols) == 0 {
		return nil, errno.New(errno.ErrTableMustHaveCols, "A table must have at least 1 column")
	}
	if len(t.Name) > 64 {
		return nil, errno.New(1103, "Incorrect table name '%s'", t.Name)
	}
	// pkParts is the PRIMARY KEY, from a column option or a constraint.
	var pkParts []*ast.IndexPartSpecification
	setPK := func(parts []*ast.IndexPartSpecification) error {
		if pkParts != nil {
			return errno.New(errno.ErrMultiplePriKey, "Multiple primary key defined")
		}
		pkParts = parts
		return nil
	}
	nullable := map[int]bool{} // columns declared NULL explicitly
	names := map[string]bool{}
	var uniqCols []string // columns declared UNIQUE
	for i, cd := range x.Cols {
		name := cd.Name.Name.O
		if names[strings.ToLower(name)] {
			return nil, errno.New(errno.ErrDupFieldName, "Duplicate column name '%s'", name)
		}
		if strings.EqualFold(name, catalog.HandleColumnName) {
			return nil, errno.New(errno.ErrWrongFieldSpec, "Incorrect column name '%s': the name is reserved for the hidden row handle", name)
		}
		names[strings.ToLower(name)] = true
		ft, err := types.FromAST(cd.Tp)
		if errors.Is(err, types.ErrBitWidth) {
			return nil, errno.New(errno.ErrTooBigDisplayWidth, "Display width out of range for column '%s' (max = 64)", name)
		}
		if err != nil {
			return nil, errno.NotSupported(err.Error())
		}
		c := &catalog.ColumnInfo{ID: int64(i + 1), Name: name, Offset: i, Type: ft}
		var defExpr ast.ExprNode
		for _, o := range cd.Options {
			switch o.Tp {
			case ast.ColumnOptionPrimaryKey:
				if err := setPK([]*ast.IndexPartSpecification{{Column: cd.Name}}); err != nil {
					return nil, err
				}
			case ast.ColumnOptionNotNull:
				c.Type.Flag |= mysql.NotNullFlag
				delete(nullable, i)
			case ast.ColumnOptionNull:
				c.Type.Flag &^= mysql.NotNullFlag
				nullable[i] = true
			case ast.ColumnOptionAutoIncrement:
				if c.Type.Class() != types.ClassInt && c.Type.Class() != types.ClassFloat {
					return nil, errno.New(errno.ErrWrongFieldSpec, "Incorrect column specifier for column '%s'", name)
				}
				if t.AutoIncOffset >= 0 {
					return nil, errno.New(errno.ErrWrongAutoKey, "Incorrect table definition; there can be only one auto column and it must be defined as a key")
				}
				c.AutoIncrement = true
				c.Type.Flag |= mysql.AutoIncrementFlag
				t.AutoIncOffset = i
			case ast.ColumnOptionDefaultValue:
				defExpr = o.Expr
			case ast.ColumnOptionUniqKey:
				uniqCols = append(uniqCols, name)
			case ast.ColumnOptionComment, ast.ColumnOptionCollate, ast.ColumnOptionColumnFormat, ast.ColumnOptionStorage, ast.ColumnOptionReference, ast.ColumnOptionNoOption:
				// No effect on storage or semantics Strata implements.
			case ast.ColumnOptionOnUpdate:
				return nil, errno.NotSupported("ON UPDATE CURRENT_TIMESTAMP")
			case ast.ColumnOptionGenerated:
				return nil, errno.NotSupported("generated columns")
			case ast.ColumnOptionCheck:
				return nil, errno.NotSupported("CHECK constraints")
			default:
				return nil, errno.NotSupported("this column option")
			}
		}
		if defExpr != nil {
			if err := setDefault(c, defExpr, env); err != nil {
				return nil, err
			}
		}
		t.Columns = append(t.Columns, c)
	}
	t.Init() // name lookups for the constraints; Init runs again below
	for _, con := range x.Constraints {
		switch con.Tp {
		case ast.ConstraintPrimaryKey:
			if err := setPK(con.Keys); err != nil {
				return nil, err
			}
		case ast.ConstraintCheck:
			return nil, errno.NotSupported("CHECK constraints")
		case ast.ConstraintForeignKey:
			return nil, errno.NotSupported("FOREIGN KEY")
		case ast.ConstraintIndex, ast.ConstraintKey, ast.ConstraintUniq, ast.ConstraintUniqKey, ast.ConstraintUniqIndex:
			unique := con.Tp == ast.ConstraintUniq || con.Tp == ast.ConstraintUniqKey || con.Tp == ast.ConstraintUniqIndex
			if err := addIndexInfo(t, con.Name, con.Keys, unique, con.Option); err != nil {
				return nil, err
			}
		case ast.ConstraintFulltext, ast.ConstraintVector, ast.ConstraintColumnar:
			return nil, errno.NotSupported("FULLTEXT / VECTOR / COLUMNAR indexes")
		default:
			return nil, errno.NotSupported("this table constraint")
		}
	}
	for _, c := range uniqCols {
		spec := []*ast.IndexPartSpecification{{Column: &ast.ColumnName{Name: ast.NewCIStr(c)}}}
		if err := addIndexInfo(t, "", spec, true, nil); err != nil {
			return nil, err
		}
	}
	if pkParts != nil {
		if err := setPrimaryKey(t, pkParts, nullable); err != nil {
			return nil, err
		}
	}
	if t.AutoIncOffset >= 0 && !isKeyPrefix(t, t.AutoIncOffset) {
		return nil, errno.New(errno.ErrWrongAutoKey, "Incorrect table definition; there can be only one auto column and it must be defined as a key")
	}
	for _, o := range x.Options {
		if o.Tp == ast.TableOptionComment {
			t.Comment = o.StrValue
		}
	}
	t.Init()
	return t, nil
}

// setPrimaryKey makes parts t's PRIMARY KEY. With TiDB's default
// tidb_enable_clustered_index=INT_ONLY a single integer column is the row
// handle (clustered); any other key is NONCLUSTERED: a unique index named
// PRIMARY, rows keeping a hidden _tidb_rowid handle. Every key column
// becomes NOT NULL (1171 when declared NULL, as MySQL).
func setPrimaryKey(t *catalog.TableInfo, parts []*ast.IndexPartSpecification, nullable map[int]bool) error {
	offs := make([]int, len(parts))
	for i, p := range parts {
		if p.Expr != nil || p.Column == nil {
			return errno.NotSupported("expression indexes")
		}
		off := t.FindColumn(p.Column.Name.O)
		if off < 0 {
			return errno.New(errKeyColumnNotExist, "Key column '%s' doesn't exist in table", p.Column.Name.O)
		}
		c := t.Columns[off]
		if nullable[off] {
			return errno.New(errPrimaryCantHaveNull, "All parts of a PRIMARY KEY must be NOT NULL; if you need NULL in a key, use UNIQUE instead")
		}
		if c.HasDefault && c.DefaultNull {
			return errno.New(errno.ErrInvalidDefault, "Invalid default value for '%s'", c.Name)
		}
		offs[i] = off
	}
	if len(offs) == 1 && t.Columns[offs[0]].Type.Class() == types.ClassInt && parts[0].Length <= 0 {
		c := t.Columns[offs[0]]
		c.Type.Flag |= mysql.PriKeyFlag | mysql.NotNullFlag
		t.PKIsHandle, t.HandleOffset = true, offs[0]
		return nil
	}
	ix, err := newIndexInfo(t, "", parts, true, nil)
	if err != nil {
		return err
	}
	for _, off := range offs {
		t.Columns[off].Type.Flag |= mysql.PriKeyFlag | mysql.NotNullFlag
	}
	ix.Name, ix.Primary = "PRIMARY", true
	t.MaxIndexID++
	ix.ID = t.MaxIndexID
	// First, as MySQL lists it in SHOW INDEX and SHOW CREATE TABLE.
	t.Indices = append([]*catalog.IndexInfo{ix}, t.Indices...)
	return nil
}

// isKeyPrefix reports whether column off is the row handle or the first
// column of an index: MySQL's condition for an AUTO_INCREMENT column.
func isKeyPrefix(t *catalog.TableInfo, off int) bool {
	if t.PKIsHandle && t.HandleOffset == off {
		return true
	}
	for _, ix := range t.Indices {
		if ix.Columns[0].Offset == off {
			return true
		}
	}
	return false
}

func setDefault(c *catalog.ColumnInfo, n ast.ExprNode, env expr.Env) error {
	invalid := errno.New(errno.ErrInvalidDefault, "Invalid default value for '%s'", c.Name)
	if f, ok := n.(*ast.FuncCallExpr); ok {
		switch f.FnName.L {
		case "current_timestamp", "now", "localtime", "localtimestamp":
			if c.Type.Class() != types.ClassTime || c.Type.Tp == mysql.TypeDate {
				return invalid
			}
			c.HasDefault, c.DefaultNow = true, true
			return nil
		}
	}
	e, err := expr.Compile(n, &expr.Ctx{Env: env})
	if err != nil {
		return invalid
	}
	v, err := e.Eval(nil)
	if err != nil {
		return invalid
	}
	c.HasDefault = true
	if v.IsNull() {
		if c.Type.NotNull() {
			return invalid
		}
		c.DefaultNull = true
		return nil
	}
	if c.AutoIncrement {
		return invalid
	}
	d, err := c.Type.Convert(v)
	if err != nil {
		return invalid
	}
	if c.Type.Class() == types.ClassFloat {
		c.Default = string(types.AppendFloat(nil, d.Float64(), 64))
	} else if c.Type.Tp == mysql.TypeBit {
		c.Default = string(types.AppendText(nil, d, &c.Type)) // its bytes, read back by Convert
	} else {
		c.Default = string(types.AppendText(nil, d, nil))
	}
	return nil
}
