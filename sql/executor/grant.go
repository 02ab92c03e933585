package executor

import (
	"context"
	"fmt"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/privilege"
	"github.com/stratadb/strata/sql/types"
)

// ExecuteAccount runs the account statements (CREATE / ALTER / DROP /
// RENAME USER, SET PASSWORD, GRANT, REVOKE, FLUSH PRIVILEGES) through the
// node's privilege manager (package privilege), which checks them against
// env's account and persists them; TiDB's executor/grant.go and simple.go.
// The session commits its open transaction first.
func (e *Executor) ExecuteAccount(ctx context.Context, stmt ast.StmtNode, env StmtEnv) (*Result, error) {
	r, skip := env.Requester()
	if r == nil {
		return nil, errno.NotSupported("account management without a privilege manager")
	}
	m := e.dom.Privileges()
	var err error
	switch x := stmt.(type) {
	case *ast.CreateUserStmt:
		err = m.CreateUser(ctx, r, x)
	case *ast.AlterUserStmt:
		err = m.AlterUser(ctx, r, x)
	case *ast.DropUserStmt:
		err = m.DropUser(ctx, r, x)
	case *ast.RenameUserStmt:
		err = m.RenameUser(ctx, r, x)
	case *ast.SetPwdStmt:
		err = m.SetPassword(ctx, r, x)
	case *ast.GrantStmt:
		err = m.Grant(ctx, r, x, func(db, table string) error {
			d, err := e.dom.Catalog().GetDB(ctx, db)
			if err != nil {
				return err
			}
			_, err = e.dom.Catalog().GetTable(ctx, d, table)
			return err
		})
	case *ast.RevokeStmt:
		err = m.Revoke(ctx, r, x)
	case *ast.FlushStmt:
		if x.Tp != ast.FlushPrivileges {
			return &Result{}, nil // FLUSH TABLES/STATUS/LOGS...: nothing to flush
		}
		if r.User != nil && !r.User.HasGlobal(mysql.ReloadPriv) && !skip {
			return nil, privilege.NeedPrivilege("RELOAD")
		}
		_, err = m.Refresh(ctx)
	default:
		return nil, errno.NotSupported(fmt.Sprintf("%T as an account statement", stmt))
	}
	if err != nil {
		return nil, err
	}
	return &Result{}, nil
}

// showGrants answers SHOW GRANTS [FOR user].
func (e *Executor) showGrants(env StmtEnv, x *ast.ShowStmt) (*Result, error) {
	r, _ := env.Requester()
	if r == nil {
		return nil, errno.NotSupported("SHOW GRANTS without a privilege manager")
	}
	id, lines, err := e.dom.Privileges().ShowGrants(r, x.User)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: []ResultColumn{StringColumn("Grants for "+id.User+"@"+id.Host, 1024)}}
	for _, l := range lines {
		res.Rows = append(res.Rows, []types.Datum{StringRow(l)[0]})
	}
	return res, nil
}
