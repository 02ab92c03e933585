package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/auth"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/privilege"
	"github.com/stratadb/strata/sql/session"
	"github.com/stratadb/strata/sql/types"
)

// The connection phase: greeting, optional TLS upgrade, handshake response,
// authentication (with auth switch), then OK or ERR.

// errSecureTransportRequired is ER_SECURE_TRANSPORT_REQUIRED.
const errSecureTransportRequired uint16 = 3159

// caching_sha2_password's AuthMoreData payloads.
const (
	sha2RequestPublicKey  = 2
	sha2FastAuthSuccess   = 3
	sha2PerformFullAuth   = 4
	authMoreDataHeader    = 1
	authSwitchHeader      = 0xfe
	sslRequestPayloadSize = 32
)

// errAuthFailed marks a failed authentication (answered with 1045).
var errAuthFailed = errors.New("server: authentication failed")

func (c *clientConn) handshake(ctx context.Context) error {
	// The whole connection phase, writes included, must finish within
	// HandshakeTimeout; serve's deferred Close then ends the goroutine.
	_ = c.pkt.conn.SetDeadline(time.Now().Add(c.srv.cfg.HandshakeTimeout))
	defer func() { _ = c.pkt.conn.SetDeadline(time.Time{}) }()
	if _, err := rand.Read(c.salt[:]); err != nil {
		return err
	}
	for i := range c.salt { // printable, never NUL
		c.salt[i] = c.salt[i]%94 + 33
	}
	caps := c.srv.caps()
	b := c.wbuf[:0]
	b = append(b, 10)
	b = append(b, session.ServerVersion...)
	b = append(b, 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(c.id))
	b = append(b, c.salt[:8]...)
	b = append(b, 0)
	b = binary.LittleEndian.AppendUint16(b, uint16(caps&0xffff))
	b = append(b, byte(types.CollationUTF8MB4))
	b = binary.LittleEndian.AppendUint16(b, mysql.ServerStatusAutocommit)
	b = binary.LittleEndian.AppendUint16(b, uint16(caps>>16))
	b = append(b, byte(len(c.salt)+1))
	b = append(b, make([]byte, 10)...)
	b = append(b, c.salt[8:]...)
	b = append(b, 0)
	b = append(b, c.srv.cfg.AuthPlugin...)
	b = append(b, 0)
	c.wbuf = b
	if err := c.pkt.writePacket(b); err != nil {
		return err
	}
	if err := c.pkt.flush(); err != nil {
		return err
	}
	data, err := c.readHandshakePacket()
	if err != nil {
		return err
	}
	if len(data) == sslRequestPayloadSize && binary.LittleEndian.Uint32(data)&mysql.ClientSSL != 0 && c.srv.cfg.TLS != nil {
		if err := c.startTLS(ctx); err != nil {
			handshakeFailures.WithLabelValues("tls").Inc()
			return fmt.Errorf("TLS handshake: %w", err)
		}
		if data, err = c.readHandshakePacket(); err != nil {
			return err
		}
	}
	resp, err := parseHandshakeResponse(data)
	if err != nil {
		handshakeFailures.WithLabelValues("malformed").Inc()
		_ = c.writeError(&errno.Error{Code: errHandshake, State: "08S01", Msg: "Bad handshake"})
		c.closeLingering()
		return err
	}
	c.caps = resp.caps & caps
	c.user = resp.user
	if c.srv.cfg.RequireSecureTransport && c.tls == nil {
		handshakeFailures.WithLabelValues("insecure").Inc()
		_ = c.writeError(&errno.Error{Code: errSecureTransportRequired, State: "HY000",
			Msg: "Connections using insecure transport are prohibited while --require_secure_transport=ON."})
		c.closeLingering()
		return errors.New("insecure transport refused")
	}
	host := c.sessHost()
	u, err := c.authenticate(ctx, &resp, host)
	if err != nil {
		return c.authFailed(err, &resp, host)
	}
	c.account = u.Ident
	c.newSession()
	c.mu.Lock()
	c.noteIdentity()
	c.mu.Unlock()
	c.sess.SetClientCollation(int(resp.coll))
	if c.caps&mysql.ClientInteractive != 0 {
		c.sess.SetInteractive()
	}
	if resp.db != "" && c.caps&mysql.ClientConnectWithDB != 0 {
		if err := c.sess.UseDB(ctx, resp.db); err != nil {
			_ = c.writeError(err)
			c.closeLingering()
			return fmt.Errorf("connect with db %q: %w", resp.db, err)
		}
	}
	if err := c.writeOK(0, 0, 0, ""); err != nil {
		return err
	}
	return c.pkt.flush()
}

