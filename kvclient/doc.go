// Package kvclient is the SQL node's client for store nodes: it routes reads,
// writes and coprocessor requests to the leader of the region that holds each
// key, and rides through region errors (leader changes, splits, busy or dead
// stores) within a backoff budget.
//
// # Usage
//
// A SQL node builds one Client and the transaction client over it
// (cmd/sqlnode); the SQL layer reaches both only through kv.Storage, whose
// production implementation is kvclient/txn.Storage:
//
//	c := kvclient.New(pd, kvclient.Config{})
//	defer c.Close()
//	txns := txn.NewClient(c, pd, txn.Config{}) // package kvclient/txn
//	store := txn.NewStorage(pd, c, txns)       // a kv.Storage
//	t, err := store.Begin(ctx, kv.TxnOptions{Pessimistic: true})
//
// Transactions send Percolator commands through SendRequest (below);
// pushed-down reads go through Coprocessor / CoprocessorResolved. There is
// no read outside a transaction: the routing tests' one-shot Get and Scan
// live in oneshot_test.go.
//
// # Routing and retries
//
// Regions come from a cache (package kvclient/locate) loaded from PD with
// single-flight. Every request carries the region id, epoch and peer it was
// routed with; the store answers region errors, which the client handles:
//
//   - NotLeader with a leader hint: switch leader, retry at once.
//   - A connection refused or reset (the store died): try the region's next
//     peer at once, then after a backoff if that fails the same way.
//   - NotLeader without hint, store unreachable again, RPC timeout (reads):
//     try the region's next peer (round robin) after a backoff.
//   - EpochNotMatch: replace the cached regions with the current ones the
//     store sent, retry at once (no PD round trip).
//   - RegionNotFound, KeyNotInRegion: drop the region, reload it from PD.
//   - ServerIsBusy, StaleCommand: back off and retry (StaleCommand means the
//     proposal was dropped or its log index taken by another entry, so even
//     a write was not applied).
//
// Backoff is exponential with jitter (2ms doubling to 500ms per reason; to
// 100ms for not_leader and store_unreachable, so that a client waiting for
// an election finds the new leader soon after it is there) and
// bounded per call by Config.BackoffBudget, counted in time slept; the caller's
// ctx bounds wall time. When the budget is spent the call fails with
// ErrRegionUnavailable wrapping the last error.
//
// # Replica reads
//
// A read whose ctx carries a kvclient/replicaread mode (tidb_replica_read, AS OF
// TIMESTAMP) goes to a follower (Follower), any peer (LeaderAndFollower,
// Stale) spread round robin, with the request's replica_read or stale_read
// set; only gets, batch gets, scans and coprocessor requests. A region
// error from a replica (DataIsNotReady, no leader known there, leader out
// of its reach) or a failed send to it sends the rest of the call to the
// leader at once (strata_kvclient_replica_read_fallbacks_total); epoch and
// region errors update the cache as for leader reads.
//
// # Writes
//
// Every write is a transaction's: package kvclient/txn sends Percolator
// commands (a 1PC write is a prewrite with try_one_pc) through SendRequest,
// grouping its keys by region with GroupSorted / OnSorted. There is no
// one-shot write.
//
// A write command is resent only when its outcome is known not to have
// been applied: region errors NotLeader, RegionNotFound, EpochNotMatch,
// KeyNotInRegion, ServerIsBusy, StaleCommand, and transport failures before
// the request reached a connection (no HTTP/2 stream was created, e.g.
// connection refused). Any other failure (RPC timeout, connection lost
// after sending, unknown region errors, ctx cancelled in flight) returns an
// error wrapping ErrUndetermined: the write may or may not have been
// applied.
//
// A conflict is always reported as a WriteConflictError. The store may
// raise a write's commit_ts above the reads it already served (package
// store/concurrency), so the commit_ts of a conflicting version cannot tell an
// earlier attempt of our own write from another writer's; resending only
// writes that certainly did not apply is what keeps a resend from
// conflicting with itself.
//
// # Transaction commands
//
// SendRequest sends any store command (a Request: the BatchCommands
// request oneof) to a region once, with the routing and retry
// classification above; OnSorted and GroupSorted split sorted keys by
// region. Package kvclient/txn builds transactions on them.
//
// # Connections and batching
//
// One grpc.ClientConn per store address, created lazily and shared by all
// requests; addresses come from PD (GetStore), cached, and dropped when the
// store is unreachable so a moved store is found again.
//
// Every request to a store travels on one BatchCommands stream of that
// connection: a sender goroutine coalesces the requests queued while it was
// sending into the next message (up to 128), a receiver matches responses
// by id. When the stream is busy (Config.BatchBusyThreshold requests in
// flight, default 4) the sender holds a message up to Config.BatchMaxWait
// (default 5µs) until it carries a target number of requests (starting
// at 8, raised when waits fill it, lowered when they time out, at least
// 2), like client-go's max-batch-wait-time; below the threshold a request
// leaves at once. A request held there, like one queued, fails unsent if
// its caller gives up or the client closes. A broken stream fails only the requests in flight on it (as sent:
// writes among them are undetermined); requests not yet sent fail as
// unsent and are retried like a refused connection. A request whose handler
// failed comes back with the gRPC code a unary call would have failed with
// (error_code): Unavailable means it never ran and is sent again, Unknown
// that a write reached raft with an unknown outcome (undetermined, never
// resent). A caller that gives up
// waits only until its request was marshalled. Stores that answer
// Unimplemented get unary RPCs; Config.DisableBatch forces them.
//
// # Metrics
//
// strata_kvclient_rpc_duration_seconds{type,result} (per store RPC attempt),
// strata_kvclient_region_errors_total{type}, strata_kvclient_backoff_total
// and strata_kvclient_backoff_seconds_total{reason},
// strata_kvclient_undetermined_writes_total,
// strata_kvclient_batch_commands_size (requests per stream message),
// strata_kvclient_batch_wait_seconds (how long each held message was held),
// and from kvclient/locate
// strata_kvclient_region_cache_lookups_total{result=hit|miss} and
// strata_kvclient_pd_region_loads_total{result}.
//
// # Concurrency and ownership
//
// Client is safe for concurrent use. Keys and mutations passed in are not
// retained after a call returns and are never modified. Returned values and
// pairs are owned by the caller.
//
// # Defaults
//
// BackoffBudget is 20 s by default; a call that spends it reaches a MySQL
// client as ERROR 9005 (sql/errno ErrRegionUnavailable). A coprocessor
// request carries the tasks of up to CopStoreBatch (4) regions whose leaders
// share a store (TiDB's store batching, copbatch.go); the store answers each
// task on its own, and a task with a region error is retried alone, split
// again by region.
package kvclient
