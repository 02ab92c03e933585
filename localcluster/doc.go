// Package localcluster starts a Strata cluster as real processes on this
// machine: one PD member (or an etcd cluster of several), N store nodes and
// M SQL nodes, all on 127.0.0.1. It is the
// engine behind `make run` (cmd/playground) and behind the cluster-level
// tests in tests/, which use it to kill -9, restart and stop members.
//
// Every process writes its log to <DataDir>/logs/<name>.log. Data directories
// live under DataDir and survive Stop, so a restarted cluster (or process)
// recovers from disk. Children get SIGKILL when the launching process dies
// (Linux parent-death signal), so a crashed playground leaves no orphans.
//
// A Cluster is not safe for concurrent use; tests drive it from one goroutine.
package localcluster
