package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/stratadb/strata/localcluster"
)

// target is a database that sysbench runs against.
type target interface {
	// Name is "strata", "strata-base", "strata-notrace" or "mariadb".
	Name() string
	// Setup gives a server with an empty database sbtest (a fresh cluster
	// for Strata; a fresh mariadbd for MariaDB).
	Setup(ctx context.Context) error
	// Port is the MySQL port on 127.0.0.1.
	Port() int
	// Procs lists the server processes, for CPU and allocation accounting
	// and profiles.
	Procs() []proc
	// Teardown stops what Setup started that is not shared across runs.
	Teardown()
	// Close stops everything.
	Close()
	// Version describes the server build.
	Version() string
}

// proc is one server process.
type proc struct {
	Name   string // e.g. "sql1", "store2", "mariadbd"
	Role   string // "sql", "store", "pd", "mariadb"
	PID    int
	Status string // host:port of the Go status server ("" for MariaDB)
}

// ---- Strata ----

type strataTarget struct {
	name      string
	binDir    string
	stores    int
	keepData  bool
	storeArgs []string
	// goMaxProcs is localcluster.Config.GoMaxProcs.
	goMaxProcs int
	sqlArgs    []string // strata-notrace: --enable-trace=false
	log        func(format string, args ...any)

	dir     string
	cluster *localcluster.Cluster
	port    int
	version string
}

func (s *strataTarget) Name() string { return s.name }
func (s *strataTarget) Port() int    { return s.port }

// Version is the git hash the SQL node reports on /status (baked in by
// `make build`), i.e. the build that was measured, not the checkout.
func (s *strataTarget) Version() string {
	if s.version == "" {
		return "unknown"
	}
	return s.version
}

func (s *strataTarget) readVersion(ctx context.Context) {
	status := flagValue(s.cluster.SQL[0].Args, "--status-addr")
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+status+"/status", nil)
	if err != nil {
		return
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	var info struct {
		Version string `json:"version"`
		GitHash string `json:"git_hash"`
	}
	if json.NewDecoder(resp.Body).Decode(&info) == nil {
		s.version = fmt.Sprintf("%s (git %s)", info.Version, info.GitHash)
	}
}

func (s *strataTarget) Setup(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "strata-sysbench-")
	if err != nil {
		return err
	}
	s.dir = dir
	c, err := localcluster.New(localcluster.Config{
		BinDir: s.binDir, DataDir: dir, Stores: s.stores, SQLNodes: 1, FreePorts: true,
		StoreArgs: s.storeArgs, SQLArgs: s.sqlArgs, GoMaxProcs: s.goMaxProcs,
	})
	if err != nil {
		return err
	}
	s.cluster = c
	if err := c.Start(); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := c.WaitReady(wctx, 0); err != nil {
		return err
	}
	_, portStr, _ := strings.Cut(c.SQLAddrs[0], ":")
	s.port, _ = strconv.Atoi(portStr)
	s.readVersion(ctx)
	s.log("%s: cluster up in %s (PD %s, SQL %s)", s.name, dir, strings.Join(c.PDAddrs(), ","), c.SQLAddrs[0])
	return execSQL(ctx, c.DSN(0, ""), "CREATE DATABASE sbtest")
}

func (s *strataTarget) Procs() []proc {
	if s.cluster == nil {
		return nil
	}
	var out []proc
	add := func(p *localcluster.Proc, role string) {
		out = append(out, proc{Name: p.Name, Role: role, PID: p.Pid(), Status: flagValue(p.Args, "--status-addr")})
	}
	for _, p := range s.cluster.PDs {
		add(p, "pd")
	}
	for _, p := range s.cluster.Stores {
		add(p, "store")
	}
	for _, p := range s.cluster.SQL {
		add(p, "sql")
	}
	return out
}

func (s *strataTarget) Teardown() {
	if s.cluster != nil {
		s.cluster.Stop(15 * time.Second)
		s.cluster = nil
	}
	if s.dir != "" {
		if s.keepData {
			s.log("%s: data and logs kept in %s", s.name, s.dir)
		} else {
			_ = os.RemoveAll(s.dir)
		}
		s.dir = ""
	}
}

func (s *strataTarget) Close() { s.Teardown() }

// ---- MariaDB ----

