package tests

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"os"
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
	"github.com/stratadb/strata/internal/promtext"
	"github.com/stratadb/strata/internal/security"
	"github.com/stratadb/strata/localcluster"
)

// Cluster TLS (issue 33): PD, three stores and a SQL node with
// --cluster-ssl-* and --cluster-verify-cn, and PD's HTTP API behind a
// client certificate or token. Certificates are made here, never committed.

// tlsFiles is a CA in dir and the certificates a test issues from it.
type tlsFiles struct {
	dir string
	ca  *pki.CA
}

// newTLSFiles makes a CA and a certificate named and with CommonName cn,
// for 127.0.0.1, and returns the latter's configuration.
func newTLSFiles(t *testing.T, dir, cn string) (*tlsFiles, security.Config) {
	t.Helper()
	ca, f, err := pki.NewFiles(dir, cn, cn, []string{"127.0.0.1"}, time.Hour)
	require.NoError(t, err)
	return &tlsFiles{dir: dir, ca: ca}, security.Config{CA: f.CA, Cert: f.Cert, Key: f.Key}
}

// issue writes a certificate for 127.0.0.1 with CommonName cn as
// dir/name.pem and returns its configuration.
func (f *tlsFiles) issue(t *testing.T, name, cn string) security.Config {
	t.Helper()
	cert, key, err := f.ca.IssueFiles(f.dir, name, cn, []string{"127.0.0.1"}, time.Hour)
	require.NoError(t, err)
	return security.Config{CA: filepath.Join(f.dir, "ca.pem"), Cert: cert, Key: key}
}

// grpcRefused dials addr with creds and checks an RPC to it fails at the
// connection (Unavailable), for a PD or a store.
func grpcRefused(t *testing.T, what, addr string, creds grpc.DialOption, pd bool) {
	t.Helper()
	err := grpcCall(addr, creds, pd)
	require.Error(t, err, what)
	require.Equal(t, codes.Unavailable, status.Code(err), "%s: %v", what, err)
}

// grpcCall is localcluster.ProbeGRPC with a 3 s deadline.
func grpcCall(addr string, creds grpc.DialOption, pd bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return localcluster.ProbeGRPC(ctx, addr, creds, pd)
}

