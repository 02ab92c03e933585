package privilege

import (
	"context"
	"sort"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/auth"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	sqlauth "github.com/stratadb/strata/sql/auth"
	"github.com/stratadb/strata/sql/errno"
)

// Requester is the session that runs an account statement.
type Requester struct {
	// User is the session's account (nil: the account was dropped).
	User *User
	// LoginUser and ClientHost name the connection in error messages.
	LoginUser, ClientHost string
	// CurrentDB resolves "ON *" and "ON t".
	CurrentDB string
}

func (r *Requester) has(db, table string, p Priv) bool {
	return r.User != nil && r.User.Has(db, table, p)
}

func (r *Requester) self() Ident {
	if r.User == nil {
		return Ident{User: r.LoginUser, Host: r.ClientHost}
	}
	return r.User.Ident
}

// TableDenied is ERROR 1142.
func TableDenied(cmd, user, host, table string) error {
	return errno.New(errno.ErrTableAccessDenied, "%s command denied to user '%s'@'%s' for table '%s'", cmd, user, host, table)
}

// ColumnDenied is ERROR 1143.
func ColumnDenied(cmd, user, host, col, table string) error {
	return errno.New(errno.ErrColumnAccessDenied, "%s command denied to user '%s'@'%s' for column '%s' in table '%s'", cmd, user, host, col, table)
}

// DBDenied is ERROR 1044.
func DBDenied(user, host, db string) error {
	return errno.New(errno.ErrDBAccessDenied, "Access denied for user '%s'@'%s' to database '%s'", user, host, db)
}

// NeedPrivilege is ERROR 1227.
func NeedPrivilege(what string) error {
	return errno.New(errno.ErrSpecificAccessDenied, "Access denied; you need (at least one of) the %s privilege(s) for this operation", what)
}

func (r *Requester) needCreateUser() error {
	if r.has("", "", mysql.CreateUserPriv) {
		return nil
	}
	return NeedPrivilege("CREATE USER")
}

func cannotUser(op string, ids []Ident) error {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = id.String()
	}
	return errno.New(errno.ErrCannotUser, "Operation %s failed for %s", op, strings.Join(parts, ","))
}

// ident resolves a user in a statement (CURRENT_USER means the requester).
func (r *Requester) ident(u *auth.UserIdentity) (Ident, error) {
	if u == nil || u.CurrentUser {
		return r.self(), nil
	}
	if len(u.Username) > 32 {
		return Ident{}, errno.New(errno.ErrWrongStringLength, "String '%s' is too long for user name (should be no longer than 32)", u.Username)
	}
	if len(u.Hostname) > 255 {
		return Ident{}, errno.New(errno.ErrWrongStringLength, "String '%s' is too long for host name (should be no longer than 255)", u.Hostname)
	}
	host := u.Hostname
	if host == "" {
		host = "%"
	}
	return NewIdent(u.Username, host), nil
}

// credentials returns the plugin and stored hash an IDENTIFIED clause
// asks for (plugin "" keeps the current one: keep reports no clause).
func (m *Manager) credentials(opt *ast.AuthOption, curPlugin string) (plugin, authString string, keep bool, err error) {
	if opt == nil {
		return curPlugin, "", true, nil
	}
	plugin = strings.ToLower(opt.AuthPlugin)
	if plugin == "" {
		plugin = curPlugin
	}
	if plugin == "" {
		plugin = m.cfg.DefaultPlugin
	}
	switch {
	case opt.ByHashString:
		authString = opt.HashString
		if _, err := sqlauth.ParseAccount("", plugin, authString); err != nil {
			return "", "", false, errno.New(1827, "The password hash doesn't have the expected format (%v)", err)
		}
	default:
		authString, err = sqlauth.HashPassword(plugin, opt.AuthString)
		if err != nil {
			return "", "", false, errno.New(1524, "Plugin '%s' is not loaded (Strata has mysql_native_password and caching_sha2_password)", plugin)
		}
	}
	return plugin, authString, false, nil
}

