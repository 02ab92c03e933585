package privilege

import (
	"sort"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/auth"
)

// Snapshot is one version of the privilege tables, indexed for logins and
// checks. Immutable; safe for concurrent use.
type Snapshot struct {
	Version uint64
	grants  *Grants
	users   []*User // in MySQL's matching order
	byIdent map[Ident]*User
	// skip: --skip-grant-tables; every login and check passes.
	skip bool
}

// User is one account's credentials and privileges. Immutable.
type User struct {
	Ident
	Rec     *UserRecord
	Account *auth.Account // nil when the stored hash is unusable (login refused)
	Global  Priv
	dbs     map[string]Priv // lower db -> privileges
	tables  map[[2]string]*tablePrivs
	anyDB   map[string]bool // dbs with a db-, table- or column-level grant
}

type tablePrivs struct {
	privs    Priv
	cols     map[string]Priv // lower column -> privileges
	colUnion Priv
}

// NoPrivileges is an account without any privilege (a session whose
// account was dropped keeps running with it, as in MySQL).
var NoPrivileges = &User{}

// SkipGrantsUser is the account every login gets with --skip-grant-tables:
// every privilege.
var SkipGrantsUser = &User{Ident: Ident{User: "skip-grants user", Host: "skip-grants host"}, Global: GlobalPrivs | mysql.GrantPriv}

func buildSnapshot(version uint64, g *Grants) *Snapshot {
	s := &Snapshot{Version: version, grants: g, byIdent: make(map[Ident]*User, len(g.Users))}
	for id, r := range g.Users {
		u := &User{Ident: id, Rec: r, Global: r.Privs, dbs: map[string]Priv{}, tables: map[[2]string]*tablePrivs{}, anyDB: map[string]bool{}}
		if a, err := auth.ParseAccount(id.String(), r.Plugin, r.AuthString); err == nil {
			u.Account = a
		}
		s.byIdent[id] = u
		s.users = append(s.users, u)
	}
	for k, d := range g.DBs {
		if u := s.byIdent[k.Ident]; u != nil && d.Privs != 0 {
			u.dbs[k.db] = d.Privs
			u.anyDB[k.db] = true
		}
	}
	for k, t := range g.Tables {
		u := s.byIdent[k.Ident]
		if u == nil {
			continue
		}
		tp := &tablePrivs{privs: t.Privs}
		for c, p := range t.Columns {
			if tp.cols == nil {
				tp.cols = map[string]Priv{}
			}
			tp.cols[strings.ToLower(c)] = p
			tp.colUnion |= p
		}
		if tp.privs|tp.colUnion != 0 {
			u.tables[[2]string{k.db, k.table}] = tp
			u.anyDB[k.db] = true
		}
	}
	sort.SliceStable(s.users, func(i, j int) bool {
		a, b := s.users[i], s.users[j]
		if sa, sb := hostSpecificity(a.Host), hostSpecificity(b.Host); sa != sb {
			return sa > sb
		}
		if a.Host != b.Host {
			return a.Host < b.Host
		}
		if (a.User == "") != (b.User == "") {
			return a.User != ""
		}
		return a.User < b.User
	})
	return s
}

// Match returns the account a login of user from client host uses (MySQL's
// order: most specific host first, named users before anonymous), or nil.
func (s *Snapshot) Match(user, host string) *User {
	if s.skip {
		return SkipGrantsUser
	}
	for _, u := range s.users {
		if (u.User == user || u.User == "") && hostMatches(u.Host, host) {
			return u
		}
	}
	return nil
}

// Lookup returns the account id exactly, or nil.
func (s *Snapshot) Lookup(id Ident) *User {
	if s.skip {
		return SkipGrantsUser
	}
	return s.byIdent[id]
}

// Skip reports --skip-grant-tables.
func (s *Snapshot) Skip() bool { return s.skip }

// lowerName returns s lower-cased; no allocation when it already is.
func lowerName(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' || c >= 0x80 {
			return strings.ToLower(s)
		}
	}
	return s
}

// HasGlobal reports whether u holds every privilege of p globally.
func (u *User) HasGlobal(p Priv) bool { return u.Global&p == p }

// Has reports whether u holds every privilege of p on table db.table (at
// the global, database or table level; table "" checks the database
// level). Column privileges do not count (see ColumnPrivs).
func (u *User) Has(db, table string, p Priv) bool {
	have := u.Global
	if have&p == p {
		return true
	}
	db = lowerName(db)
	have |= u.dbs[db]
	if have&p == p {
		return true
	}
	if table == "" {
		return false
	}
	if tp := u.tables[[2]string{db, lowerName(table)}]; tp != nil {
		have |= tp.privs
	}
	return have&p == p
}

// ColumnPriv returns u's privileges on column col of db.table from column
// grants only, and whether the table has any column grant.
func (u *User) ColumnPriv(db, table, col string) (Priv, bool) {
	tp := u.tables[[2]string{lowerName(db), lowerName(table)}]
	if tp == nil || tp.cols == nil {
		return 0, false
	}
	return tp.cols[lowerName(col)], true
}

// AnyInDB reports whether u may see database db (USE, SHOW DATABASES): any
// global privilege, or a grant on the database or something in it.
func (u *User) AnyInDB(db string) bool {
	return u.Global&^mysql.GrantPriv != 0 || u.anyDB[lowerName(db)]
}

// AnyOnTable reports whether u holds some privilege on db.table (SHOW
// TABLES, SHOW COLUMNS).
func (u *User) AnyOnTable(db, table string) bool {
	if u.Global&^mysql.GrantPriv != 0 {
		return true
	}
	db = lowerName(db)
	if u.dbs[db]&^mysql.GrantPriv != 0 {
		return true
	}
	tp := u.tables[[2]string{db, lowerName(table)}]
	return tp != nil && (tp.privs|tp.colUnion)&^mysql.GrantPriv != 0
}
