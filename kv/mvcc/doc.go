// Package mvcc stores multi-versioned user data in Pebble and reads it at a
// timestamp.
//
// # Layout
//
// Every version of a user key is one Pebble key in the data key space:
//
//	DataPrefix | codec.EncodeBytes(userKey) | codec.EncodeUintDesc(commitTS)
//
// The memcomparable EncodeBytes makes all versions of a key contiguous and
// ordered like the user keys; the descending timestamp puts the newest version
// of a key first. The value is one flag byte (FlagPut or FlagDelete) followed
// by the user value (empty for a delete).
//
// This is the 1PC-only layout (no lock or write column yet): a version exists
// only once it is committed. Percolator's lock/write/data key spaces will sit
// next to it under other prefix bytes.
//
// # Concurrency and ownership
//
// Reader is a read-only view over anything that can make a Pebble iterator (a
// *pebble.DB, *pebble.Snapshot or an indexed *pebble.Batch). It is not safe
// for concurrent use; make one per request. Slices it returns are copies owned
// by the caller. The writer helpers (Put, Delete) only append to a caller-owned
// *pebble.Batch; the caller decides when and how it is committed (the
// raftstore applies a Raft entry's writes together with the region's applied
// index in one batch).
package mvcc