// authFailed answers a failed authentication (1045 for bad credentials,
// the error itself when it is a MySQL error) and closes the connection.
func (c *clientConn) authFailed(err error, resp *handshakeResponse, host string) error {
	if errors.Is(err, errAuthFailed) {
		handshakeFailures.WithLabelValues("auth").Inc()
		using := "NO"
		if len(resp.auth) > 0 {
			using = "YES"
		}
		_ = c.writeError(errno.New(errno.ErrAccessDenied, "Access denied for user '%s'@'%s' (using password: %s)", c.user, host, using))
		c.closeLingering()
		return fmt.Errorf("auth failed for user %q: %w", c.user, err)
	}
	if e := new(errno.Error); errors.As(err, &e) {
		handshakeFailures.WithLabelValues("auth").Inc()
		_ = c.writeError(e)
		c.closeLingering()
	}
	return err
}

// changeUser runs COM_CHANGE_USER: the open session ends (its transaction
// rolls back), the new user authenticates against the greeting's nonce
// (with an auth switch when its plugin differs) and gets a fresh session.
// A failure answers ERR and closes the connection, as MySQL does.
func (c *clientConn) changeUser(ctx context.Context, arg []byte) (quit bool, err error) {
	resp, perr := parseChangeUser(arg, c.caps)
	if perr != nil {
		_ = c.writeError(&errno.Error{Code: errHandshake, State: "08S01", Msg: "Bad handshake"})
		return true, nil
	}
	c.endSession(ctx)
	c.sess = nil
	c.user = resp.user
	host := c.sessHost()
	u, err := c.authenticate(ctx, &resp, host)
	if err != nil {
		if aerr := c.authFailed(err, &resp, host); aerr != nil && !errors.Is(aerr, errAuthFailed) {
			c.log.Debug("change user failed", "err", aerr)
		}
		return true, nil
	}
	c.account = u.Ident
	c.newSession()
	if resp.coll != 0 {
		c.sess.SetClientCollation(int(resp.coll))
	}
	if resp.db != "" {
		if err := c.sess.UseDB(ctx, resp.db); err != nil {
			return false, c.writeError(err)
		}
	}
	return false, c.writeOK(0, 0, c.status(), "")
}

// parseChangeUser decodes COM_CHANGE_USER's payload (after the command
// byte): user, auth data, database, character set, plugin, attributes.
func parseChangeUser(b []byte, caps uint32) (handshakeResponse, error) {
	r := handshakeResponse{caps: caps}
	user, b, ok := readNulString(b)
	if !ok {
		return r, fmt.Errorf("%w: change user: user name", errMalformed)
	}
	r.user = string(user)
	if caps&mysql.ClientSecureConnection != 0 {
		if len(b) < 1 || len(b) < 1+int(b[0]) {
			return r, fmt.Errorf("%w: change user: auth data", errMalformed)
		}
		r.auth, b = append([]byte(nil), b[1:1+int(b[0])]...), b[1+int(b[0]):]
	} else {
		a, rest, ok := readNulString(b)
		if !ok {
			return r, fmt.Errorf("%w: change user: auth data", errMalformed)
		}
		r.auth, b = append([]byte(nil), a...), rest
	}
	db, b, ok := readNulString(b)
	if !ok {
		return r, fmt.Errorf("%w: change user: database", errMalformed)
	}
	r.db = string(db)
	if len(b) >= 2 {
		r.coll, b = b[0], b[2:]
	}
	if caps&mysql.ClientPluginAuth != 0 && len(b) > 0 {
		p, _, ok := readNulString(b)
		if !ok {
			p = b
		}
		r.plugin = string(p)
	}
	return r, nil
}

// readHandshakePacket reads a client packet of the connection phase; a
// framing error is answered and closes the connection.
func (c *clientConn) readHandshakePacket() ([]byte, error) {
	data, err := c.pkt.readPacket()
	if err != nil {
		if e := readErrorReply(err); e != nil {
			handshakeFailures.WithLabelValues("malformed").Inc()
			_ = c.writeError(e)
			c.closeLingering()
		} else {
			handshakeFailures.WithLabelValues("closed").Inc()
		}
		return nil, err
	}
	return data, nil
}

// bufferedConn reads through the packet reader first: the client may have
// sent its TLS ClientHello right behind the SSL request, into our buffer.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// startTLS upgrades the connection after an SSL request.
func (c *clientConn) startTLS(ctx context.Context) error {
	tc := tls.Server(&bufferedConn{Conn: c.pkt.conn, r: c.pkt.r}, c.srv.cfg.TLS)
	if err := tc.HandshakeContext(ctx); err != nil {
		return err
	}
	c.tls = tc
	c.pkt.conn = tc
	c.pkt.r = bufio.NewReaderSize(tc, 16<<10)
	c.pkt.w.Reset(tc)
	return nil
}

