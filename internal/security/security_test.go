package security

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/internal/pki"
)

// files is one CA and a certificate per name, written to a temp dir.
type files struct {
	dir string
	ca  *pki.CA
	cfg map[string]Config // by certificate name
}

func newFiles(t *testing.T, certs map[string]string) *files { // name -> CN
	t.Helper()
	dir := t.TempDir()
	ca, first, err := pki.NewFiles(dir, "first", "first", []string{"127.0.0.1"}, time.Hour)
	require.NoError(t, err)
	f := &files{dir: dir, ca: ca, cfg: map[string]Config{"first": {CA: first.CA, Cert: first.Cert, Key: first.Key}}}
	for name, cn := range certs {
		c, k, err := ca.IssueFiles(dir, name, cn, []string{"127.0.0.1", "localhost"}, time.Hour)
		require.NoError(t, err)
		f.cfg[name] = Config{CA: first.CA, Cert: c, Key: k}
	}
	return f
}

// handshake runs one TLS handshake between server and client over a
// loopback TCP connection and returns the server's and the client's errors.
func handshake(t *testing.T, server, client *tls.Config) (serr, cerr error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		tc := tls.Server(c, server)
		err = tc.HandshakeContext(ctx)
		if err == nil {
			// TLS 1.3: the client's certificate is checked after the
			// client finished; a refusal shows on the client's first read.
			_, err = tc.Write([]byte{1})
		}
		done <- err
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer raw.Close()
	tc := tls.Client(raw, client)
	cerr = tc.HandshakeContext(ctx)
	if cerr == nil {
		_, cerr = tc.Read(make([]byte, 1))
	}
	return <-done, cerr
}

func mustNew(t *testing.T, cfg Config, verifyCN string) *TLS {
	t.Helper()
	cfg.VerifyCN = verifyCN
	s, err := New(cfg, "test")
	require.NoError(t, err)
	return s
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		err  string
	}{
		{"empty is plaintext", Config{}, ""},
		{"all three", Config{CA: "a", Cert: "b", Key: "c"}, ""},
		{"no key", Config{CA: "a", Cert: "b"}, "missing [--cluster-ssl-key]"},
		{"only ca", Config{CA: "a"}, "missing [--cluster-ssl-cert --cluster-ssl-key]"},
		{"verify-cn without tls", Config{VerifyCN: "pd"}, "--cluster-verify-cn needs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.err)
		})
	}
}

func TestNewReportsTheFile(t *testing.T) {
	f := newFiles(t, map[string]string{"a": "a"})
	good := f.cfg["a"]
	notPEM := filepath.Join(f.dir, "junk.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("junk"), 0o644))
	for _, tc := range []struct {
		name string
		cfg  Config
		err  string
	}{
		{"missing ca", Config{CA: filepath.Join(f.dir, "nope.pem"), Cert: good.Cert, Key: good.Key}, "nope.pem"},
		{"ca not pem", Config{CA: notPEM, Cert: good.Cert, Key: good.Key}, "CA file " + notPEM + " holds no PEM certificate"},
		{"cert not pem", Config{CA: good.CA, Cert: notPEM, Key: good.Key}, "certificate " + notPEM},
		{"key of another cert", Config{CA: good.CA, Cert: good.Cert, Key: notPEM}, "key " + notPEM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg, "test")
			require.ErrorIs(t, err, ErrConfig)
			require.ErrorContains(t, err, tc.err)
		})
	}
	s, err := New(Config{}, "test")
	require.NoError(t, err)
	require.Nil(t, s, "no files: plaintext")
}

