package server_test

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"encoding/binary"
	"sync/atomic"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/auth"
	"github.com/stratadb/strata/sql/server"
)

var tlsConfigSeq atomic.Int64

// tlsServer starts a server with a self-signed certificate (persisted in a
// temp dir) and registers a go-sql-driver TLS config that trusts it; it
// returns the DSN parameter selecting that config.
func tlsServer(t *testing.T, opt func(*server.Config)) (*testServer, string) {
	t.Helper()
	cert, gen, err := auth.LoadOrCreateCert("", "", t.TempDir())
	require.NoError(t, err)
	require.True(t, gen)
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	name := "strata-test-" + string(rune('a'+tlsConfigSeq.Add(1)))
	require.NoError(t, mysql.RegisterTLSConfig(name, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}))
	t.Cleanup(func() { mysql.DeregisterTLSConfig(name) })
	ts, _ := startServerWith(t, func(c *server.Config) {
		c.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
		opt(c)
	})
	return ts, "tls=" + name
}

func sha2Auths(t *testing.T, path string) float64 {
	return labeledCounters(t, "strata_sql_caching_sha2_auths_total")[path]
}

func ping(t *testing.T, dsn string) error {
	db, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	defer db.Close()
	return db.Ping()
}

// TestCachingSHA2Password: full authentication over TLS and with RSA on a
// plain connection, then the fast path from the node's cache; wrong
// passwords get 1045 with MySQL's message.
func TestCachingSHA2Password(t *testing.T) {
	ts, tlsParam := tlsServer(t, func(c *server.Config) { c.AuthPlugin = auth.CachingSHA2Password })

	full, fast := sha2Auths(t, "full"), sha2Auths(t, "fast")
	// First login over TLS: full authentication with the cleartext password.
	require.NoError(t, ping(t, ts.dsn("alice", "s3cret", "test", tlsParam)))
	require.Equal(t, full+1, sha2Auths(t, "full"))
	// Now cached: a plain connection takes the fast path.
	require.NoError(t, ping(t, ts.dsn("alice", "s3cret", "test", "")))
	require.Equal(t, fast+1, sha2Auths(t, "fast"))

	err := ping(t, ts.dsn("alice", "wrong", "", ""))
	require.Equal(t, uint16(1045), mysqlCode(err))
	require.Contains(t, err.Error(), "Access denied for user 'alice'@'127.0.0.1' (using password: YES)")
	err = ping(t, ts.dsn("alice", "", "", tlsParam))
	require.Equal(t, uint16(1045), mysqlCode(err))
	require.Contains(t, err.Error(), "(using password: NO)")
	require.NoError(t, ping(t, ts.dsn("root", "", "", "")), "empty password")
	require.Equal(t, uint16(1045), mysqlCode(ping(t, ts.dsn("nobody", "x", "", ""))))
}

func TestCachingSHA2PasswordRSA(t *testing.T) {
	ts, _ := startServerWith(t, func(c *server.Config) { c.AuthPlugin = auth.CachingSHA2Password })
	full := sha2Auths(t, "full")
	// No TLS: go-sql-driver asks for the server's public key and sends the
	// password RSA-encrypted.
	require.NoError(t, ping(t, ts.dsn("alice", "s3cret", "", "")))
	require.Equal(t, full+1, sha2Auths(t, "full"))
	require.Equal(t, uint16(1045), mysqlCode(ping(t, ts.dsn("alice", "bad", "", ""))))
}

// rawLogin sends a HandshakeResponse41 for user with auth data and plugin.
func (r *rawConn) rawLogin(user string, authData []byte, plugin string) {
	caps := uint32(1<<9 | 1<<15 | 1<<19 | 1<<21) // PROTOCOL_41, SECURE_CONNECTION, PLUGIN_AUTH, LENENC_CLIENT_DATA
	b := binary.LittleEndian.AppendUint32(nil, caps)
	b = binary.LittleEndian.AppendUint32(b, 1<<24)
	b = append(b, 45)
	b = append(b, make([]byte, 23)...)
	b = append(b, user...)
	b = append(b, 0, byte(len(authData)))
	b = append(b, authData...)
	b = append(b, plugin...)
	b = append(b, 0)
	r.write(1, b)
}

// TestCachingSHA2RefusesCleartextOnPlainConnection: a client that answers
// "perform full authentication" with the cleartext password on a plain
// connection is refused, and one switched from mysql_native_password gets
// an auth switch request.
func TestCachingSHA2RawExchange(t *testing.T) {
	ts, _ := startServerWith(t, func(c *server.Config) { c.AuthPlugin = auth.CachingSHA2Password })

	t.Run("cleartext on a plain connection", func(t *testing.T) {
		r := dialRaw(t, ts.addr)
		r.rawLogin("alice", make([]byte, sha256.Size), auth.CachingSHA2Password)
		require.Equal(t, []byte{1, 4}, r.read(), "perform full authentication")
		r.write(r.sq, []byte("s3cret\x00"))
		r.expectErr(1045)
		r.expectClosed()
	})
	t.Run("auth switch from native", func(t *testing.T) {
		r := dialRaw(t, ts.addr)
		r.rawLogin("root", nil, "mysql_native_password")
		sw := r.read()
		require.Equal(t, byte(0xfe), sw[0], "auth switch request")
		require.Equal(t, "caching_sha2_password\x00", string(sw[1:23]))
		r.write(r.sq, nil) // root has no password
		require.Equal(t, byte(0), r.read()[0], "OK")
		r.ping()
	})
}

func TestTLSStatusAndRequireSecureTransport(t *testing.T) {
	ts, tlsParam := tlsServer(t, func(c *server.Config) {})
	status := func(params string) map[string]string {
		db := ts.open(t, "", "")
		db.Close()
		conn, err := sql.Open("mysql", ts.dsn("root", "", "", params))
		require.NoError(t, err)
		defer conn.Close()
		out := map[string]string{}
		for _, row := range queryStrings(t, conn, "SHOW STATUS LIKE 'Ssl%'") {
			out[row[0]] = row[1]
		}
		return out
	}
	require.Equal(t, map[string]string{"Ssl_cipher": "", "Ssl_version": ""}, status(""))
	st := status(tlsParam)
	require.Equal(t, "TLSv1.3", st["Ssl_version"])
	require.NotEmpty(t, st["Ssl_cipher"])

	strict, strictTLS := tlsServer(t, func(c *server.Config) { c.RequireSecureTransport = true })
	err := ping(t, strict.dsn("root", "", "", ""))
	require.Equal(t, uint16(3159), mysqlCode(err), "%v", err)
	require.NoError(t, ping(t, strict.dsn("root", "", "", strictTLS)))
	require.NoError(t, ping(t, strict.dsn("alice", "s3cret", "test", strictTLS)))
}
