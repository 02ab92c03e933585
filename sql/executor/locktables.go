package executor

import (
	"context"
	"fmt"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/stratadb/strata/sql/errno"
)

// lockTablesIgnored is the warning LOCK TABLES and UNLOCK TABLES raise.
// Strata has no table locks; TiDB, with its table locks disabled (the
// default), accepts both statements with a 1235 warning in the same way,
// so that mysqldump and the applications that send them keep working.
const lockTablesIgnored = "%s is accepted and ignored: Strata has no table locks; use a transaction (mysqldump --single-transaction, SELECT ... FOR UPDATE) to hold rows still"

// LockTables runs LOCK TABLES: every named table must exist (ERROR 1146
// otherwise, as in MySQL), then the statement succeeds with a warning and
// locks nothing. The session commits its open transaction first, as
// MySQL's LOCK TABLES does.
func (e *Executor) LockTables(ctx context.Context, x *ast.LockTablesStmt, env StmtEnv) (*Result, error) {
	for _, tl := range x.TableLocks {
		db, err := e.dbFor(ctx, env, tl.Table.Schema.O)
		if err != nil {
			return nil, err
		}
		if _, err := e.dom.Catalog().GetTable(ctx, db, tl.Table.Name.O); err != nil {
			return nil, err
		}
	}
	res := &Result{}
	res.Warn(errno.ErrNotSupportedYet, fmt.Sprintf(lockTablesIgnored, "LOCK TABLES"))
	return res, nil
}

// UnlockTables runs UNLOCK TABLES: there is nothing to release; it warns
// as LockTables does.
func (e *Executor) UnlockTables() *Result {
	res := &Result{}
	res.Warn(errno.ErrNotSupportedYet, fmt.Sprintf(lockTablesIgnored, "UNLOCK TABLES"))
	return res
}
