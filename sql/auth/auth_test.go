package auth

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// scrambleNative is what a client sends for mysql_native_password.
func scrambleNative(pw string, nonce []byte) []byte {
	if pw == "" {
		return nil
	}
	h1 := sha1.Sum([]byte(pw))
	h2 := sha1.Sum(h1[:])
	h3 := sha1.Sum(append(append([]byte(nil), nonce...), h2[:]...))
	out := make([]byte, sha1.Size)
	for i := range out {
		out[i] = h1[i] ^ h3[i]
	}
	return out
}

// scrambleSHA2 is what a client sends for caching_sha2_password.
func scrambleSHA2(pw string, nonce []byte) []byte {
	m1 := sha256.Sum256([]byte(pw))
	m2 := sha256.Sum256(m1[:])
	m3 := sha256.Sum256(append(m2[:], nonce...))
	for i := range m1 {
		m1[i] ^= m3[i]
	}
	return m1[:]
}

func TestAccountChecks(t *testing.T) {
	nonce := []byte("abcdefghijklmnopqrst")
	a, err := NewAccount("u", "s3cret", CachingSHA2Password)
	require.NoError(t, err)
	empty, err := NewAccount("e", "", "")
	require.NoError(t, err)
	require.Equal(t, NativePassword, empty.Plugin)
	n, err := NewAccount("n", "s3cret", NativePassword)
	require.NoError(t, err)
	require.Equal(t, "*B865CAE8F340F6CE1485A06F4492BB49718DF1EC", n.AuthString, "SHA1(SHA1(pw)) in hex, as MySQL stores it")
	cases := []struct {
		name string
		ok   bool
	}{
		{"native right", n.CheckNative(nonce, scrambleNative("s3cret", nonce))},
		{"native wrong", !n.CheckNative(nonce, scrambleNative("nope", nonce))},
		{"native short", !n.CheckNative(nonce, []byte{1, 2})},
		{"native empty answer", !n.CheckNative(nonce, nil)},
		{"native scramble on a caching_sha2 account", !a.CheckNative(nonce, scrambleNative("s3cret", nonce))},
		{"native plain right", n.CheckPlain([]byte("s3cret"))},
		{"native plain wrong", !n.CheckPlain([]byte("s3cre"))},
		{"empty account, empty answer", empty.CheckNative(nonce, nil)},
		{"empty account, some answer", !empty.CheckNative(nonce, scrambleNative("x", nonce))},
		{"plain right", a.CheckPlain([]byte("s3cret"))},
		{"plain wrong", !a.CheckPlain([]byte("s3cre"))},
	}
	for _, c := range cases {
		require.True(t, c.ok, c.name)
	}
	_, err = NewAccount("x", "y", "sha256_password")
	require.ErrorIs(t, err, ErrUnknownPlugin)
}

func TestParseAccount(t *testing.T) {
	a, err := NewAccount("u", "pw", CachingSHA2Password)
	require.NoError(t, err)
	b, err := ParseAccount("u", CachingSHA2Password, a.AuthString)
	require.NoError(t, err)
	require.True(t, b.CheckPlain([]byte("pw")), "a stored hash round-trips")
	for _, c := range []struct{ plugin, as string }{
		{NativePassword, "14E65567ABDB5135D0CFD9A70B3032C179A49EE7"},
		{NativePassword, "*14E6"},
		{CachingSHA2Password, "*14E65567ABDB5135D0CFD9A70B3032C179A49EE7"},
		{CachingSHA2Password, "$A$005$abc"},
		{CachingSHA2Password, "$S$zz$zz"},
	} {
		_, err := ParseAccount("u", c.plugin, c.as)
		require.ErrorIs(t, err, ErrBadAuthString, "%s %q", c.plugin, c.as)
	}
	_, err = ParseAccount("u", "sha256_password", "")
	require.ErrorIs(t, err, ErrUnknownPlugin)
}

