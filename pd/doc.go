// Package pd is the placement driver server: it hands out timestamps and ids,
// registers stores, bootstraps the first region and routes keys to regions.
//
// # Ownership and persistence
//
// Every member embeds an etcd member (go.etcd.io/etcd/server/v3/embed); all
// metadata lives in etcd under /strata/ (see storage.go for the key layout):
// cluster id, bootstrap flag, stores, regions, the id allocator's persisted
// end and the TSO window bound. Members register themselves under
// /strata/members/ and campaign in an etcd election on /strata/leader.
//
// Only the leader serves: TSO, AllocID, stores, heartbeats, routing and
// bootstrap. A non-leader answers those with a NOT_LEADER header error
// (GetMembers is served by everyone); on the HTTP API it forwards them to
// the leader's status address, which each member publishes under
// /strata/member_http/ (members.go, which also adds and removes etcd
// members: POST /members, DELETE /members/name/{name}). Leadership state is one *term value
// (cluster view, id allocator, TSO allocator) swapped atomically; when the
// etcd session ends or ctx is cancelled, the term is dropped, its TSO
// allocator reset, and the member resigns and campaigns again.
//
// # GC safe points
//
// gc.go keeps the cluster's GC safe point (monotonic, persisted) and the
// service GC safe points (TiDB's UpdateServiceGCSafePoint: a service id, a
// TTL and a ts, persisted under /strata/gc/service_safe_point/): while one
// is live, UpdateGCSafePoint never raises the GC safe point above it. br
// holds one at its backup ts while a backup runs.
//
// # SQL node registry
//
// sqlnodes.go gives each SQL node a server id (1..2047, the high bits of
// its connection ids) under /strata/sql_nodes/, each key attached to an
// etcd lease the node renews with SQLNodeHeartbeat; the key also holds the
// node's MySQL and status addresses (GetSQLNodes lists them for global
// KILL and CLUSTER_PROCESSLIST). etcd deletes the key when the lease
// expires or the node releases it on shutdown; only then can another node
// claim the id (a fenced transaction on the key's absence), so no two live
// nodes share one.
//
// # Shutdown
//
// On ctx cancel a member hands over before it goes (Server.shutdown): the
// PD leader first moves etcd's raft leadership to another member if it holds
// it (bounded), while still serving; then its term ends (TSO stops) and its
// session lease is revoked, deleting its election key, so the next
// campaigner takes over within milliseconds rather than after LeaderLease;
// then Tso streams end with Unavailable, which clients treat as retryable
// (pdclient finds the new leader through GetMembers and resends), and gRPC
// and etcd stop. A killed leader is replaced only when its lease expires
// (LeaderLease after its last renewal, plus up to 500 ms until etcd revokes
// it); when the killed leader was also etcd's raft leader, an etcd election
// and the lease extension etcd grants on a leader change come first, so a
// new leader serves about 4-6 s after a kill -9. (Moving etcd leadership
// off a new PD leader at term start shortened that to 3-4 s, but the
// transfer dropped etcd proposals in flight and stretched SIGTERM and
// failover hand-overs past their bounds in CI, so it was taken out.)
//
// # Invariants
//
//   - Every etcd write of a term is a transaction guarded by "our leader key
//     still has the create revision we won with" (fencedKV), so a deposed
//     leader cannot overwrite its successor's state.
//   - TSO: the window bound is persisted before any timestamp under it is
//     handed out; a new term starts above the saved bound (package tso).
//   - TSO is answered only under the leader lease: the term's etcd lease is
//     kept alive by our own loop and its local expiry is the last renewal's
//     *send* time + TTL - margin (lease.go), which etcd cannot expire before.
//     Every Tso batch checks it after generating, so a leader that was
//     paused or partitioned past its lease refuses (NOT_LEADER, counted in
//     strata_pd_tso_lease_refused_total) instead of answering below a
//     timestamp its successor already handed out; the term then ends.
//   - Ids: the allocator's end is persisted before ids below it are used; a
//     new term starts at the persisted end. Ids are unique and increasing.
//   - Bootstrap happens once: region 1 (ids from the allocator) and the
//     bootstrap flag are written in one transaction guarded by the flag's
//     absence, after Replicas stores registered; peers go on the first
//     Replicas stores by id.
//   - A region heartbeat is applied only if its epoch is not older than PD's
//     record and no overlapping region has a newer version; changed region
//     metadata is persisted before the in-memory index is updated. The leader
//     peer is kept in memory only.
//
// # Concurrency
//
// Read RPCs (GetRegion, GetStore, ...) take a read lock on the in-memory
// view and never wait on etcd. Persisting updates are serialised by a write
// mutex and do their etcd I/O outside the read/write lock. Each Tso stream is
// served by its own goroutine (one per stream, not per request).
package pd
