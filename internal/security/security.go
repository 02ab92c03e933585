package security

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/stratadb/strata/config"
)

// ErrConfig: an incomplete or unreadable TLS configuration.
var ErrConfig = errors.New("security: bad cluster TLS configuration")

// Config names the PEM files of cluster TLS. All three files or none: none
// is plaintext.
type Config struct {
	// CA is the certificate authority that signs every component's
	// certificate (--cluster-ssl-ca).
	CA string `toml:"cluster-ssl-ca"`
	// Cert and Key are this component's certificate (chain) and private
	// key (--cluster-ssl-cert, --cluster-ssl-key); the certificate is used
	// both as a server and as a client certificate.
	Cert string `toml:"cluster-ssl-cert"`
	Key  string `toml:"cluster-ssl-key"`
	// VerifyCN, when not empty, is the comma-separated list of the
	// CommonNames a client certificate must have for this component to
	// accept the connection (--cluster-verify-cn).
	VerifyCN string `toml:"cluster-verify-cn"`
}

// Enabled reports whether any file is named.
func (c Config) Enabled() bool { return c.CA != "" || c.Cert != "" || c.Key != "" }

// Validate reports a partial configuration.
func (c Config) Validate() error {
	if !c.Enabled() {
		if c.VerifyCN != "" {
			return fmt.Errorf("%w: --cluster-verify-cn needs --cluster-ssl-ca, --cluster-ssl-cert and --cluster-ssl-key", ErrConfig)
		}
		return nil
	}
	var missing []string
	for _, f := range []struct{ flag, v string }{{"--cluster-ssl-ca", c.CA}, {"--cluster-ssl-cert", c.Cert}, {"--cluster-ssl-key", c.Key}} {
		if f.v == "" {
			missing = append(missing, f.flag)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: --cluster-ssl-ca, --cluster-ssl-cert and --cluster-ssl-key go together; missing %v", ErrConfig, missing)
	}
	return nil
}

// RegisterFlags binds --cluster-ssl-ca, --cluster-ssl-cert, --cluster-ssl-key
// and --cluster-verify-cn to c (TOML keys are the flag names).
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.CA, "cluster-ssl-ca", c.CA, "PEM file of the CA that signs every component's certificate; with --cluster-ssl-cert and --cluster-ssl-key turns on mutual TLS between components (empty: plaintext)")
	fs.StringVar(&c.Cert, "cluster-ssl-cert", c.Cert, "PEM file of this component's certificate, used as server and client certificate (re-read when it changes)")
	fs.StringVar(&c.Key, "cluster-ssl-key", c.Key, "PEM file of the private key of --cluster-ssl-cert (re-read when it changes)")
	fs.StringVar(&c.VerifyCN, "cluster-verify-cn", c.VerifyCN, "comma-separated CommonNames a client certificate must have to be accepted (empty: any certificate the CA signed)")
}

// TLS is the loaded, reloading credential material of one component. The
// nil *TLS is plaintext.
type TLS struct {
	cfg       Config
	cns       []string // cfg.VerifyCN split
	component string
	log       *slog.Logger

	mu  sync.Mutex
	cur *material // never nil after New
}

// material is one loaded set of files.
type material struct {
	cert   tls.Certificate
	pool   *x509.CertPool
	stamps [3]stamp // of CA, Cert, Key
}

// stamp identifies one version of a file.
type stamp struct {
	mod  time.Time
	size int64
}

// New loads cfg's files for component ("pd", "store", "sql", a tool's
// name; it labels metrics and logs). An empty cfg gives a nil *TLS
// (plaintext) and no error.
func New(cfg Config, component string) (*TLS, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.Enabled() {
		return nil, nil
	}
	t := &TLS{cfg: cfg, cns: config.SplitList(cfg.VerifyCN), component: component, log: slog.Default().With("component", "security", "for", component)}
	m, err := t.load()
	if err != nil {
		return nil, err
	}
	t.cur = m
	notAfter.WithLabelValues(component).Set(float64(m.cert.Leaf.NotAfter.Unix()))
	t.log.Info("cluster TLS on", "ca", cfg.CA, "cert", cfg.Cert, "subject", m.cert.Leaf.Subject.String(),
		"not_after", m.cert.Leaf.NotAfter, "verify_cn", cfg.VerifyCN)
	return t, nil
}

// Config returns the file configuration t was built from (the zero Config
// for nil).
func (t *TLS) Config() Config {
	if t == nil {
		return Config{}
	}
	return t.cfg
}

