// Package privilege keeps a SQL node's users and privileges: MySQL's
// mysql.user, mysql.db, mysql.tables_priv and mysql.columns_priv as KV
// catalog rows shared by every SQL node, an immutable per-node snapshot of
// them, and the account statements (CREATE / ALTER / DROP / RENAME USER,
// SET PASSWORD, GRANT, REVOKE, SHOW GRANTS). TiDB's pkg/privilege/privileges
// is the model.
//
// # Persistence
//
//	'm' + EncodeBytes("PRIV") + EncodeBytes("user")   + user + host            -> UserRecord JSON
//	'm' + EncodeBytes("PRIV") + EncodeBytes("db")     + user + host + db       -> DBRecord JSON
//	'm' + EncodeBytes("PRIV") + EncodeBytes("tables") + user + host + db + tbl -> TableRecord JSON (with its column privileges)
//	'm' + EncodeBytes("PRIVVER")                                              -> version (8 bytes, big endian)
//
// (each name EncodeBytes-encoded; hosts, databases and tables lower-cased).
// Every change is one optimistic transaction that reads the version and all
// rows at its start_ts, writes the changed rows and version+1: two
// concurrent changes conflict on the version key and the loser is retried,
// so changes are serializable. The first SQL node to find no version key
// bootstraps the tables (root@'%' with ALL PRIVILEGES WITH GRANT OPTION and
// the configured initial password) with an Insert of the version key.
//
// # Cache and invalidation
//
// Each SQL node holds one immutable Snapshot (atomic pointer). It is
// replaced when a change commits on this node, when the poller (Run, every
// PollInterval, default 500 ms) reads a new version, and at every login
// (Refresh: concurrent callers share one version read), so a change made on
// another node is enforced here within PollInterval for running
// connections and at once for new ones. A statement's check is an atomic
// load, a pointer compare and bit tests on the session's resolved User; it
// allocates nothing when the account's global privileges cover the
// statement.
//
// With SkipGrantTables (sqlnode --skip-grant-tables) every login succeeds
// without a password check and every check passes; the account statements
// still write the tables (operations.md describes the recovery).
//
// # Logins and checks
//
// A login (sql/server handshake.go) matches user@host in the snapshot in
// MySQL's order (most specific host first, named users before anonymous),
// runs the account's plugin, and refuses a locked account (3118) and REQUIRE
// SSL without TLS. sql/session checks every statement at dispatch
// (privs.go): the session's account is re-resolved once per snapshot; when
// its global privileges do not cover the statement, its table references get
// SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER and INDEX checks at
// global, database, table and (single-table statements) column level:
// 1142, 1143, 1044 or 1227 (stmts.go).
package privilege
