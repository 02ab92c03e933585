package tso

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type windowStore struct {
	mu    sync.Mutex
	bound int64
	saves int
	fail  error
}

func (m *windowStore) LoadWindow(context.Context) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bound, nil
}

func (m *windowStore) SaveWindow(_ context.Context, b int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	m.bound = b
	m.saves++
	return nil
}

func (m *windowStore) get() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bound
}

// fakeClock is a wall clock (ms, which a test may step anywhere) and a
// monotonic one (mono) that only advance moves.
type fakeClock struct{ ms, mono atomic.Int64 }

func (c *fakeClock) now() time.Time           { return time.UnixMilli(c.ms.Load()) }
func (c *fakeClock) monotonic() time.Duration { return time.Duration(c.mono.Load()) * time.Millisecond }
func (c *fakeClock) advance(ms int64)         { c.ms.Add(ms); c.mono.Add(ms) }

func newTestAllocator(t *testing.T, st *windowStore, clk *fakeClock) *Allocator {
	t.Helper()
	a := NewAllocator(st, Options{Now: clk.now, Monotonic: clk.monotonic, Window: 3 * time.Second})
	require.NoError(t, a.Sync(context.Background()))
	return a
}

func TestComposeParse(t *testing.T) {
	for _, tc := range []struct{ p, l int64 }{
		{0, 0}, {1, 0}, {0, 1}, {1700000000000, MaxLogical - 1}, {1 << 40, 12345},
	} {
		ts := ComposeTS(tc.p, tc.l)
		p, l := ParseTS(ts)
		require.Equal(t, tc.p, p)
		require.Equal(t, tc.l, l)
	}
	require.Less(t, ComposeTS(5, MaxLogical-1), ComposeTS(6, 0))
}

func TestGenerateNotReady(t *testing.T) {
	a := NewAllocator(&windowStore{}, Options{})
	_, _, err := a.Generate(context.Background(), 1)
	require.ErrorIs(t, err, ErrNotReady)
	require.NoError(t, a.Sync(context.Background()))
	_, _, err = a.Generate(context.Background(), 1)
	require.NoError(t, err)
	a.Reset()
	_, _, err = a.Generate(context.Background(), 1)
	require.ErrorIs(t, err, ErrNotReady)
	_, _, err = NewAllocator(&windowStore{}, Options{}).Generate(context.Background(), uint32(MaxLogical))
	require.ErrorIs(t, err, ErrBadCount)
}

func TestGenerateConcurrentStrictlyIncreasing(t *testing.T) {
	st := &windowStore{}
	a := NewAllocator(st, Options{})
	require.NoError(t, a.Sync(context.Background()))
	const workers, per = 8, 2000
	out := make([][]uint64, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last uint64
			for i := range per {
				p, l, err := a.Generate(context.Background(), uint32(1+i%5))
				if err != nil {
					t.Error(err)
					return
				}
				ts := ComposeTS(p, l)
				if ts <= last {
					t.Errorf("not increasing: %d after %d", ts, last)
				}
				last = ts
				if p >= st.get() {
					t.Errorf("physical %d not below persisted bound", p)
				}
				out[w] = append(out[w], ts)
			}
		}()
	}
	wg.Wait()
	seen := map[uint64]bool{}
	for _, o := range out {
		for _, ts := range o {
			require.False(t, seen[ts], "duplicate %d", ts)
			seen[ts] = true
		}
	}
}

func TestWindowPersistedBeforeUse(t *testing.T) {
	clk := &fakeClock{}
	clk.ms.Store(1_000_000)
	st := &windowStore{}
	a := newTestAllocator(t, st, clk)
	require.Equal(t, int64(1_003_000), st.get())

	// The clock runs past the bound without Tick: timestamps stay below it.
	clk.advance(10_000)
	p, _, err := a.Generate(context.Background(), 1)
	require.NoError(t, err)
	require.Equal(t, int64(1_002_999), p)

	// Tick extends the window, then the clock is used again.
	require.NoError(t, a.Tick(context.Background()))
	require.Equal(t, int64(1_013_000), st.get())
	p, _, err = a.Generate(context.Background(), 1)
	require.NoError(t, err)
	require.Equal(t, int64(1_010_000), p)

	// Tick does not save while most of the window remains.
	saves := st.saves
	clk.advance(500)
	require.NoError(t, a.Tick(context.Background()))
	require.Equal(t, saves, st.saves)
	clk.advance(600)
	require.NoError(t, a.Tick(context.Background()))
	require.Equal(t, saves+1, st.saves)
}

