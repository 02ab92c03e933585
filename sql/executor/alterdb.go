package executor

import (
	"context"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/stratadb/strata/sql/collate"
	"github.com/stratadb/strata/sql/ddl"
	"github.com/stratadb/strata/sql/errno"
)

// alterDatabase runs ALTER DATABASE [name] [DEFAULT] CHARACTER SET cs
// [COLLATE c]: the database's default collation, the one tables created
// in it later get (existing tables keep theirs, as in MySQL), as one job.
// Without a name it alters the current database (1046 when none).
func (e *Executor) alterDatabase(ctx context.Context, env StmtEnv, x *ast.AlterDatabaseStmt) (*Result, error) {
	name := x.Name.O
	if x.AlterDefaultDatabase {
		if name = env.CurrentDB(); name == "" {
			return nil, errno.New(errno.ErrNoDB, "No database selected")
		}
	}
	db, err := e.dom.Catalog().GetDB(ctx, name)
	if err != nil {
		return nil, err
	}
	for _, o := range x.Options {
		if o.Tp != ast.DatabaseOptionCharset && o.Tp != ast.DatabaseOptionCollate {
			return nil, errno.NotSupported("this ALTER DATABASE option")
		}
	}
	coll, err := ddl.DatabaseCollation(x.Options)
	if err != nil {
		return nil, err
	}
	info := *db
	info.Collate = coll.Name
	if coll == collate.Default {
		info.Collate = "" // as CREATE DATABASE records the default
	}
	if info.Collate == db.Collate {
		return &Result{}, nil
	}
	err = e.submitDDL(ctx, x, &ddl.Job{Type: ddl.ActionAlterSchema, SchemaID: db.ID, SchemaName: db.Name, DB: &info})
	if err != nil {
		return nil, err
	}
	return &Result{AffectedRows: 1}, nil
}
