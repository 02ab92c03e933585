// Package gcleader runs the cluster's GC rounds from a SQL node, as TiDB's
// gc_worker does: every SQL node heartbeats PD with the smallest start_ts
// of its running transactions; one of them at a time is GC leader (PD
// grants it, see pd/gc.go) and every run interval it
//
//  1. computes safe_point = now(TSO) − life time (tidb_gc_life_time,
//     never less than MinLifeTime), lowered to the smallest start_ts any
//     live SQL node reported, and skips the round if that is not above the
//     current safe point;
//  2. resolves every lock with start_ts <= safe_point, region by region
//     (KvScanLock in pages, then the client's lock resolver: locks of
//     finished transactions are committed or rolled back as their primary
//     says, expired ones rolled back, live ones waited for within the
//     client's backoff budget — the round fails if one stays);
//  3. raises PD's safe point (UpdateGCSafePoint);
//  4. deletes the key ranges dropped tables and indexes left whose drop
//     committed at or below the safe point (sql/deleterange; also in a
//     round that keeps the safe point, for ranges a stopped leader left),
//     each through kvclient.DeleteRange (a raft command per region, every
//     replica then compacts the range), and marks each done. A range that
//     fails stays pending for the next round; deleting one twice is
//     harmless (deleterange.go, Config.Meta).
//
// Stores delete the old versions of live keys themselves (store/gc).
//
// Concurrency: Leader.Run owns one goroutine. Two nodes acting as leader at
// once (a PD leader change, a paused process) is harmless: both compute
// safe points the same way, lock resolution is idempotent, and PD's safe
// point never moves back.
//
// # Settings and leadership
//
// The life time is never below 10 minutes (DefaultMinLifeTime, as TiDB). A
// transaction older than 24 h (kvclient/txn.MaxGCWait, TiDB's
// tidb_gc_max_wait_time) no longer holds the safe point back; its reads then
// fail with 9006. tidb_gc_life_time and tidb_gc_run_interval are GLOBAL
// variables kept by PD (SET GLOBAL, SELECT @@global...;
// sql/session/gcvars.go). PD grants the GC leadership in memory, and a new
// PD term grants none until every SQL node had a full heartbeat TTL to
// report its smallest start_ts (pd/gc.go).
package gcleader
