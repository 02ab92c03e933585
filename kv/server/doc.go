// Package server is a store node: the storepb.Store gRPC service (KV reads,
// 1PC writes, coprocessor, raft transport) wired onto a raftstore.Store, and
// the Server that owns the listener, the PD client and the store's lifetime.
//
// Request flow: reads (KvGet, KvScan, Coprocessor) first pass
// raftstore.ReadIndex, which returns only on the region's leader once a
// ReadIndex round and apply caught up (linearizable); the handler goroutine
// then checks the keys against the region, records its timestamp and waits
// for in-flight writes it must see (kv/concurrency), and reads MVCC data
// straight from the engine. Writes (KvOnePC) lock their keys in memory, get
// a commit_ts above every read served so far (synced to a fresh PD
// timestamp after each leadership this store gains), are proposed through
// the Ready loop, and the handler returns once the entry is applied; the
// keys stay locked until then even if the client has gone. Region problems come back as
// errorpb.Error in the response's region_error, per-key problems as
// kvrpcpb.KeyError; gRPC status errors are only used for a stopped store or
// a cancelled request.
//
// Shutdown (Server.Run after its context is cancelled): first the store hands
// the leadership of its regions to other replicas (raftstore
// TransferLeaders, bounded by Config.LeaderTransferTimeout) while it keeps
// serving raft messages and requests, so clients are redirected by NotLeader
// hints within milliseconds instead of waiting for an election timeout; then
// gRPC stops accepting, the raft loop stops (waiting requests are answered,
// raft streams from other stores end) and, once every handler has returned,
// Pebble is closed.
//
// Concurrency: handlers run on gRPC's goroutines; none is started per
// request. Everything persistent belongs to the raftstore (see its doc).
package server
