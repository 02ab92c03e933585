package executor

import (
	"context"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/stratadb/strata/sql/collate"
	"github.com/stratadb/strata/sql/ddl"
	"github.com/stratadb/strata/sql/model"
)

// convertTo returns the CONVERT TO CHARACTER SET option of an ALTER TABLE
// table-option clause, nil when it has none.
func convertTo(sp *ast.AlterTableSpec) *ast.TableOption {
	for _, o := range sp.Options {
		if o.Tp == ast.TableOptionCharset && o.UintValue == ast.TableOptionCharsetWithConvertTo {
			return o
		}
	}
	return nil
}

// convertedColumns resolves ALTER TABLE t CONVERT TO CHARACTER SET cs
// [COLLATE c] (CHARACTER SET DEFAULT: the database's) and returns every
// text column of t as it will be (ddl.ConvertColumn; columns already in
// the collation are left out) and the collation. Errors: 1115 unknown
// character set, 1273 unknown collation, 1253 a collation of another
// character set, and MODIFY COLUMN's for a column that cannot change.
func convertedColumns(db *model.DBInfo, t *model.TableInfo, sp *ast.AlterTableSpec) ([]*model.ColumnInfo, *collate.Collation, error) {
	var cs, coll string
	dflt := false
	for _, o := range sp.Options {
		switch o.Tp {
		case ast.TableOptionCharset:
			cs, dflt = o.StrValue, o.Default
		case ast.TableOptionCollate:
			coll = o.StrValue
		}
	}
	if dflt { // DEFAULT: the database's character set (and collation)
		cs = ddl.DBCollation(db).Charset
		if coll == "" {
			coll = ddl.DBCollation(db).Name
		}
	}
	c, err := ddl.ResolveCollation(cs, coll, ddl.DBCollation(db))
	if err != nil {
		return nil, nil, err
	}
	var out []*model.ColumnInfo
	for _, oc := range t.Columns {
		nc, err := ddl.ConvertColumn(t, oc, c)
		if err != nil {
			return nil, nil, err
		}
		if nc != nil {
			out = append(out, nc)
		}
	}
	return out, c, nil
}

// convertCharset runs ALTER TABLE t CONVERT TO CHARACTER SET cs [COLLATE
// c], as MySQL: every text column takes the collation (a TEXT column may
// widen to hold as many characters), then the table's default does. Each
// column is a MODIFY COLUMN job of its own (online, with F1 states; a
// rewrite of the rows and indexes when the column is indexed, since index
// keys hold collation sort keys), the default an ALTER TABLE options job.
// Every column is checked before the first job; a job that fails on the
// rows (a strict rewrite) leaves the columns before it converted.
func (e *Executor) convertCharset(ctx context.Context, env StmtEnv, stmt *ast.AlterTableStmt, sp *ast.AlterTableSpec, res *Result) error {
	db, t, err := e.alterTarget(ctx, env, stmt.Table)
	if err != nil {
		return err
	}
	changes, c, err := convertedColumns(db, t, sp)
	if err != nil {
		return err
	}
	for _, nc := range changes {
		// Each job sees the table as the previous one left it.
		db, t, err := e.alterTarget(ctx, env, stmt.Table)
		if err != nil {
			return err
		}
		off := t.FindColumn(nc.Name)
		if off < 0 {
			continue // dropped meanwhile
		}
		oc := t.Columns[off]
		nc, err := ddl.ConvertColumn(t, oc, c)
		if err != nil {
			return err
		}
		if nc == nil {
			continue
		}
		if err := e.submitColumnChange(ctx, env, stmt, res, ddl.ActionModifyColumn, db, t, oc, nc, nil); err != nil {
			return err
		}
	}
	if ddl.TableCollation(t).ID == c.ID {
		return nil
	}
	name := c.Name
	return e.submitDDL(ctx, stmt, &ddl.Job{Type: ddl.ActionAlterTableOptions, SchemaID: db.ID, SchemaName: db.Name,
		TableID: t.ID, TableName: t.Name, TableOptions: &ddl.TableOptions{Collate: &name}})
}
