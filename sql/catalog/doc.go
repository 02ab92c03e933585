// Package catalog stores and caches the schema: databases and tables.
//
// # Persistence
//
// The catalog lives in the KV layer so that every SQL node, including one
// restarted a second ago, sees the same schema:
//
//	'm' + EncodeBytes("DB")  + EncodeBytes(lower(db name))                  -> DBInfo JSON
//	'm' + EncodeBytes("TBL") + EncodeInt(db id) + EncodeBytes(lower(name)) -> TableInfo JSON
//
// Names are case-insensitive (keys use the lower-cased name; the JSON keeps
// the spelling used at creation). Database and table ids come from PD's
// AllocID, so they are unique across the cluster and never reused. A CREATE
// writes its key with an Insert mutation: of two concurrent CREATEs of the
// same name exactly one commits, the other gets "already exists".
//
// # Columns
//
// TableInfo.Columns are the public columns, by offset; the columns an ADD
// or DROP COLUMN job is moving through the F1 states are in NonPublic
// (ForWrite gives the table with them appended, for UPDATE). A row value
// holds values by column id, so rows written under any version decode
// under any other: a column the value lacks decodes as its origin default
// (ColumnInfo.Origin), set when the column was added.
//
// # Foreign keys
//
// A table's FOREIGN KEYs are stored on the child (TableInfo.ForeignKeys,
// naming the parent by database and table name). Referrers answers the
// other direction, from a graph of every FK built once per loaded schema
// version on first use (foreignkey.go).
//
// # Cache and schema versions
//
// Each SQL node caches DBInfo/TableInfo by name for as long as the cluster's
// schema version ('m' + EncodeBytes("SchemaVersion")) stays the one it
// loaded, and trusts that only within a lease of its last check (version.go):
// every schema change bumps the version in its own transaction, with a diff
// of the table ids it invalidates, and the node drops its cache when it sees
// the version move. A transaction's commit is checked against the diffs
// since it began (8028). Catalog is safe for concurrent use; TableInfo
// values are immutable once published.
//
// # Schema sync and the commit window
//
// Each node keeps a sync row ('m' SchemaSync {node}) with the oldest
// version it or a running transaction of it uses, renewed every 10 s and
// expiring 30 s after the TSO timestamp fetched before it was written:
// liveness is judged on PD's clock, never by comparing nodes' wall
// clocks. A schema change waits until every live row shows its version,
// for two leases at most (WaitVersion). So a version committed after a
// node's last confirming read at ts r is followed by the next step of its
// job no sooner than two leases later, and CheckCommit vouches for a
// commit_ts up to r + 1.5 leases (kv.CommitGuard.MaxCommitTS; 1PC and
// async commit send it as max_commit_ts). A commit that gets a later
// commit_ts is checked again at it before its commit point: the version
// committed below commit_ts, read at commit_ts, may be at most one
// compatible step past the transaction's. A node whose row expired before
// its renewal committed fails its running transactions (the owner may
// have gone on without them).
//
// # Checks and the metadata lock
//
// Keep checks the version every quarter lease (--schema-lease, 1 s: a TSO
// and a point get); the cache is trusted within a lease of the last check's
// send time, past that a statement checks first and fails with 8027 if it
// cannot. A transaction records the version it began at and holds it until
// it ends (TxnBegin, TiDB's metadata lock): the node's sync row shows the
// oldest such version, so a DDL step waits for those transactions, at most
// two leases, instead of failing them. Its COMMIT fails with 8028, writing
// nothing, when a table it wrote appears in a diff since, unless that diff is
// one compatible index or column state step; an autocommit statement is then
// re-run (sql/session/retry.go).
package catalog
