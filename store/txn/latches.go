package txn

import (
	"context"
	"hash/maphash"
	"slices"
	"sync"
)

// Latches serialize commands on the same keys (TiKV's latches): a command
// holds the latches of all its keys from evaluation until its writes are
// applied, so no other command evaluates over a state it is about to
// change. Keys hash into a fixed number of slots; a command takes its slots
// in ascending order (no deadlock between commands) and each slot is a
// FIFO queue (no starvation). Safe for concurrent use.
type Latches struct {
	seed  maphash.Seed
	slots []latchSlot
}

type latchSlot struct {
	mu      sync.Mutex
	held    bool
	waiters []chan struct{}
}

// NewLatches returns latches with n slots (rounded up to a power of two).
func NewLatches(n int) *Latches {
	size := 1
	for size < n {
		size <<= 1
	}
	return &Latches{seed: maphash.MakeSeed(), slots: make([]latchSlot, size)}
}

func slotOf(l *Latches, key []byte) int {
	return int(maphash.Bytes(l.seed, key) & uint64(len(l.slots)-1))
}

// LatchGuard is a set of held latch slots.
type LatchGuard struct {
	l     *Latches
	slots []int
}

// Acquire waits for the latches of keys (in any order, duplicates allowed)
// and returns them held. On ctx's end it gives back what it took and returns
// ctx.Err(). keys are not retained.
func (l *Latches) Acquire(ctx context.Context, keys [][]byte) (*LatchGuard, error) {
	slots := make([]int, 0, len(keys))
	for _, k := range keys {
		slots = append(slots, slotOf(l, k))
	}
	slices.Sort(slots)
	slots = slices.Compact(slots)
	g := &LatchGuard{l: l, slots: slots[:0]}
	for _, i := range slots {
		if err := l.slots[i].lock(ctx); err != nil {
			g.Release()
			return nil, err
		}
		g.slots = append(g.slots, i)
	}
	return g, nil
}

// Release gives the latches to the next waiters. Safe to call on nil.
func (g *LatchGuard) Release() {
	if g == nil {
		return
	}
	for j := len(g.slots) - 1; j >= 0; j-- {
		g.l.slots[g.slots[j]].unlock()
	}
	g.slots = nil
}

func (s *latchSlot) lock(ctx context.Context) error {
	s.mu.Lock()
	if !s.held {
		s.held = true
		s.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	s.waiters = append(s.waiters, ch)
	s.mu.Unlock()
	select {
	case <-ch:
		return nil // handed over by unlock
	case <-ctx.Done():
	}
	s.mu.Lock()
	if i := slices.Index(s.waiters, ch); i >= 0 {
		s.waiters = slices.Delete(s.waiters, i, i+1)
		s.mu.Unlock()
		return ctx.Err()
	}
	s.mu.Unlock()
	// unlock handed us the slot meanwhile: pass it on.
	s.unlock()
	return ctx.Err()
}

func (s *latchSlot) unlock() {
	s.mu.Lock()
	if len(s.waiters) == 0 {
		s.held = false
		s.mu.Unlock()
		return
	}
	ch := s.waiters[0]
	s.waiters = slices.Delete(s.waiters, 0, 1)
	s.mu.Unlock()
	close(ch)
}
