package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/config"
	"github.com/stratadb/strata/deploy/k8s"
	"github.com/stratadb/strata/internal/security"
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
		{"listen vs advertise", []string{"--peer-url", "http://pd1:2380", "--listen-peer-url", "http://0.0.0.0:2380",
			"--etcd-client-url", "http://pd1:2381", "--listen-etcd-client-url", "http://0.0.0.0:2381"}, false, func(t *testing.T, c fileConfig) {
			require.Equal(t, "http://pd1:2380", c.PeerURL)
			require.Equal(t, "http://0.0.0.0:2380", c.ListenPeerURL)
			require.Equal(t, "http://pd1:2381", c.EtcdClientURL)
			require.Equal(t, "http://0.0.0.0:2381", c.ListenEtcdClientURL)
		}},
		{"cluster tls from file and flags", []string{"--config", badFile(t, "cluster-ssl-ca = \"/c/ca.pem\"\ncluster-ssl-cert = \"/c/pd.pem\"\ncluster-verify-cn = \"pd,store\"\n"),
			"--cluster-ssl-key", "/c/pd-key.pem", "--http-token-file", "/c/token"}, false, func(t *testing.T, c fileConfig) {
			require.Equal(t, security.Config{CA: "/c/ca.pem", Cert: "/c/pd.pem", Key: "/c/pd-key.pem", VerifyCN: "pd,store"}, c.Config)
			require.Equal(t, "/c/token", c.HTTPTokenFile)
		}},
		{"bad replicas", []string{"--replicas", "0"}, true, nil},
		{"file unknown key", []string{"--config", badFile(t, "data_dir = \"x\"\n")}, true, nil},
		{"file wrong type", []string{"--config", badFile(t, "replicas = \"three\"\n")}, true, nil},
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

func badFile(t *testing.T, body string) string {
	p := filepath.Join(t.TempDir(), "bad.toml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

// TestConfigErrorsNameTheKey: a bad config file is rejected at start with a
// message naming the offending key.
func TestConfigErrorsNameTheKey(t *testing.T) {
	for body, key := range map[string]string{
		"data_dir = \"x\"\n":       "data_dir",
		"replicas = \"three\"\n":   "replicas",
		"name = 1\n":               "name",
		"log-level = [\"info\"]\n": "log-level",
	} {
		_, err := parseFlags([]string{"--config", badFile(t, body)})
		require.ErrorContains(t, err, key, body)
	}
}

// TestEveryKeyHasAFlag: --help lists every configuration key (TOML keys are
// the flag names) with a description.
func TestEveryKeyHasAFlag(t *testing.T) {
	var cfg fileConfig
	require.NoError(t, config.CheckFlags(newFlagSet(&cfg), &cfg))
}

// TestKubernetesCommandLine: the command line and configuration file the
// strata-pd pods of deploy/k8s run with parse with this binary's flags.
func TestKubernetesCommandLine(t *testing.T) {
	binary, args, err := k8s.Command("../../deploy/k8s/base", "StatefulSet", "strata-pd", "strata-pd-1", t.TempDir())
	require.NoError(t, err)
	require.Equal(t, "pd", binary)
	cfg, err := parseFlags(args)
	require.NoError(t, err)
	require.Equal(t, "strata-pd-1", cfg.Name)
	require.Equal(t, "strata-pd-1.strata-pd-peer:2379", cfg.AdvertiseAddr)
	require.Equal(t, "http://strata-pd-1.strata-pd-peer:2380", cfg.PeerURL)
	require.Equal(t, "/data/pd", cfg.DataDir)
	require.Equal(t, 3, cfg.Replicas)
}
