package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// File names in the data directory.
const (
	certFile = "sql-cert.pem"
	keyFile  = "sql-key.pem"
	rsaFile  = "sql-rsa-key.pem"
)

// RSAKey is the node's key pair for caching_sha2_password full
// authentication on plain connections: the client encrypts
// (password + NUL) XOR nonce with RSA-OAEP (SHA-1) under PublicPEM.
type RSAKey struct {
	key       *rsa.PrivateKey
	publicPEM []byte
}

// PublicPEM is the public key as sent to clients (PKIX PEM). Callers must
// not modify it.
func (k *RSAKey) PublicPEM() []byte { return k.publicPEM }

// DecryptPassword returns the password the client encrypted with nonce, or
// an error.
func (k *RSAKey) DecryptPassword(ciphertext, nonce []byte) ([]byte, error) {
	pt, err := rsa.DecryptOAEP(sha1.New(), nil, k.key, ciphertext, nil)
	if err != nil {
		return nil, fmt.Errorf("auth: decrypt password: %w", err)
	}
	for i := range pt {
		pt[i] ^= nonce[i%len(nonce)]
	}
	if len(pt) == 0 || pt[len(pt)-1] != 0 {
		return nil, errors.New("auth: decrypted password is not NUL-terminated")
	}
	return pt[:len(pt)-1], nil
}

func newRSAKey(key *rsa.PrivateKey) (*RSAKey, error) {
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	return &RSAKey{key: key, publicPEM: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})}, nil
}

// LoadOrCreateRSAKey reads the node's RSA key from dir, or generates a
// 2048-bit one and writes it there (0600) when missing. dir "" means
// generate and keep it in memory only.
func LoadOrCreateRSAKey(dir string) (*RSAKey, error) {
	path := filepath.Join(dir, rsaFile)
	if dir != "" {
		if b, err := os.ReadFile(path); err == nil {
			blk, _ := pem.Decode(b)
			if blk == nil {
				return nil, fmt.Errorf("auth: %s: no PEM block", path)
			}
			k, err := x509.ParsePKCS1PrivateKey(blk.Bytes)
			if err != nil {
				return nil, fmt.Errorf("auth: %s: %w", path, err)
			}
			return newRSAKey(k)
		} else if !os.IsNotExist(err) {
			return nil, fmt.Errorf("auth: read %s: %w", path, err)
		}
	}
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	if dir != "" {
		b := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
		if err := writeFileSync(path, b); err != nil {
			return nil, err
		}
	}
	return newRSAKey(k)
}

// LoadOrCreateCert returns the node's TLS certificate: from certPath and
// keyPath when given, else the self-signed one in dir (generated and
// written there on first start; dir "" keeps a generated one in memory).
// generated reports whether a new certificate was made.
func LoadOrCreateCert(certPath, keyPath, dir string) (cert tls.Certificate, generated bool, err error) {
	if certPath != "" || keyPath != "" {
		if certPath == "" || keyPath == "" {
			return cert, false, errors.New("auth: a TLS certificate needs both the certificate and the key file")
		}
		cert, err = tls.LoadX509KeyPair(certPath, keyPath)
		if err != nil {
			return cert, false, fmt.Errorf("auth: load TLS certificate: %w", err)
		}
		return cert, false, nil
	}
	if dir != "" {
		cp, kp := filepath.Join(dir, certFile), filepath.Join(dir, keyFile)
		if _, err := os.Stat(cp); err == nil {
			cert, err = tls.LoadX509KeyPair(cp, kp)
			if err != nil {
				return cert, false, fmt.Errorf("auth: load TLS certificate from %s: %w", dir, err)
			}
			return cert, false, nil
		}
	}
	certPEM, keyPEM, err := selfSigned()
	if err != nil {
		return cert, false, err
	}
	if dir != "" {
		if err := writeFileSync(filepath.Join(dir, keyFile), keyPEM); err != nil {
			return cert, false, err
		}
		if err := writeFileSync(filepath.Join(dir, certFile), certPEM); err != nil {
			return cert, false, err
		}
	}
	cert, err = tls.X509KeyPair(certPEM, keyPEM)
	return cert, true, err
}

// selfSigned makes an ECDSA P-256 certificate for "Strata SQL node",
// valid for 10 years, for localhost and the loopback addresses.
func selfSigned() (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "Strata SQL node (self-signed)"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), crypto.Signer(key))
	if err != nil {
		return nil, nil, err
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), nil
}

// writeFileSync writes b to path (0600) durably: temp file, fsync, rename,
// fsync of the directory.
func writeFileSync(path string, b []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