type mariadbTarget struct {
	mariadbd string
	log      func(format string, args ...any)

	dir     string
	port    int
	cmd     *exec.Cmd
	done    chan struct{}
	version string
}

func (m *mariadbTarget) Name() string    { return "mariadb" }
func (m *mariadbTarget) Port() int       { return m.port }
func (m *mariadbTarget) Version() string { return m.version }

func (m *mariadbTarget) dsn() string {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "tcp", "127.0.0.1:"+strconv.Itoa(m.port)
	cfg.Timeout = 5 * time.Second
	return cfg.FormatDSN()
}

// start installs a datadir and starts mariadbd as a child process on a free
// loopback port, with no my.cnf (--no-defaults: MariaDB's built-in defaults,
// so InnoDB flushes its log at every commit) and no grant checks.
func (m *mariadbTarget) start(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "mariadb-sysbench-")
	if err != nil {
		return err
	}
	m.dir = dir
	data := filepath.Join(dir, "data")
	install := exec.CommandContext(ctx, "mariadb-install-db", "--no-defaults", "--datadir="+data,
		"--user=root", "--auth-root-authentication-method=normal", "--skip-test-db")
	if out, err := install.CombinedOutput(); err != nil {
		return fmt.Errorf("mariadb-install-db: %w\n%s", err, out)
	}
	ports, err := localcluster.FreePorts(1)
	if err != nil {
		return err
	}
	m.port = ports[0]
	logf, err := os.Create(filepath.Join(dir, "mariadbd.log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(m.mariadbd, "--no-defaults",
		"--datadir="+data, "--port="+strconv.Itoa(m.port), "--bind-address=127.0.0.1",
		"--socket="+filepath.Join(dir, "mysqld.sock"), "--pid-file="+filepath.Join(dir, "mysqld.pid"),
		"--skip-grant-tables", "--skip-name-resolve", "--user=root",
		"--log-error="+filepath.Join(dir, "error.log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start mariadbd: %w", err)
	}
	m.cmd, m.done = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(m.done) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		db, _ := sql.Open("mysql", m.dsn())
		var v string
		err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&v)
		db.Close()
		if err == nil {
			m.version = "MariaDB " + v
			break
		}
		select {
		case <-m.done:
			return fmt.Errorf("mariadbd exited at start (see %s)", filepath.Join(dir, "error.log"))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("mariadbd not ready: %w (see %s)", err, filepath.Join(dir, "error.log"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	m.log("mariadb: %s up on 127.0.0.1:%d (pid %d, datadir %s)", m.version, m.port, cmd.Process.Pid, data)
	return nil
}

func (m *mariadbTarget) Setup(ctx context.Context) error {
	if m.cmd == nil {
		if err := m.start(ctx); err != nil {
			return err
		}
	}
	if err := execSQL(ctx, m.dsn(), "DROP DATABASE IF EXISTS sbtest"); err != nil {
		return err
	}
	return execSQL(ctx, m.dsn(), "CREATE DATABASE sbtest")
}

func (m *mariadbTarget) Procs() []proc {
	if m.cmd == nil {
		return nil
	}
	return []proc{{Name: "mariadbd", Role: "mariadb", PID: m.cmd.Process.Pid}}
}

// Teardown stops mariadbd: left running, its background work after a
// write workload (InnoDB purge and page flushing) took 0.35-0.65 of a
// core during the next target's run (bench/results/
// 2026-12-08-0102-ab-session12/notes.md). The next Setup starts a fresh
// one.
func (m *mariadbTarget) Teardown() { m.Close() }

// Close stops mariadbd by its PID (SIGTERM, then SIGKILL after 30 s) and
// removes its directory.
func (m *mariadbTarget) Close() {
	if m.cmd != nil {
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-m.done:
		case <-time.After(30 * time.Second):
			_ = m.cmd.Process.Kill()
			<-m.done
		}
		m.log("mariadb: stopped pid %d", m.cmd.Process.Pid)
		m.cmd = nil
	}
	if m.dir != "" {
		_ = os.RemoveAll(m.dir)
		m.dir = ""
	}
}

// ---- helpers ----

func execSQL(ctx context.Context, dsn, stmt string) error {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("%s: %w", stmt, err)
	}
	return nil
}

// flagValue returns the value following name in args ("" if absent).
func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

var errNoTarget = errors.New("sysbench: unknown target (want strata or mariadb)")
