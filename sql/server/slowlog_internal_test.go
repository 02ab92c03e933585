package server

import (
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv/execdetails"
)

// TestSlowLogRotates: a file that would pass its size is renamed to .1
// (the older ones shifted, the oldest dropped) and a new one started; a
// long statement is cut at 4 KiB with its length.
func TestSlowLogRotates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slow.log")
	l, err := OpenSlowLog(path, time.Millisecond, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer l.Close()
	l.maxBytes = 1000
	require.True(t, l.Slow(time.Millisecond))
	require.False(t, l.Slow(time.Microsecond))
	for i := range 40 {
		l.Write(SlowEntry{Type: "Select", Query: strings.Repeat("x", 100) + string(rune('a'+i%26))})
	}
	for _, p := range []string{path, path + ".1", path + ".2", path + ".3", path + ".4"} {
		st, err := os.Stat(p)
		require.NoError(t, err, p)
		require.LessOrEqual(t, st.Size(), int64(1000), p)
	}
	_, err = os.Stat(path + ".5")
	require.True(t, os.IsNotExist(err), "at most 4 old files")

	l.Write(SlowEntry{Type: "Select", Query: strings.Repeat("y", 5000)})
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(b), "...(5000 bytes)")

	off, err := OpenSlowLog("", -1, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.False(t, off.Slow(time.Hour), "a negative threshold logs nothing")
}

// TestStmtSummaryWindows: a window's statements move to the history when
// the next begins (24 kept); past 3,000 digests a window counts the rest
// under an empty digest; P99 is its bucket's bound, never above the max.
// noStages is a statement that spent no time in any stage.
var noStages [execdetails.NumStages]time.Duration

func TestStmtSummaryWindows(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	s := newStmtSummary(t0)
	dg := stmtDigest{normalized: "select ?", digest: "d1"}
	for i := range 100 {
		s.add(t0.Add(time.Minute), "test", "Select", dg, "SELECT 1", false, time.Duration(i+1)*time.Millisecond, 1, false, &noStages)
	}
	cur := s.rows(t0.Add(time.Minute), false)
	require.Len(t, cur, 1)
	require.EqualValues(t, 100, cur[0].ExecCount)
	require.Equal(t, 100*time.Millisecond, cur[0].MaxLatency)
	require.Equal(t, time.Millisecond, cur[0].MinLatency)
	require.Equal(t, 100*time.Millisecond, cur[0].P99Latency, "the 99th of 1..100 ms falls in the 65-131 ms bucket, capped at the max")

	s.add(t0.Add(31*time.Minute), "test", "Select", dg, "SELECT 2", false, time.Millisecond, 1, false, &noStages)
	hist := s.rows(t0.Add(31*time.Minute), true)
	require.Len(t, hist, 1)
	require.EqualValues(t, 100, hist[0].ExecCount)
	require.Equal(t, t0, hist[0].Begin)
	cur = s.rows(t0.Add(31*time.Minute), false)
	require.EqualValues(t, 1, cur[0].ExecCount)
	for w := range 30 {
		s.add(t0.Add(time.Duration(62+31*w)*time.Minute), "test", "Select", dg, "SELECT 3", false, time.Millisecond, 1, false, &noStages)
	}
	require.Len(t, s.rows(t0.Add(2000*time.Minute), true), stmtSummaryHistory)

	s = newStmtSummary(t0)
	for i := range stmtSummaryMaxStmts + 10 {
		s.add(t0, "test", "Select", stmtDigest{digest: strconv.Itoa(i)}, "q", false, time.Millisecond, 0, false, &noStages)
	}
	cur = s.rows(t0, false)
	require.Len(t, cur, stmtSummaryMaxStmts+1)
	require.Equal(t, "", cur[0].Digest, "the overflow row, 10 executions")
	require.EqualValues(t, 10, cur[0].ExecCount)
}
