package security

import (
	"bytes"
	"context"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// Scheme is "https" when t is set, else "http": the scheme of HTTP APIs
// served with HTTPServerConfig.
func (t *TLS) Scheme() string {
	if t == nil {
		return "http"
	}
	return "https"
}

// HTTPServerConfig is the tls.Config of an HTTP API: a client certificate
// is asked for and verified when given (Guard then lets its requests
// change state) but not required, so GETs of /status and /metrics stay
// open to any TLS client. Nil for a nil t (plain HTTP).
func (t *TLS) HTTPServerConfig() *tls.Config {
	if t == nil {
		return nil
	}
	return t.serverTLS(tls.VerifyClientCertIfGiven, []string{"http/1.1"})
}

// HTTPErrorLog is an http.Server ErrorLog that counts failed TLS
// handshakes (strata_tls_handshake_failures_total, side "server") and
// writes every line to slog at warn level.
func (t *TLS) HTTPErrorLog() *log.Logger {
	component := "http"
	if t != nil {
		component = t.component + "-http"
	}
	return log.New(errorLogWriter(component), "", 0)
}

type errorLogWriter string

func (w errorLogWriter) Write(p []byte) (int, error) {
	line := string(bytes.TrimSpace(p))
	if strings.Contains(line, "TLS handshake error") {
		handshakeFailures.WithLabelValues(string(w), "server").Inc()
	}
	slog.Warn("http server", "component", string(w), "msg", line)
	return len(p), nil
}

// HTTPClient is a client of other components' HTTP APIs: it presents t's
// certificate and verifies theirs (a plain client for a nil t).
func (t *TLS) HTTPClient(timeout time.Duration) *http.Client {
	if t == nil {
		return &http.Client{Timeout: timeout}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// Each connection's configuration comes from the current files.
	tr.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		var d net.Dialer
		raw, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		cfg := t.ClientConfig(host)
		cfg.NextProtos = []string{"http/1.1"}
		conn := tls.Client(raw, cfg)
		if err := conn.HandshakeContext(ctx); err != nil {
			raw.Close()
			handshakeFailures.WithLabelValues(t.component, "client").Inc()
			return nil, fmt.Errorf("cluster TLS handshake with %s: %w", addr, err)
		}
		return conn, nil
	}
	return &http.Client{Timeout: timeout, Transport: tr}
}

// Guard protects the state-changing requests (every method but GET, HEAD
// and OPTIONS) of an HTTP API. A request may change state when
//
//   - it came over TLS with a client certificate the CA verified (and whose
//     CommonName --cluster-verify-cn accepted), or
//   - it carries "Authorization: Bearer <token>" with the token of
//     --http-token-file (compared in constant time), or
//   - neither cluster TLS nor a token is configured (the API answers
//     everyone, as a cluster without security always did).
//
// Anything else gets 401 with a JSON error saying what to send.
type Guard struct {
	tls   bool
	token []byte
}

// NewGuard reads the token from tokenFile ("" for none; surrounding white
// space is dropped, an empty token is an error).
func NewGuard(t *TLS, tokenFile string) (*Guard, error) {
	g := &Guard{tls: t != nil}
	if tokenFile == "" {
		return g, nil
	}
	b, err := os.ReadFile(tokenFile)
	if err != nil {
		return nil, fmt.Errorf("%w: --http-token-file: %v", ErrConfig, err)
	}
	g.token = bytes.TrimSpace(b)
	if len(g.token) == 0 {
		return nil, fmt.Errorf("%w: --http-token-file %s is empty; write a random token into it (e.g. `openssl rand -hex 32`)", ErrConfig, tokenFile)
	}
	return g, nil
}

// Open reports whether the guard lets every request through.
func (g *Guard) Open() bool { return !g.tls && g.token == nil }

// Allowed reports whether r may change state.
func (g *Guard) Allowed(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	if g.Open() {
		return true
	}
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		return true
	}
	if g.token != nil {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), g.token) == 1 {
			return true
		}
	}
	return false
}

// Wrap answers 401 to the requests Allowed refuses and passes the others
// to h.
func (g *Guard) Wrap(h http.Handler) http.Handler {
	if g.Open() {
		return h
	}
	var how []string
	if g.tls {
		how = append(how, "present a client certificate signed by the cluster CA (--cluster-ssl-ca)")
	}
	if g.token != nil {
		how = append(how, `send "Authorization: Bearer <token>" with the token of PD's --http-token-file`)
	}
	msg := fmt.Sprintf("this request changes cluster state and needs authentication: %s", strings.Join(how, ", or "))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.Allowed(r) {
			h.ServeHTTP(w, r)
			return
		}
		httpRefused.Inc()
		slog.Warn("http api: unauthenticated state-changing request refused", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("WWW-Authenticate", `Bearer realm="strata-pd"`)
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
	})
}
