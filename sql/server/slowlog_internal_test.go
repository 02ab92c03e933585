package server

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
