package tso

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

var (
	// ErrNotReady is returned by Generate before Sync or after Reset: this
	// allocator is not (or no longer) the timestamp leader.
	ErrNotReady = errors.New("tso: allocator not ready (not leader)")
	// ErrBadCount is returned for a batch that cannot fit into one
	// physical millisecond.
	ErrBadCount = errors.New("tso: invalid count")
)

// DefaultWindow is how far ahead of the wall clock the persisted upper bound
// is kept.
const DefaultWindow = 3 * time.Second

// WindowStore persists the upper bound (in physical milliseconds) of the
// timestamps an Allocator may hand out.
type WindowStore interface {
	// LoadWindow returns the last saved bound, or 0 if none was ever saved.
	LoadWindow(ctx context.Context) (int64, error)
	// SaveWindow durably records bound. It must fail when the caller has
	// lost the right to hand out timestamps (for example leadership).
	SaveWindow(ctx context.Context, bound int64) error
}

// Options tunes an Allocator. Zero values select defaults.
type Options struct {
	// Window is how far ahead of now the bound is persisted (DefaultWindow).
	Window time.Duration
	// Now returns the wall clock (time.Now by default). Tests override it.
	Now func() time.Time
	// Monotonic returns a reading of a clock that never jumps (by default
	// the time elapsed since the process started, from Go's monotonic
	// clock). Tests override it together with Now.
	Monotonic func() time.Duration
	// Logger receives sync events (slog.Default with component=tso by default).
	Logger *slog.Logger
}

// Allocator hands out strictly increasing timestamps backed by a persisted
// window. See the package documentation for its invariants.
type Allocator struct {
	store  WindowStore
	window int64 // ms
	now    func() time.Time
	mono   func() time.Duration
	log    *slog.Logger

	// saveMu serialises window saves (Sync, extend) so the persisted bound
	// only grows and the in-memory limit never exceeds it. Lock order:
	// saveMu before mu; mu is never held across I/O.
	saveMu sync.Mutex

	mu       sync.Mutex
	ready    bool
	gen      uint64 // incremented by Sync and Reset
	physical int64
	logical  int64
	limit    int64 // persisted bound: handed-out physical < limit
	// ahead: the wall clock is behind the timestamps by more than a
	// window (it was stepped back, or this member took over from one
	// whose clock ran ahead); physical then follows the monotonic clock
	// from anchorPhys at anchorMono until the wall clock catches up.
	ahead      bool
	anchorPhys int64
	anchorMono time.Duration
}

// NewAllocator returns an allocator that is not ready until Sync succeeds.
func NewAllocator(store WindowStore, opts Options) *Allocator {
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Monotonic == nil {
		start := time.Now()
		opts.Monotonic = func() time.Duration { return time.Since(start) }
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default().With("component", "tso")
	}
	return &Allocator{
		store:  store,
		window: opts.Window.Milliseconds(),
		now:    opts.Now,
		mono:   opts.Monotonic,
		log:    opts.Logger,
	}
}

// clockLocked returns the physical time to hand out timestamps at, in ms:
// the wall clock, unless it is behind the timestamps already handed out
// (or the saved bound a new leader resumes from) by more than a window. A
// clock that far behind would freeze the physical part (only logical
// overflow would move it) until the wall clock caught up, minutes or hours
// later, and with it everything judged by timestamps: lock TTLs, as
// CheckTxnStatus compares them with a client's current timestamp. The
// physical part then advances with the monotonic clock instead, staying
// ahead of the wall clock by the same amount until the wall clock catches
// up. Behind by less than a window (the saved bound a normal failover
// resumes from), it waits for the wall clock as before, so failovers do not
// accumulate a lead. a.mu must be held.
func (a *Allocator) clockLocked() int64 {
	wall, mono := a.now().UnixMilli(), a.mono()
	if !a.ahead && a.ready && a.physical-wall > a.window {
		a.ahead, a.anchorPhys, a.anchorMono = true, a.physical, mono
		a.log.Warn("wall clock behind the timestamps handed out: physical time follows the monotonic clock",
			"behind_ms", a.physical-wall)
	}
	if a.ahead {
		if est := a.anchorPhys + (mono - a.anchorMono).Milliseconds(); est > wall {
			return est
		}
		a.ahead = false
		a.log.Info("wall clock caught up with the timestamps")
	}
	return wall
}