func TestLogicalOverflow(t *testing.T) {
	clk := &fakeClock{}
	clk.ms.Store(5_000)
	st := &windowStore{}
	a := newTestAllocator(t, st, clk)
	big := uint32(MaxLogical/2 + 1)
	p1, l1, err := a.Generate(context.Background(), big)
	require.NoError(t, err)
	require.Equal(t, int64(5_000), p1)
	require.Equal(t, int64(big), l1)
	// Second batch does not fit into the same millisecond: physical advances
	// although the clock did not move.
	p2, l2, err := a.Generate(context.Background(), big)
	require.NoError(t, err)
	require.Equal(t, int64(5_001), p2)
	require.Equal(t, int64(big), l2)

	// Exhaust the window: the allocator must persist a new bound first.
	for i := 0; i < 6000; i++ {
		p, _, err := a.Generate(context.Background(), big)
		require.NoError(t, err)
		require.Less(t, p, st.get())
	}
	require.Greater(t, st.get(), int64(8_000))

	// If the save fails, nothing past the bound is handed out.
	st.mu.Lock()
	st.fail = errors.New("boom")
	bound := st.bound
	st.mu.Unlock()
	for {
		p, _, err := a.Generate(context.Background(), big)
		if err != nil {
			require.ErrorContains(t, err, "boom")
			break
		}
		require.Less(t, p, bound)
	}
}

func TestSyncNeverGoesBackwards(t *testing.T) {
	clk := &fakeClock{}
	clk.ms.Store(100_000)
	st := &windowStore{}
	a := newTestAllocator(t, st, clk)
	var last uint64
	for range 100 {
		p, l, err := a.Generate(context.Background(), 3)
		require.NoError(t, err)
		last = ComposeTS(p, l)
	}
	a.Reset()
	// New term with a clock that went backwards.
	clk.ms.Store(50_000)
	b := newTestAllocator(t, st, clk)
	p, l, err := b.Generate(context.Background(), 1)
	require.NoError(t, err)
	require.Greater(t, ComposeTS(p, l), last)
	require.Equal(t, int64(103_001), p)
}

// A wall clock stepped back by an hour, or a new leader whose clock is an
// hour behind the saved bound, must not freeze the physical part for that
// hour (lock TTLs are judged by it): it follows elapsed time until the
// wall clock catches up. Behind by less than a window (a normal failover)
// it waits for the wall clock, so failovers add no lasting lead.
func TestWallClockBehindFollowsElapsedTime(t *testing.T) {
	gen := func(a *Allocator) int64 {
		t.Helper()
		require.NoError(t, a.Tick(context.Background()))
		p, _, err := a.Generate(context.Background(), 1)
		require.NoError(t, err)
		return p
	}
	clk := &fakeClock{}
	clk.ms.Store(100_000_000)
	st := &windowStore{}
	a := newTestAllocator(t, st, clk)
	require.Equal(t, int64(100_000_000), gen(a))

	clk.ms.Add(-3_600_000) // stepped back an hour
	require.Equal(t, int64(100_000_000), gen(a), "never backwards")
	clk.advance(1_000)
	require.Equal(t, int64(100_001_000), gen(a), "a second later, a second further")

	// A new leader with the same clock resumes past the saved bound and
	// moves on with elapsed time too.
	a.Reset()
	b := newTestAllocator(t, st, clk)
	start := gen(b)
	require.Greater(t, start, int64(100_001_000))
	clk.advance(2_000)
	require.Equal(t, start+2_000, gen(b))

	// The wall clock catches up (jumps past): it rules again.
	clk.ms.Store(100_100_000)
	require.Equal(t, int64(100_100_000), gen(b))
	clk.advance(5)
	require.Equal(t, int64(100_100_005), gen(b))

	// A failover behind the saved bound by less than a window waits for
	// the wall clock instead of keeping the lead.
	b.Reset()
	clk.advance(500)
	c := newTestAllocator(t, st, clk)
	first := gen(c)
	require.Greater(t, first, clk.now().UnixMilli())
	clk.advance(first - clk.now().UnixMilli() - 1)
	require.Equal(t, first, gen(c), "frozen while the wall clock is behind by less than a window")
	clk.advance(10)
	require.Equal(t, clk.now().UnixMilli(), gen(c))
}

func BenchmarkGenerate(b *testing.B) {
	a := NewAllocator(&windowStore{}, Options{})
	require.NoError(b, a.Sync(context.Background()))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, _, err := a.Generate(context.Background(), 1); err != nil {
				b.Fatal(err)
			}
		}
	})
}
