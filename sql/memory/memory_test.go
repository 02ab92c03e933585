package memory

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/errno"
)

func code(err error) uint16 {
	var e *errno.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

func TestQuota(t *testing.T) {
	for _, tc := range []struct {
		name   string
		quota  int64
		spill  bool
		grow   int64
		wantSp bool
		want   uint16
	}{
		{"under quota", 1 << 20, true, 100 << 10, false, 0},
		{"over, may spill", 64 << 10, true, 100 << 10, true, 0},
		{"over, spilling off", 64 << 10, false, 100 << 10, false, ErrQuotaCode},
		{"no quota", 0, false, 10 << 20, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStatement(42)
			s.Start(tc.quota, tc.spill)
			defer s.End()
			tr := NewTracker(s)
			var spilled bool
			var err error
			for n := int64(0); n < tc.grow && err == nil && !spilled; n += 1 << 10 {
				spilled, err = tr.Grow(1 << 10)
			}
			require.Equal(t, tc.wantSp, spilled)
			require.Equal(t, tc.want, code(err))
			if tc.want != 0 {
				require.Contains(t, err.Error(), "[conn=42]")
			}
			// Consume (an operator that cannot spill) fails past the quota.
			err = NewTracker(s).Consume(tc.grow)
			if tc.quota > 0 && tc.grow > tc.quota {
				require.Equal(t, ErrQuotaCode, code(err))
			} else {
				require.NoError(t, err)
			}
			tr.Release()
		})
	}
}

func TestResultsDoNotCountTowardQuota(t *testing.T) {
	s := NewStatement(1)
	s.Start(64<<10, true)
	defer s.End()
	require.NoError(t, NewResultTracker(s).Consume(1<<20))
	require.Equal(t, int64(1<<20), s.Bytes())
	sp, err := NewTracker(s).Grow(32 << 10)
	require.NoError(t, err)
	require.False(t, sp)
}

func TestEndReleasesAndResets(t *testing.T) {
	before := NodeBytes()
	s := NewStatement(1)
	s.Start(0, true)
	require.NoError(t, NewTracker(s).Consume(1<<20))
	require.Equal(t, before+1<<20, NodeBytes())
	s.End()
	require.Equal(t, before, NodeBytes())
	require.Zero(t, s.Bytes())
	require.Equal(t, int64(1<<20), s.Peak())
}

func TestLimiterKillsLargestStatement(t *testing.T) {
	heap := uint64(0)
	l := &Limiter{readHeap: func() uint64 { return heap }, setSoft: func(int64) {}}
	l.SetLimit(100 << 20)
	small, big := NewStatement(1), NewStatement(2)
	small.Start(0, true)
	big.Start(0, true)
	defer small.End()
	defer big.End()
	ts, tb := NewTracker(small), NewTracker(big)
	require.NoError(t, ts.Consume(10<<20))
	require.NoError(t, tb.Consume(50<<20))

	heap = 90 << 20
	require.Nil(t, l.check(), "under the limit: nothing killed")
	heap = 120 << 20
	require.Same(t, big, l.check())
	err := tb.Consume(trackBatch)
	require.Equal(t, ErrServerLimitCode, code(err))
	require.Contains(t, err.Error(), "tidb_server_memory_limit")
	require.Contains(t, err.Error(), "[conn=2]")
	require.NoError(t, ts.Consume(trackBatch), "the smaller statement runs on")
	require.Nil(t, l.check(), "no second victim while the first unwinds")

	big.End()
	require.Same(t, small, l.check(), "still over once the victim ended: the next largest")
	l.SetLimit(0)
	require.Nil(t, l.check(), "no limit")
}

func TestParseServerLimit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"80%", 800, true},
		{"50 %", 0, false},
		{"100%", 0, false},
		{"1024", 1024, true},
		{"4GB", 4 << 30, true},
		{"512mb", 512 << 20, true},
		{"-1", 0, false},
		{"abc", 0, false},
	} {
		got, ok := ParseServerLimit(tc.in, 1000)
		require.Equal(t, tc.ok, ok, tc.in)
		if ok {
			require.Equal(t, tc.want, got, tc.in)
		}
	}
	require.NotZero(t, TotalMemory())
}
