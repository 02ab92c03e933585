// Command certgen writes a development PKI for cluster TLS (`make certs`):
// a CA and, per --cert, a certificate whose CommonName is the name, valid
// for the given hosts plus localhost and 127.0.0.1, usable as server and
// client certificate; optionally a random bearer token for PD's
// --http-token-file.
//
//	certgen --out deploy/certs --cert pd=pd1,pd2,pd3 --cert store=store1,store2,store3 \
//	        --cert sql=sql1,sql2 --cert client --token pd-token
//
// writes ca.pem, pd.pem, pd-key.pem, ..., client.pem, client-key.pem and
// pd-token into --out. It refuses to overwrite an existing ca.pem unless
// --force: every certificate of a cluster must come from one CA.
package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/stratadb/strata/config"
	"github.com/stratadb/strata/internal/pki"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "certgen:", err)
		os.Exit(1)
	}
}

// certSpec is one --cert: name=host,host.
type certSpec struct {
	name  string
	hosts []string
}

type certList []certSpec

func (l *certList) String() string { return fmt.Sprint(*l) }

func (l *certList) Set(s string) error {
	name, hosts, _ := strings.Cut(s, "=")
	if name = strings.TrimSpace(name); name == "" || strings.ContainsAny(name, `/\`) {
		return fmt.Errorf("--cert %q: want name=host,host (the name is the CommonName and the file name)", s)
	}
	*l = append(*l, certSpec{name: name, hosts: append(config.SplitList(hosts), "localhost", "127.0.0.1")})
	return nil
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("certgen", flag.ContinueOnError)
	dir := fs.String("out", "certs", "directory to write into (created)")
	var certs certList
	fs.Var(&certs, "cert", "name=host,host: a certificate with CommonName name for these hosts (and localhost, 127.0.0.1); repeatable")
	token := fs.String("token", "", "also write a random bearer token to this file name in --out (for PD's --http-token-file)")
	validFor := fs.Duration("valid-for", 365*24*time.Hour, "validity of the CA and the certificates")
	force := fs.Bool("force", false, "replace an existing CA (every certificate signed by the old one stops being accepted)")
	readable := fs.Bool("readable-keys", false, "write private keys mode 0644 instead of 0600 (containers running as another user, e.g. compose's nobody, must read them; development only)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(certs) == 0 {
		return errors.New("give at least one --cert name=host,...")
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	caPath := filepath.Join(*dir, "ca.pem")
	if _, err := os.Stat(caPath); err == nil && !*force {
		return fmt.Errorf("%s exists; remove the directory or pass --force to make a new CA", caPath)
	}
	ca, err := pki.NewCA("Strata cluster CA", *validFor)
	if err != nil {
		return err
	}
	if err := pki.WriteFile(caPath, ca.PEM, 0o644); err != nil {
		return err
	}
	fmt.Fprintln(out, "wrote", caPath)
	for _, c := range certs {
		p, err := ca.Issue(c.name, c.hosts, *validFor)
		if err != nil {
			return err
		}
		cert, key, err := p.Write(*dir, c.name)
		if err != nil {
			return err
		}
		if *readable {
			if err := os.Chmod(key, 0o644); err != nil {
				return err
			}
		}
		fmt.Fprintf(out, "wrote %s and %s (CN %s, hosts %s)\n", cert, key, c.name, strings.Join(c.hosts, ","))
	}
	if *token != "" {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		path := filepath.Join(*dir, *token)
		mode := os.FileMode(0o600)
		if *readable {
			mode = 0o644
		}
		if err := pki.WriteFile(path, []byte(hex.EncodeToString(b)+"\n"), mode); err != nil {
			return err
		}
		fmt.Fprintln(out, "wrote", path)
	}
	return nil
}
