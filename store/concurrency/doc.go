// Package concurrency keeps a store's 1PC writes and its reads in timestamp
// order (the role of TiKV's concurrency manager).
//
// A write gets its commit_ts from PD before it reaches the store, and it
// becomes visible only when its raft entry applies. Without help, a read at
// ts_b > commit_ts that runs in between would miss it, and a read-modify-write
// built on that read would lose the write (a lost update under snapshot
// isolation). The Manager closes both gaps on the leader:
//
//   - maxTS: every read records its timestamp first. A write entering the
//     store locks its keys and raises its commit_ts above maxTS, so a read
//     that already happened at ts_b is ordered before the write.
//   - in-memory locks: from that moment until the write's outcome is known,
//     its keys are locked with the (final) commit_ts; a read at ts >= that
//     commit_ts of a locked key waits for the release, then reads the
//     applied data. Writes to a locked key wait for the earlier write.
//
// The two steps take one mutex, so for every read/write pair one of the two
// orders holds. Reads at the maximal timestamp (autocommit point gets) do not
// raise maxTS; they wait for in-flight writes of their key, so they still see
// every write acknowledged before they started.
//
// A write whose outcome is unknown (raftstore's ErrUndetermined: its peer
// installed a snapshot, was destroyed, or had its entry overwritten) is
// released too, and may still commit through another peer: the reads it
// let go must check that their peer still leads before they use their
// snapshot (store/txn doc.go, "Leader reads"). WaitingReads counts the reads
// waiting now.
//
// maxTS is per store and in memory: a store that becomes leader of a region
// must first raise maxTS to a fresh PD timestamp (SyncMaxTS), above every
// read the previous leader served. All methods are safe for concurrent use.
package concurrency
