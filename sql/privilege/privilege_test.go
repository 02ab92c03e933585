package privilege

import (
	"testing"

	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stretchr/testify/require"
)

func TestHostMatches(t *testing.T) {
	for _, c := range []struct {
		pattern, host string
		want          bool
	}{
		{"%", "10.1.2.3", true},
		{"localhost", "127.0.0.1", true},
		{"localhost", "::1", true},
		{"localhost", "10.0.0.1", false},
		{"10.0.%", "10.0.7.1", true},
		{"10.0.%", "10.1.7.1", false},
		{"10.0.0._", "10.0.0.7", true},
		{"10.0.0._", "10.0.0.17", false},
		{"Host.Example", "host.example", true},
		{"127.0.0.1", "127.0.0.1", true},
		{"127.0.0.1", "127.0.0.2", false},
	} {
		require.Equal(t, c.want, hostMatches(c.pattern, c.host), "%q vs %q", c.pattern, c.host)
	}
}

func TestMatchOrder(t *testing.T) {
	g := newGrants()
	for _, id := range []Ident{{"u", "%"}, {"u", "127.0.0.1"}, {"", "localhost"}, {"u", "127.0.%"}, {"v", "%"}} {
		g.Users[id] = &UserRecord{User: id.User, Host: id.Host}
	}
	s := buildSnapshot(1, g)
	for _, c := range []struct {
		user, host string
		want       Ident
	}{
		{"u", "127.0.0.1", Ident{"u", "127.0.0.1"}},
		{"u", "127.0.0.9", Ident{"u", "127.0.%"}},
		{"u", "10.0.0.1", Ident{"u", "%"}},
		{"v", "10.0.0.1", Ident{"v", "%"}},
		// MySQL's order puts the anonymous 'localhost' account before v@'%'.
		{"v", "127.0.0.1", Ident{"", "localhost"}},
	} {
		u := s.Match(c.user, c.host)
		require.NotNil(t, u, "%s@%s", c.user, c.host)
		require.Equal(t, c.want, u.Ident, "%s@%s", c.user, c.host)
	}
	require.Nil(t, s.Match("w", "10.0.0.1"))
}

func TestHas(t *testing.T) {
	g := newGrants()
	id := Ident{"u", "%"}
	g.Users[id] = &UserRecord{User: "u", Host: "%", Privs: mysql.ProcessPriv}
	g.DBs[dbName{id, "d"}] = &DBRecord{User: "u", Host: "%", DB: "D", Privs: mysql.SelectPriv | mysql.InsertPriv}
	g.Tables[tableName{id, "e", "t"}] = &TableRecord{User: "u", Host: "%", DB: "e", Table: "T", Privs: mysql.UpdatePriv,
		Columns: map[string]Priv{"A": mysql.SelectPriv}}
	u := buildSnapshot(1, g).Lookup(id)
	for _, c := range []struct {
		db, table string
		p         Priv
		want      bool
	}{
		{"d", "x", mysql.SelectPriv, true},
		{"D", "X", mysql.SelectPriv | mysql.InsertPriv, true},
		{"d", "x", mysql.DeletePriv, false},
		{"d", "", mysql.InsertPriv, true},
		{"e", "t", mysql.UpdatePriv, true},
		{"e", "T", mysql.UpdatePriv, true},
		{"e", "t", mysql.SelectPriv, false},
		{"e", "u", mysql.UpdatePriv, false},
		{"x", "y", mysql.ProcessPriv, true},
	} {
		require.Equal(t, c.want, u.Has(c.db, c.table, c.p), "%s.%s %v", c.db, c.table, c.p)
	}
	cp, any := u.ColumnPriv("e", "t", "a")
	require.True(t, any)
	require.Equal(t, mysql.SelectPriv, cp)
	require.True(t, u.AnyInDB("e"))
	require.True(t, u.AnyInDB("other"), "a global privilege shows every database")
	require.True(t, u.AnyOnTable("e", "t"))
}

func TestHasDoesNotAllocate(t *testing.T) {
	g := newGrants()
	id := Ident{"u", "%"}
	g.Users[id] = &UserRecord{User: "u", Host: "%"}
	g.DBs[dbName{id, "d"}] = &DBRecord{User: "u", Host: "%", DB: "d", Privs: mysql.SelectPriv}
	u := buildSnapshot(1, g).Lookup(id)
	n := testing.AllocsPerRun(100, func() { u.Has("d", "t", mysql.SelectPriv) })
	require.Zero(t, n)
}

func TestGrantLine(t *testing.T) {
	id := Ident{"u", "%"}
	require.Equal(t, "GRANT USAGE ON *.* TO `u`@`%`", grantLine(0, GlobalPrivs, nil, "*.*", id))
	require.Equal(t, "GRANT ALL PRIVILEGES ON *.* TO `u`@`%` WITH GRANT OPTION", grantLine(GlobalPrivs|mysql.GrantPriv, GlobalPrivs, nil, "*.*", id))
	require.Equal(t, "GRANT SELECT, INSERT ON `d`.* TO `u`@`%`", grantLine(mysql.InsertPriv|mysql.SelectPriv, DBPrivs, nil, "`d`.*", id))
	require.Equal(t, "GRANT UPDATE, SELECT (`a`, `b`), INSERT (`b`) ON `d`.`t` TO `u`@`%`",
		grantLine(mysql.UpdatePriv, TablePrivs, map[string]Priv{"b": mysql.SelectPriv | mysql.InsertPriv, "a": mysql.SelectPriv}, "`d`.`t`", id))
}
