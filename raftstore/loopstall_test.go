package raftstore

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLoopStallWarning: an iteration that lasted an election timeout or
// more is logged with the time each phase took; a shorter one is not.
func TestLoopStallWarning(t *testing.T) {
	var buf bytes.Buffer
	s := &Store{cfg: Config{ElectionTicks: 10, RaftTick: 10 * time.Millisecond}, log: slog.New(slog.NewTextHandler(&buf, nil))}

	s.phases.begin(time.Now())
	s.phases.mark("inbox")
	s.endIteration()
	require.Empty(t, buf.String(), "an iteration shorter than the election timeout")

	s.phases.begin(time.Now().Add(-2 * s.electionTimeout()))
	s.phases.mark("inbox")
	s.phases.mark("persist")
	s.endIteration()
	out := buf.String()
	require.Contains(t, out, "level=WARN")
	require.Contains(t, out, "loop iteration took an election timeout or more")
	for _, k := range []string{"took=", "inbox=", "persist=", "rest="} {
		require.True(t, strings.Contains(out, k), "%s missing in %q", k, out)
	}
}
