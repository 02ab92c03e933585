package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/config"
	"github.com/stratadb/strata/deploy/k8s"
)

func TestParseFlags(t *testing.T) {
	toml := filepath.Join(t.TempDir(), "store.toml")
	require.NoError(t, os.WriteFile(toml, []byte("data-dir = \"/from/file\"\nraft-tick = \"50ms\"\nelection-ticks = 20\nleader-transfer-timeout = \"2s\"\n"), 0o600))
	file := func(body string) string {
		p := filepath.Join(t.TempDir(), "bad.toml")
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	tests := []struct {
		name string
		args []string
		want func(c *fileConfig)
		err  string // substring of the error; "" means success
	}{
		{name: "defaults", want: func(c *fileConfig) {}},
		{name: "flags", args: []string{"--pd", "a:1, b:2", "--addr", "127.0.0.1:9", "--raft-tick", "10ms", "--heartbeat-interval", "2s"},
			want: func(c *fileConfig) {
				c.PD, c.Addr, c.AdvertiseAddr, c.RaftTick, c.HeartbeatInterval = "a:1, b:2", "127.0.0.1:9", "127.0.0.1:9", 10*time.Millisecond, 2*time.Second
			}},
		{name: "file-then-flags", args: []string{"--config", toml, "--election-ticks", "30"},
			want: func(c *fileConfig) {
				c.DataDir, c.RaftTick, c.ElectionTicks, c.LeaderTransferTimeout = "/from/file", 50*time.Millisecond, 30, 2*time.Second
			}},
		{name: "no-leader-transfer", args: []string{"--leader-transfer-timeout", "0"},
			want: func(c *fileConfig) { c.LeaderTransferTimeout = 0 }},
		{name: "unknown-flag", args: []string{"--nope"}, err: "nope"},
		{name: "negative-transfer-timeout", args: []string{"--leader-transfer-timeout", "-1s"}, err: "--leader-transfer-timeout"},
		{name: "file-unknown-key", args: []string{"--config", file("raft_tick = \"1s\"\n")}, err: "unknown key raft_tick"},
		{name: "file-wrong-type", args: []string{"--config", file("election-ticks = \"ten\"\n")}, err: "election-ticks"},
		{name: "file-bad-duration", args: []string{"--config", file("leader-transfer-timeout = \"soon\"\n")}, err: "leader-transfer-timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseFlags(tc.args)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			want, err := parseFlags(nil)
			require.NoError(t, err)
			tc.want(&want)
			require.Equal(t, want, got)
		})
	}
}

// TestEveryKeyHasAFlag: --help lists every configuration key (TOML keys are
// the flag names) with a description.
func TestEveryKeyHasAFlag(t *testing.T) {
	var cfg fileConfig
	require.NoError(t, config.CheckFlags(newFlagSet(&cfg), &cfg))
}

func TestParseLabels(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		err  bool
	}{
		{"", "", false},
		{"zone=z1,host=h1", "zone=z1 host=h1 ", false},
		{" zone = z1 , host=h1 ", "zone=z1 host=h1 ", false},
		{"zone", "", true},
		{"=z1", "", true},
		{"zone=", "", true},
	} {
		got, err := parseLabels(tc.in)
		if tc.err {
			require.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		s := ""
		for _, l := range got {
			s += l.GetKey() + "=" + l.GetValue() + " "
		}
		require.Equal(t, tc.want, s, tc.in)
	}
}

// TestKubernetesCommandLine: the command line and configuration file the
// strata-store pods of deploy/k8s run with parse with this binary's flags.
func TestKubernetesCommandLine(t *testing.T) {
	binary, args, err := k8s.Command("../../deploy/k8s/base", "StatefulSet", "strata-store", "strata-store-2", t.TempDir())
	require.NoError(t, err)
	require.Equal(t, "storenode", binary)
	cfg, err := parseFlags(args)
	require.NoError(t, err)
	require.Equal(t, "strata-store-2.strata-store-peer:20160", cfg.AdvertiseAddr)
	require.Equal(t, "0.0.0.0:20160", cfg.Addr)
	require.Equal(t, "/data/store", cfg.DataDir)
	require.Equal(t, 20*time.Second, cfg.LeaderTransferTimeout)
}
