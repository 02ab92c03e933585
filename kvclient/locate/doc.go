// Package locate is the SQL node's region cache: it maps a key to the region
// that holds it and to the peer believed to lead that region, loading misses
// from the placement driver (PD).
//
// # Structure
//
// Cached regions are kept in a slice sorted by start key; regions in the
// slice never overlap (inserting a region evicts every cached region that
// overlaps it). A lookup is a binary search under a read lock, over a
// parallel slice of the start keys (with 10,000 regions, following each
// step's *Region to its key would be cache misses). A map by
// region id serves invalidation. Misses are loaded from PD with single-flight:
// concurrent misses for the same key share one PD call.
//
// # Invariants
//
//   - A *Region's metapb.Region is immutable once inserted; callers must not
//     modify what Region.Meta returns. Routing changes (split, merge,
//     membership) replace the *Region with a new one and mark the old one
//     invalid, so a request that still holds the old *Region notices.
//   - The leader of a Region is an index into its peers, updated atomically
//     in place (NotLeader hints and peer round robin) without the cache lock.
//   - No I/O happens under the cache lock: PD calls are made outside it and
//     their result is inserted under a short write lock.
//
// # Concurrency
//
// RegionCache and Region are safe for concurrent use.
package locate