func TestSHA2Cache(t *testing.T) {
	nonce := []byte("01234567890123456789")
	c := NewSHA2Cache()
	u, err := NewAccount("u@%", "pw", CachingSHA2Password)
	require.NoError(t, err)
	ok, cached := c.FastCheck(u, nonce, scrambleSHA2("pw", nonce))
	require.False(t, ok)
	require.False(t, cached, "nothing cached before a full authentication")
	c.Put(u, []byte("pw"))
	ok, cached = c.FastCheck(u, nonce, scrambleSHA2("pw", nonce))
	require.True(t, ok)
	require.True(t, cached)
	ok, cached = c.FastCheck(u, nonce, scrambleSHA2("other", nonce))
	require.False(t, ok)
	require.True(t, cached)
	ok, _ = c.FastCheck(u, []byte("another nonce 123456"), scrambleSHA2("pw", nonce))
	require.False(t, ok, "a scramble is bound to its nonce")
	changed, err := NewAccount("u@%", "new", CachingSHA2Password)
	require.NoError(t, err)
	_, cached = c.FastCheck(changed, nonce, scrambleSHA2("pw", nonce))
	require.False(t, cached, "a changed password invalidates the entry")
	c.Forget("u@%")
	_, cached = c.FastCheck(u, nonce, scrambleSHA2("pw", nonce))
	require.False(t, cached)
}

func TestRSAKeyPersistedAndDecrypts(t *testing.T) {
	dir := t.TempDir()
	k1, err := LoadOrCreateRSAKey(dir)
	require.NoError(t, err)
	fi, err := os.Stat(filepath.Join(dir, rsaFile))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	k2, err := LoadOrCreateRSAKey(dir)
	require.NoError(t, err)
	require.Equal(t, k1.PublicPEM(), k2.PublicPEM(), "the key survives a restart")

	// Encrypt as a client does: (password + NUL) XOR nonce, RSA-OAEP SHA-1.
	blk, _ := pem.Decode(k2.PublicPEM())
	pub, err := x509.ParsePKIXPublicKey(blk.Bytes)
	require.NoError(t, err)
	nonce := []byte("nonce-nonce-nonce-12")
	msg := append([]byte("s3cret"), 0)
	for i := range msg {
		msg[i] ^= nonce[i%len(nonce)]
	}
	ct, err := rsa.EncryptOAEP(sha1.New(), rand.Reader, pub.(*rsa.PublicKey), msg, nil)
	require.NoError(t, err)
	pw, err := k1.DecryptPassword(ct, nonce)
	require.NoError(t, err)
	require.Equal(t, "s3cret", string(pw))
	_, err = k1.DecryptPassword([]byte("s3cret\x00"), nonce)
	require.Error(t, err, "cleartext is not a ciphertext")
}

func TestCertGeneratedOnceAndPersisted(t *testing.T) {
	dir := t.TempDir()
	c1, gen, err := LoadOrCreateCert("", "", dir)
	require.NoError(t, err)
	require.True(t, gen)
	c2, gen, err := LoadOrCreateCert("", "", dir)
	require.NoError(t, err)
	require.False(t, gen, "second start loads the persisted certificate")
	require.True(t, bytes.Equal(c1.Certificate[0], c2.Certificate[0]))
	leaf, err := x509.ParseCertificate(c1.Certificate[0])
	require.NoError(t, err)
	require.NoError(t, leaf.VerifyHostname("127.0.0.1"))

	// Explicit files win; both are needed.
	c3, gen, err := LoadOrCreateCert(filepath.Join(dir, certFile), filepath.Join(dir, keyFile), "")
	require.NoError(t, err)
	require.False(t, gen)
	require.Equal(t, c1.Certificate[0], c3.Certificate[0])
	_, _, err = LoadOrCreateCert(filepath.Join(dir, certFile), "", "")
	require.ErrorContains(t, err, "both")
	_, _, err = LoadOrCreateCert(filepath.Join(dir, "missing.pem"), filepath.Join(dir, keyFile), "")
	require.Error(t, err)
}