// files are the paths in stamp order.
func (t *TLS) files() [3]string { return [3]string{t.cfg.CA, t.cfg.Cert, t.cfg.Key} }

// stamps stats the files.
func (t *TLS) stamps() ([3]stamp, error) {
	var out [3]stamp
	for i, f := range t.files() {
		fi, err := os.Stat(f)
		if err != nil {
			return out, fmt.Errorf("%w: %s: %v", ErrConfig, f, err)
		}
		out[i] = stamp{mod: fi.ModTime(), size: fi.Size()}
	}
	return out, nil
}

// load reads every file.
func (t *TLS) load() (*material, error) {
	st, err := t.stamps()
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(t.cfg.CA)
	if err != nil {
		return nil, fmt.Errorf("%w: CA file %s: %v", ErrConfig, t.cfg.CA, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("%w: CA file %s holds no PEM certificate", ErrConfig, t.cfg.CA)
	}
	cert, err := tls.LoadX509KeyPair(t.cfg.Cert, t.cfg.Key)
	if err != nil {
		return nil, fmt.Errorf("%w: certificate %s with key %s: %v", ErrConfig, t.cfg.Cert, t.cfg.Key, err)
	}
	return &material{cert: cert, pool: pool, stamps: st}, nil
}

// current returns the material for a new handshake, re-reading the files
// when one changed. A set that fails to load is logged and the previous one
// kept: the next handshake tries again.
func (t *TLS) current() *material {
	t.mu.Lock()
	defer t.mu.Unlock()
	st, err := t.stamps()
	if err == nil && st == t.cur.stamps {
		return t.cur
	}
	var m *material
	if err == nil {
		m, err = t.load()
	}
	if err != nil {
		reloads.WithLabelValues(t.component, "error").Inc()
		t.log.Error("cluster TLS files changed but do not load; new connections keep the previous certificate until they do", "err", err)
		return t.cur
	}
	reloads.WithLabelValues(t.component, "ok").Inc()
	t.log.Info("cluster TLS files reloaded", "ca", t.cfg.CA, "cert", t.cfg.Cert, "subject", m.cert.Leaf.Subject.String(), "not_after", m.cert.Leaf.NotAfter)
	t.cur = m
	notAfter.WithLabelValues(t.component).Set(float64(m.cert.Leaf.NotAfter.Unix()))
	return m
}

// serverConfig is the configuration of one server handshake.
func (t *TLS) serverConfig(auth tls.ClientAuthType, protos []string) *tls.Config {
	m := t.current()
	return &tls.Config{
		MinVersion:       tls.VersionTLS12,
		Certificates:     []tls.Certificate{m.cert},
		ClientCAs:        m.pool,
		ClientAuth:       auth,
		NextProtos:       protos,
		VerifyConnection: t.verifyCN,
	}
}

// verifyCN checks a client certificate's CommonName against VerifyCN.
func (t *TLS) verifyCN(cs tls.ConnectionState) error {
	if len(t.cns) == 0 || len(cs.PeerCertificates) == 0 {
		return nil
	}
	cn := cs.PeerCertificates[0].Subject.CommonName
	if !slices.Contains(t.cns, cn) {
		return fmt.Errorf("security: client certificate CommonName %q is not in --cluster-verify-cn %q", cn, t.cfg.VerifyCN)
	}
	return nil
}

// ServerConfig is a tls.Config for a server that requires and verifies a
// client certificate; each handshake uses the current files.
func (t *TLS) ServerConfig() *tls.Config {
	return t.serverTLS(tls.RequireAndVerifyClientCert, []string{"h2"})
}

func (t *TLS) serverTLS(auth tls.ClientAuthType, protos []string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: protos,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return t.serverConfig(auth, protos), nil
		},
	}
}

// ClientConfig is the tls.Config of one connection to serverName (a host
// name or IP address, no port): it presents the current certificate and
// verifies the server's against the current CA and serverName.
func (t *TLS) ClientConfig(serverName string) *tls.Config {
	m := t.current()
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		ServerName:   serverName,
		Certificates: []tls.Certificate{m.cert},
		RootCAs:      m.pool,
	}
}

// VerifyCNs is the --cluster-verify-cn list (nil: any CommonName).
func (t *TLS) VerifyCNs() []string { return t.cns }

// HandshakeFailed counts a failed handshake that t's credentials did not
// see themselves (embedded etcd's listeners) and logs it.
func (t *TLS) HandshakeFailed(side string, err error) {
	handshakeFailures.WithLabelValues(t.component, side).Inc()
	t.log.Warn("cluster TLS handshake failed", "side", side, "err", err)
}