// serverSerial is the serial number of the certificate addr presents to a
// new TLS connection made with cfg.
func serverSerial(t *testing.T, addr string, sec *security.TLS) string {
	t.Helper()
	cfg := sec.ClientConfig("127.0.0.1")
	cfg.NextProtos = []string{"h2"}
	conn, err := tls.Dial("tcp", addr, cfg)
	require.NoError(t, err)
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// TestClusterTLS: PD (3 members), 3 stores and a SQL node with cluster TLS
// serve SQL; plaintext clients, clients of another CA and clients whose
// CommonName --cluster-verify-cn does not list are refused by PD and the
// stores; PD's state-changing HTTP calls need the client certificate or the
// token; a rotated certificate is used by new connections without a
// restart.
func TestClusterTLS(t *testing.T) {
	dir := t.TempDir()
	files, clusterCfg := newTLSFiles(t, filepath.Join(dir, "certs"), "strata")
	clusterCfg.VerifyCN = "strata"
	token := filepath.Join(dir, "pd-token")
	require.NoError(t, os.WriteFile(token, []byte("test-token\n"), 0o600))
	// Three PD members: the embedded etcd's peers talk TLS too, and a
	// follower forwards API calls to the leader over it.
	// Two SQL nodes: they reach each other's status ports over TLS.
	c := startCluster(t, clusterOpts{pds: 3, sqlNodes: 2, tls: &clusterCfg, pdTokenFile: token})

	// SQL writes and reads go through PD and the stores over TLS.
	_, err := openDB(t, c, 0, "").Exec("CREATE DATABASE sec")
	require.NoError(t, err)
	db := openDB(t, c, 0, "sec")
	_, err = db.Exec("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))")
	require.NoError(t, err)
	_, err = db.Exec("INSERT INTO t VALUES (1, 'one'), (2, 'two'), (3, 'three')")
	require.NoError(t, err)
	var n int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM t WHERE v LIKE 't%'").Scan(&n))
	require.Equal(t, 2, n)

	pdAddr, storeAddr := c.PDAddrs()[0], c.Stores[0].Flag("--addr")
	good, err := security.New(clusterCfg, "test")
	require.NoError(t, err)
	require.NoError(t, grpcCall(pdAddr, good.DialOption(), true), "a client with the cluster's certificate")
	require.NoError(t, grpcCall(storeAddr, good.DialOption(), false), "a client with the cluster's certificate")

	t.Run("refused", func(t *testing.T) {
		_, foreignCfg := newTLSFiles(t, filepath.Join(dir, "foreign"), "strata")
		foreignSec, err := security.New(foreignCfg, "test")
		require.NoError(t, err)
		intruderSec, err := security.New(files.issue(t, "intruder", "intruder"), "test")
		require.NoError(t, err)
		for _, tc := range []struct {
			name  string
			creds grpc.DialOption
		}{
			{"plaintext", grpc.WithTransportCredentials(insecure.NewCredentials())},
			{"certificate of another CA", foreignSec.DialOption()},
			{"CommonName not in --cluster-verify-cn", intruderSec.DialOption()},
		} {
			grpcRefused(t, tc.name+" to PD", pdAddr, tc.creds, true)
			grpcRefused(t, tc.name+" to a store", storeAddr, tc.creds, false)
		}
	})

	t.Run("pd http api", func(t *testing.T) {
		api := "https://" + c.PDStatusAddrs()[0] + "/pd/api/v1/"
		// Verifies PD's certificate, presents none.
		anon := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: files.ca.Pool(), MinVersion: tls.VersionTLS12}}}
		do := func(cli *http.Client, method, path, auth string) (int, string) {
			req, err := http.NewRequest(method, api+path, strings.NewReader("{}"))
			require.NoError(t, err)
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := cli.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			var b strings.Builder
			_, _ = io.Copy(&b, resp.Body)
			return resp.StatusCode, b.String()
		}
		code, _ := do(anon, http.MethodGet, "stores", "")
		require.Equal(t, http.StatusOK, code, "GETs stay open")
		code, body := do(anon, http.MethodDelete, "store/999", "")
		require.Equal(t, http.StatusUnauthorized, code)
		require.Contains(t, body, "client certificate")
		code, _ = do(anon, http.MethodPost, "config", "Bearer wrong")
		require.Equal(t, http.StatusUnauthorized, code)
		// Through every member: followers forward to the leader over TLS.
		for _, addr := range c.PDStatusAddrs() {
			api = "https://" + addr + "/pd/api/v1/"
			code, body = do(anon, http.MethodPost, "config", "Bearer test-token")
			require.Equal(t, http.StatusOK, code, body)
			code, body = do(good.HTTPClient(10*time.Second), http.MethodPost, "config", "")
			require.Equal(t, http.StatusOK, code, body)
			code, body = do(anon, http.MethodPatch, "config", "")
			require.Equal(t, http.StatusUnauthorized, code, body)
		}
		// Plain HTTP is not served on the TLS port.
		resp, err := http.Get("http://" + c.PDStatusAddrs()[0] + "/status")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	})

	t.Run("sql node peer api", func(t *testing.T) {
		// CLUSTER_PROCESSLIST on node 2 reaches node 1 over TLS.
		var id1 string
		conn1, err := openDB(t, c, 0, "").Conn(context.Background())
		require.NoError(t, err)
		defer conn1.Close()
		require.NoError(t, conn1.QueryRowContext(context.Background(), "SELECT CONNECTION_ID()").Scan(&id1))
		var inst string
		require.NoError(t, openDB(t, c, 1, "").QueryRow("SELECT INSTANCE FROM information_schema.CLUSTER_PROCESSLIST WHERE ID = "+id1).Scan(&inst))
		require.Equal(t, c.SQL[0].Flag("--status-addr"), inst)
		// The peer endpoints answer only the cluster's certificates.
		url := "https://" + c.SQL[0].Flag("--status-addr") + "/internal/processlist"
		anon := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: files.ca.Pool(), MinVersion: tls.VersionTLS12}}} // presents no certificate
		for _, tc := range []struct {
			cli  *http.Client
			want int
		}{{anon, http.StatusUnauthorized}, {good.HTTPClient(10 * time.Second), http.StatusOK}} {
			resp, err := tc.cli.Post(url, "application/json", strings.NewReader("{}"))
			require.NoError(t, err)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Equal(t, tc.want, resp.StatusCode, "%s", b)
			if tc.want == http.StatusOK {
				require.Contains(t, string(b), `"ID":`+id1)
			}
		}
	})

	t.Run("rotation", func(t *testing.T) {
		before := serverSerial(t, storeAddr, good)
		require.Equal(t, before, serverSerial(t, pdAddr, good))
		// New certificate and key for every component, same files.
		rotated := files.issue(t, "strata", "strata")
		require.Equal(t, clusterCfg.Cert, rotated.Cert)
		after := serverSerial(t, storeAddr, good)
		require.NotEqual(t, before, after, "a new connection to the store gets the new certificate")
		require.Equal(t, after, serverSerial(t, pdAddr, good), "and to PD")
		require.NoError(t, grpcCall(storeAddr, good.DialOption(), false))
		require.NoError(t, grpcCall(pdAddr, good.DialOption(), true))
		// A restarted store dials PD and its peers with the new
		// certificate and is dialled with it; SQL keeps working.
		st := c.Stores[2]
		require.NoError(t, st.Stop(10*time.Second))
		require.NoError(t, st.Start())
		_, err := db.Exec("INSERT INTO t VALUES (4, 'four')")
		require.NoError(t, err)
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM t").Scan(&n))
		require.Equal(t, 4, n)
		// The store's status port (plain HTTP) reports the reload and
		// the refused handshakes.
		m, err := promtext.Fetch(context.Background(), c.Stores[0].Flag("--status-addr"))
		require.NoError(t, err)
		series := m.Series(false)
		require.GreaterOrEqual(t, series[`strata_tls_reloads_total{component="store",result="ok"}`], 1.0, "%v", series)
		require.Greater(t, series[`strata_tls_certificate_not_after_seconds{component="store"}`], float64(time.Now().Unix()))
		require.GreaterOrEqual(t, series[`strata_tls_handshake_failures_total{component="store",side="server"}`], 3.0)
	})
}
