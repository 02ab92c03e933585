package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRaftLogGC: leaders compact the raft log once every replica has the
// entries, on every replica; a stopped follower holds compaction back to
// what it has, so after a restart it catches up from the log (there are no
// snapshots yet); a restarted cluster serves everything from a compacted
// log.
func TestRaftLogGC(t *testing.T) {
	c := newTestCluster(t, func(cfg *Config) {
		cfg.RaftLogGCInterval = 50 * time.Millisecond
		cfg.RaftLogGCThreshold = 10
	})
	want := map[string]string{}
	write := func(from, to int) {
		for i := from; i < to; i++ {
			k, v := fmt.Sprintf("k%03d", i), fmt.Sprintf("v%d", i)
			c.put(k, v)
			want[k] = v
		}
	}
	write(0, 40)
	rid := c.region().GetId()
	truncated := func(i int) uint64 {
		idx, err := c.nodes[i].srv.Store().TruncatedIndex(rid)
		if err != nil {
			return 0 // the store has not created its peer yet
		}
		return idx
	}
	require.Eventually(t, func() bool {
		for i := range c.nodes {
			if truncated(i) < 30 {
				return false
			}
		}
		return true
	}, waitFor, 10*time.Millisecond, "every replica compacts its log: %d %d %d", truncated(0), truncated(1), truncated(2))

	f := (c.leader() + 1) % 3
	c.stop(f)
	write(40, 100)
	c.start(f)
	require.Eventually(t, func() bool {
		got, err := engineScan(c.nodes[f].srv.Store().Engine())
		return err == nil && fmt.Sprint(got) == fmt.Sprint(want)
	}, waitFor, 10*time.Millisecond, "the restarted follower catches up from the log")
	require.Eventually(t, func() bool { return truncated(f) >= 90 }, waitFor, 10*time.Millisecond,
		"compaction resumes once the follower has the entries")

	for i := range c.nodes {
		c.stop(i)
	}
	for i := range c.nodes {
		c.start(i)
	}
	require.Equal(t, want, c.scan("", "", 0))
	write(100, 110)
	require.Equal(t, want, c.scan("", "", 0))
}

// TestSnapshotCatchUp: a follower that is down while the others compact
// their log past it (lag limit) catches up from a snapshot sent on the
// Snapshot RPC, and then follows the log again.
func TestSnapshotCatchUp(t *testing.T) {
	c := newTestCluster(t, func(cfg *Config) {
		cfg.RaftLogGCInterval = 50 * time.Millisecond
		cfg.RaftLogGCThreshold = 10
		cfg.RaftLogGCLagLimit = 20
	})
	want := map[string]string{}
	write := func(from, to int) {
		for i := from; i < to; i++ {
			k, v := fmt.Sprintf("k%03d", i), fmt.Sprintf("v%d", i)
			c.put(k, v)
			want[k] = v
		}
	}
	write(0, 10)
	rid := c.region().GetId()
	truncated := func(i int) uint64 {
		idx, err := c.nodes[i].srv.Store().TruncatedIndex(rid)
		if err != nil {
			return 0
		}
		return idx
	}
	f := (c.leader() + 1) % 3
	c.stop(f)
	write(10, 100)
	l := c.leader()
	require.Eventually(t, func() bool { return truncated(l) > 60 }, waitFor, 10*time.Millisecond,
		"the leader compacts past the stopped follower")

	c.start(f)
	require.Eventually(t, func() bool {
		got, err := engineScan(c.nodes[f].srv.Store().Engine())
		return err == nil && fmt.Sprint(got) == fmt.Sprint(want)
	}, waitFor, 10*time.Millisecond, "the follower catches up")
	require.Greater(t, truncated(f), uint64(60), "from a snapshot: its log starts above what the leader compacted")

	write(100, 110)
	require.Eventually(t, func() bool {
		got, err := engineScan(c.nodes[f].srv.Store().Engine())
		return err == nil && fmt.Sprint(got) == fmt.Sprint(want)
	}, waitFor, 10*time.Millisecond, "and follows the log afterwards")

	// The snapshot is durable: a restart of the follower alone serves it.
	c.stop(f)
	c.start(f)
	got, err := engineScan(c.nodes[f].srv.Store().Engine())
	require.NoError(t, err)
	require.Equal(t, want, got)
}
