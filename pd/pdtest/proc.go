package pdtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/stratadb/strata/pd"
	"github.com/stratadb/strata/proto/pdpb"
)

// childEnv carries a child's pd.Config (JSON) from StartProcs to RunChild.
const childEnv = "STRATA_PDTEST_CHILD_CONFIG"

// RunChild makes the test binary double as a PD member process. Call it
// first thing in TestMain of every package that uses StartProcs:
//
//	func TestMain(m *testing.M) { pdtest.RunChild(); os.Exit(m.Run()) }
//
// In a process started by StartProcs it runs pd.Server until SIGTERM and
// exits; otherwise it returns at once.
func RunChild() {
	raw, ok := os.LookupEnv(childEnv)
	if !ok {
		return
	}
	var cfg pd.Config
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "pdtest child: bad config:", err)
		os.Exit(2)
	}
	srv, err := pd.NewServer(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pdtest child:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := srv.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "pdtest child: run:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Proc is one PD member running as a child process (the test binary
// re-executed, see RunChild), so that tests can SIGSTOP or SIGKILL it.
type Proc struct {
	t   testing.TB
	cfg pd.Config
	log string
	cmd *exec.Cmd
	// exited is closed when the process has been waited for.
	exited chan struct{}
	// Addr is the member's gRPC address.
	Addr string
	// Name is the member's name.
	Name string
	// EtcdURL is the member's etcd client URL.
	EtcdURL string
	// Proxy is in front of the member's etcd peer URL (ProcOptions.PeerProxy).
	Proxy *PeerProxy
}

// ProcOptions tunes StartProcs. Zero values keep pd's defaults.
type ProcOptions struct {
	LeaderLease time.Duration
	TSOWindow   time.Duration
	// PeerProxy puts a PeerProxy in front of every member's etcd peer URL.
	PeerProxy bool
	// EtcdTick is etcd's raft tick (default 50 ms; the election timeout is
	// 10 ticks). The production default, 100 ms, makes spurious etcd
	// elections on a starved machine rarer.
	EtcdTick time.Duration
}

// StartProcs starts n PD members as child processes forming one etcd cluster
// (bootstrap needs replicas stores) and waits until one of them leads. Every
// process is stopped in t.Cleanup (resumed if stopped, SIGTERM, SIGKILL after
// a timeout); children also die with the test process (Pdeathsig).
func StartProcs(t testing.TB, n, replicas int, opts ProcOptions) []*Proc {
	t.Helper()
	ps := make([]*Proc, n)
	var initial []string
	if opts.EtcdTick == 0 {
		opts.EtcdTick = 50 * time.Millisecond
	}
	for i := range ps {
		name := fmt.Sprintf("pd%d", i+1)
		dir := t.TempDir()
		ps[i] = &Proc{t: t, Name: name, log: filepath.Join(dir, "pd.log"), cfg: pd.Config{
			Name:         name,
			DataDir:      filepath.Join(dir, "data"),
			Addr:         listen(t),
			PeerURL:      "http://" + listen(t),
			ClientURL:    "http://" + listen(t),
			Replicas:     replicas,
			EtcdLogLevel: "error",
			EtcdTick:     opts.EtcdTick,
			LeaderLease:  opts.LeaderLease,
			TSOWindow:    opts.TSOWindow,
		}}
		ps[i].Addr, ps[i].EtcdURL = ps[i].cfg.Addr, ps[i].cfg.ClientURL
		if opts.PeerProxy {
			ps[i].Proxy = newPeerProxy(t, ps[i].cfg.PeerURL)
			ps[i].cfg.ListenPeerURL, ps[i].cfg.PeerURL = ps[i].cfg.PeerURL, ps[i].Proxy.URL
		}
		initial = append(initial, name+"="+ps[i].cfg.PeerURL)
	}
	t.Cleanup(func() {
		for _, p := range ps {
			p.stop()
		}
	})
	for _, p := range ps {
		p.cfg.InitialCluster = strings.Join(initial, ",")
		p.start()
	}
	deadline := time.Now().Add(startTimeout)
	for ProcLeader(t, ps) == nil {
		if time.Now().After(deadline) {
			for _, p := range ps {
				p.dumpLog()
			}
			require.FailNow(t, "no pd leader among the processes")
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
	return ps
}

func (p *Proc) start() {
	cfg, err := json.Marshal(p.cfg)
	require.NoError(p.t, err)
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	require.NoError(p.t, err)
	defer f.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(cfg))
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(p.t, cmd.Start())
	p.cmd, p.exited = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(p.exited) }()
}

// Pid returns the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Pause stops the process with SIGSTOP.
func (p *Proc) Pause() { require.NoError(p.t, syscall.Kill(p.Pid(), syscall.SIGSTOP)) }

// Resume continues a paused process with SIGCONT.
func (p *Proc) Resume() { require.NoError(p.t, syscall.Kill(p.Pid(), syscall.SIGCONT)) }

// Kill kills the process with SIGKILL and waits for it to exit.
func (p *Proc) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

func (p *Proc) stop() {
	if p.cmd == nil {
		return
	}
	select {
	case <-p.exited:
		return
	default:
	}
	_ = syscall.Kill(p.Pid(), syscall.SIGCONT)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(startTimeout):
		// Not what these tests check (pdtest.Server.Stop does, in-process);
		// on a starved machine a member whose peers are gone can take long.
		p.t.Logf("pd process %s did not stop within %v of SIGTERM; killing it", p.Name, startTimeout)
		p.Kill()
	}
	if p.t.Failed() {
		p.dumpLog()
	}
}

func (p *Proc) dumpLog() {
	b, _ := os.ReadFile(p.log)
	if len(b) > 8000 {
		b = b[len(b)-8000:]
	}
	p.t.Logf("--- %s log (tail) ---\n%s", p.Name, b)
}

// ProcLeader asks every running member who leads and returns that member, or
// nil when no member answers or none is named.
func ProcLeader(t testing.TB, ps []*Proc) *Proc {
	for _, p := range ps {
		select {
		case <-p.exited:
			continue
		default:
		}
		m, err := p.members()
		if err != nil || m.GetLeader() == nil {
			continue
		}
		for _, q := range ps {
			if len(m.Leader.ClientUrls) > 0 && m.Leader.ClientUrls[0] == q.Addr {
				return q
			}
		}
	}
	return nil
}

func (p *Proc) members() (*pdpb.GetMembersResponse, error) {
	conn, err := grpc.NewClient(p.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	resp, err := pdpb.NewPDClient(conn).GetMembers(ctx, &pdpb.GetMembersRequest{})
	if err != nil {
		return nil, err
	}
	if e := resp.GetHeader().GetError(); e != nil {
		return nil, fmt.Errorf("%s: %s", e.Type, e.Message)
	}
	return resp, nil
}
