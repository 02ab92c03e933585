// Package tso is Strata's timestamp oracle, server side.
//
// A timestamp is a uint64: physical milliseconds since the Unix epoch shifted
// left by LogicalBits, OR'ed with a logical counter < 1<<LogicalBits
// (ComposeTS / ParseTS). Timestamps handed out by one Allocator are strictly
// increasing.
//
// # Invariants
//
//   - Persist before use: the Allocator never hands out a timestamp whose
//     physical part is >= the window upper bound last saved through its
//     WindowStore. The window is extended (now + Window) by Tick, called
//     periodically by the owner, and synchronously by Generate only when the
//     clock or logical overflow has run past the saved bound.
//   - Never backwards: Sync (called when the owner becomes the timestamp
//     leader, including at start) loads the saved bound and resumes at
//     max(now, saved+1ms), so every timestamp of a new term is larger than
//     every timestamp of any earlier term. A wall clock that jumps backwards
//     is ignored (physical only moves forward).
//   - Keep pace with elapsed time: when the wall clock is behind the
//     timestamps handed out (or the saved bound a term resumes from) by
//     more than a window, physical advances with the monotonic clock
//     (Options.Monotonic) until the wall clock catches up, instead of
//     freezing for as long as the clock is behind (lock TTLs are judged by
//     timestamps). Behind by less than a window, as after a normal
//     failover, it waits for the wall clock, so leads do not accumulate.
//   - Reset (on losing leadership) drops the in-memory state; Generate fails
//     with ErrNotReady until the next Sync.
//
// # Concurrency
//
// All methods are safe for concurrent use. Generate takes one mutex for a few
// arithmetic operations; it performs I/O under that mutex only in the rare
// case described above (the bound must be extended before it can answer).
//
// # Usage
//
//	a := tso.NewAllocator(store, tso.Options{})
//	if err := a.Sync(ctx); err != nil { ... }   // on becoming leader
//	go func() { for range ticker.C { a.Tick(ctx) } }()
//	phys, logical, err := a.Generate(ctx, n)    // largest of n timestamps
//	a.Reset()                                   // on losing leadership
package tso
