// Package server is a store node: the storepb.Store gRPC service (KV reads,
// Percolator writes, coprocessor, raft transport) wired onto a raftstore.Store, and
// the Server that owns the listener, the PD client and the store's lifetime.
//
// Request flow: every KV command (KvGet, KvBatchGet, KvScan, the
// Percolator commands; a 1PC write is a KvPrewrite with try_one_pc) is
// served by store/txn's Storage over
// raftEngine: reads pass raftstore.ReadIndex (leader, lease or ReadIndex
// round, applied index caught up), record their timestamp and wait for
// in-flight async-commit/1PC writes they must see (store/concurrency), then
// take a Pebble snapshot, which they read (Percolator lock checks,
// store/mvcc) only if the peer still leads in the term it led in before the
// ReadIndex (txn.ReadCheck; store/txn doc.go, "Leader reads": the wait may
// have ended because the region left this peer), else NotLeader. The
// coprocessor, its index lookups (rows of a region that stopped leading go
// back to the SQL node) and the ReadIndex RPC of follower reads (checked
// after the applied index is taken) follow the same order. Writes take
// per-key latches, are evaluated on the leader, and their plain writes
// (raft_cmdpb) are proposed with raftstore.Propose; the handler returns
// once they are applied here, and the latches stay held until then even if
// the client has gone. Reads with replica_read or stale_read are served by
// any replica (replicaread.go: the leader's half of a follower read is the
// ReadIndex RPC). Coprocessor reads the same way through
// coprocessor.Execute, one region per request plus, with store batching
// (CoprocessorRequest.tasks), more regions run concurrently and answered
// each in its own StoreBatchTaskResponse (region error, lock or data).
// BatchCommands multiplexes all of these on one
// stream (a bounded worker pool per stream; pessimistic lock requests,
// which may wait for other transactions, on a separate bounded set; a
// point get that needs no waiting, a lease read of a key no in-flight
// write holds, is served on the receiving goroutine by
// txn.Storage.GetLocal, with one lease check and one concurrency-manager
// check like any get, and otherwise goes to a worker, which finishes it
// from where it stopped without checking the lease or the concurrency
// manager again; its response and the message carrying it are one
// allocation each). KvDeleteRange
// (deleterange.go) removes a range of one region in all key spaces with one
// raft command, without latches, for the SQL node's GC leader (the ranges
// of dropped tables and indexes once the GC safe point passed the drop).
// KvExport and KvIngest (backup.go) serve br (package br): a leader writes
// what a read at a backup ts sees of its range as one SST file into a
// shared directory (paced by one rate limiter per store), and reads such a
// file back into raft as committed versions, in ~1 MiB commands.
// Every read and write response carries the store's side of the request
// (kvrpcpb.ExecDetails, execdetails.go, after TiKV's ExecDetailsV2): the
// queue wait (a stream's worker, a coprocessor slot), the ReadIndex or
// lease wait, the concurrency manager's wait, Pebble reads and
// processing, and for a write its latch wait and the raft round of its
// proposal (raftstore.ProposeTimed: propose wait, persist, commit,
// apply); strata_store_request_stage_seconds observes the same stages.
// They are measured with one clock reading per stage boundary and cost
// one allocation per response (store/txn's NewReadDetails).
// Region problems come back as errorpb.Error in the response's
// region_error, per-key problems as kvrpcpb.KeyError; gRPC status errors
// are only used for a stopped store, a cancelled request, or a write whose
// outcome is unknown (codes.Unknown); on the BatchCommands stream the same
// code travels in the response's error_code beside the message.
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
//
// # Deadlock detection and index lookups
//
// The deadlock detector's wait-for graph lives on the store leading the
// region of the empty key; other stores send it their waits through the
// Detect RPC (detector.go), looking the detector store up in PD. An index
// lookup pushed into a coprocessor request (rowLookup) reads a row itself
// only when raftstore.LeasedRegion says this store leads the row's region
// with a published lease of which half is left, or a ReadIndex succeeds
// because its peer leads; after the concurrency manager's check of the key it
// reads from one engine view per batch of entries at start_ts with lock
// checks. Every other row goes back marked remote
// (strata_coprocessor_index_lookup_rows_total).
package server
