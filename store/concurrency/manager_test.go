package concurrency

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var bg = context.Background()

func TestWriteAfterReadIsOrderedAfterIt(t *testing.T) {
	m := New()
	require.NoError(t, m.ReadKey(bg, []byte("k"), 100))
	ts, release, err := m.LockKeys(bg, [][]byte{[]byte("k")}, 50)
	require.NoError(t, err)
	defer release()
	require.Equal(t, uint64(101), ts, "commit_ts raised above the read")

	ts2, release2, err := m.LockKeys(bg, [][]byte{[]byte("other")}, 500)
	require.NoError(t, err)
	release2()
	require.Equal(t, uint64(500), ts2, "a later commit_ts is kept")
}

func TestMaxTimestampReadDoesNotRaiseMaxTS(t *testing.T) {
	m := New()
	require.NoError(t, m.ReadKey(bg, []byte("k"), math.MaxUint64))
	require.NoError(t, m.ReadRange(bg, nil, nil, math.MaxUint64))
	require.Zero(t, m.MaxTS())
	m.SyncMaxTS(40)
	require.Equal(t, uint64(40), m.MaxTS())
}

// waitsFor runs read in a goroutine and reports whether it is still
// blocked after release has not been called, then releases and requires it
// to finish.
func requireBlockedUntilRelease(t *testing.T, read func(ctx context.Context) error, release func()) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- read(bg) }()
	// A blocked read cannot be observed directly; a bounded read proves it.
	ctx, cancel := context.WithTimeout(bg, 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, read(ctx), context.DeadlineExceeded, "read must wait for the in-flight write")
	release()
	require.NoError(t, <-done)
}

func TestReadWaitsForInFlightWrite(t *testing.T) {
	tests := []struct {
		name string
		read func(m *Manager) func(ctx context.Context) error
	}{
		{"key at later ts", func(m *Manager) func(context.Context) error {
			return func(ctx context.Context) error { return m.ReadKey(ctx, []byte("k"), 200) }
		}},
		{"key at max ts", func(m *Manager) func(context.Context) error {
			return func(ctx context.Context) error { return m.ReadKey(ctx, []byte("k"), math.MaxUint64) }
		}},
		{"range covering key", func(m *Manager) func(context.Context) error {
			return func(ctx context.Context) error { return m.ReadRange(ctx, []byte("a"), []byte("z"), 200) }
		}},
		{"unbounded range", func(m *Manager) func(context.Context) error {
			return func(ctx context.Context) error { return m.ReadRange(ctx, nil, nil, 200) }
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New()
			_, release, err := m.LockKeys(bg, [][]byte{[]byte("k")}, 100)
			require.NoError(t, err)
			requireBlockedUntilRelease(t, tt.read(m), release)
		})
	}
}

func TestReadNotBlockedByInvisibleOrUnrelatedWrite(t *testing.T) {
	m := New()
	_, release, err := m.LockKeys(bg, [][]byte{[]byte("k")}, 100)
	require.NoError(t, err)
	defer release()
	require.NoError(t, m.ReadKey(bg, []byte("k"), 99), "commit_ts 100 is not visible at 99")
	require.NoError(t, m.ReadKey(bg, []byte("j"), 200))
	require.NoError(t, m.ReadRange(bg, []byte("l"), []byte("z"), 200))
	require.NoError(t, m.ReadRange(bg, []byte("a"), []byte("k"), 200), "end is exclusive")
}

func TestWritesToOneKeyTakeTurns(t *testing.T) {
	m := New()
	_, release, err := m.LockKeys(bg, [][]byte{[]byte("a"), []byte("k")}, 100)
	require.NoError(t, err)
	requireBlockedUntilRelease(t, func(ctx context.Context) error {
		_, r, err := m.LockKeys(ctx, [][]byte{[]byte("k")}, 150)
		if err == nil {
			r()
		}
		return err
	}, release)
}

// TryReadKey answers what ReadKey would wait for, without waiting, and
// records the read either way (a write locking afterwards commits above).
func TestTryReadKeyRecordsAndNeverWaits(t *testing.T) {
	m := New()
	_, release, err := m.LockKeys(bg, [][]byte{[]byte("k")}, 100)
	require.NoError(t, err)
	require.True(t, m.TryReadKey([]byte("k"), 99), "commit_ts 100 is not visible at 99")
	require.True(t, m.TryReadKey([]byte("j"), 150))
	require.False(t, m.TryReadKey([]byte("k"), 200))
	require.Equal(t, uint64(200), m.MaxTS())
	release()
	require.True(t, m.TryReadKey([]byte("k"), 200))
	ts, release, err := m.LockKeys(bg, [][]byte{[]byte("k")}, 150)
	require.NoError(t, err)
	release()
	require.Equal(t, uint64(201), ts)
}