// Sync loads the persisted bound, persists a new window starting at
// max(now, saved+1ms) and makes the allocator ready. Call it when becoming
// the timestamp leader.
func (a *Allocator) Sync(ctx context.Context) error {
	a.saveMu.Lock()
	defer a.saveMu.Unlock()
	a.Reset()
	saved, err := a.store.LoadWindow(ctx)
	if err != nil {
		return fmt.Errorf("tso: load window: %w", err)
	}
	wall, mono := a.now().UnixMilli(), a.mono()
	start := max(wall, saved+1)
	bound := start + a.window
	if err := a.store.SaveWindow(ctx, bound); err != nil {
		return fmt.Errorf("tso: save window: %w", err)
	}
	a.mu.Lock()
	a.gen++
	a.ready = true
	a.physical, a.logical, a.limit = start, 0, bound
	a.ahead, a.anchorPhys, a.anchorMono = start-wall > a.window, start, mono
	a.mu.Unlock()
	a.log.Info("tso synced", "saved_bound", saved, "start_physical", start, "bound", bound, "wall_behind_ms", start-wall)
	return nil
}

// Reset drops the in-memory state; Generate fails until the next Sync.
func (a *Allocator) Reset() {
	a.mu.Lock()
	a.gen++
	a.ready = false
	a.physical, a.logical, a.limit = 0, 0, 0
	a.ahead = false
	a.mu.Unlock()
}

// Ready reports whether Generate can currently succeed.
func (a *Allocator) Ready() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ready
}

// Generate reserves count consecutive timestamps (count 0 means 1) within one
// physical millisecond and returns the largest: the batch is
// (physical, logical-count+1) .. (physical, logical).
func (a *Allocator) Generate(ctx context.Context, count uint32) (physical, logical int64, err error) {
	n := int64(count)
	if n == 0 {
		n = 1
	}
	if n >= MaxLogical {
		return 0, 0, fmt.Errorf("%w: %d >= %d", ErrBadCount, n, MaxLogical)
	}
	for {
		a.mu.Lock()
		if !a.ready {
			a.mu.Unlock()
			return 0, 0, ErrNotReady
		}
		clock := a.clockLocked()
		now := min(clock, a.limit-1)
		if now > a.physical {
			a.physical, a.logical = now, 0
		}
		if a.logical+n >= MaxLogical {
			if a.physical+1 >= a.limit {
				// Logical space of the last persisted millisecond is used
				// up: extend the window before answering.
				gen, need := a.gen, a.physical+1
				a.mu.Unlock()
				if err := a.extend(ctx, gen, max(clock, need)+a.window); err != nil {
					return 0, 0, err
				}
				continue
			}
			a.physical, a.logical = a.physical+1, 0
		}
		a.logical += n
		physical, logical = a.physical, a.logical
		a.mu.Unlock()
		return physical, logical, nil
	}
}

// Tick extends the persisted window when less than two thirds of it remain.
// The owner calls it periodically (every 50–500 ms) while leader. An error
// means the window could not be saved; if it persists, Generate will block on
// extending the window itself and eventually fail.
func (a *Allocator) Tick(ctx context.Context) error {
	a.mu.Lock()
	ready, gen, limit := a.ready, a.gen, a.limit
	now := a.clockLocked()
	a.mu.Unlock()
	if !ready {
		return ErrNotReady
	}
	if limit-now > a.window*2/3 {
		return nil
	}
	return a.extend(ctx, gen, now+a.window)
}

// extend persists bound (if larger than the current one) and raises the
// in-memory limit, provided the allocator is still in generation gen.
func (a *Allocator) extend(ctx context.Context, gen uint64, bound int64) error {
	a.saveMu.Lock()
	defer a.saveMu.Unlock()
	a.mu.Lock()
	if !a.ready || a.gen != gen {
		a.mu.Unlock()
		return ErrNotReady
	}
	cur := a.limit
	a.mu.Unlock()
	if bound <= cur {
		return nil
	}
	if err := a.store.SaveWindow(ctx, bound); err != nil {
		return fmt.Errorf("tso: save window: %w", err)
	}
	a.mu.Lock()
	if a.ready && a.gen == gen && bound > a.limit {
		a.limit = bound
	}
	a.mu.Unlock()
	return nil
}
