// Package schedule is PD's cluster model and scheduler: the leader's
// in-memory view of stores and regions, the operators it runs on regions,
// and the checkers and schedulers that create them (PD's pkg/core,
// pkg/schedule and server/cluster in small).
//
// # Model
//
// Cluster holds every store (StoreInfo: metadata, last heartbeat and its
// stats) and every region (RegionInfo, in a RegionTree ordered by start
// key, with per-store indexes of peers and leaders). A RegionInfo is never
// mutated once stored: a heartbeat replaces it, so readers may keep a
// pointer without a lock. A store's state is derived when asked: Offline
// and Tombstone are persisted (metapb.StoreState), Disconnected (no
// heartbeat for DisconnectTime) and Down (none for MaxStoreDownTime) come
// from the heartbeat age. The caller (package pd) persists stores and
// regions in etcd before updating the model.
//
// # Operators
//
// An Operator is a sequence of steps on one region (transfer leader, add
// learner, promote learner, remove peer) with a kind, a timeout and a
// status. OperatorController keeps at most one per region and hands the
// current step to the region's leader in its heartbeat response
// (Dispatch): the heartbeat path takes one short lock and never waits for
// a scheduler. A step is finished when a heartbeat shows its effect; an
// operator whose region changed in a way it did not cause, or that outlives
// its timeout, is cancelled. Store limits (token buckets per store, in
// operations per minute, as TiDB's store limit) and per-kind schedule
// limits bound how much runs at once.
//
// # Checkers and schedulers
//
// Coordinator runs on the PD leader in its own goroutine: every
// ScheduleInterval it patrols the regions with the replica checker
// (missing, down, offline and extra replicas) and runs the schedulers
// (affinity, balance-leader, balance-region by size with a tolerance,
// hot-region by write flow). Affinity (affinity.go) keeps each configured
// table's regions on one store set with one leader store; the balance
// schedulers and location moves skip those regions. Everything is decided on the in-memory model, so the logic
// is tested without processes (*_test.go).
//
// # Settings
//
// Config (config.go, PD's HTTP API): DisconnectTime 20 s,
// max-store-down-time, store-limit (operations per store per minute),
// location-labels (the replica checker places replicas across them),
// schedule-interval (1 s) and affinity-tables (affinity.go has the rules).
// Region heartbeats carrying a stale epoch or term are rejected, and the
// leader's store checks each step before it runs it (raftstore's
// confchange.go).
package schedule
