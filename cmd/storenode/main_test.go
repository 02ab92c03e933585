package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseFlags(t *testing.T) {
	toml := filepath.Join(t.TempDir(), "store.toml")
	require.NoError(t, os.WriteFile(toml, []byte("data-dir = \"/from/file\"\nraft-tick = \"50ms\"\nelection-ticks = 20\n"), 0o600))
	tests := []struct {
		name string
		args []string
		want func(c *fileConfig)
		err  bool
	}{
		{name: "defaults", want: func(c *fileConfig) {}},
		{name: "flags", args: []string{"--pd", "a:1, b:2", "--addr", "127.0.0.1:9", "--raft-tick", "10ms", "--heartbeat-interval", "2s"},
			want: func(c *fileConfig) {
				c.PD, c.Addr, c.AdvertiseAddr, c.RaftTick, c.HeartbeatInterval = "a:1, b:2", "127.0.0.1:9", "127.0.0.1:9", 10*time.Millisecond, 2*time.Second
			}},
		{name: "file-then-flags", args: []string{"--config", toml, "--election-ticks", "30"},
			want: func(c *fileConfig) { c.DataDir, c.RaftTick, c.ElectionTicks = "/from/file", 50*time.Millisecond, 30 }},
		{name: "unknown-flag", args: []string{"--nope"}, err: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseFlags(tc.args)
			if tc.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			want, err := parseFlags(nil)
			require.NoError(t, err)
			tc.want(&want)
			require.Equal(t, want, got)
		})
	}
	require.Equal(t, []string{"a:1", "b:2"}, splitList("a:1, b:2,"))
}
