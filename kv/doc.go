// Package kv is the contract between a SQL node and the key-value layer
// below it: what the SQL layer may ask of KV, and the errors it gets back.
//
//   - Storage (storage.go): timestamps, ids, coprocessor requests and
//     transactions (Begin); every read and write of data goes through a
//     Txn.
//   - ReadAt, GetAt, ScanAt, Update and Mutate (snapshot.go): a read-only
//     snapshot at a timestamp, and an optimistic write transaction, for
//     code outside a session's transaction (catalog, DDL, statistics,
//     privileges); ScanPages reads a large range of any Txn page by page.
//   - Txn, TxnOptions, LockOptions, CommitGuard, KvPair (txn.go): one
//     transaction, owned by a session; executors read and write only
//     through it.
//   - RegionAdmin, RegionInfo (regions.go) and GCSettings: SPLIT TABLE,
//     SHOW TABLE ... REGIONS and the cluster's GC settings.
//   - StreamWindowSize, ConnWindowSize, KeepaliveTime (transport.go): the
//     gRPC settings both ends of a SQL node's store connection use.
//   - The errors every implementation reports (KeyExistsError,
//     WriteConflictError, ErrUndetermined, ...), matched with errors.Is and
//     errors.As and turned into MySQL errors by sql/errno.
//
// The production implementation is kvclient/txn.Storage (PD, the KV client
// and the transaction client). The subpackages hold what store nodes and
// SQL nodes both build keys with: kv/codec (memcomparable encodings),
// kv/keys (a store's engine key layout) and kv/regionkeys (keys against a
// region's range). Nothing here imports the SQL layer, the KV client or the
// store.
//
// # Transport
//
// StreamWindowSize and ConnWindowSize are static HTTP/2 windows on both ends
// because gRPC's dynamic window sent a BDP ping per request / response
// exchange on the BatchCommands stream.
package kv
