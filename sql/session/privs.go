package session

import (
	"context"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/executor"
	"github.com/stratadb/strata/sql/privilege"
)

// Privilege checks happen here, at statement dispatch, before the statement
// runs: the session resolves its account in the node's current privilege
// snapshot (once per snapshot version) and tests the privileges each table
// reference needs. An account whose global privileges cover the statement
// passes without walking it.

// sessPrivs is the session's privilege state.
type sessPrivs struct {
	mgr  *privilege.Manager
	id   privilege.Ident
	snap *privilege.Snapshot
	user *privilege.User // nil: the account no longer exists
}

// SetPrivileges makes the session check its statements against account id
// (the account the login matched) in its domain's privilege manager.
// Without it nothing is checked and account statements are refused.
func (s *Session) SetPrivileges(id privilege.Ident) {
	s.privs = sessPrivs{mgr: s.dom.Privileges(), id: id}
}

// CurrentUser implements CURRENT_USER(): the account the login matched.
func (s *Session) CurrentUser() string {
	if s.privs.mgr == nil {
		return s.User()
	}
	return s.privs.id.User + "@" + s.privs.id.Host
}

// account returns the session's account in the current snapshot (nil:
// dropped) and whether checks are skipped (no manager, or
// --skip-grant-tables).
func (s *Session) account() (u *privilege.User, skip bool) {
	p := &s.privs
	if p.mgr == nil {
		return nil, true
	}
	snap := p.mgr.Snapshot()
	if snap == nil {
		return nil, false
	}
	if snap.Skip() {
		return nil, true
	}
	if snap != p.snap {
		p.snap, p.user = snap, snap.Lookup(p.id)
	}
	return p.user, false
}

// Requester implements executor.StmtEnv.
func (s *Session) Requester() (r *privilege.Requester, skip bool) {
	if s.privs.mgr == nil {
		return nil, true
	}
	u, skip := s.account()
	if skip {
		u = privilege.SkipGrantsUser
	}
	return &privilege.Requester{User: u, LoginUser: s.user, ClientHost: s.host, CurrentDB: s.db}, skip
}

// stmtCover is the privileges that, held globally, cover every check of a
// statement of this kind (0: the statement needs no table privilege or is
// checked by its own code).
func stmtCover(stmt ast.StmtNode) mysql.PrivilegeType {
	switch x := stmt.(type) {
	case *ast.SelectStmt, *ast.SetOprStmt:
		return mysql.SelectPriv
	case *ast.InsertStmt:
		p := mysql.InsertPriv | mysql.SelectPriv
		if x.IsReplace {
			p |= mysql.DeletePriv
		}
		if len(x.OnDuplicate) > 0 {
			p |= mysql.UpdatePriv
		}
		return p
	case *ast.UpdateStmt:
		return mysql.UpdatePriv | mysql.SelectPriv
	case *ast.DeleteStmt:
		return mysql.DeletePriv | mysql.SelectPriv
	case *ast.CreateDatabaseStmt, *ast.CreateTableStmt, *ast.CreateViewStmt:
		return mysql.CreatePriv
	case *ast.DropDatabaseStmt, *ast.DropTableStmt, *ast.TruncateTableStmt:
		return mysql.DropPriv
	case *ast.AlterDatabaseStmt:
		return mysql.AlterPriv
	case *ast.CreateIndexStmt, *ast.DropIndexStmt:
		return mysql.IndexPriv
	case *ast.AlterTableStmt:
		return mysql.AlterPriv | mysql.IndexPriv
	case *ast.RenameTableStmt: // MySQL: ALTER and DROP on the old, CREATE and INSERT on the new
		return mysql.AlterPriv | mysql.DropPriv | mysql.CreatePriv | mysql.InsertPriv
	case *ast.AdminStmt, *ChecksumTableStmt:
		return mysql.SelectPriv
	case *ast.LockTablesStmt: // MySQL: LOCK TABLES and SELECT on each table
		return mysql.LockTablesPriv | mysql.SelectPriv
	case *ast.SplitRegionStmt: // as TiDB
		return mysql.InsertPriv
	case *ast.ExplainStmt:
		return mysql.SelectPriv
	case *ast.SetStmt:
		for _, v := range x.Variables {
			if v.IsSystem && v.IsGlobal {
				return mysql.SuperPriv
			}
		}
	}
	return 0
}

