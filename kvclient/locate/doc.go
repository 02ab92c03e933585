// Package locate is the SQL node's region cache: it maps a key to the region
// that holds it and to the peer believed to lead that region, loading misses
// from the placement driver (PD).
//
// # Structure
//
// Cached regions are kept in an immutable index sorted by start key;
// regions in it never overlap (inserting a region evicts every cached
// region that overlaps it). The index is a list of chunks of at most 64
// regions, each chunk holding its regions' start and end keys next to
// them (with 10,000 regions, following each search step's *Region to its
// key would be cache misses). A lookup loads the current index from an
// atomic pointer and does two binary searches: it takes no lock. Writers
// (Insert, Invalidate, OnEpochNotMatch) serialise on a mutex, copy the
// chunks they change plus the list of chunk pointers, and publish the new
// index; a lookup racing with them sees the old or the new index, and a
// region they evict is marked invalid before the new index is published.
// A map by region id, under the writers' mutex, serves invalidation.
// Misses are loaded from PD with single-flight: concurrent misses for the
// same key share one PD call.
//
// # Invariants
//
//   - A *Region's metapb.Region is immutable once inserted; callers must not
//     modify what Region.Meta returns. Routing changes (split, merge,
//     membership) replace the *Region with a new one and mark the old one
//     invalid, so a request that still holds the old *Region notices.
//   - The leader of a Region is an index into its peers, updated atomically
//     in place (NotLeader hints and peer round robin) without any lock.
//   - No I/O happens under the writers' mutex: PD calls are made outside
//     it and their result is inserted under it.
//
// # Concurrency
//
// RegionCache and Region are safe for concurrent use.
package locate
