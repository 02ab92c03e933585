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
// # Cache
//
// Each SQL node keeps a cache of DBInfo/TableInfo by name. A miss, or an entry
// older than CacheTTL, is reloaded from the KV layer at a fresh timestamp, so
// a table created or dropped by another SQL node is seen within CacheTTL (a
// dropped-and-recreated table is the only case where the TTL matters; a new
// table is found on the first miss). DDL on this node updates the cache at
// once. Catalog is safe for concurrent use; TableInfo values are immutable
// once published.
package catalog