// accountOptions applies REQUIRE and ACCOUNT LOCK/UNLOCK.
func accountOptions(rec *UserRecord, tls []*ast.AuthTokenOrTLSOption, locks []*ast.PasswordOrLockOption) error {
	for _, o := range tls {
		switch o.Type {
		case ast.TlsNone:
			rec.RequireSSL = false
		case ast.Ssl:
			rec.RequireSSL = true
		default:
			return errno.NotSupported("REQUIRE " + o.Type.String())
		}
	}
	for _, o := range locks {
		switch o.Type {
		case ast.Lock:
			rec.Locked = true
		case ast.Unlock:
			rec.Locked = false
		}
		// Password expiry and history options are accepted and not enforced.
	}
	return nil
}

// CreateUser runs CREATE USER.
func (m *Manager) CreateUser(ctx context.Context, r *Requester, x *ast.CreateUserStmt) error {
	if x.IsCreateRole {
		return errno.NotSupported("roles")
	}
	if err := r.needCreateUser(); err != nil {
		return err
	}
	recs := make([]*UserRecord, 0, len(x.Specs))
	for _, spec := range x.Specs {
		id, err := r.ident(spec.User)
		if err != nil {
			return err
		}
		plugin, as, _, err := m.credentials(spec.AuthOpt, "")
		if err != nil {
			return err
		}
		if spec.AuthOpt == nil {
			plugin = m.cfg.DefaultPlugin
		}
		rec := &UserRecord{User: id.User, Host: id.Host, Plugin: plugin, AuthString: as}
		if err := accountOptions(rec, x.AuthTokenOrTLSOptions, x.PasswordOrLockOptions); err != nil {
			return err
		}
		recs = append(recs, rec)
	}
	return m.update(ctx, func(g *Grants) error {
		var failed []Ident
		for _, rec := range recs {
			id := NewIdent(rec.User, rec.Host)
			if g.Users[id] != nil {
				if !x.IfNotExists {
					failed = append(failed, id)
				}
				continue
			}
			g.Users[id] = rec
		}
		if len(failed) > 0 {
			return cannotUser("CREATE USER", failed)
		}
		return nil
	})
}

// AlterUser runs ALTER USER. Changing one's own password needs no
// privilege; anything else needs CREATE USER.
func (m *Manager) AlterUser(ctx context.Context, r *Requester, x *ast.AlterUserStmt) error {
	specs := x.Specs
	if x.CurrentAuth != nil {
		specs = []*ast.UserSpec{{User: &auth.UserIdentity{CurrentUser: true}, AuthOpt: x.CurrentAuth}}
	}
	onlySelf := len(x.AuthTokenOrTLSOptions) == 0 && len(x.PasswordOrLockOptions) == 0
	type change struct {
		id  Ident
		opt *ast.AuthOption
	}
	changes := make([]change, 0, len(specs))
	for _, spec := range specs {
		id, err := r.ident(spec.User)
		if err != nil {
			return err
		}
		if id != r.self() {
			onlySelf = false
		}
		changes = append(changes, change{id, spec.AuthOpt})
	}
	if !onlySelf {
		if err := r.needCreateUser(); err != nil {
			return err
		}
	}
	// Hash outside the transaction (PBKDF2 is slow); the plugin is known
	// only inside it, so hash for both and pick.
	type creds struct{ plugin, as string }
	hashed := make([]map[string]creds, len(changes))
	for i, c := range changes {
		if c.opt == nil {
			continue
		}
		hashed[i] = map[string]creds{}
		for _, p := range []string{sqlauth.NativePassword, sqlauth.CachingSHA2Password} {
			plugin, as, _, err := m.credentials(c.opt, p)
			if err != nil {
				return err
			}
			hashed[i][p] = creds{plugin, as}
		}
	}
	return m.update(ctx, func(g *Grants) error {
		var failed []Ident
		for i, c := range changes {
			cur := g.Users[c.id]
			if cur == nil {
				if !x.IfExists {
					failed = append(failed, c.id)
				}
				continue
			}
			rec := *cur
			if c.opt != nil {
				plugin := rec.Plugin
				if plugin != sqlauth.CachingSHA2Password {
					plugin = sqlauth.NativePassword
				}
				cr := hashed[i][plugin]
				rec.Plugin, rec.AuthString = cr.plugin, cr.as
			}
			if err := accountOptions(&rec, x.AuthTokenOrTLSOptions, x.PasswordOrLockOptions); err != nil {
				return err
			}
			g.Users[c.id] = &rec
		}
		if len(failed) > 0 {
			return cannotUser("ALTER USER", failed)
		}
		return nil
	})
}

