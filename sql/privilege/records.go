package privilege

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/stratadb/strata/kv/codec"
	"github.com/stratadb/strata/sql/tablecodec"
)

// Ident is an account: user name (case-sensitive) and host pattern
// (lower-cased).
type Ident struct{ User, Host string }

// NewIdent normalizes an account name.
func NewIdent(user, host string) Ident { return Ident{User: user, Host: strings.ToLower(host)} }

// String is 'user'@'host' as MySQL's messages print accounts.
func (i Ident) String() string { return "'" + i.User + "'@'" + i.Host + "'" }

// UserRecord is one row of mysql.user.
type UserRecord struct {
	User       string `json:"user"`
	Host       string `json:"host"`
	Plugin     string `json:"plugin"`
	AuthString string `json:"auth_string,omitempty"`
	// Privs are the global privileges (GrantPriv: WITH GRANT OPTION).
	Privs      Priv `json:"privs,omitempty"`
	RequireSSL bool `json:"require_ssl,omitempty"`
	Locked     bool `json:"locked,omitempty"`
}

// DBRecord is one row of mysql.db: privileges on one database.
type DBRecord struct {
	User  string `json:"user"`
	Host  string `json:"host"`
	DB    string `json:"db"`
	Privs Priv   `json:"privs"`
}

// TableRecord is one row of mysql.tables_priv with the table's
// mysql.columns_priv rows (column name -> privileges).
type TableRecord struct {
	User    string          `json:"user"`
	Host    string          `json:"host"`
	DB      string          `json:"db"`
	Table   string          `json:"table"`
	Privs   Priv            `json:"privs,omitempty"`
	Columns map[string]Priv `json:"columns,omitempty"`
}

type dbName struct {
	Ident
	db string // lower-cased
}

type tableName struct {
	Ident
	db, table string // lower-cased
}

// Grants is the whole content of the privilege tables. Values are
// replaced, never modified, once a Grants is published in a Snapshot.
type Grants struct {
	Users  map[Ident]*UserRecord
	DBs    map[dbName]*DBRecord
	Tables map[tableName]*TableRecord
}

func newGrants() *Grants {
	return &Grants{Users: map[Ident]*UserRecord{}, DBs: map[dbName]*DBRecord{}, Tables: map[tableName]*TableRecord{}}
}

// clone copies the maps (not the records: edits replace records).
func (g *Grants) clone() *Grants {
	n := newGrants()
	for k, v := range g.Users {
		n.Users[k] = v
	}
	for k, v := range g.DBs {
		n.DBs[k] = v
	}
	for k, v := range g.Tables {
		n.Tables[k] = v
	}
	return n
}

const (
	kindUser   = "user"
	kindDB     = "db"
	kindTables = "tables"
)

func privPrefix() []byte {
	return codec.EncodeBytes([]byte{tablecodec.MetaPrefix}, []byte("PRIV"))
}

// versionKey holds the privilege tables' version.
var versionKey = codec.EncodeBytes([]byte{tablecodec.MetaPrefix}, []byte("PRIVVER"))

func recordKey(kind string, parts ...string) []byte {
	k := codec.EncodeBytes(privPrefix(), []byte(kind))
	for _, p := range parts {
		k = codec.EncodeBytes(k, []byte(p))
	}
	return k
}

// encode returns every row of g by key.
func (g *Grants) encode() (map[string][]byte, error) {
	out := make(map[string][]byte, len(g.Users)+len(g.DBs)+len(g.Tables))
	put := func(key []byte, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		out[string(key)] = b
		return nil
	}
	for k, u := range g.Users {
		if err := put(recordKey(kindUser, k.User, k.Host), u); err != nil {
			return nil, err
		}
	}
	for k, d := range g.DBs {
		if err := put(recordKey(kindDB, k.User, k.Host, k.db), d); err != nil {
			return nil, err
		}
	}
	for k, t := range g.Tables {
		if err := put(recordKey(kindTables, k.User, k.Host, k.db, k.table), t); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// decodeRow adds one stored row to g.
func (g *Grants) decodeRow(key, value []byte) error {
	rest := key[len(privPrefix()):]
	_, kind, err := codec.DecodeBytes(rest, nil)
	if err != nil {
		return fmt.Errorf("privilege: bad key %q: %w", key, err)
	}
	switch string(kind) {
	case kindUser:
		u := new(UserRecord)
		if err := json.Unmarshal(value, u); err != nil {
			return fmt.Errorf("privilege: corrupt user row: %w", err)
		}
		g.Users[NewIdent(u.User, u.Host)] = u
	case kindDB:
		d := new(DBRecord)
		if err := json.Unmarshal(value, d); err != nil {
			return fmt.Errorf("privilege: corrupt db row: %w", err)
		}
		g.DBs[dbName{NewIdent(d.User, d.Host), strings.ToLower(d.DB)}] = d
	case kindTables:
		t := new(TableRecord)
		if err := json.Unmarshal(value, t); err != nil {
			return fmt.Errorf("privilege: corrupt tables row: %w", err)
		}
		g.Tables[tableName{NewIdent(t.User, t.Host), strings.ToLower(t.DB), strings.ToLower(t.Table)}] = t
	default:
		return fmt.Errorf("privilege: unknown row kind %q", kind)
	}
	return nil
}
