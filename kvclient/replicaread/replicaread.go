// Package replicaread carries the replica a read may be served by from the
// SQL session to the KV client, in a context value (TiDB's
// tidb_replica_read and stale reads). Only reads of non-locking statements
// carry one; writes, locking reads and lock resolution always go to the
// leader.
package replicaread

import "context"

// Mode says which replicas may serve a read.
type Mode uint8

const (
	// Leader: the region's leader only (the default).
	Leader Mode = iota
	// Follower: a follower or learner, after a read index from the leader
	// (linearizable); the leader when no other peer can serve it.
	Follower
	// LeaderAndFollower: any replica, spread evenly, followers after a
	// read index from the leader.
	LeaderAndFollower
	// Stale: any replica whose safe ts covers the read's timestamp, with
	// no leader contact (AS OF TIMESTAMP); the leader when one is not
	// ready (DataIsNotReady).
	Stale
)

type key struct{}

// With returns ctx carrying mode.
func With(ctx context.Context, mode Mode) context.Context {
	if mode == Leader && ctx.Value(key{}) == nil {
		return ctx
	}
	return context.WithValue(ctx, key{}, mode)
}

// From returns the mode ctx carries (Leader when none).
func From(ctx context.Context) Mode {
	m, _ := ctx.Value(key{}).(Mode)
	return m
}
