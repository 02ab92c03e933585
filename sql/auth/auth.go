package auth

import (
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"sync"
)

// Plugin names as they appear on the wire.
const (
	NativePassword      = "mysql_native_password"
	CachingSHA2Password = "caching_sha2_password"
)

// pbkdf2Rounds is the cost of the stored caching_sha2_password hash (MySQL's
// sha256crypt uses 5000 rounds).
const pbkdf2Rounds = 5000

// ErrUnknownPlugin is returned for a plugin name this server does not have.
var ErrUnknownPlugin = errors.New("auth: unknown authentication plugin")

// Account is one user's credentials. Immutable once built.
type Account struct {
	Name   string
	Plugin string // NativePassword or CachingSHA2Password
	empty  bool   // no password
	native [sha1.Size]byte
	salt   [20]byte
	hash   [sha256.Size]byte
}

// NewAccount derives the credentials of user name with password pw for
// plugin (empty means NativePassword).
func NewAccount(name, pw, plugin string) (*Account, error) {
	if plugin == "" {
		plugin = NativePassword
	}
	if plugin != NativePassword && plugin != CachingSHA2Password {
		return nil, fmt.Errorf("%w: %q", ErrUnknownPlugin, plugin)
	}
	a := &Account{Name: name, Plugin: plugin, empty: pw == ""}
	h1 := sha1.Sum([]byte(pw))
	a.native = sha1.Sum(h1[:])
	if _, err := rand.Read(a.salt[:]); err != nil {
		return nil, err
	}
	k, err := pbkdf2.Key(sha256.New, pw, a.salt[:], pbkdf2Rounds, sha256.Size)
	if err != nil {
		return nil, err
	}
	copy(a.hash[:], k)
	return a, nil
}

// EmptyPassword reports whether the account has no password.
func (a *Account) EmptyPassword() bool { return a.empty }

// CheckNative verifies a mysql_native_password scramble of nonce:
// resp = SHA1(pw) XOR SHA1(nonce + SHA1(SHA1(pw))).
func (a *Account) CheckNative(nonce, resp []byte) bool {
	if a.empty {
		return len(resp) == 0
	}
	if len(resp) != sha1.Size {
		return false
	}
	h := sha1.New()
	h.Write(nonce)
	h.Write(a.native[:])
	h3 := h.Sum(nil)
	var h1 [sha1.Size]byte
	for i := range h1 {
		h1[i] = resp[i] ^ h3[i]
	}
	got := sha1.Sum(h1[:])
	return subtle.ConstantTimeCompare(got[:], a.native[:]) == 1
}

// CheckPlain verifies a cleartext password (caching_sha2_password full
// authentication, received over TLS or RSA-encrypted).
func (a *Account) CheckPlain(pw []byte) bool {
	k, err := pbkdf2.Key(sha256.New, string(pw), a.salt[:], pbkdf2Rounds, sha256.Size)
	if err != nil {
		return false
	}
	return subtle.ConstantTimeCompare(k, a.hash[:]) == 1
}

// SHA2Cache is the per-node caching_sha2_password fast-path cache: user ->
// SHA256(SHA256(password)), filled by a successful full authentication.
type SHA2Cache struct {
	mu sync.Mutex
	m  map[string][sha256.Size]byte
}

// NewSHA2Cache returns an empty cache.
func NewSHA2Cache() *SHA2Cache { return &SHA2Cache{m: map[string][sha256.Size]byte{}} }

// Put records that user authenticated with password pw.
func (c *SHA2Cache) Put(user string, pw []byte) {
	h1 := sha256.Sum256(pw)
	h2 := sha256.Sum256(h1[:])
	c.mu.Lock()
	c.m[user] = h2
	c.mu.Unlock()
}

// Forget drops user's entry (password changed, account dropped).
func (c *SHA2Cache) Forget(user string) {
	c.mu.Lock()
	delete(c.m, user)
	c.mu.Unlock()
}

// FastCheck verifies a caching_sha2_password scramble of nonce from the
// cache: resp = SHA256(pw) XOR SHA256(SHA256(SHA256(pw)) + nonce). cached
// is false when user has no entry (the client must do full authentication).
func (c *SHA2Cache) FastCheck(user string, nonce, resp []byte) (ok, cached bool) {
	c.mu.Lock()
	h2, cached := c.m[user]
	c.mu.Unlock()
	if !cached || len(resp) != sha256.Size {
		return false, cached
	}
	h := sha256.New()
	h.Write(h2[:])
	h.Write(nonce)
	m3 := h.Sum(nil)
	var m1 [sha256.Size]byte
	for i := range m1 {
		m1[i] = resp[i] ^ m3[i]
	}
	got := sha256.Sum256(m1[:])
	return subtle.ConstantTimeCompare(got[:], h2[:]) == 1, true
}