// checkedExecute runs stmt after its privilege check (and, first, the
// resolution of its row alias when the last Parse found one: rowalias.go).
func (s *Session) checkedExecute(ctx context.Context, stmt ast.StmtNode) (*executor.Result, error) {
	if ins, ok := stmt.(*ast.InsertStmt); ok && s.rowAliases[ins] != nil {
		ra := s.rowAliases[ins]
		delete(s.rowAliases, ins)
		if err := s.resolveRowAlias(ctx, ins, ra); err != nil {
			return nil, err
		}
	}
	if s.privs.mgr != nil {
		if err := s.checkPrivileges(ctx, stmt); err != nil {
			return nil, err
		}
	}
	return s.execute(ctx, stmt)
}

// checkPrivileges fails a statement the session's account may not run.
func (s *Session) checkPrivileges(ctx context.Context, stmt ast.StmtNode) error {
	u, skip := s.account()
	if skip {
		return nil
	}
	if u == nil {
		if s.privs.snap == nil { // not loaded yet: load now
			if _, err := s.privs.mgr.Refresh(ctx); err != nil {
				return err
			}
			if u, skip = s.account(); skip {
				return nil
			}
		}
		if u == nil {
			u = privilege.NoPrivileges // the account was dropped
		}
	}
	cover := stmtCover(stmt)
	if cover == 0 || u.HasGlobal(cover) {
		return nil
	}
	var c refCollector
	c.db = s.db
	switch x := stmt.(type) {
	case *ast.SetStmt:
		return privilege.NeedPrivilege("SUPER or SYSTEM_VARIABLES_ADMIN")
	case *ast.CreateDatabaseStmt:
		return s.needDB(u, x.Name.O, mysql.CreatePriv)
	case *ast.DropDatabaseStmt:
		return s.needDB(u, x.Name.O, mysql.DropPriv)
	case *ast.AlterDatabaseStmt:
		name := x.Name.O
		if x.AlterDefaultDatabase {
			name = s.db
		}
		return s.needDB(u, name, mysql.AlterPriv)
	case *ast.CreateTableStmt:
		c.target(x.Table, mysql.CreatePriv)
		if x.ReferTable != nil {
			c.target(x.ReferTable, mysql.SelectPriv)
		}
	case *ast.DropTableStmt:
		for _, t := range x.Tables {
			c.target(t, mysql.DropPriv)
		}
	case *ast.CreateViewStmt: // the view's SELECT reads are found below
		c.target(x.ViewName, mysql.CreatePriv)
	case *ast.TruncateTableStmt:
		c.target(x.Table, mysql.DropPriv)
	case *ast.SplitRegionStmt:
		c.target(x.Table, mysql.InsertPriv)
	case *ChecksumTableStmt:
		for _, t := range x.Tables {
			c.target(t, mysql.SelectPriv)
		}
	case *ast.LockTablesStmt:
		for _, tl := range x.TableLocks {
			c.target(tl.Table, mysql.LockTablesPriv|mysql.SelectPriv)
		}
	case *ast.AnalyzeTableStmt: // TiDB: SELECT and INSERT on each table
		for _, t := range x.TableNames {
			c.target(t, mysql.SelectPriv|mysql.InsertPriv)
		}
	case *ast.CreateIndexStmt:
		c.target(x.Table, mysql.IndexPriv)
	case *ast.DropIndexStmt:
		c.target(x.Table, mysql.IndexPriv)
	case *ast.AlterTableStmt:
		p := mysql.AlterPriv
		for _, spec := range x.Specs {
			if spec.Tp == ast.AlterTableAddConstraint || spec.Tp == ast.AlterTableDropIndex {
				p |= mysql.IndexPriv
			}
		}
		c.target(x.Table, p)
		for _, spec := range x.Specs {
			if spec.Tp == ast.AlterTableRenameTable {
				c.target(x.Table, mysql.DropPriv)
				c.target(spec.NewTable, mysql.CreatePriv|mysql.InsertPriv)
			}
		}
	case *ast.RenameTableStmt:
		for _, tt := range x.TableToTables {
			c.target(tt.OldTable, mysql.AlterPriv|mysql.DropPriv)
			c.target(tt.NewTable, mysql.CreatePriv|mysql.InsertPriv)
		}
	case *ast.InsertStmt:
		p := mysql.InsertPriv
		if x.IsReplace {
			p |= mysql.DeletePriv
		}
		if len(x.OnDuplicate) > 0 {
			p |= mysql.UpdatePriv
		}
		c.targets(x.Table, p)
	case *ast.UpdateStmt:
		p := mysql.UpdatePriv
		if x.Where != nil {
			p |= mysql.SelectPriv
		}
		if executor.IsMultiTableUpdate(x) {
			ts := fromTables(x.TableRefs)
			// Multi-table: UPDATE on the tables SET assigns, SELECT on
			// the others (found below).
			for _, t := range s.updatedTables(ctx, ts, x.List) {
				c.target(t.name, p)
			}
		} else {
			c.targets(x.TableRefs, p)
		}
	case *ast.DeleteStmt:
		p := mysql.DeletePriv
		if x.Where != nil {
			p |= mysql.SelectPriv
		}
		if x.IsMultiTable && x.Tables != nil {
			// DELETE on the FROM tables the targets name (by alias),
			// SELECT on the others.
			ts := fromTables(x.TableRefs)
			for _, t := range x.Tables.Tables {
				if c.seen == nil {
					c.seen = map[*ast.TableName]bool{}
				}
				c.seen[t] = true // a target names a FROM table
				for _, ft := range ts {
					if ft.alias == t.Name.L && (t.Schema.L == "" || strings.EqualFold(t.Schema.O, ft.name.Schema.O) ||
						(ft.name.Schema.L == "" && strings.EqualFold(t.Schema.O, c.db))) {
						c.target(ft.name, p)
						break
					}
				}
			}
		} else {
			c.targets(x.TableRefs, p)
		}
	case *ast.AdminStmt:
		for _, t := range x.Tables {
			c.target(t, mysql.SelectPriv)
		}
	}
	stmt.Accept(&c) // every other table reference is read
	for _, r := range c.refs {
		if r.db == "" || strings.EqualFold(r.db, "information_schema") {
			continue // no database: the statement fails with 1046 itself
		}
		if u.Has(r.db, r.table, r.priv) {
			continue
		}
		missing := r.priv
		for _, p := range []mysql.PrivilegeType{mysql.SelectPriv, mysql.InsertPriv, mysql.UpdatePriv, mysql.DeletePriv,
			mysql.CreatePriv, mysql.DropPriv, mysql.AlterPriv, mysql.IndexPriv} {
			if r.priv&p != 0 && !u.Has(r.db, r.table, p) {
				missing = p
				break
			}
		}
		if err := s.columnFallback(ctx, u, stmt, r, missing); err != nil {
			return err
		}
	}
	return nil
}

