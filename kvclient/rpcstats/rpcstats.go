// Package rpcstats counts the store RPCs one unit of work sends, for the
// work's own metrics: the SQL node attaches a Counter to a statement's
// context (With), kvclient adds each coprocessor RPC it sends under that
// context to it (From(ctx).AddCop), and the statement observes the total
// when it ends (strata_distsql_rpcs_per_statement).
//
// A Counter is safe for concurrent use (a statement's region tasks run in
// parallel); a nil *Counter ignores adds, so callers need not check From.
package rpcstats

import (
	"context"
	"sync/atomic"
)

// Counter is the RPCs of one unit of work.
type Counter struct {
	cop atomic.Int64
}

// AddCop counts n coprocessor RPCs (a batched RPC carrying several
// regions' tasks is one). No-op on a nil Counter.
func (c *Counter) AddCop(n int64) {
	if c != nil {
		c.cop.Add(n)
	}
}

// Cop returns the coprocessor RPCs counted so far (0 for nil).
func (c *Counter) Cop() int64 {
	if c == nil {
		return 0
	}
	return c.cop.Load()
}

type key struct{}

// With returns ctx carrying c.
func With(ctx context.Context, c *Counter) context.Context {
	return context.WithValue(ctx, key{}, c)
}

// From returns the Counter ctx carries, or nil.
func From(ctx context.Context) *Counter {
	c, _ := ctx.Value(key{}).(*Counter)
	return c
}
