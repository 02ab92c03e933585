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
	file := func(body string) string {
		p := filepath.Join(t.TempDir(), "sql.toml")
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	good := file("pd = \"a:1,b:2\"\nshutdown-timeout = \"3s\"\nroot-password = \"pw\"\n")
	tests := []struct {
		name string
		args []string
		want func(c *Config)
		err  string // substring of the error; "" means success
	}{
		{name: "defaults", want: func(c *Config) {}},
		{name: "flags", args: []string{"--addr", "127.0.0.1:4001", "--shutdown-timeout", "1m"},
			want: func(c *Config) { c.Addr, c.ShutdownTimeout = "127.0.0.1:4001", time.Minute }},
		{name: "file-then-flags", args: []string{"--config", good, "--root-password", "flag"},
			want: func(c *Config) { c.PD, c.ShutdownTimeout, c.RootPassword = "a:1,b:2", 3*time.Second, "flag" }},
		{name: "tso-parallel", args: []string{"--tso-client-rpc-mode", "parallel"},
			want: func(c *Config) { c.TSOClientRPCMode = "parallel" }},
		{name: "tso-bad-mode", args: []string{"--tso-client-rpc-mode", "fast"}, err: "--tso-client-rpc-mode"},
		{name: "connection-limits", args: []string{"--max-connections", "5", "--connect-timeout", "2s"},
			want: func(c *Config) { c.MaxConnections, c.ConnectTimeout = 5, 2*time.Second }},
		{name: "negative-max-connections", args: []string{"--max-connections", "-1"}, err: "--max-connections"},
		{name: "zero-connect-timeout", args: []string{"--connect-timeout", "0s"}, err: "--connect-timeout"},
		{name: "tls-files", args: []string{"--tls-cert", "c.pem", "--tls-key", "k.pem", "--data-dir", "/d", "--require-secure-transport", "--default-auth-plugin", "caching_sha2_password"},
			want: func(c *Config) {
				c.TLSCert, c.TLSKey, c.DataDir, c.RequireSecureTransport, c.DefaultAuthPlugin = "c.pem", "k.pem", "/d", true, "caching_sha2_password"
			}},
		{name: "tls-cert-without-key", args: []string{"--tls-cert", "c.pem"}, err: "--tls-key"},
		{name: "secure-transport-without-tls", args: []string{"--tls=false", "--require-secure-transport"}, err: "--require-secure-transport"},
		{name: "bad-auth-plugin", args: []string{"--default-auth-plugin", "sha256_password"}, err: "--default-auth-plugin"},
		{name: "unknown-flag", args: []string{"--nope"}, err: "nope"},
		{name: "stray-argument", args: []string{"x"}, err: "unexpected argument"},
		{name: "zero-shutdown-timeout", args: []string{"--shutdown-timeout", "0s"}, err: "--shutdown-timeout"},
		{name: "file-unknown-key", args: []string{"--config", file("shutdown_timeout = \"1s\"\n")}, err: "unknown key shutdown_timeout"},
		{name: "file-wrong-type", args: []string{"--config", file("addr = 4000\n")}, err: "addr"},
		{name: "file-bad-duration", args: []string{"--config", file("shutdown-timeout = \"later\"\n")}, err: "shutdown-timeout"},
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
	var cfg Config
	require.NoError(t, config.CheckFlags(newFlagSet(&cfg), &cfg))
}

// TestKubernetesCommandLine: the command line and configuration file the
// strata-sql pods of deploy/k8s run with parse with this binary's flags.
func TestKubernetesCommandLine(t *testing.T) {
	binary, args, err := k8s.Command("../../deploy/k8s/base", "Deployment", "strata-sql", "strata-sql-abc12-xyz34", t.TempDir())
	require.NoError(t, err)
	require.Equal(t, "sqlnode", binary)
	cfg, err := parseFlags(args)
	require.NoError(t, err)
	require.Equal(t, "0.0.0.0:4000", cfg.Addr)
	require.Equal(t, "/spill", cfg.TmpStoragePath)
}
