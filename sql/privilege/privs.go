package privilege

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// Priv is a set of privileges (TiDB's bit flags). GrantPriv in a set means
// WITH GRANT OPTION at that level.
type Priv = mysql.PrivilegeType

func union(ps mysql.Privileges) Priv {
	var u Priv
	for _, p := range ps {
		u |= p
	}
	return u
}

// The privileges grantable at each level (ALL means these).
var (
	GlobalPrivs = union(mysql.AllGlobalPrivs)
	DBPrivs     = union(mysql.AllDBPrivs)
	TablePrivs  = union(mysql.AllTablePrivs)
	ColumnPrivs = union(mysql.AllColumnPrivs)
)

// privOrder is MySQL's order of privilege names in SHOW GRANTS.
var privOrder = []struct {
	p    Priv
	name string
}{
	{mysql.SelectPriv, "SELECT"}, {mysql.InsertPriv, "INSERT"}, {mysql.UpdatePriv, "UPDATE"},
	{mysql.DeletePriv, "DELETE"}, {mysql.CreatePriv, "CREATE"}, {mysql.DropPriv, "DROP"},
	{mysql.ReloadPriv, "RELOAD"}, {mysql.ShutdownPriv, "SHUTDOWN"}, {mysql.ProcessPriv, "PROCESS"},
	{mysql.FilePriv, "FILE"}, {mysql.ReferencesPriv, "REFERENCES"}, {mysql.IndexPriv, "INDEX"},
	{mysql.AlterPriv, "ALTER"}, {mysql.ShowDBPriv, "SHOW DATABASES"}, {mysql.SuperPriv, "SUPER"},
	{mysql.CreateTMPTablePriv, "CREATE TEMPORARY TABLES"}, {mysql.LockTablesPriv, "LOCK TABLES"},
	{mysql.ExecutePriv, "EXECUTE"}, {mysql.ReplicationSlavePriv, "REPLICATION SLAVE"},
	{mysql.ReplicationClientPriv, "REPLICATION CLIENT"}, {mysql.CreateViewPriv, "CREATE VIEW"},
	{mysql.ShowViewPriv, "SHOW VIEW"}, {mysql.CreateRoutinePriv, "CREATE ROUTINE"},
	{mysql.AlterRoutinePriv, "ALTER ROUTINE"}, {mysql.CreateUserPriv, "CREATE USER"},
	{mysql.EventPriv, "EVENT"}, {mysql.TriggerPriv, "TRIGGER"},
	{mysql.CreateTablespacePriv, "CREATE TABLESPACE"}, {mysql.CreateRolePriv, "CREATE ROLE"},
	{mysql.DropRolePriv, "DROP ROLE"}, {mysql.ConfigPriv, "CONFIG"},
}

// Name is the SQL name of a single privilege ("SELECT", "GRANT OPTION").
func Name(p Priv) string {
	if p == mysql.GrantPriv {
		return "GRANT OPTION"
	}
	for _, o := range privOrder {
		if o.p == p {
			return o.name
		}
	}
	return strings.ToUpper(mysql.Priv2Str[p])
}

// names lists the privileges of set (GrantPriv excluded) in MySQL's order.
func names(set Priv) []string {
	var out []string
	for _, o := range privOrder {
		if set&o.p != 0 {
			out = append(out, o.name)
		}
	}
	return out
}

// quoteIdent quotes a name with backticks, as SHOW GRANTS prints it.
func quoteIdent(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}

// hostMatches reports whether client host h matches account host pattern
// (MySQL's LIKE-style % and _, case-insensitive). 'localhost' also matches
// loopback addresses: Strata has no Unix socket.
func hostMatches(pattern, h string) bool {
	if pattern == "%" {
		return true
	}
	if pattern == "localhost" && (h == "127.0.0.1" || h == "::1" || h == "localhost") {
		return true
	}
	return likeFold(pattern, h)
}

// likeFold matches s against a LIKE pattern with % and _ (no escapes),
// ASCII case-insensitively.
func likeFold(p, s string) bool {
	for len(p) > 0 {
		switch p[0] {
		case '%':
			for len(p) > 0 && p[0] == '%' {
				p = p[1:]
			}
			if p == "" {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if likeFold(p, s[i:]) {
					return true
				}
			}
			return false
		case '_':
			if s == "" {
				return false
			}
		default:
			if s == "" || lower(p[0]) != lower(s[0]) {
				return false
			}
		}
		p, s = p[1:], s[1:]
	}
	return s == ""
}

func lower(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

// hostSpecificity orders account hosts as MySQL does: literal hosts first,
// then patterns by the length of their literal prefix, '%' last.
func hostSpecificity(h string) int {
	i := strings.IndexAny(h, "%_")
	if i < 0 {
		return 1 << 20
	}
	return i
}
