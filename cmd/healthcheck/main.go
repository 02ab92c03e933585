// Command healthcheck probes a Strata process from inside its container and
// exits 0 when every target is healthy, 1 otherwise. The images are built
// FROM scratch (no shell, no curl), so Docker health checks run this binary:
//
//	healthcheck http://127.0.0.1:2382/status tcp://127.0.0.1:2379
//	healthcheck mysql://root@127.0.0.1:4000/
//
// Targets:
//
//	http://host:port/path   GET answers 2xx
//	tcp://host:port         a TCP connection is accepted
//	tls://host:port         a mutual TLS handshake with the cluster
//	                        certificate succeeds (a PD or store gRPC port
//	                        under cluster TLS; needs --cluster-ssl-*)
//	mysql://user[:password]@host:port/[db]
//	                        MySQL handshake, then SHOW DATABASES answers: the
//	                        SQL node reaches PD and a region leader
//
// With -print the body of each http target is copied to stdout, which makes
// `docker exec <container> /healthcheck -print http://127.0.0.1:20180/metrics`
// the curl of a scratch container. With --cluster-ssl-ca/-cert/-key, https
// targets are verified against the cluster CA and presented the cluster
// certificate (PD's HTTP API under cluster TLS).
package main

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/stratadb/strata/internal/security"
)

func main() {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	timeout := fs.Duration("timeout", 3*time.Second, "deadline for all targets together")
	printBody := fs.Bool("print", false, "copy the body of http targets to stdout")
	var secCfg security.Config
	secCfg.RegisterFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: healthcheck [-timeout d] [-print] target...\n"+
			"targets: http(s)://host:port/path  tcp://host:port  tls://host:port  mysql://user[:password]@host:port/[db]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if fs.NArg() == 0 {
		fs.Usage()
		os.Exit(2)
	}
	sec, err := security.New(secCfg, "healthcheck")
	if err != nil {
		fmt.Fprintln(os.Stderr, "healthcheck:", err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	var out io.Writer = io.Discard
	if *printBody {
		out = os.Stdout
	}
	for _, target := range fs.Args() {
		if err := check(ctx, sec, target, out); err != nil {
			fmt.Fprintf(os.Stderr, "healthcheck: %s: %v\n", target, err)
			os.Exit(1)
		}
	}
}

// check probes one target; http bodies are copied to out. sec (nil:
// none) is the cluster TLS of https and tls targets.
func check(ctx context.Context, sec *security.TLS, target string, out io.Writer) error {
	u, err := url.Parse(target)
	if err != nil {
		return err
	}
	switch u.Scheme {
	case "http", "https":
		return checkHTTP(ctx, sec, target, out)
	case "tcp":
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", u.Host)
		if err != nil {
			return err
		}
		return c.Close()
	case "tls":
		return checkTLS(ctx, sec, u.Host)
	case "mysql":
		return checkMySQL(ctx, u)
	default:
		return fmt.Errorf("unknown scheme %q (want http, https, tcp, tls or mysql)", u.Scheme)
	}
}

func checkHTTP(ctx context.Context, sec *security.TLS, target string, out io.Writer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	client := http.DefaultClient
	if sec != nil {
		client = sec.HTTPClient(0)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(out, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("status %s", resp.Status)
	}
	return nil
}

func checkMySQL(ctx context.Context, u *url.URL) error {
	cfg := mysql.NewConfig()
	cfg.Net = "tcp"
	cfg.Addr = u.Host
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	if len(u.Path) > 1 {
		cfg.DBName = u.Path[1:]
	}
	if cfg.User == "" {
		return errors.New("mysql target needs a user (mysql://root@host:port/)")
	}
	if dl, ok := ctx.Deadline(); ok {
		cfg.Timeout = time.Until(dl)
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SHOW DATABASES")
	if err != nil {
		return err
	}
	for rows.Next() {
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return rows.Close()
}

// checkTLS completes a mutual TLS handshake with addr (gRPC's ALPN).
func checkTLS(ctx context.Context, sec *security.TLS, addr string) error {
	if sec == nil {
		return errors.New("tls target needs --cluster-ssl-ca, --cluster-ssl-cert and --cluster-ssl-key")
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	cfg := sec.ClientConfig(host)
	cfg.NextProtos = []string{"h2"}
	d := tls.Dialer{Config: cfg}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}
