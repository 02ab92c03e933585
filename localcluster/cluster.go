package localcluster

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/stratadb/strata/internal/freeport"
	"github.com/stratadb/strata/internal/security"
)

// Config describes a local cluster.
type Config struct {
	BinDir   string // holds pd, storenode, sqlnode
	DataDir  string // data and logs; reused across runs
	PDs      int    // PD members (an embedded etcd cluster); default 1
	Stores   int    // default 3
	SQLNodes int    // default 1
	// FreePorts picks unused loopback ports (tests). Otherwise the TiDB
	// defaults are used: PD member i 2379+4i to 2382+4i, stores 20160+i /
	// 20180+i, SQL nodes 4000+i / 10080+i.
	FreePorts bool
	// StoreArgs are extra flags for every store node (e.g. a faster raft tick).
	StoreArgs []string
	// PDArgs are extra flags for every PD member (e.g. --schedule-interval).
	PDArgs []string
	// SQLArgs are extra flags for every SQL node.
	SQLArgs []string
	// Hosts, when set, gives process i (in Procs order: PD members,
	// stores, SQL nodes) its own IP address to listen on and advertise instead of
	// 127.0.0.1, e.g. an address in a network namespace of the test's.
	Hosts []string
	// Wrap, when set, returns the command prefix that runs process i (in
	// Procs order), e.g. "ip netns exec NS"; the prefix must exec the
	// binary in its own process, so signals reach it.
	Wrap func(i int) []string
	// TLS, when set, turns on cluster TLS: every process gets
	// --cluster-ssl-ca/-cert/-key (and --cluster-verify-cn), PD's etcd URLs
	// are https, and PDAPI calls PD's HTTP API over TLS with the same
	// certificate.
	TLS *security.Config
	// PDTokenFile is PD's --http-token-file (empty: none); PDAPI sends the
	// token.
	PDTokenFile string
	// GoMaxProcs is every process's GOMAXPROCS: 0 keeps Go's default (all
	// the host's cores each), ShareCores gives each process an equal share
	// of the cores (at least one), N sets it. Processes that share a host's
	// cores each run as many threads as there are cores by default and
	// spend CPU waking idle threads on every hand-off between goroutines:
	// on 2 cores ShareCores costs 10-40 % less server CPU per query, but
	// oltp_update_non_index's p999 is 1.5x (bench/results/2026-12-07-1130-gomaxprocs).
	// A GOMAXPROCS in the environment wins.
	GoMaxProcs int
}

// Cluster is a running (or stopped) set of processes.
type Cluster struct {
	cfg    Config
	PDs    []*Proc // named "pd" when there is one member, else pd1, pd2, ...
	Stores []*Proc
	SQL    []*Proc
	// pdAddrs and pdStatus are each PD member's gRPC and HTTP status
	// addresses (the HTTP one also serves the /pd/api/v1 API).
	pdAddrs, pdStatus []string
	// SQLAddrs are the MySQL addresses, one per SQL node.
	SQLAddrs []string
	// sec is cfg.TLS loaded (nil: plaintext); httpCli calls PD's API.
	sec     *security.TLS
	httpCli *http.Client
}

