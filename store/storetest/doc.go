// Package storetest is one in-process store for tests of the SQL node and
// the KV clients: the real transaction layer (store/txn: Percolator
// commands, latches, lock waiting, deadlock detection, in-memory
// pessimistic locks) and the real coprocessor (store/coprocessor) over an
// in-memory Pebble engine (memengine), served over gRPC on 127.0.0.1 with
// store/server's own BatchCommands and coprocessor fan-out, plus the PD
// services a client needs: regions and their leaders (GetRegion,
// GetRegionByID, ScanRegions), store addresses (GetStore), timestamps
// (GetTS, from the wall clock in PD's layout), ids (AllocID) and GC
// settings (SetGCConfig, kept but never acted on).
//
// # Usage
//
// New starts a Store; a test builds the client stack over it as a SQL node
// does, with the Store as PD:
//
//	st, _ := storetest.New(storetest.Options{Stores: 2, RegionKeys: 3})
//	kvc := kvclient.New(st, kvclient.Config{})
//	tc := txn.NewClient(kvc, st, txn.Config{})
//	storage := txn.NewStorage(st, kvc, tc) // a kv.Storage
//
// (storetest itself imports nothing of kvclient/: store packages may not,
// see internal/layout.)
//
// Several regions share the one engine. Split cuts them at keys;
// Options.RegionKeys splits every region holding more committed keys than
// that before each coprocessor request, so that transactions span regions
// (2PC, async commit, lock resolution across regions) and the SQL node
// merges many regions' coprocessor answers; Options.PageScanRows ends
// time-bounded coprocessor pages early, as a store whose page time ran out
// does, so that the client resumes regions page by page. With
// Options.Stores > 1 the
// regions' leaders are spread over several simulated store nodes (own
// listener, one shared engine and transaction layer), so clients batch per
// store and an index lookup's rows in regions another node leads are left
// to the SQL node, as on a real cluster.
//
// Inject answers matching requests with what a store would send instead
// (a region error, a key error, a gRPC status such as codes.Unknown for a
// write whose outcome is unknown), before running them or, with
// Fault.Applied, after (an answer lost once the write was applied): the
// fault injection of tests that check how the client and the SQL node
// react.
//
// # A cluster's behaviour
//
// What a cluster does to the routing of its clients is simulated over the
// one engine, for tests of the KV client:
//
//   - SetLeader moves a region's leadership to another node (or to none:
//     an election); the other nodes then answer NotLeader naming the new
//     leader, or nobody when the hint is off, as followers that have not
//     heard from it yet do. Leader tells who leads.
//   - SetPDLeader makes PD report a stale leader for a region (a PD behind
//     the heartbeats) until ClearPDLeader; SetPDError fails PD's region
//     lookups.
//   - StopNode stops a node: its listener closes (connections refused)
//     and its connections break, while PD still names it.
//   - RemovePeer removes a region's peer on a node (conf_ver + 1): that
//     node answers RegionNotFound for the region.
//   - NodeCalls counts one node's requests of a method, PDCalls PD's
//     region lookups; Fault.Store limits a fault to one node, Fault.Do
//     holds a request (a node that hangs, an answer held back) or acts
//     at that point, and a Fault without Answer lets the store answer.
//   - Options.IgnoreStoreBatch makes the nodes ignore the batched tasks
//     of coprocessor requests, as a store from before store batching.
//
// # What it is not
//
// There is no raft: no replication, no followers (replica and stale reads
// are served as leader reads), no region failover (a leader moves only
// when a test says so), no snapshots, no GC, nothing durable. A split happens only when a test or
// the RegionKeys check asks for it. Every node shares one transaction
// layer, so the deadlock detector and lock waits are local to it. Tests of
// those behaviours run real store nodes (store/server, tests/).
package storetest
