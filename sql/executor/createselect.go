package executor

import (
	"context"
	"fmt"
	"strings"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/collate"
	"github.com/stratadb/strata/sql/ddl"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/types"
)

// CreateTableSelect runs CREATE TABLE t [(declared columns and keys)]
// [IGNORE | REPLACE] [AS] SELECT ..., as MySQL 8 does: the table's
// columns are the declared ones, then the SELECT's result columns not
// declared (a result column named as a declared one fills it), typed as
// the SELECT's (type, length, nullability, charset and collation; no
// default); the rows are then inserted by insert, which must run and
// commit ins in a transaction of its own (TiDB's order: the DDL job
// creates the table, the session fills it). IGNORE skips and REPLACE
// replaces the rows a unique key meets; without either a duplicate is
// 1062. When the SELECT or an insert fails the table is dropped again,
// so the statement leaves no table behind, as MySQL 8's atomic DDL does.
// IF NOT EXISTS on an existing table is note 1050 and inserts nothing
// (MySQL 8); a TEMPORARY table is not supported.
func (e *Executor) CreateTableSelect(ctx context.Context, x *ast.CreateTableStmt, env StmtEnv,
	insert func(context.Context, *ast.InsertStmt) (*Result, error)) (*Result, error) {
	if err := unsupportedTable(x); err != nil {
		return nil, err
	}
	db, err := e.dbFor(ctx, env, x.Table.Schema.O)
	if err != nil {
		return nil, err
	}
	if _, err := e.dom.Catalog().GetTable(ctx, db, x.Table.Name.O); err == nil {
		if x.IfNotExists {
			return tableExistsNote(x.Table.Name.O), nil
		}
		return nil, errno.New(errno.ErrTableExists, "Table '%s' already exists", x.Table.Name.O)
	}
	// The SELECT plans before the table exists: one reading the table
	// being created fails here (1146), as in MySQL.
	cols, err := e.QueryColumns(ctx, x.Select, env)
	if err != nil {
		return nil, err
	}
	def := *x
	def.Select = nil
	def.Cols = append([]*ast.ColumnDef(nil), x.Cols...)
	declared := map[string]bool{}
	for _, cd := range x.Cols {
		declared[cd.Name.Name.L] = true
	}
	var names []*ast.ColumnName
	var added []string
	seen := map[string]bool{}
	for _, c := range cols {
		l := strings.ToLower(c.Name)
		if seen[l] {
			return nil, errno.New(errno.ErrDupFieldName, "Duplicate column name '%s'", c.Name)
		}
		seen[l] = true
		names = append(names, &ast.ColumnName{Name: ast.NewCIStr(c.Name)})
		if !declared[l] {
			added = append(added, selectColumnDef(c))
		}
	}
	if len(added) > 0 {
		st, err := parser.New().ParseOneStmt("CREATE TABLE t ("+strings.Join(added, ", ")+")", "", "")
		if err != nil {
			return nil, fmt.Errorf("create table ... select: column definitions: %w", err)
		}
		def.Cols = append(def.Cols, st.(*ast.CreateTableStmt).Cols...)
	}
	res, err := e.createTable(ctx, env, &def)
	if err != nil {
		return nil, err
	}
	ins := &ast.InsertStmt{
		Table:     &ast.TableRefsClause{TableRefs: &ast.Join{Left: &ast.TableSource{Source: &ast.TableName{Schema: ast.NewCIStr(db.Name), Name: x.Table.Name}}}},
		Columns:   names,
		Select:    x.Select,
		IgnoreErr: x.OnDuplicate == ast.OnDuplicateKeyHandlingIgnore,
		IsReplace: x.OnDuplicate == ast.OnDuplicateKeyHandlingReplace,
	}
	ires, err := insert(ctx, ins)
	if err != nil {
		t, gerr := e.dom.Catalog().GetTable(ctx, db, x.Table.Name.O)
		if gerr == nil {
			drop := &ast.DropTableStmt{Tables: []*ast.TableName{ins.Table.TableRefs.Left.(*ast.TableSource).Source.(*ast.TableName)}}
			drop.SetText(nil, "DROP TABLE `"+db.Name+"`.`"+t.Name+"`")
			if derr := e.submitDDL(context.WithoutCancel(ctx), drop, &ddl.Job{Type: ddl.ActionDropTable, SchemaID: db.ID,
				SchemaName: db.Name, TableID: t.ID, TableName: t.Name}); derr != nil {
				return nil, fmt.Errorf("%w (and dropping the table it created failed: %v)", err, derr)
			}
		}
		return nil, err
	}
	res.AffectedRows = ires.AffectedRows
	res.Warnings = append(res.Warnings, ires.Warnings...)
	res.Info = ires.Info
	if res.Info == "" {
		res.Info = fmt.Sprintf("Records: %d  Duplicates: 0  Warnings: %d", ires.AffectedRows, len(res.Warnings))
	}
	return res, nil
}

// tableExistsNote is CREATE TABLE IF NOT EXISTS's answer for an existing
// table: note 1050, as MySQL 8 gives.
func tableExistsNote(name string) *Result {
	return &Result{Warnings: []Warning{{Level: "Note", Code: errno.ErrTableExists, Msg: fmt.Sprintf("Table '%s' already exists", name)}}}
}

// selectColumnDef is the column definition CREATE TABLE ... SELECT gives
// result column c, as MySQL derives it: c's type (an expression's string
// longer than 512 characters a TEXT / BLOB, as MySQL's
// CONVERT_IF_BIGGER_TO_BLOB; a NULL literal BINARY(0)), charset and
// collation, and NOT NULL when c cannot be NULL.
func selectColumnDef(c ResultColumn) string {
	ft := c.Type
	name := "`" + strings.ReplaceAll(c.Name, "`", "``") + "` "
	var typ string
	switch {
	case ft.Tp == mysql.TypeNull:
		typ = "binary(0)"
	case ft.Class() == types.ClassString && ft.Tp != mysql.TypeJSON && ft.Tp != mysql.TypeEnum && ft.Tp != mysql.TypeSet &&
		(ft.Flen < 0 || (c.OrgName == "" && ft.Flen > 512 && !isBlob(ft.Tp))):
		typ = textFor(ft)
	case ft.Tp == mysql.TypeNewDecimal && ft.Flen <= 0:
		typ = fmt.Sprintf("decimal(65,%d)", min(max(ft.Decimal, 0), 30))
	default:
		typ = ft.SQLName()
	}
	if ft.Class() == types.ClassString && !ft.Binary() && ft.Tp != mysql.TypeJSON {
		if co := collate.ByID(ft.Collation()); co != nil {
			typ += " CHARACTER SET " + co.Charset + " COLLATE " + co.Name
		}
	}
	if ft.NotNull() {
		typ += " NOT NULL"
	}
	return name + typ
}

func isBlob(tp byte) bool {
	return tp == mysql.TypeBlob || tp == mysql.TypeTinyBlob || tp == mysql.TypeMediumBlob || tp == mysql.TypeLongBlob
}

// textFor is the TEXT (BLOB for a binary string) type that holds ft's
// length, as MySQL picks it (up to 4 bytes a character).
func textFor(ft types.FieldType) string {
	kind := "text"
	if ft.Binary() {
		kind = "blob"
	}
	bytes := ft.Flen * 4
	if ft.Binary() {
		bytes = ft.Flen
	}
	switch {
	case ft.Flen < 0 || bytes > 16<<20-1:
		return "long" + kind
	case bytes > 65535:
		return "medium" + kind
	}
	return kind
}
