package localcluster

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Proc is one Strata process (pd, storenode or sqlnode) and how to start it
// again with the same arguments and data.
type Proc struct {
	Name    string   // e.g. "store2"; also the log file name
	Bin     string   // absolute path of the binary
	Args    []string // command-line flags
	Env     []string // added to this process's environment ("K=V")
	Wrap    []string // command prefix that execs Bin (e.g. "ip netns exec NS")
	LogPath string

	cmd  *exec.Cmd
	done chan struct{} // closed when the running process has exited
	err  error         // exit status, valid after done is closed
}

// Start launches the process. It fails if the process is already running.
func (p *Proc) Start() error {
	if p.Running() {
		return fmt.Errorf("localcluster: %s is already running (pid %d)", p.Name, p.cmd.Process.Pid)
	}
	if err := os.MkdirAll(filepath.Dir(p.LogPath), 0o755); err != nil {
		return fmt.Errorf("localcluster: %w", err)
	}
	logf, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("localcluster: open log of %s: %w", p.Name, err)
	}
	cmd := exec.Command(p.Bin, p.Args...)
	if len(p.Wrap) > 0 {
		cmd = exec.Command(p.Wrap[0], append(append(p.Wrap[1:len(p.Wrap):len(p.Wrap)], p.Bin), p.Args...)...)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if len(p.Env) > 0 {
		cmd.Env = append(os.Environ(), p.Env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("localcluster: start %s: %w", p.Name, err)
	}
	p.cmd, p.done = cmd, make(chan struct{})
	go func(done chan struct{}) {
		p.err = cmd.Wait()
		logf.Close()
		close(done)
	}(p.done)
	return nil
}

// Running reports whether the process was started and has not exited.
func (p *Proc) Running() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Flag returns the value p was started with for flag name ("--status-addr"),
// or "" if it has none.
func (p *Proc) Flag(name string) string {
	if i := slices.Index(p.Args, name); i >= 0 && i+1 < len(p.Args) {
		return p.Args[i+1]
	}
	return ""
}

// SetFailpoint sets failpoint name of the running process to term, a
// pingcap/failpoint term ("panic", "return(1)", "sleep(100)",
// "25%panic", ...), through its status server's /debug/fail/ (binaries
// built with the failpoints tag, localcluster.Build(dir, "failpoints"));
// an empty term disables it.
func (p *Proc) SetFailpoint(name, term string) error {
	status := p.Flag("--status-addr")
	if status == "" {
		return fmt.Errorf("localcluster: %s has no --status-addr", p.Name)
	}
	method := http.MethodPut
	if term == "" {
		method = http.MethodDelete
	}
	req, err := http.NewRequest(method, "http://"+status+"/debug/fail/"+name, strings.NewReader(term))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("localcluster: %s: %s failpoint %s: %s: %s (built without the failpoints tag?)", p.Name, method, name, resp.Status, body)
	}
	return nil
}

// Pid is the process id of the running process, or 0.
func (p *Proc) Pid() int {
	if !p.Running() {
		return 0
	}
	return p.cmd.Process.Pid
}

// CPUSeconds is the user+system CPU time of the running process so far
// (0 if it is not running).
func (p *Proc) CPUSeconds() float64 { return CPUSeconds(p.Pid()) }

// StatusKB reads a kB field of /proc/pid/status (e.g. "VmHWM", the peak
// RSS; -1 if unreadable).
func StatusKB(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// CPUSeconds is the user+system CPU time of process pid (Linux /proc; 0 if
// unreadable).
func CPUSeconds(pid int) float64 {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which may contain spaces) start at
	// field 3 (state); utime and stime are fields 14 and 15.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / clkTck
}

// clkTck is USER_HZ, 100 on every Linux this runs on.
const clkTck = 100

// Exited is closed when the current process exits (nil before Start).
func (p *Proc) Exited() <-chan struct{} { return p.done }

// Kill sends SIGKILL (a crash: nothing is flushed) and waits for the exit.
func (p *Proc) Kill() error { return p.signalAndWait(syscall.SIGKILL, 0) }

// Stop sends SIGTERM and waits up to grace for a clean exit, then SIGKILL.
func (p *Proc) Stop(grace time.Duration) error { return p.signalAndWait(syscall.SIGTERM, grace) }

// Pause sends SIGSTOP: the process keeps its sockets and memory but runs
// no instruction (a GC pause, a VM stall) until Resume. Its peers see no
// connection error; its monotonic clock keeps running. Kill works on a
// paused process; Stop kills it after its grace (it cannot run a handler).
func (p *Proc) Pause() error { return p.signal(syscall.SIGSTOP) }

// Resume sends SIGCONT to a paused process.
func (p *Proc) Resume() error { return p.signal(syscall.SIGCONT) }

func (p *Proc) signal(sig syscall.Signal) error {
	if !p.Running() {
		return fmt.Errorf("localcluster: %s is not running", p.Name)
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("localcluster: signal %s: %w", p.Name, err)
	}
	return nil
}

func (p *Proc) signalAndWait(sig syscall.Signal, grace time.Duration) error {
	if !p.Running() {
		return nil
	}
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("localcluster: signal %s: %w", p.Name, err)
	}
	if sig != syscall.SIGKILL {
		select {
		case <-p.done:
			return nil
		case <-time.After(grace):
			_ = p.cmd.Process.Kill()
		}
	}
	<-p.done
	return nil
}

// ExitErr is the exit status of the last run (nil while running or on a
// clean exit).
func (p *Proc) ExitErr() error {
	if p.Running() || p.cmd == nil {
		return nil
	}
	return p.err
}

// SchedStat is a process's scheduler accounting summed over its threads
// (/proc/PID/task/*/schedstat): time on a CPU, time runnable but waiting
// for one (the run queue), and the number of times a thread was put on a
// CPU. Threads that exited are not counted, so take differences over
// short spans of a long-lived process.
type SchedStat struct {
	OnCPU, RunQueueWait time.Duration
	Timeslices          int64
}

// ReadSchedStat reads pid's SchedStat (zero if unreadable).
func ReadSchedStat(pid int) SchedStat {
	var s SchedStat
	if pid <= 0 {
		return s
	}
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return s
	}
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) < 3 {
			continue
		}
		run, _ := strconv.ParseInt(f[0], 10, 64)
		wait, _ := strconv.ParseInt(f[1], 10, 64)
		n, _ := strconv.ParseInt(f[2], 10, 64)
		s.OnCPU += time.Duration(run)
		s.RunQueueWait += time.Duration(wait)
		s.Timeslices += n
	}
	return s
}

// Sub is s minus o.
func (s SchedStat) Sub(o SchedStat) SchedStat {
	return SchedStat{OnCPU: s.OnCPU - o.OnCPU, RunQueueWait: s.RunQueueWait - o.RunQueueWait, Timeslices: s.Timeslices - o.Timeslices}
}