// New lays out the processes of a cluster without starting them.
func New(cfg Config) (*Cluster, error) {
	if cfg.PDs == 0 {
		cfg.PDs = 1
	}
	if cfg.Stores == 0 {
		cfg.Stores = 3
	}
	if cfg.SQLNodes == 0 {
		cfg.SQLNodes = 1
	}
	binDir, err := filepath.Abs(cfg.BinDir)
	if err != nil {
		return nil, err
	}
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	for _, b := range []string{"pd", "storenode", "sqlnode"} {
		if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
			return nil, fmt.Errorf("localcluster: binary %s missing in %s (run `make build`): %w", b, binDir, err)
		}
	}
	// With FreePorts, every port is chosen in one call so none repeats.
	var free []int
	if cfg.FreePorts {
		if free, err = FreePorts(4*cfg.PDs + 2*cfg.Stores + 2*cfg.SQLNodes); err != nil {
			return nil, err
		}
	}
	ports := func(defaults ...int) ([]int, error) {
		if !cfg.FreePorts {
			return defaults, nil
		}
		out := free[:len(defaults)]
		free = free[len(defaults):]
		return out, nil
	}
	logDir := filepath.Join(dataDir, "logs")
	c := &Cluster{cfg: cfg}
	var tlsArgs []string // every process's
	scheme := "http"
	if cfg.TLS != nil {
		if c.sec, err = security.New(*cfg.TLS, "localcluster"); err != nil {
			return nil, err
		}
		scheme = "https"
		tlsArgs = []string{"--cluster-ssl-ca", cfg.TLS.CA, "--cluster-ssl-cert", cfg.TLS.Cert, "--cluster-ssl-key", cfg.TLS.Key,
			"--cluster-verify-cn", cfg.TLS.VerifyCN}
	}
	c.httpCli = c.sec.HTTPClient(30 * time.Second)
	proc := 0 // index of the process being laid out, in Procs order
	addr := func(port int) string {
		host := "127.0.0.1"
		if proc < len(cfg.Hosts) {
			host = cfg.Hosts[proc]
		}
		return net.JoinHostPort(host, strconv.Itoa(port))
	}
	wrap := func(p *Proc) *Proc {
		if cfg.Wrap != nil {
			p.Wrap = cfg.Wrap(proc)
		}
		proc++
		return p
	}

	var initial []string // name=peer-url of every member
	var pdArgs [][]string
	for i := range cfg.PDs {
		pp, err := ports(2379+4*i, 2380+4*i, 2381+4*i, 2382+4*i)
		if err != nil {
			return nil, err
		}
		name := "pd"
		if cfg.PDs > 1 {
			name = fmt.Sprintf("pd%d", i+1)
		}
		peer := scheme + "://" + addr(pp[1])
		initial = append(initial, name+"="+peer)
		c.pdAddrs = append(c.pdAddrs, addr(pp[0]))
		c.pdStatus = append(c.pdStatus, addr(pp[3]))
		pdArgs = append(pdArgs, []string{
			"--name", name, "--data-dir", filepath.Join(dataDir, name),
			"--addr", addr(pp[0]),
			"--peer-url", peer,
			"--etcd-client-url", scheme + "://" + addr(pp[2]),
			"--status-addr", addr(pp[3]),
			"--replicas", strconv.Itoa(min(3, cfg.Stores)),
		})
		c.PDs = append(c.PDs, wrap(&Proc{Name: name, Bin: filepath.Join(binDir, "pd"), LogPath: filepath.Join(logDir, name+".log")}))
	}
	for i, p := range c.PDs {
		p.Args = append(append(pdArgs[i], "--initial-cluster", strings.Join(initial, ",")), tlsArgs...)
		if cfg.PDTokenFile != "" {
			p.Args = append(p.Args, "--http-token-file", cfg.PDTokenFile)
		}
		p.Args = append(p.Args, cfg.PDArgs...)
	}
	pdList := strings.Join(c.pdAddrs, ",")
	for i := 0; i < cfg.Stores; i++ {
		sp, err := ports(20160+i, 20180+i)
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("store%d", i+1)
		args := []string{
			"--pd", pdList, "--addr", addr(sp[0]), "--status-addr", addr(sp[1]),
			"--data-dir", filepath.Join(dataDir, name),
		}
		c.Stores = append(c.Stores, wrap(&Proc{
			Name: name, Bin: filepath.Join(binDir, "storenode"), LogPath: filepath.Join(logDir, name+".log"),
			Args: append(append(args, tlsArgs...), cfg.StoreArgs...),
		}))
	}
	for i := 0; i < cfg.SQLNodes; i++ {
		qp, err := ports(4000+i, 10080+i)
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("sql%d", i+1)
		c.SQLAddrs = append(c.SQLAddrs, addr(qp[0]))
		c.SQL = append(c.SQL, wrap(&Proc{
			Name: name, Bin: filepath.Join(binDir, "sqlnode"), LogPath: filepath.Join(logDir, name+".log"),
			Args: append(append([]string{"--pd", pdList, "--addr", addr(qp[0]), "--status-addr", addr(qp[1])}, tlsArgs...), cfg.SQLArgs...),
		}))
	}
	if n := goMaxProcs(cfg.GoMaxProcs, len(c.Procs())); n > 0 && os.Getenv("GOMAXPROCS") == "" {
		for _, p := range c.Procs() {
			p.Env = append(p.Env, "GOMAXPROCS="+strconv.Itoa(n))
		}
	}
	return c, nil
}

