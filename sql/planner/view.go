package planner

import (
	"context"
	"errors"
	"strings"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/model"
)

// Views: a view is a catalog table entry with a ViewInfo (its SELECT as
// SQL text and its column names). A FROM clause naming it plans that
// SELECT as a derived table under the view's name, with names resolving
// in the view's database (not the session's) and without the
// statement's CTEs or outer columns; a definition that no longer plans
// (a table or column gone) is ERROR 1356.

// maxViewDepth bounds views over views (a view made to read itself by
// CREATE OR REPLACE would recurse): ERROR 1462 past it.
const maxViewDepth = 32

// viewEnv resolves unqualified names in the view's database.
type viewEnv struct {
	expr.Env
	db string
}

func (v viewEnv) CurrentDB() string { return v.db }

// Unwrap implements expr.EnvWrapper.
func (v viewEnv) Unwrap() expr.Env { return v.Env }

// CurrentUser forwards CURRENT_USER() to the session.
func (v viewEnv) CurrentUser() string {
	if cu, ok := v.Env.(interface{ CurrentUser() string }); ok {
		return cu.CurrentUser()
	}
	return v.Env.User()
}

// openView plans view t of db under alias.
func (pl *Planner) openView(ctx context.Context, db *model.DBInfo, t *model.TableInfo, alias, aliasO string, env expr.Env) (*Source, error) {
	se, _ := pl.withSubqueries(ctx, env)
	if se.views >= maxViewDepth {
		return nil, errno.New(1462, "`%s`.`%s` contains view recursion", db.Name, t.Name)
	}
	stmts, _, err := parser.New().ParseSQL(t.View.Select)
	if err != nil || len(stmts) != 1 {
		return nil, errno.New(1356, "View '%s.%s' references invalid table(s) or column(s) or function(s) or definer/invoker of view lack rights to use them", db.Name, t.Name)
	}
	child := *se
	child.Env = viewEnv{Env: se.Env, db: db.Name}
	child.scope, child.ctes = nil, nil
	child.views++
	sub, err := pl.PlanQuery(ctx, stmts[0], &child, false)
	if err != nil {
		var e *errno.Error
		if errors.As(err, &e) && (e.Code == errno.ErrNoSuchTable || e.Code == errno.ErrBadField || e.Code == errno.ErrBadDB) {
			return nil, errno.New(1356, "View '%s.%s' references invalid table(s) or column(s) or function(s) or definer/invoker of view lack rights to use them", db.Name, t.Name)
		}
		return nil, err
	}
	var names []ast.CIStr
	for _, c := range t.View.Cols {
		names = append(names, ast.NewCIStr(c))
	}
	if aliasO == "" {
		aliasO = alias
		if alias == strings.ToLower(t.Name) {
			aliasO = t.Name
		}
	}
	s, err := derivedSource(sub, ast.CIStr{O: aliasO, L: alias}, names)
	if err != nil {
		return nil, err
	}
	s.DB = db
	s.View = t
	return s, nil
}
