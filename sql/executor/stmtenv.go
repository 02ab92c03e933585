package executor

import (
	"context"

	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/privilege"
)

// StmtEnv is what the statements other than DML (DDL, SHOW, SPLIT, ADMIN,
// ANALYZE, LOAD DATA, account statements) ask of the session running them, beyond expr.Env:
// who runs them and what that user may see. The session implements it;
// calls come from the session's goroutine only.
type StmtEnv interface {
	expr.Env
	// Account is the session's user and host (expr.Env's User is
	// "user@host").
	Account() (user, host string)
	// CurrentUser is CURRENT_USER(): the account the login matched.
	CurrentUser() string
	// VisibleDB and VisibleTable report whether the user holds any
	// privilege on the database or table (SHOW lists only those).
	VisibleDB(db string) bool
	VisibleTable(db, table string) bool
	// CheckGlobal returns ERROR 1227 unless the user holds privilege p
	// globally; what names it in the message.
	CheckGlobal(p mysql.PrivilegeType, what string) error
	// ClearCurrentDB leaves the session without a current database (its
	// database was dropped).
	ClearCurrentDB()
	// Requester is the session's account as account statements and SHOW
	// GRANTS see it (nil: the session checks no privileges and manages no
	// accounts); skip: checks are skipped (--skip-grant-tables).
	Requester() (r *privilege.Requester, skip bool)
}

// dbFor resolves schema, or env's current database when schema is empty
// (ERROR 1046 when there is none).
func (e *Executor) dbFor(ctx context.Context, env expr.Env, schema string) (*model.DBInfo, error) {
	if schema == "" {
		schema = env.CurrentDB()
	}
	if schema == "" {
		return nil, errno.New(errno.ErrNoDB, "No database selected; run USE <database> or qualify the table name")
	}
	return e.dom.Catalog().GetDB(ctx, schema)
}
