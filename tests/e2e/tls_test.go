//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/stratadb/strata/internal/pki"
	"github.com/stratadb/strata/internal/security"
	"github.com/stratadb/strata/localcluster"
)

// TestComposeClusterTLS starts the compose cluster with
// deploy/docker-compose.tls.yml and certificates made by cmd/certgen (as
// `make certs` does), runs SQL through it, and checks from the host (PD's
// and store1's ports published on 127.0.0.1 by a test-only override) that
// a client without a certificate, or with one of another CA, is refused by
// PD's gRPC port and a store's, and that PD's state-changing HTTP calls
// need the token or a client certificate.
func TestComposeClusterTLS(t *testing.T) {
	// Before newProject: cleanups run last-in first-out, and the teardown
	// (compose down) still needs the override file.
	dir := t.TempDir()
	p := newProject(t)
	reapStale(t, p.compose, p.root)
	certs := filepath.Join(dir, "certs")
	gen := exec.Command("go", "run", "./cmd/certgen", "--out", certs, "--readable-keys", "--cert", "pd=pd1,pd2,pd3",
		"--cert", "store=store1,store2,store3", "--cert", "sql=sql1,sql2", "--cert", "client", "--token", "pd-token")
	gen.Dir = p.root
	out, err := gen.CombinedOutput()
	require.NoError(t, err, "certgen: %s", out)
	ports := filepath.Join(dir, "ports.yml")
	require.NoError(t, os.WriteFile(ports, []byte(`services:
  pd1:
    ports: ["127.0.0.1::2379", "127.0.0.1::2382"]
  store1:
    ports: ["127.0.0.1::20160"]
`), 0o644))
	p.files = []string{filepath.Join(p.root, "deploy", "docker-compose.tls.yml"), ports}
	p.extraEnv = []string{"STRATA_CERTS_DIR=" + certs}

	p.buildImage()
	upTook := p.up(all)
	t.Logf("MEASURE compose up -d (cluster TLS) to %d healthy containers %.1fs", len(all), upTook.Seconds())

	db := openDB(t, p.sqlAddr("sql1"), "")
	mustExec(t, db, "CREATE DATABASE tlse2e")
	mustExec(t, db, "CREATE TABLE tlse2e.t (id INT PRIMARY KEY, v INT)")
	mustExec(t, db, "INSERT INTO tlse2e.t VALUES (1, 10), (2, 20)")
	var sum int
	require.NoError(t, db.QueryRow("SELECT SUM(v) FROM tlse2e.t").Scan(&sum))
	require.Equal(t, 30, sum)

	published := func(service, port string) string {
		addr := p.mustDC("port", service, port)
		require.Regexp(t, `^127\.0\.0\.1:\d+$`, addr)
		return addr
	}
	pdGRPC, pdHTTP, storeGRPC := published("pd1", "2379"), published("pd1", "2382"), published("store1", "20160")
	client, err := security.New(security.Config{CA: filepath.Join(certs, "ca.pem"),
		Cert: filepath.Join(certs, "client.pem"), Key: filepath.Join(certs, "client-key.pem")}, "e2e")
	require.NoError(t, err)
	_, ff, err := pki.NewFiles(filepath.Join(dir, "foreign"), "client", "client", []string{"127.0.0.1"}, time.Hour)
	require.NoError(t, err)
	foreign, err := security.New(security.Config{CA: ff.CA, Cert: ff.Cert, Key: ff.Key}, "e2e")
	require.NoError(t, err)

	call := func(addr string, creds grpc.DialOption, pd bool) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return localcluster.ProbeGRPC(ctx, addr, creds, pd)
	}
	for _, target := range []struct {
		name, addr string
		pd         bool
	}{{"PD", pdGRPC, true}, {"store1", storeGRPC, false}} {
		require.NoError(t, call(target.addr, client.DialOption(), target.pd), "%s with the client certificate", target.name)
		for what, creds := range map[string]grpc.DialOption{
			"plaintext":           grpc.WithTransportCredentials(insecure.NewCredentials()),
			"another CA's client": foreign.DialOption(),
		} {
			err := call(target.addr, creds, target.pd)
			require.Equal(t, codes.Unavailable, status.Code(err), "%s: %s: %v", target.name, what, err)
		}
	}

	token, err := os.ReadFile(filepath.Join(certs, "pd-token"))
	require.NoError(t, err)
	anon := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: client.ClientConfig("127.0.0.1").RootCAs, MinVersion: tls.VersionTLS12}}}
	api := func(cli *http.Client, method, path, auth string) (int, string) {
		req, err := http.NewRequest(method, "https://"+pdHTTP+"/pd/api/v1/"+path, strings.NewReader("{}"))
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := cli.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := api(anon, http.MethodGet, "stores", "")
	require.Equal(t, http.StatusOK, code, body)
	code, body = api(anon, http.MethodDelete, "store/999", "")
	require.Equal(t, http.StatusUnauthorized, code, body)
	code, body = api(anon, http.MethodPost, "config", "Bearer "+strings.TrimSpace(string(token)))
	require.Equal(t, http.StatusOK, code, body)
	code, body = api(client.HTTPClient(10*time.Second), http.MethodPost, "config", "")
	require.Equal(t, http.StatusOK, code, body)

	// store1 counted the refused handshakes.
	m, err := p.metrics("store1")
	require.NoError(t, err)
	require.GreaterOrEqual(t, m[`strata_tls_handshake_failures_total{component="store",side="server"}`], 2.0)
}
