// Package chaos runs Jepsen-style tests against a real Strata cluster
// (3 PD members, 3 stores, 2 SQL nodes as processes): 8 clients drive a workload
// through both SQL nodes while a nemesis injects faults on a seeded
// schedule, every operation is recorded as an invocation and a completion
// (ok, fail, or info when its outcome is unknown) with monotonic
// timestamps, and package checker checks the history.
//
// Nemesis families (a full run crosses each with every workload):
// process (kill -9 and restart a store, the PD leader, a SQL node, a
// store and the PD leader, every process; SIGSTOP / SIGCONT of a store,
// the PD leader or a SQL node past its leases), network (one member isolated, the busiest
// region's leader isolated, halves, a bridge of overlapping majorities, a
// one-way cut, 20 % packet loss, a 1 Mbit/s cap, a store's raft messages
// delayed 50-300 ms through failpoint raft-send), schedule (SPLIT TABLE
// under load, storms of leader transfers) and clock (every PD member, or
// a SQL node, restarted with its wall clock up to an hour off, or every PD
// member with its clock strobing up to 10 s ahead and back every
// 50-500 ms, then with the true one: STRATA_CLOCK_SKEW and
// STRATA_CLOCK_STROBE, so the binaries are built with the failpoints
// tag). The network family runs the cluster in network namespaces of the
// test's own (netlab_test.go: a bridge in a hub namespace, nftables rules
// and tc qdiscs inside the members' namespaces; needs root); the others
// run it on loopback ports.
//
// Workloads: bank (transfers keep a fixed total; reads in one statement
// and across statements of one transaction), register (per-key
// linearizable read / write / compare-and-set), append (Elle list-append
// transactions: snapshot isolation in optimistic mode, no cycle at all when
// a pessimistic transaction locks what it reads), set (acknowledged
// inserts survive), monotonic (a counter and PD's timestamps never go
// backwards).
//
// `make test` runs each workload once with one nemesis family for a short
// time (STRATA_CHAOS_SECONDS, default 20, the last 8 s a recovery tail
// without faults); `make chaos` runs every workload with every nemesis
// family for 60 s (STRATA_CHAOS_FULL=1; 24 runs, under 30 minutes) and
// writes one markdown report per run, plus a summary table, under
// STRATA_CHAOS_REPORT_DIR. STRATA_CHAOS_SEED replays a schedule (the seed
// is in every report; timing still differs between runs).
package chaos
