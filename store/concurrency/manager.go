package concurrency

import (
	"bytes"
	"context"
	"math"
	"sync"
	"sync/atomic"
)

// Manager is a store's in-memory lock table and max read timestamp.
type Manager struct {
	mu    sync.Mutex
	maxTS uint64
	locks map[string]*lock
	// waiting counts the reads waiting for an in-flight write now.
	waiting atomic.Int64
}

type lock struct {
	commitTS uint64
	released chan struct{}
}

// New returns an empty Manager.
func New() *Manager { return &Manager{locks: map[string]*lock{}} }

// MaxTS is the largest read timestamp recorded (or synced) so far.
func (m *Manager) MaxTS() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.maxTS
}

// SyncMaxTS raises maxTS to ts (a fresh PD timestamp).
func (m *Manager) SyncMaxTS(ts uint64) {
	m.mu.Lock()
	m.raiseLocked(ts)
	m.mu.Unlock()
}

func (m *Manager) raiseLocked(ts uint64) {
	if ts != math.MaxUint64 && ts > m.maxTS {
		m.maxTS = ts
	}
}

// ResolveTS raises maxTS to ts and returns one below the lowest commit_ts
// of the writes in flight (math.MaxUint64 when none), under one mutex: a
// write that locks its keys later gets a commit_ts above ts. A region's
// resolved ts may not pass it (raftstore/replicaread.go).
func (m *Manager) ResolveTS(ts uint64) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.raiseLocked(ts)
	lowest := uint64(math.MaxUint64)
	for _, l := range m.locks {
		lowest = min(lowest, l.commitTS-1)
	}
	return lowest
}

// LockKeys waits until none of keys is locked by another write, then locks
// them all and returns the commit_ts to use: commitTS raised above every
// read recorded so far. release must be called once the write's outcome is
// known (applied, or certainly not applied). keys are not retained.
func (m *Manager) LockKeys(ctx context.Context, keys [][]byte, commitTS uint64) (ts uint64, release func(), err error) {
	for {
		m.mu.Lock()
		var busy *lock
		for _, k := range keys {
			if l, ok := m.locks[string(k)]; ok {
				busy = l
				break
			}
		}
		if busy == nil {
			if commitTS <= m.maxTS {
				commitTS = m.maxTS + 1
			}
			l := &lock{commitTS: commitTS, released: make(chan struct{})}
			names := make([]string, len(keys))
			for i, k := range keys {
				names[i] = string(k)
				m.locks[names[i]] = l
			}
			m.mu.Unlock()
			return commitTS, func() { m.release(names, l) }, nil
		}
		m.mu.Unlock()
		select {
		case <-busy.released:
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		}
	}
}

func (m *Manager) release(names []string, l *lock) {
	m.mu.Lock()
	for _, n := range names {
		if m.locks[n] == l {
			delete(m.locks, n)
		}
	}
	m.mu.Unlock()
	close(l.released)
}

// ReadKey records a read of key at ts and waits until no write that could
// be visible at ts (commit_ts <= ts) is in flight on key.
func (m *Manager) ReadKey(ctx context.Context, key []byte, ts uint64) error {
	for {
		m.mu.Lock()
		m.raiseLocked(ts)
		l, ok := m.locks[string(key)]
		m.mu.Unlock()
		if !ok || l.commitTS > ts {
			return nil
		}
		if err := m.wait(ctx, l); err != nil {
			return err
		}
	}
}

// Blocks reports whether ReadKey(key, ts) would wait now: an in-flight
// write holds key with a commit ts at or below ts. It waits for nothing and
// raises nothing.
func (m *Manager) Blocks(key []byte, ts uint64) bool {
	m.mu.Lock()
	l, ok := m.locks[string(key)]
	m.mu.Unlock()
	return ok && l.commitTS <= ts
}

// TryReadKey is ReadKey without the wait: it records the read of key at
// ts and reports true, or reports false when ReadKey would wait now (an
// in-flight write holds key with a commit ts at or below ts); the read is
// then recorded all the same, as ReadKey records it before waiting.
func (m *Manager) TryReadKey(key []byte, ts uint64) bool {
	m.mu.Lock()
	m.raiseLocked(ts)
	l, ok := m.locks[string(key)]
	m.mu.Unlock()
	return !ok || l.commitTS > ts
}

// ReadRange is ReadKey for every key in [start, end) (end nil: no bound).
// It scans the lock table, which holds only in-flight writes.
func (m *Manager) ReadRange(ctx context.Context, start, end []byte, ts uint64) error {
	for {
		m.mu.Lock()
		m.raiseLocked(ts)
		var blocking *lock
		for k, l := range m.locks {
			if l.commitTS <= ts && k >= string(start) && (len(end) == 0 || bytes.Compare([]byte(k), end) < 0) {
				blocking = l
				break
			}
		}
		m.mu.Unlock()
		if blocking == nil {
			return nil
		}
		if err := m.wait(ctx, blocking); err != nil {
			return err
		}
	}
}

// WaitingReads is the number of reads (ReadKey, ReadRange) waiting for an
// in-flight write now.
func (m *Manager) WaitingReads() int { return int(m.waiting.Load()) }

func (m *Manager) wait(ctx context.Context, l *lock) error {
	m.waiting.Add(1)
	defer m.waiting.Add(-1)
	select {
	case <-l.released:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