// statusVars is the connection's SHOW STATUS rows.
func (c *clientConn) statusVars() []session.StatusVar {
	cipher, version := "", ""
	if c.tls != nil {
		st := c.tls.ConnectionState()
		cipher = tls.CipherSuiteName(st.CipherSuite)
		version = tlsVersionName(st.Version)
	}
	return []session.StatusVar{{Name: "Ssl_cipher", Value: cipher}, {Name: "Ssl_version", Value: version}}
}

func tlsVersionName(v uint16) string {
	switch v {
	case tls.VersionTLS10:
		return "TLSv1"
	case tls.VersionTLS11:
		return "TLSv1.1"
	case tls.VersionTLS12:
		return "TLSv1.2"
	case tls.VersionTLS13:
		return "TLSv1.3"
	}
	return fmt.Sprintf("TLS 0x%04x", v)
}

// writeAuthPacket sends one connection-phase packet and flushes it.
func (c *clientConn) writeAuthPacket(b []byte) error {
	if err := c.pkt.writePacket(b); err != nil {
		return err
	}
	return c.pkt.flush()
}

// authenticate finds the account of the login in the node's privilege
// snapshot (confirmed current first: a user created or changed on another
// SQL node logs in at once) and checks the client's credentials with the
// account's plugin, switching the client to it first when it answered with
// another one. It returns errAuthFailed (wrapped) for bad credentials, an
// *errno.Error for a locked account or a missing TLS the account requires.
func (c *clientConn) authenticate(ctx context.Context, resp *handshakeResponse, host string) (*privilege.User, error) {
	rctx, cancel := context.WithTimeout(ctx, c.srv.cfg.HandshakeTimeout)
	snap, err := c.srv.dom.Privileges().Refresh(rctx)
	cancel()
	if snap == nil {
		return nil, errno.New(errno.ErrUnknown, "Cannot read the privilege tables, so no login is possible yet: %v", err)
	}
	if err != nil {
		c.log.Warn("privilege tables not confirmed current; authenticating against the last loaded version", "err", err)
	}
	u := snap.Match(c.user, host)
	if snap.Skip() {
		return u, nil // --skip-grant-tables
	}
	var acct *auth.Account
	want := c.srv.cfg.AuthPlugin
	if u != nil && u.Account != nil {
		acct = u.Account
		want = acct.Plugin
	}
	plugin := resp.plugin
	if plugin == "" {
		plugin = auth.NativePassword // clients without CLIENT_PLUGIN_AUTH
	}
	authData := resp.auth
	if plugin != want {
		if c.caps&mysql.ClientPluginAuth == 0 {
			return nil, fmt.Errorf("%w: account needs %s and the client cannot switch plugins", errAuthFailed, want)
		}
		b := append(c.wbuf[:0], authSwitchHeader)
		b = append(b, want...)
		b = append(b, 0)
		b = append(b, c.salt[:]...)
		b = append(b, 0)
		c.wbuf = b
		if err := c.writeAuthPacket(b); err != nil {
			return nil, err
		}
		var err error
		if authData, err = c.readHandshakePacket(); err != nil {
			return nil, err
		}
		resp.auth = append(resp.auth[:0], authData...)
	}
	if acct == nil {
		return nil, fmt.Errorf("%w: unknown user", errAuthFailed)
	}
	switch want {
	case auth.NativePassword:
		if !acct.CheckNative(c.salt[:], authData) {
			return nil, fmt.Errorf("%w: wrong password", errAuthFailed)
		}
	case auth.CachingSHA2Password:
		if err := c.cachingSHA2(acct, authData); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: plugin %s", errAuthFailed, want)
	}
	if u.Rec.Locked {
		return nil, &errno.Error{Code: errno.ErrAccountLocked, State: "HY000", Msg: fmt.Sprintf("Access denied for user '%s'@'%s'. Account is locked.", c.user, host)}
	}
	if u.Rec.RequireSSL && c.tls == nil {
		return nil, fmt.Errorf("%w: the account requires SSL", errAuthFailed)
	}
	return u, nil
}