// SetPassword runs SET PASSWORD [FOR user] = 'pw'.
func (m *Manager) SetPassword(ctx context.Context, r *Requester, x *ast.SetPwdStmt) error {
	id, err := r.ident(x.User)
	if err != nil {
		return err
	}
	if id != r.self() {
		if err := r.needCreateUser(); err != nil {
			return err
		}
	}
	hashed := map[string]string{}
	for _, p := range []string{sqlauth.NativePassword, sqlauth.CachingSHA2Password} {
		if hashed[p], err = sqlauth.HashPassword(p, x.Password); err != nil {
			return err
		}
	}
	return m.update(ctx, func(g *Grants) error {
		cur := g.Users[id]
		if cur == nil {
			return errno.New(errno.ErrPasswordNoMatch, "Can't find any matching row in the user table")
		}
		rec := *cur
		rec.AuthString = hashed[rec.Plugin]
		g.Users[id] = &rec
		return nil
	})
}

// DropUser runs DROP USER: the accounts and all their grants.
func (m *Manager) DropUser(ctx context.Context, r *Requester, x *ast.DropUserStmt) error {
	if x.IsDropRole {
		return errno.NotSupported("roles")
	}
	if err := r.needCreateUser(); err != nil {
		return err
	}
	ids := make([]Ident, 0, len(x.UserList))
	for _, u := range x.UserList {
		id, err := r.ident(u)
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	return m.update(ctx, func(g *Grants) error {
		var failed []Ident
		for _, id := range ids {
			if g.Users[id] == nil {
				if !x.IfExists {
					failed = append(failed, id)
				}
				continue
			}
			g.moveAccount(id, nil)
		}
		if len(failed) > 0 {
			return cannotUser("DROP USER", failed)
		}
		return nil
	})
}

// moveAccount renames account from (with its grants) to *to, or drops it
// when to is nil.
func (g *Grants) moveAccount(from Ident, to *Ident) {
	if u := g.Users[from]; u != nil {
		delete(g.Users, from)
		if to != nil {
			n := *u
			n.User, n.Host = to.User, to.Host
			g.Users[*to] = &n
		}
	}
	for k, d := range g.DBs {
		if k.Ident == from {
			delete(g.DBs, k)
			if to != nil {
				n := *d
				n.User, n.Host = to.User, to.Host
				g.DBs[dbName{*to, k.db}] = &n
			}
		}
	}
	for k, t := range g.Tables {
		if k.Ident == from {
			delete(g.Tables, k)
			if to != nil {
				n := *t
				n.User, n.Host = to.User, to.Host
				g.Tables[tableName{*to, k.db, k.table}] = &n
			}
		}
	}
}

// RenameUser runs RENAME USER.
func (m *Manager) RenameUser(ctx context.Context, r *Requester, x *ast.RenameUserStmt) error {
	if err := r.needCreateUser(); err != nil {
		return err
	}
	type pair struct{ from, to Ident }
	pairs := make([]pair, 0, len(x.UserToUsers))
	for _, uu := range x.UserToUsers {
		from, err := r.ident(uu.OldUser)
		if err != nil {
			return err
		}
		to, err := r.ident(uu.NewUser)
		if err != nil {
			return err
		}
		pairs = append(pairs, pair{from, to})
	}
	return m.update(ctx, func(g *Grants) error {
		var failed []Ident
		for _, p := range pairs {
			if g.Users[p.from] == nil || g.Users[p.to] != nil {
				failed = append(failed, p.from)
				continue
			}
			to := p.to
			g.moveAccount(p.from, &to)
		}
		if len(failed) > 0 {
			return cannotUser("RENAME USER", failed)
		}
		return nil
	})
}

// grantTarget is what a GRANT or REVOKE applies to.
type grantTarget struct {
	level     ast.GrantLevelType
	db, table string
	privs     Priv            // table/db/global level (GrantPriv: grant option)
	cols      map[string]Priv // column level (table only)
	all       bool
}

// target validates the privileges of a GRANT/REVOKE against its level.
func (r *Requester) target(privs []*ast.PrivElem, objType ast.ObjectTypeType, level *ast.GrantLevel) (*grantTarget, error) {
	if objType != ast.ObjectTypeNone && objType != ast.ObjectTypeTable {
		return nil, errno.NotSupported("stored routine privileges")
	}
	t := &grantTarget{level: level.Level, db: level.DBName, table: level.TableName}
	if t.level != ast.GrantLevelGlobal && t.db == "" {
		if r.CurrentDB == "" {
			return nil, errno.New(errno.ErrNoDB, "No database selected")
		}
		t.db = r.CurrentDB
	}
	allowed := GlobalPrivs
	switch t.level {
	case ast.GrantLevelDB:
		allowed = DBPrivs
	case ast.GrantLevelTable:
		allowed = TablePrivs
	}
	for _, pe := range privs {
		switch pe.Priv {
		case mysql.AllPriv:
			t.all = true
			t.privs |= allowed
			continue
		case mysql.UsagePriv:
			continue
		case mysql.ExtendedPriv:
			return nil, errno.NotSupported("dynamic privilege " + pe.Name)
		case mysql.GrantPriv:
			t.privs |= mysql.GrantPriv
			continue
		}
		if len(pe.Cols) > 0 {
			if t.level != ast.GrantLevelTable || ColumnPrivs&pe.Priv == 0 {
				return nil, errno.New(errno.ErrIllegalGrantForTable, "Illegal GRANT/REVOKE command; please consult the manual to see which privileges can be used")
			}
			if t.cols == nil {
				t.cols = map[string]Priv{}
			}
			for _, c := range pe.Cols {
				t.cols[c.Name.O] |= pe.Priv
			}
			continue
		}
		if allowed&pe.Priv == 0 {
			if t.level == ast.GrantLevelTable {
				return nil, errno.New(errno.ErrIllegalGrantForTable, "Illegal GRANT/REVOKE command; please consult the manual to see which privileges can be used")
			}
			return nil, errno.New(errno.ErrWrongUsage, "Incorrect usage of DB GRANT and GLOBAL PRIVILEGES")
		}
		t.privs |= pe.Priv
	}
	return t, nil
}

// mayGrant checks that the requester holds GRANT OPTION and the
// privileges at the target's level.
func (r *Requester) mayGrant(t *grantTarget, cmd string) error {
	need := t.privs | mysql.GrantPriv
	for _, p := range t.cols {
		need |= p
	}
	switch t.level {
	case ast.GrantLevelGlobal:
		if !r.has("", "", need) {
			return errno.New(errno.ErrAccessDenied, "Access denied for user '%s'@'%s' (using password: YES)", r.LoginUser, r.ClientHost)
		}
	case ast.GrantLevelDB:
		if !r.has(t.db, "", need) {
			return DBDenied(r.LoginUser, r.ClientHost, t.db)
		}
	default:
		if !r.has(t.db, t.table, need) {
			return TableDenied(cmd, r.LoginUser, r.ClientHost, t.table)
		}
	}
	return nil
}

// Grant runs GRANT. tableExists checks a table-level target (ERROR 1146).
func (m *Manager) Grant(ctx context.Context, r *Requester, x *ast.GrantStmt, tableExists func(db, table string) error) error {
	t, err := r.target(x.Privs, x.ObjectType, x.Level)
	if err != nil {
		return err
	}
	if x.WithGrant {
		t.privs |= mysql.GrantPriv
	}
	if err := r.mayGrant(t, "GRANT"); err != nil {
		return err
	}
	if t.level == ast.GrantLevelTable {
		if err := tableExists(t.db, t.table); err != nil {
			return err
		}
	}
	ids := make([]Ident, 0, len(x.Users))
	for _, spec := range x.Users {
		if spec.AuthOpt != nil && (spec.AuthOpt.ByAuthString || spec.AuthOpt.ByHashString) {
			return errno.NotSupported("IDENTIFIED BY in GRANT (use CREATE USER or ALTER USER)")
		}
		id, err := r.ident(spec.User)
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	return m.update(ctx, func(g *Grants) error {
		for _, id := range ids {
			u := g.Users[id]
			if u == nil {
				return errno.New(errno.ErrCantCreateUserWithGrant, "You are not allowed to create a user with GRANT")
			}
			switch t.level {
			case ast.GrantLevelGlobal:
				n := *u
				n.Privs |= t.privs
				if err := accountOptions(&n, x.AuthTokenOrTLSOptions, nil); err != nil {
					return err
				}
				g.Users[id] = &n
			case ast.GrantLevelDB:
				k := dbName{id, strings.ToLower(t.db)}
				n := DBRecord{User: id.User, Host: id.Host, DB: t.db}
				if d := g.DBs[k]; d != nil {
					n = *d
				}
				n.Privs |= t.privs
				g.DBs[k] = &n
			default:
				k := tableName{id, strings.ToLower(t.db), strings.ToLower(t.table)}
				n := TableRecord{User: id.User, Host: id.Host, DB: t.db, Table: t.table}
				if d := g.Tables[k]; d != nil {
					n = *d
				}
				n.Privs |= t.privs
				if len(t.cols) > 0 {
					cols := make(map[string]Priv, len(n.Columns)+len(t.cols))
					for c, p := range n.Columns {
						cols[c] = p
					}
					for c, p := range t.cols {
						cols[c] |= p
					}
					n.Columns = cols
				}
				g.Tables[k] = &n
			}
		}
		return nil
	})
}

func noSuchGrant(id Ident) error {
	return errno.New(errno.ErrNonexistingGrant, "There is no such grant defined for user '%s' on host '%s'", id.User, id.Host)
}

// Revoke runs REVOKE.
func (m *Manager) Revoke(ctx context.Context, r *Requester, x *ast.RevokeStmt) error {
	t, err := r.target(x.Privs, x.ObjectType, x.Level)
	if err != nil {
		return err
	}
	if err := r.mayGrant(t, "REVOKE"); err != nil {
		return err
	}
	ids := make([]Ident, 0, len(x.Users))
	for _, spec := range x.Users {
		id, err := r.ident(spec.User)
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	return m.update(ctx, func(g *Grants) error {
		for _, id := range ids {
			u := g.Users[id]
			if u == nil {
				return noSuchGrant(id)
			}
			switch t.level {
			case ast.GrantLevelGlobal:
				n := *u
				n.Privs &^= t.privs
				g.Users[id] = &n
			case ast.GrantLevelDB:
				k := dbName{id, strings.ToLower(t.db)}
				d := g.DBs[k]
				if d == nil {
					return noSuchGrant(id)
				}
				n := *d
				n.Privs &^= t.privs
				if n.Privs == 0 {
					delete(g.DBs, k)
				} else {
					g.DBs[k] = &n
				}
			default:
				k := tableName{id, strings.ToLower(t.db), strings.ToLower(t.table)}
				d := g.Tables[k]
				if d == nil {
					return errno.New(errno.ErrNonexistingTableGrant, "There is no such grant defined for user '%s' on host '%s' on table '%s'", id.User, id.Host, t.table)
				}
				n := *d
				n.Privs &^= t.privs
				if len(n.Columns) > 0 && (t.all || len(t.cols) > 0) {
					cols := map[string]Priv{}
					for c, p := range n.Columns {
						if t.all {
							p = 0
						} else {
							p &^= t.cols[c]
						}
						if p != 0 {
							cols[c] = p
						}
					}
					n.Columns = cols
				}
				if n.Privs == 0 && len(n.Columns) == 0 {
					delete(g.Tables, k)
				} else {
					g.Tables[k] = &n
				}
			}
		}
		return nil
	})
}

// ShowGrants returns the GRANT statements of an account (nil: the
// requester's). Another account's need global SELECT (MySQL: SELECT on the
// mysql schema).
func (m *Manager) ShowGrants(r *Requester, u *auth.UserIdentity) (Ident, []string, error) {
	id, err := r.ident(u)
	if err != nil {
		return id, nil, err
	}
	if id != r.self() && !r.has("mysql", "", mysql.SelectPriv) {
		return id, nil, DBDenied(r.LoginUser, r.ClientHost, "mysql")
	}
	snap := m.Snapshot()
	if snap == nil || snap.grants.Users[id] == nil {
		if snap != nil && snap.skip && id == SkipGrantsUser.Ident {
			return id, []string{"GRANT ALL PRIVILEGES ON *.* TO " + quoteAccount(id) + " WITH GRANT OPTION"}, nil
		}
		return id, nil, noSuchGrant(id)
	}
	g := snap.grants
	var out []string
	out = append(out, grantLine(g.Users[id].Privs, GlobalPrivs, nil, "*.*", id))
	var dbs []*DBRecord
	for k, d := range g.DBs {
		if k.Ident == id {
			dbs = append(dbs, d)
		}
	}
	sort.Slice(dbs, func(i, j int) bool { return dbs[i].DB < dbs[j].DB })
	for _, d := range dbs {
		out = append(out, grantLine(d.Privs, DBPrivs, nil, quoteIdent(d.DB)+".*", id))
	}
	var tbls []*TableRecord
	for k, t := range g.Tables {
		if k.Ident == id {
			tbls = append(tbls, t)
		}
	}
	sort.Slice(tbls, func(i, j int) bool {
		if tbls[i].DB != tbls[j].DB {
			return tbls[i].DB < tbls[j].DB
		}
		return tbls[i].Table < tbls[j].Table
	})
	for _, t := range tbls {
		out = append(out, grantLine(t.Privs, TablePrivs, t.Columns, quoteIdent(t.DB)+"."+quoteIdent(t.Table), id))
	}
	return id, out, nil
}

func quoteAccount(id Ident) string { return quoteIdent(id.User) + "@" + quoteIdent(id.Host) }

// grantLine formats one SHOW GRANTS row.
func grantLine(privs, all Priv, cols map[string]Priv, on string, id Ident) string {
	var list []string
	if privs&all == all {
		list = []string{"ALL PRIVILEGES"}
	} else {
		list = names(privs &^ mysql.GrantPriv)
	}
	if len(cols) > 0 {
		colNames := make([]string, 0, len(cols))
		for c := range cols {
			colNames = append(colNames, c)
		}
		sort.Strings(colNames)
		for _, o := range privOrder {
			var these []string
			for _, c := range colNames {
				if cols[c]&o.p != 0 {
					these = append(these, quoteIdent(c))
				}
			}
			if len(these) > 0 {
				list = append(list, o.name+" ("+strings.Join(these, ", ")+")")
			}
		}
	}
	if len(list) == 0 {
		list = []string{"USAGE"}
	}
	s := "GRANT " + strings.Join(list, ", ") + " ON " + on + " TO " + quoteAccount(id)
	if privs&mysql.GrantPriv != 0 {
		s += " WITH GRANT OPTION"
	}
	return s
}