// ShareCores is Config.GoMaxProcs that divides the host's cores among the
// cluster's processes.
const ShareCores = -1

// goMaxProcs is the GOMAXPROCS of each of procs processes for setting
// (Config.GoMaxProcs; 0: Go's default).
func goMaxProcs(setting, procs int) int {
	if setting != ShareCores {
		return setting
	}
	return max(1, runtime.NumCPU()/max(1, procs))
}

// PDStatusAddrs are the PD members' HTTP addresses (status and API).
func (c *Cluster) PDStatusAddrs() []string { return c.pdStatus }

// PDAddrs are the PD members' gRPC addresses.
func (c *Cluster) PDAddrs() []string { return c.pdAddrs }

// Procs lists every process: PD members, stores, SQL nodes.
func (c *Cluster) Procs() []*Proc {
	all := slices.Clone(c.PDs)
	all = append(all, c.Stores...)
	return append(all, c.SQL...)
}

// Start starts every process that is not running.
func (c *Cluster) Start() error {
	for _, p := range c.Procs() {
		if p.Running() {
			continue
		}
		if err := p.Start(); err != nil {
			return err
		}
	}
	return nil
}

// WaitReady waits until SQL node i answers a statement that reads the
// catalog from the stores (so PD, a region leader and the SQL node are all
// serving) and database test exists, or ctx ends.
func (c *Cluster) WaitReady(ctx context.Context, i int) error {
	db, err := sql.Open("mysql", c.DSN(i, ""))
	if err != nil {
		return err
	}
	defer db.Close()
	var last error
	for {
		if err := c.exitedEarly(); err != nil {
			return err
		}
		// Ready once database test exists: the SQL node creates it just
		// after it starts listening, and clients connect to it.
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var name string
		err := db.QueryRowContext(qctx, "SHOW DATABASES LIKE 'test'").Scan(&name)
		cancel()
		if err == nil {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("localcluster: SQL node %d not ready (logs in %s): %w (last error: %v)",
				i+1, filepath.Join(c.cfg.DataDir, "logs"), ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// exitedEarly reports a process that was started and has exited with an
// error: waiting longer for readiness would be pointless.
func (c *Cluster) exitedEarly() error {
	for _, p := range c.Procs() {
		if err := p.ExitErr(); err != nil {
			return fmt.Errorf("localcluster: %s exited: %v (see %s)", p.Name, err, p.LogPath)
		}
	}
	return nil
}

// DSN is a go-sql-driver DSN for SQL node i as root, with db selected.
func (c *Cluster) DSN(i int, db string) string {
	cfg := mysql.NewConfig()
	cfg.User = "root"
	cfg.Net = "tcp"
	cfg.Addr = c.SQLAddrs[i]
	cfg.DBName = db
	cfg.Timeout = 5 * time.Second
	return cfg.FormatDSN()
}

// Stop stops every running process with SIGTERM, SQL nodes first, PD
// members last.
func (c *Cluster) Stop(grace time.Duration) {
	all := c.Procs()
	for i := len(all) - 1; i >= 0; i-- {
		_ = all[i].Stop(grace)
	}
}

// Kill sends SIGKILL to every running process.
func (c *Cluster) Kill() {
	for _, p := range c.Procs() {
		_ = p.Kill()
	}
}

// Logs returns the last n bytes of every process log, for failure reports.
func (c *Cluster) Logs(n int64) string {
	var b strings.Builder
	for _, p := range c.Procs() {
		data, err := os.ReadFile(p.LogPath)
		if err != nil {
			continue
		}
		if int64(len(data)) > n {
			data = data[int64(len(data))-n:]
		}
		fmt.Fprintf(&b, "==== %s (%s)\n%s\n", p.Name, p.LogPath, data)
	}
	return b.String()
}

// PDAPI calls PD's HTTP API (/pd/api/v1/path) on the first PD member that
// answers (members forward leader-only calls to the leader): body, if not
// nil, is sent as JSON, and a 200 answer is decoded into out, if not nil;
// any other status is an error carrying the answer.
func (c *Cluster) PDAPI(method, path string, body, out any) error {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return err
		}
	}
	var err error
	for _, status := range c.pdStatus {
		var req *http.Request
		req, err = http.NewRequest(method, c.sec.Scheme()+"://"+status+"/pd/api/v1/"+path, bytes.NewReader(b))
		if err != nil {
			return err
		}
		if c.cfg.PDTokenFile != "" {
			token, err := os.ReadFile(c.cfg.PDTokenFile)
			if err != nil {
				return err
			}
			req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
		}
		var resp *http.Response
		resp, err = c.httpCli.Do(req)
		if err != nil {
			continue // this member is down: try the next
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, data)
		}
		if out != nil {
			return json.Unmarshal(data, out)
		}
		return nil
	}
	return err
}

// PDLeader returns the PD member that PD's members API names as leader.
func (c *Cluster) PDLeader() (*Proc, error) {
	var m struct {
		Leader struct {
			Name string `json:"name"`
		} `json:"leader"`
	}
	if err := c.PDAPI(http.MethodGet, "members", nil, &m); err != nil {
		return nil, err
	}
	for _, p := range c.PDs {
		if p.Flag("--name") == m.Leader.Name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("localcluster: PD names %q as leader, not a member of this cluster", m.Leader.Name)
}

// FreePorts returns n distinct loopback ports for processes to bind, kept
// out of the way of outgoing connections and of other test processes (see
// internal/freeport), so a process restarted on its old port finds it free.
func FreePorts(n int) ([]int, error) { return freeport.Take(n) }

// SnapshotBins copies pd, storenode and sqlnode from dir into a new temp
// directory (prefix names it) and returns it, so a long benchmark keeps
// running the binaries it started with while `make build` rewrites dir.
func SnapshotBins(dir, prefix string) (string, error) {
	tmp, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	for _, b := range []string{"pd", "storenode", "sqlnode"} {
		data, err := os.ReadFile(filepath.Join(dir, b))
		if err != nil {
			os.RemoveAll(tmp)
			return "", fmt.Errorf("binary %s missing in %s (run `make build`): %w", b, dir, err)
		}
		if err := os.WriteFile(filepath.Join(tmp, b), data, 0o755); err != nil {
			os.RemoveAll(tmp)
			return "", err
		}
	}
	return tmp, nil
}

// Build compiles pd, storenode and sqlnode of the module that holds the
// current directory into dir (static binaries; tags such as "failpoints"
// passed to go build), for tests that run real processes.
func Build(dir string, tags ...string) error {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return fmt.Errorf("localcluster: find the module root: %w", err)
	}
	root := strings.TrimSpace(string(out))
	args := []string{"build", "-o", dir + "/"}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	for _, c := range []string{"pd", "storenode", "sqlnode"} {
		args = append(args, filepath.Join(root, "cmd", c))
	}
	build := exec.Command("go", args...)
	build.Dir = root
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if err := build.Run(); err != nil {
		return fmt.Errorf("localcluster: build binaries: %w", err)
	}
	return nil
}