// needDB checks a database-level privilege (ERROR 1044).
func (s *Session) needDB(u *privilege.User, db string, p mysql.PrivilegeType) error {
	if u.Has(db, "", p) {
		return nil
	}
	return privilege.DBDenied(s.user, s.host, db)
}

// columnFallback decides a table reference the table-level privileges do
// not cover: a single-table statement may still pass on column grants
// (every column it names, or all for *, must carry the privilege);
// otherwise ERROR 1142 (or 1143 naming the first column without it).
func (s *Session) columnFallback(ctx context.Context, u *privilege.User, stmt ast.StmtNode, r tableRef, missing mysql.PrivilegeType) error {
	denied := privilege.TableDenied(privilege.Name(missing), s.user, s.host, r.table)
	if _, any := u.ColumnPriv(r.db, r.table, ""); !any {
		return denied
	}
	// Only SELECT/INSERT/UPDATE on a single table resolve columns here.
	var cols []string
	star := false
	switch x := stmt.(type) {
	case *ast.SelectStmt:
		if x.From == nil || x.From.TableRefs == nil || x.From.TableRefs.Right != nil {
			return denied
		}
		cols, star = namedColumns(stmt)
	case *ast.InsertStmt:
		for _, c := range x.Columns {
			cols = append(cols, c.Name.O)
		}
		star = len(cols) == 0 && x.Select == nil
		more, _ := namedColumns(stmt)
		cols = append(cols, more...)
	case *ast.UpdateStmt:
		if x.TableRefs == nil || x.TableRefs.TableRefs == nil || x.TableRefs.TableRefs.Right != nil {
			return denied
		}
		cols, star = namedColumns(stmt)
	default:
		return denied
	}
	if star {
		db, err := s.dom.Catalog().GetDB(ctx, r.db)
		if err != nil {
			return err
		}
		t, err := s.dom.Catalog().GetTable(ctx, db, r.table)
		if err != nil {
			return err
		}
		for _, c := range t.Columns {
			cols = append(cols, c.Name)
		}
	}
	// Each required privilege must hold on every named column, at table or
	// column level.
	for _, p := range []mysql.PrivilegeType{mysql.SelectPriv, mysql.InsertPriv, mysql.UpdatePriv} {
		if r.priv&p == 0 || u.Has(r.db, r.table, p) {
			continue
		}
		for _, c := range cols {
			if cp, _ := u.ColumnPriv(r.db, r.table, c); cp&p == 0 {
				return privilege.ColumnDenied(privilege.Name(p), s.user, s.host, c, r.table)
			}
		}
	}
	if r.priv&^(mysql.SelectPriv|mysql.InsertPriv|mysql.UpdatePriv) != 0 && !u.Has(r.db, r.table, r.priv&^(mysql.SelectPriv|mysql.InsertPriv|mysql.UpdatePriv)) {
		return denied
	}
	return nil
}

