// Package memdb is a transaction's write buffer: the keys it wrote or
// locked, in key order, with statement staging and savepoints.
//
// Each key has one Entry: the operation to prewrite (Put, Del, Insert,
// CheckNotExists, or Lock for a key that is only locked) and Flags (Locked:
// this transaction holds the store's pessimistic lock on the key).
//
// # Staging
//
// Checkpoint returns a handle; every change after it is recorded in an undo
// log until the handle is released, and RevertTo(handle) undoes them (a
// failed statement rolls back only its own writes; ROLLBACK TO SAVEPOINT).
// Handles nest: a revert undoes every change newer than the handle,
// including those of checkpoints taken after it. Locked flags survive a
// revert: the lock is held in the store whatever the buffer says, and must
// be released at commit or rollback.
//
// # Structure
//
// The keys are indexed by an adaptive radix tree (art.go): inner nodes of
// 4, 16, 48 or 256 children keyed by one key byte, path compression and
// lazy expansion. Transactions write keys with long shared prefixes (every
// key of a table starts t{tableID}_r or t{tableID}_i{indexID}); a
// comparison tree compares those prefixes again at every level, the radix
// tree reads each key byte once. Nodes and leaves are pointer-free structs
// in slabs, naming each other by index; key bytes and value bytes live in
// two arenas of byte chunks: the garbage collector scans none of it, a
// small transaction's tree is one allocation, and Get and the iterators
// allocate nothing (keys are yielded from the arena).
//
// It replaced a B-tree (github.com/RaduBerinde/btreemap, degree 16, string
// keys, Entry values), which is faster in none of the shapes measured
// (Set/sysbench is a tie) and allocates fewer bytes, in far more
// allocations, only for the small fills.
// bench_test.go runs both on keys made by the real codec: sysbench (one
// row key), tpcc (one NewOrder: 34 writes of 24 clustered-index keys) and
// bulk (a 100,000-row insert with one secondary index: 200,000 keys). The
// medians of 5 interleaved runs of each on one shared, loaded 2-vCPU
// machine (spreads are wide: a median within 20% is a tie). Set fills a
// fresh buffer in one statement, Get reads every key and as many misses,
// Iter is the commit's walk (the ART's B/op there is the benchmark's own
// slice of keys), Revert rewrites every key in a statement that fails,
// Txn is a transaction's whole use (read, lock, write, walk):
//
//	                         time/op                   B/op          allocs/op
//	                    btree       ART            btree     ART     btree   ART
//	Set/sysbench        678ns     589ns   -13%      744B    896B         9     1
//	Set/tpcc           17.8µs    12.9µs   -28%    12.8KB  13.1KB        85    18
//	Set/bulk          414.0ms   102.4ms   -75%     145MB   145MB    435194   184
//	Get/sysbench        143ns      35ns   -75%       48B      0B         2     0
//	Get/tpcc           7137ns    2861ns   -60%     2624B      0B        68     0
//	Get/bulk          374.3ms    43.5ms   -88%      14MB      0B    400000     0
//	Iter/sysbench       236ns      42ns   -82%      128B      0B         6     0
//	Iter/tpcc          1594ns     969ns   -39%     1096B      0B        29     0
//	Iter/bulk          38.6ms    29.0ms   -25%       9MB     1MB    200005     0
//	Revert/sysbench     396ns      82ns   -79%      216B      0B         2     0
//	Revert/tpcc        13.9µs    3960ns   -72%     4032B      0B        68     0
//	Revert/bulk       594.8ms    63.5ms   -89%      46MB     2MB    400184     1
//	Txn/sysbench       1244ns     614ns   -51%     1048B    896B        18     1
//	Txn/tpcc           30.3µs    19.9µs   -34%    21.0KB  13.1KB       173    18
//	Txn/bulk          744.1ms   203.1ms   -73%     262MB   199MB   1035603   192
//
// The costs: a rewritten key's old value stays in the value arena until
// the buffer is dropped (a revert, though, truncates the arena back to
// before the first write it undoes), and a key a revert removes keeps its
// leaf and key bytes, marked dead (Get and the iterators skip it; writing
// the key again revives it).
//
// # Invariants and ownership
//
// Keys and values passed in are copied; slices returned by Get and the
// iterators alias the buffer and must not be modified. They stay valid
// until the key is written again or a revert undoes the write that stored
// them (keys: for the buffer's life). A MemDB is not safe for concurrent
// use.
package memdb
