package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority that can sign certificates.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEM is Cert, PEM-encoded (the --cluster-ssl-ca file).
	PEM []byte
}

// Pair is a PEM-encoded certificate and its private key.
type Pair struct {
	Cert, Key []byte
}

// NewCA creates a self-signed CA named cn, valid for validFor from now.
func NewCA(cn string, validFor time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"Strata"}},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(validFor),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("pki: create CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// Issue signs a certificate with CommonName cn for hosts (IP addresses go
// to the IP SANs, anything else to the DNS SANs), usable for both server
// and client authentication, valid for validFor from now.
func (ca *CA) Issue(cn string, hosts []string, validFor time.Duration) (Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"Strata"}},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(validFor),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return Pair{}, fmt.Errorf("pki: issue %s: %w", cn, err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Pair{}, err
	}
	return Pair{
		Cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Key:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}),
	}, nil
}

// Write writes p as dir/name.pem and dir/name-key.pem (the key readable by
// its owner only) and returns the two paths. Each file is written to a
// temporary name and renamed, so a process reloading them never reads half
// a file.
func (p Pair) Write(dir, name string) (cert, key string, err error) {
	cert, key = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	if err := WriteFile(key, p.Key, 0o600); err != nil {
		return "", "", err
	}
	if err := WriteFile(cert, p.Cert, 0o644); err != nil {
		return "", "", err
	}
	return cert, key, nil
}

// WriteFile writes data to path through a temporary file and a rename.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	return nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return n
}

// Pool is a certificate pool holding only the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Files are the paths of a CA certificate and of one certificate and key
// it issued (the three files of a cluster TLS configuration).
type Files struct {
	CA, Cert, Key string
}

// NewFiles makes a CA valid for validFor, writes it as dir/ca.pem, and
// issues a certificate for cn and hosts written as dir/name.pem and
// dir/name-key.pem (tests; Issue adds more from the returned CA).
func NewFiles(dir, name, cn string, hosts []string, validFor time.Duration) (*CA, Files, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, Files{}, fmt.Errorf("pki: %w", err)
	}
	ca, err := NewCA("Strata test CA", validFor)
	if err != nil {
		return nil, Files{}, err
	}
	f := Files{CA: filepath.Join(dir, "ca.pem")}
	if err := WriteFile(f.CA, ca.PEM, 0o644); err != nil {
		return nil, Files{}, err
	}
	if f.Cert, f.Key, err = ca.IssueFiles(dir, name, cn, hosts, validFor); err != nil {
		return nil, Files{}, err
	}
	return ca, f, nil
}

// IssueFiles issues a certificate for cn and hosts and writes it as
// dir/name.pem and dir/name-key.pem.
func (ca *CA) IssueFiles(dir, name, cn string, hosts []string, validFor time.Duration) (cert, key string, err error) {
	p, err := ca.Issue(cn, hosts, validFor)
	if err != nil {
		return "", "", err
	}
	return p.Write(dir, name)
}