// namedColumns lists the column names a statement mentions and whether it
// selects *.
func namedColumns(stmt ast.StmtNode) (cols []string, star bool) {
	v := &columnCollector{}
	stmt.Accept(v)
	return v.cols, v.star
}

type columnCollector struct {
	cols []string
	star bool
}

func (v *columnCollector) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.ColumnNameExpr:
		v.cols = append(v.cols, x.Name.Name.O)
	case *ast.ColumnName:
		v.cols = append(v.cols, x.Name.O)
	case *ast.SelectField:
		if x.WildCard != nil {
			v.star = true
		}
	}
	return n, false
}

func (v *columnCollector) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// tableRef is one table a statement touches and what it does to it.
type tableRef struct {
	db, table string
	priv      mysql.PrivilegeType
}

// refCollector gathers table references: targets first (with their
// privilege), then, walking the statement, every other table as read.
type refCollector struct {
	db   string
	refs []tableRef
	seen map[*ast.TableName]bool
	ctes map[string]bool
}

func (c *refCollector) target(t *ast.TableName, p mysql.PrivilegeType) {
	if t == nil {
		return
	}
	if c.seen == nil {
		c.seen = map[*ast.TableName]bool{}
	}
	c.seen[t] = true
	db := t.Schema.O
	if db == "" {
		db = c.db
	}
	c.refs = append(c.refs, tableRef{db: db, table: t.Name.O, priv: p})
}

// targets marks every table of a FROM-style clause.
func (c *refCollector) targets(n ast.Node, p mysql.PrivilegeType) {
	if n == nil {
		return
	}
	tc := &tableNames{}
	n.Accept(tc)
	for _, t := range tc.names {
		c.target(t, p)
	}
}

type tableNames struct{ names []*ast.TableName }

func (v *tableNames) Enter(n ast.Node) (ast.Node, bool) {
	if t, ok := n.(*ast.TableName); ok {
		v.names = append(v.names, t)
	}
	// Subqueries' tables are reads, found by the outer walk.
	_, sub := n.(*ast.SubqueryExpr)
	return n, sub
}

func (v *tableNames) Leave(n ast.Node) (ast.Node, bool) { return n, true }