// cachingSHA2 runs caching_sha2_password: the fast path when this node's
// cache knows the account, else full authentication with the cleartext
// password over TLS or RSA-encrypted with the node's key.
func (c *clientConn) cachingSHA2(acct *auth.Account, scramble []byte) error {
	if acct.EmptyPassword() {
		if len(scramble) != 0 {
			return fmt.Errorf("%w: wrong password", errAuthFailed)
		}
		return nil
	}
	if len(scramble) == 0 {
		return fmt.Errorf("%w: no password", errAuthFailed)
	}
	ok, cached := c.srv.sha2Cache.FastCheck(acct, c.salt[:], scramble)
	if cached {
		if !ok {
			return fmt.Errorf("%w: wrong password", errAuthFailed)
		}
		sha2Auths.WithLabelValues("fast").Inc()
		return c.writeAuthPacket([]byte{authMoreDataHeader, sha2FastAuthSuccess})
	}
	if err := c.writeAuthPacket([]byte{authMoreDataHeader, sha2PerformFullAuth}); err != nil {
		return err
	}
	data, err := c.readHandshakePacket()
	if err != nil {
		return err
	}
	var pw []byte
	switch {
	case c.tls != nil:
		pw = bytes.TrimSuffix(data, []byte{0})
	case len(data) == 1 && data[0] == sha2RequestPublicKey:
		key, err := c.srv.rsaKey()
		if err != nil {
			return err
		}
		if err := c.writeAuthPacket(append([]byte{authMoreDataHeader}, key.PublicPEM()...)); err != nil {
			return err
		}
		if data, err = c.readHandshakePacket(); err != nil {
			return err
		}
		if pw, err = key.DecryptPassword(data, c.salt[:]); err != nil {
			return fmt.Errorf("%w: %v", errAuthFailed, err)
		}
	default:
		// A client that already had our public key sends the ciphertext
		// at once; a cleartext password on a plain connection is refused.
		key, err := c.srv.rsaKey()
		if err != nil {
			return err
		}
		if pw, err = key.DecryptPassword(data, c.salt[:]); err != nil {
			return fmt.Errorf("%w: full authentication needs TLS or the server's RSA public key", errAuthFailed)
		}
	}
	if !acct.CheckPlain(pw) {
		return fmt.Errorf("%w: wrong password", errAuthFailed)
	}
	c.srv.sha2Cache.Put(acct, pw)
	sha2Auths.WithLabelValues("full").Inc()
	return nil
}

type handshakeResponse struct {
	caps   uint32
	coll   byte
	user   string
	auth   []byte
	db     string
	plugin string
}

func parseHandshakeResponse(b []byte) (handshakeResponse, error) {
	var r handshakeResponse
	if len(b) < 32 {
		return r, fmt.Errorf("%w: handshake response of %d bytes", errMalformed, len(b))
	}
	r.caps = binary.LittleEndian.Uint32(b)
	r.coll = b[8]
	if r.caps&mysql.ClientProtocol41 == 0 {
		return r, fmt.Errorf("%w: client lacks CLIENT_PROTOCOL_41", errMalformed)
	}
	if r.caps&mysql.ClientSSL != 0 && len(b) == 32 {
		return r, fmt.Errorf("%w: client requested TLS, which this server does not offer", errMalformed)
	}
	b = b[32:]
	user, b, ok := readNulString(b)
	if !ok {
		return r, fmt.Errorf("%w: user name", errMalformed)
	}
	r.user = string(user)
	switch {
	case r.caps&mysql.ClientPluginAuthLenencClientData != 0:
		n, rest, ok := readLenEncInt(b)
		if !ok || uint64(len(rest)) < n {
			return r, fmt.Errorf("%w: auth data", errMalformed)
		}
		r.auth, b = rest[:n], rest[n:]
	case r.caps&mysql.ClientSecureConnection != 0:
		if len(b) < 1 || len(b) < 1+int(b[0]) {
			return r, fmt.Errorf("%w: auth data", errMalformed)
		}
		r.auth, b = b[1:1+int(b[0])], b[1+int(b[0]):]
	default:
		var a []byte
		if a, b, ok = readNulString(b); !ok {
			return r, fmt.Errorf("%w: auth data", errMalformed)
		}
		r.auth = a
	}
	r.auth = append([]byte(nil), r.auth...)
	if r.caps&mysql.ClientConnectWithDB != 0 && len(b) > 0 {
		db, rest, ok := readNulString(b)
		if !ok {
			return r, fmt.Errorf("%w: database name", errMalformed)
		}
		r.db, b = string(db), rest
	}
	if r.caps&mysql.ClientPluginAuth != 0 && len(b) > 0 {
		p, rest, ok := readNulString(b)
		if !ok {
			p, rest = b, nil // some clients omit the final NUL
		}
		r.plugin, b = string(p), rest
	}
	_ = b // connection attributes are ignored
	return r, nil
}
