package config

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type testConfig struct {
	Addr     string        `toml:"addr"`
	Replicas int           `toml:"replicas"`
	Tick     time.Duration `toml:"raft-tick"`
}

func newFlags(cfg *testConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.Addr, "addr", cfg.Addr, "listen address")
	fs.IntVar(&cfg.Replicas, "replicas", cfg.Replicas, "replica count")
	fs.DurationVar(&cfg.Tick, "raft-tick", cfg.Tick, "tick")
	return fs
}

func writeFile(t *testing.T, body string) string {
	p := filepath.Join(t.TempDir(), "c.toml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

func TestParseLayers(t *testing.T) {
	file := writeFile(t, "addr = \"10.0.0.1:1\"\nreplicas = 5\nraft-tick = \"50ms\"\n")
	tests := []struct {
		name string
		args []string
		want testConfig
	}{
		{"defaults", nil, testConfig{"127.0.0.1:1", 3, 100 * time.Millisecond}},
		{"flags", []string{"--replicas", "1"}, testConfig{"127.0.0.1:1", 1, 100 * time.Millisecond}},
		{"file", []string{"--config", file}, testConfig{"10.0.0.1:1", 5, 50 * time.Millisecond}},
		{"flags win over file", []string{"--config", file, "--addr", "x:2"}, testConfig{"x:2", 5, 50 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig{"127.0.0.1:1", 3, 100 * time.Millisecond}
			require.NoError(t, Parse(newFlags(&cfg), tt.args, &cfg))
			require.Equal(t, tt.want, cfg)
		})
	}
}

func TestParseRejects(t *testing.T) {
	tests := []struct {
		name, body, wantErr string
	}{
		{"unknown key", "adr = \"x\"\n", "unknown key adr"},
		{"wrong type", "replicas = \"three\"\n", "replicas"},
		{"bad syntax", "addr = \n", "c.toml"},
		{"bad duration", "raft-tick = \"fast\"\n", "raft-tick"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cfg testConfig
			err := Parse(newFlags(&cfg), []string{"--config", writeFile(t, tt.body)}, &cfg)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
	var cfg testConfig
	require.ErrorContains(t, Parse(newFlags(&cfg), []string{"--config", "/nonexistent.toml"}, &cfg), "nonexistent")
	require.ErrorContains(t, Parse(newFlags(&cfg), []string{"stray"}, &cfg), "unexpected argument")
}

func TestCheckFlags(t *testing.T) {
	var cfg testConfig
	require.NoError(t, CheckFlags(newFlags(&cfg), &cfg))

	fs := newFlags(&cfg)
	fs.String("extra", "", "not a key")
	require.ErrorContains(t, CheckFlags(fs, &cfg), "--extra is not a configuration key")

	fs = flag.NewFlagSet("t", flag.ContinueOnError)
	fs.StringVar(&cfg.Addr, "addr", "", "")
	require.ErrorContains(t, CheckFlags(fs, &cfg), "no description")

	type withMissing struct {
		Addr    string `toml:"addr"`
		Missing string `toml:"missing"`
	}
	require.ErrorContains(t, CheckFlags(newFlags(&cfg), &withMissing{}), `key "missing" has no flag`)
}
