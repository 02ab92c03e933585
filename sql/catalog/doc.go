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
package catalog