func (c *refCollector) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.WithClause:
		for _, cte := range x.CTEs {
			if c.ctes == nil {
				c.ctes = map[string]bool{}
			}
			c.ctes[cte.Name.L] = true
		}
	case *ast.TableName:
		if c.seen[x] {
			return n, false
		}
		if x.Schema.O == "" && c.ctes[x.Name.L] {
			return n, false
		}
		db := x.Schema.O
		if db == "" {
			db = c.db
		}
		c.refs = append(c.refs, tableRef{db: db, table: x.Name.O, priv: mysql.SelectPriv})
	}
	return n, false
}

func (c *refCollector) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// CheckGlobal requires a global privilege of the session's account
// (ERROR 1227 naming what in the message).
func (s *Session) CheckGlobal(p mysql.PrivilegeType, what string) error {
	u, skip := s.account()
	if skip || (u != nil && u.HasGlobal(p)) {
		return nil
	}
	return privilege.NeedPrivilege(what)
}

// mayUseDB checks USE / COM_INIT_DB / connect-with-database (ERROR 1044).
func (s *Session) mayUseDB(db string) error {
	u, skip := s.account()
	if skip || (u != nil && u.AnyInDB(db)) {
		return nil
	}
	return privilege.DBDenied(s.user, s.host, db)
}

// VisibleDB and VisibleTable filter SHOW DATABASES and SHOW TABLES and
// information_schema (infoschema.Viewer, executor.StmtEnv).
func (s *Session) VisibleDB(db string) bool {
	u, skip := s.account()
	return skip || (u != nil && (u.HasGlobal(mysql.ShowDBPriv) || u.AnyInDB(db)))
}

// VisibleTable: see VisibleDB.
func (s *Session) VisibleTable(db, table string) bool {
	u, skip := s.account()
	return skip || (u != nil && u.AnyOnTable(db, table))
}

// fromTable is a table of a FROM clause under its alias.
type fromTable struct {
	name  *ast.TableName
	alias string
}

// fromTables lists the tables of a FROM clause (not those of its
// subqueries or derived tables).
func fromTables(refs *ast.TableRefsClause) []fromTable {
	if refs == nil || refs.TableRefs == nil {
		return nil
	}
	v := &fromWalker{}
	refs.TableRefs.Accept(v)
	return v.tables
}

type fromWalker struct{ tables []fromTable }

func (v *fromWalker) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.TableSource:
		if tn, ok := x.Source.(*ast.TableName); ok {
			alias := x.AsName.L
			if alias == "" {
				alias = tn.Name.L
			}
			v.tables = append(v.tables, fromTable{name: tn, alias: alias})
			return n, true
		}
		if _, ok := x.Source.(*ast.Join); !ok {
			return n, true // a derived table
		}
	case *ast.SelectStmt, *ast.SetOprStmt, *ast.SubqueryExpr:
		return n, true
	}
	return n, false
}

func (v *fromWalker) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// updatedTables returns the tables of a multi-table UPDATE's FROM clause
// its assignments name: by qualifier, or, for an unqualified column, the
// tables that have a column of that name (the statement itself fails
// when there is not exactly one).
func (s *Session) updatedTables(ctx context.Context, ts []fromTable, list []*ast.Assignment) []fromTable {
	var out []fromTable
	add := func(t fromTable) {
		for _, o := range out {
			if o.name == t.name {
				return
			}
		}
		out = append(out, t)
	}
	for _, a := range list {
		for _, t := range ts {
			if a.Column.Table.L != "" {
				if t.alias == a.Column.Table.L {
					add(t)
				}
				continue
			}
			db := t.name.Schema.O
			if db == "" {
				db = s.db
			}
			dbi, err := s.dom.Catalog().GetDB(ctx, db)
			if err != nil {
				continue
			}
			ti, err := s.dom.Catalog().GetTable(ctx, dbi, t.name.Name.O)
			if err == nil && ti.View == nil && ti.FindColumn(a.Column.Name.O) >= 0 {
				add(t)
			}
		}
	}
	return out
}
