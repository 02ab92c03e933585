package executor

import (
	"context"
	"strings"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"
	"github.com/stratadb/strata/sql/ddl"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/types"
)

// createView runs CREATE [OR REPLACE] VIEW: the SELECT must plan now
// (1146, 1054 ...), its result columns (or the column list: 1353 on a
// count mismatch, 1060 on duplicates) are the view's, and the view is a
// catalog table entry created by the DDL job queue. OR REPLACE over a
// view drops and re-creates it; over a table it is 1347, and without it
// an existing name is 1050.
func (e *Executor) createView(ctx context.Context, env StmtEnv, x *ast.CreateViewStmt) (*Result, error) {
	db, err := e.dbFor(ctx, env, x.ViewName.Schema.O)
	if err != nil {
		return nil, err
	}
	var sb strings.Builder
	if err := x.Select.Restore(format.NewRestoreCtx(format.DefaultRestoreFlags, &sb)); err != nil {
		return nil, errno.NotSupported("this view definition")
	}
	text := sb.String()
	// Plan the definition as it will be planned: parsed from its text,
	// names in the view's database.
	stmts, _, err := parser.New().ParseSQL(text)
	if err != nil || len(stmts) != 1 {
		return nil, errno.NotSupported("this view definition")
	}
	cols, err := e.QueryColumns(ctx, stmts[0], viewDBEnv{env, db.Name})
	if err != nil {
		return nil, err
	}
	if len(x.Cols) > 0 && len(x.Cols) != len(cols) {
		return nil, errno.New(1353, "In definition of view, derived table or common table expression, SELECT list and column names list have different column counts")
	}
	t := &model.TableInfo{Name: x.ViewName.Name.O, HandleOffset: -1, AutoIncOffset: -1,
		View: &model.ViewInfo{Select: text, Algorithm: strings.ToUpper(x.Algorithm.String()), Security: strings.ToUpper(x.Security.String()),
			Definer: definerText(x, env)}}
	seen := map[string]bool{}
	for i, c := range cols {
		name := c.Name
		if len(x.Cols) > 0 {
			name = x.Cols[i].O
			t.View.Cols = append(t.View.Cols, name)
		}
		if seen[strings.ToLower(name)] {
			return nil, errno.New(errno.ErrDupFieldName, "Duplicate column name '%s'", name)
		}
		seen[strings.ToLower(name)] = true
		ft := c.Type
		t.Columns = append(t.Columns, &model.ColumnInfo{ID: int64(i + 1), Name: name, Type: ft})
	}
	if old, err := e.dom.Catalog().GetTable(ctx, db, t.Name); err == nil {
		if !x.OrReplace {
			return nil, errno.New(errno.ErrTableExists, "Table '%s' already exists", t.Name)
		}
		if !old.IsView() {
			return nil, errno.New(1347, "'%s.%s' is not VIEW", db.Name, old.Name)
		}
		if err := e.submitDDL(ctx, x, &ddl.Job{Type: ddl.ActionDropTable, SchemaID: db.ID, SchemaName: db.Name,
			TableID: old.ID, TableName: old.Name}); err != nil {
			return nil, err
		}
	}
	id, err := e.dom.Store().AllocID(ctx, 1)
	if err != nil {
		return nil, err
	}
	t.ID, t.DBID = int64(id), db.ID
	if err := e.submitDDL(ctx, x, &ddl.Job{Type: ddl.ActionCreateTable, SchemaID: db.ID, SchemaName: db.Name,
		TableID: t.ID, TableName: t.Name, Table: t}); err != nil {
		return nil, err
	}
	return &Result{}, nil
}

// viewDBEnv is the session with the view's database as the current one
// (CURRENT_USER() still the session's: StmtEnv has it).
type viewDBEnv struct {
	StmtEnv
	db string
}

func (v viewDBEnv) CurrentDB() string { return v.db }

func definerText(x *ast.CreateViewStmt, env StmtEnv) string {
	user, host := env.Account()
	if d := x.Definer; d != nil && !d.CurrentUser {
		user, host = d.Username, d.Hostname
	}
	if host == "" {
		host = "%"
	}
	return "`" + user + "`@`" + host + "`"
}

// dropViews runs DROP VIEW: 1051 for a name that is not there (skipped
// with IF EXISTS), 1347 for a table.
func (e *Executor) dropViews(ctx context.Context, env StmtEnv, x *ast.DropTableStmt) (*Result, error) {
	var missing []string
	for _, tn := range x.Tables {
		db, err := e.dbFor(ctx, env, tn.Schema.O)
		if err != nil {
			return nil, err
		}
		t, err := e.dom.Catalog().GetTable(ctx, db, tn.Name.O)
		if err != nil {
			if errno.FromError(err).Code == errno.ErrNoSuchTable {
				missing = append(missing, db.Name+"."+tn.Name.O)
				continue
			}
			return nil, err
		}
		if !t.IsView() {
			return nil, errno.New(1347, "'%s.%s' is not VIEW", db.Name, t.Name)
		}
		if err := e.submitDDL(ctx, x, &ddl.Job{Type: ddl.ActionDropTable, SchemaID: db.ID, SchemaName: db.Name,
			TableID: t.ID, TableName: t.Name, IfExists: x.IfExists}); err != nil {
			return nil, err
		}
	}
	if len(missing) > 0 && !x.IfExists {
		return nil, errno.New(errno.ErrBadTable, "Unknown table '%s'", strings.Join(missing, ","))
	}
	return &Result{}, nil
}

// createViewSQL is SHOW CREATE VIEW's statement.
func createViewSQL(t *model.TableInfo) string {
	v := t.View
	var sb strings.Builder
	sb.WriteString("CREATE ALGORITHM=" + v.Algorithm + " DEFINER=" + v.Definer + " SQL SECURITY " + v.Security + " VIEW `" + t.Name + "`")
	if len(v.Cols) > 0 {
		sb.WriteString(" (")
		for i, c := range v.Cols {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString("`" + c + "`")
		}
		sb.WriteString(")")
	}
	sb.WriteString(" AS " + v.Select)
	return sb.String()
}

// showCreateView is SHOW CREATE VIEW (and SHOW CREATE TABLE of a view).
func showCreateView(t *model.TableInfo) *Result {
	return &Result{Columns: []ResultColumn{StringColumn("View", 64), StringColumn("Create View", 1024), StringColumn("character_set_client", 32), StringColumn("collation_connection", 32)},
		Rows: [][]types.Datum{StringRow(t.Name, createViewSQL(t), "utf8mb4", "utf8mb4_bin")}}
}
