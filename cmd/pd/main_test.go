package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseFlags(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pd.toml")
	require.NoError(t, os.WriteFile(file, []byte("replicas = 1\nname = \"a\"\naddr = \"127.0.0.1:9\"\n"), 0o600))
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr bool
		check   func(t *testing.T, c fileConfig)
	}{
		{"defaults", nil, false, func(t *testing.T, c fileConfig) {
			require.Equal(t, "pd", c.Name)
			require.Equal(t, "127.0.0.1:2379", c.Addr)
			require.Equal(t, "http://127.0.0.1:2380", c.PeerURL)
			require.Equal(t, "http://127.0.0.1:2381", c.EtcdClientURL)
			require.Equal(t, "127.0.0.1:2382", c.StatusAddr)
			require.Equal(t, 3, c.Replicas)
		}},
		{"file, flag wins", []string{"--config", file, "--name", "b"}, false, func(t *testing.T, c fileConfig) {
			require.Equal(t, "b", c.Name)
			require.Equal(t, 1, c.Replicas)
			require.Equal(t, "127.0.0.1:9", c.Addr)
		}},
		{"bad replicas", []string{"--replicas", "0"}, true, nil},
		{"unknown flag", []string{"--nope"}, true, nil},
		{"stray argument", []string{"x"}, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseFlags(tc.args)
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			tc.check(t, c)
		})
	}
}
