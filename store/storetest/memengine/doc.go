// Package memengine is store/txn's Engine over an in-memory Pebble DB
// (vfs.NewMem) without raft, for tests: store/storetest serves it to real
// clients, and store/txn's own tests evaluate commands on it.
//
// Regions are metadata over the one key space: Split and SplitBySize cut
// them as a raftstore split does (the epoch version moves on, the
// transaction layer's in-memory locks are handed over first), ReadIndex
// answers the region errors a store answers (RegionNotFound, NotLeader to a
// request addressed to another peer than Options.Leader's, EpochNotMatch
// with every current region), and Write applies a command's writes at once
// if the region's epoch is still the one it was evaluated in, as raftstore
// checks at apply. Every region is led in term 1; LeaderGeneration moves
// only when a test calls BumpLeaderGeneration.
//
// It is not a replicated store: no raft log, no followers, no snapshots,
// no leader changes of its own, nothing durable. An Engine is safe for
// concurrent use; writes and splits are serialised by one mutex.
package memengine
