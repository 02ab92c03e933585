package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/internal/security"
)

// TestCertgen: the files load as cluster TLS configurations, and a second
// run does not replace the CA without --force.
func TestCertgen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	require.NoError(t, run([]string{"--out", dir, "--cert", "pd=pd1,pd2", "--cert", "client", "--token", "pd-token"}, io.Discard))
	for _, name := range []string{"pd", "client"} {
		s, err := security.New(security.Config{CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, name+".pem"),
			Key: filepath.Join(dir, name+"-key.pem")}, "test")
		require.NoError(t, err)
		require.NotNil(t, s)
	}
	tok, err := os.ReadFile(filepath.Join(dir, "pd-token"))
	require.NoError(t, err)
	require.Len(t, tok, 65)
	require.ErrorContains(t, run([]string{"--out", dir, "--cert", "pd"}, io.Discard), "--force")
	require.NoError(t, run([]string{"--out", dir, "--cert", "pd", "--force"}, io.Discard))
	require.ErrorContains(t, run([]string{"--out", dir, "--cert", "=x"}, io.Discard), "want name=host")
}