func TestHandshake(t *testing.T) {
	f := newFiles(t, map[string]string{"server": "store", "client": "sql", "other": "pd"})
	foreign := newFiles(t, map[string]string{"client": "sql"})
	server := f.cfg["server"]
	for _, tc := range []struct {
		name     string
		verifyCN string
		client   *tls.Config
		ok       bool
	}{
		{"same CA", "", mustNew(t, f.cfg["client"], "").ClientConfig("127.0.0.1"), true},
		{"verify-cn accepts", "sql, pd", mustNew(t, f.cfg["client"], "").ClientConfig("127.0.0.1"), true},
		{"verify-cn refuses", "sql", mustNew(t, f.cfg["other"], "").ClientConfig("127.0.0.1"), false},
		{"client of another CA", "", mustNew(t, foreign.cfg["client"], "").ClientConfig("127.0.0.1"), false},
		{"client without certificate", "", &tls.Config{RootCAs: f.ca.Pool(), ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			serr, cerr := handshake(t, mustNew(t, server, tc.verifyCN).ServerConfig(), tc.client)
			if tc.ok {
				require.NoError(t, serr)
				require.NoError(t, cerr)
				return
			}
			require.Error(t, serr)
		})
	}
	// The client refuses a server whose certificate another CA signed.
	_, cerr := handshake(t, mustNew(t, foreign.cfg["client"], "").ServerConfig(), mustNew(t, f.cfg["client"], "").ClientConfig("127.0.0.1"))
	require.ErrorContains(t, cerr, "certificate signed by unknown authority")
}

// TestReload: rewritten files are used by the next handshake; files that
// do not load keep the previous certificate in use.
func TestReload(t *testing.T) {
	f := newFiles(t, map[string]string{"server": "store", "client": "sql"})
	srv := mustNew(t, f.cfg["server"], "")
	cli := mustNew(t, f.cfg["client"], "")
	serial := func() string {
		var got string
		c := cli.ClientConfig("127.0.0.1")
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			got = cs.PeerCertificates[0].SerialNumber.String()
			return nil
		}
		serr, cerr := handshake(t, srv.ServerConfig(), c)
		require.NoError(t, serr)
		require.NoError(t, cerr)
		return got
	}
	first := serial()
	require.Equal(t, first, serial(), "unchanged files: same certificate")

	// A certificate whose key has not been written yet: the old pair stays.
	p, err := f.ca.Issue("store", []string{"127.0.0.1"}, time.Hour)
	require.NoError(t, err)
	require.NoError(t, pki.WriteFile(f.cfg["server"].Cert, p.Cert, 0o644))
	require.Equal(t, first, serial())
	// Now the key: the new certificate is served.
	require.NoError(t, pki.WriteFile(f.cfg["server"].Key, p.Key, 0o600))
	second := serial()
	require.NotEqual(t, first, second)
}

func TestGuard(t *testing.T) {
	f := newFiles(t, map[string]string{"a": "a"})
	s := mustNew(t, f.cfg["a"], "")
	token := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(token, []byte("s3cret\n"), 0o600))
	empty := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	_, err := NewGuard(nil, empty)
	require.ErrorContains(t, err, "is empty")

	verified := &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{f.ca.Cert}}}
	for _, tc := range []struct {
		name   string
		tls    *TLS
		token  string
		method string
		auth   string
		conn   *tls.ConnectionState
		want   int
	}{
		{"no security: open", nil, "", http.MethodDelete, "", nil, http.StatusOK},
		{"token: GET open", nil, token, http.MethodGet, "", nil, http.StatusOK},
		{"token: DELETE refused", nil, token, http.MethodDelete, "", nil, http.StatusUnauthorized},
		{"token: wrong token", nil, token, http.MethodPost, "Bearer nope", nil, http.StatusUnauthorized},
		{"token: right token", nil, token, http.MethodPost, "Bearer s3cret", nil, http.StatusOK},
		{"tls: no certificate refused", s, "", http.MethodPut, "", &tls.ConnectionState{}, http.StatusUnauthorized},
		{"tls: verified certificate", s, "", http.MethodPatch, "", verified, http.StatusOK},
		{"tls and token: token alone", s, token, http.MethodDelete, "Bearer s3cret", &tls.ConnectionState{}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tf := ""
			if tc.token != "" {
				tf = tc.token
			}
			g, err := NewGuard(tc.tls, tf)
			require.NoError(t, err)
			h := g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
			r := httptest.NewRequest(tc.method, "/pd/api/v1/store/1", nil)
			r.TLS = tc.conn
			if tc.auth != "" {
				r.Header.Set("Authorization", tc.auth)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			require.Equal(t, tc.want, w.Code)
			if tc.want == http.StatusUnauthorized {
				require.Equal(t, "application/json", w.Header().Get("Content-Type"))
				require.True(t, strings.Contains(w.Body.String(), "needs authentication"), w.Body.String())
			}
		})
	}
}
