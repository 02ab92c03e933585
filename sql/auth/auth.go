package auth

import (
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
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
	// AuthString is the stored form of the credentials (see HashPassword).
	AuthString string
	empty      bool // no password
	native     [sha1.Size]byte
	salt       [20]byte
	hash       [sha256.Size]byte
}

// NewAccount derives the credentials of user name with password pw for
// plugin (empty means NativePassword).
func NewAccount(name, pw, plugin string) (*Account, error) {
	if plugin == "" {
		plugin = NativePassword
	}
	as, err := HashPassword(plugin, pw)
	if err != nil {
		return nil, err
	}
	return ParseAccount(name, plugin, as)
}

// HashPassword returns the stored form of password pw for plugin (MySQL's
// mysql.user.authentication_string): "" for no password;
// mysql_native_password "*" + HEX(SHA1(SHA1(pw))) as in MySQL;
// caching_sha2_password "$S$" + hex(salt) + "$" + hex(PBKDF2-SHA256(pw,
// salt, 5000 rounds)) (Strata's own format).
func HashPassword(plugin, pw string) (string, error) {
	if pw == "" {
		return "", nil
	}
	switch plugin {
	case NativePassword, "":
		h1 := sha1.Sum([]byte(pw))
		h2 := sha1.Sum(h1[:])
		return "*" + strings.ToUpper(hex.EncodeToString(h2[:])), nil
	case CachingSHA2Password:
		var salt [20]byte
		if _, err := rand.Read(salt[:]); err != nil {
			return "", err
		}
		k, err := pbkdf2.Key(sha256.New, pw, salt[:], pbkdf2Rounds, sha256.Size)
		if err != nil {
			return "", err
		}
		return "$S$" + hex.EncodeToString(salt[:]) + "$" + hex.EncodeToString(k), nil
	}
	return "", fmt.Errorf("%w: %q", ErrUnknownPlugin, plugin)
}

// ErrBadAuthString is returned for a stored password hash that does not
// fit its plugin.
var ErrBadAuthString = errors.New("auth: invalid password hash for the plugin")

// ParseAccount builds an account from its stored credentials (HashPassword).
func ParseAccount(name, plugin, authString string) (*Account, error) {
	if plugin == "" {
		plugin = NativePassword
	}
	a := &Account{Name: name, Plugin: plugin, AuthString: authString, empty: authString == ""}
	if a.empty {
		if plugin != NativePassword && plugin != CachingSHA2Password {
			return nil, fmt.Errorf("%w: %q", ErrUnknownPlugin, plugin)
		}
		return a, nil
	}
	switch plugin {
	case NativePassword:
		b, err := hex.DecodeString(strings.TrimPrefix(authString, "*"))
		if !strings.HasPrefix(authString, "*") || err != nil || len(b) != sha1.Size {
			return nil, fmt.Errorf("%w: %s needs '*' and 40 hex digits", ErrBadAuthString, plugin)
		}
		copy(a.native[:], b)
	case CachingSHA2Password:
		parts := strings.Split(authString, "$")
		if len(parts) != 4 || parts[0] != "" || parts[1] != "S" {
			return nil, fmt.Errorf("%w: %s", ErrBadAuthString, plugin)
		}
		salt, err1 := hex.DecodeString(parts[2])
		hash, err2 := hex.DecodeString(parts[3])
		if err1 != nil || err2 != nil || len(salt) != len(a.salt) || len(hash) != len(a.hash) {
			return nil, fmt.Errorf("%w: %s", ErrBadAuthString, plugin)
		}
		copy(a.salt[:], salt)
		copy(a.hash[:], hash)
	default:
		return nil, fmt.Errorf("%w: %q", ErrUnknownPlugin, plugin)
	}
	return a, nil
}

// EmptyPassword reports whether the account has no password.
func (a *Account) EmptyPassword() bool { return a.empty }

// CheckNative verifies a mysql_native_password scramble of nonce:
// resp = SHA1(pw) XOR SHA1(nonce + SHA1(SHA1(pw))). Only a
// mysql_native_password account can pass it.
func (a *Account) CheckNative(nonce, resp []byte) bool {
	if a.empty {
		return len(resp) == 0
	}
	if a.Plugin != NativePassword || len(resp) != sha1.Size {
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
	if a.empty {
		return len(pw) == 0
	}
	if a.Plugin == NativePassword {
		h1 := sha1.Sum(pw)
		h2 := sha1.Sum(h1[:])
		return subtle.ConstantTimeCompare(h2[:], a.native[:]) == 1
	}
	k, err := pbkdf2.Key(sha256.New, string(pw), a.salt[:], pbkdf2Rounds, sha256.Size)
	if err != nil {
		return false
	}
	return subtle.ConstantTimeCompare(k, a.hash[:]) == 1
}

// SHA2Cache is the per-node caching_sha2_password fast-path cache: account
// -> SHA256(SHA256(password)), filled by a successful full authentication.
// An entry is bound to the account's AuthString: once the password changes
// (on any SQL node), the entry no longer answers.
type SHA2Cache struct {
	mu sync.Mutex
	m  map[string]sha2Entry
}

type sha2Entry struct {
	authString string
	h2         [sha256.Size]byte
}

// NewSHA2Cache returns an empty cache.
func NewSHA2Cache() *SHA2Cache { return &SHA2Cache{m: map[string]sha2Entry{}} }

// Put records that account a authenticated with password pw.
func (c *SHA2Cache) Put(a *Account, pw []byte) {
	h1 := sha256.Sum256(pw)
	h2 := sha256.Sum256(h1[:])
	c.mu.Lock()
	c.m[a.Name] = sha2Entry{authString: a.AuthString, h2: h2}
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
// is false when the account has no entry for its current credentials (the
// client must do full authentication).
func (c *SHA2Cache) FastCheck(a *Account, nonce, resp []byte) (ok, cached bool) {
	c.mu.Lock()
	e, cached := c.m[a.Name]
	c.mu.Unlock()
	cached = cached && e.authString == a.AuthString
	h2 := e.h2
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
