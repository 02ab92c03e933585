// Package freeport hands out loopback TCP ports for processes a test or a
// local cluster starts and later restarts on the same address.
//
// A port chosen by binding 127.0.0.1:0 lies in the kernel's ephemeral range,
// which is also where every outgoing connection takes its source port: between
// closing the probe listener and the child process binding it (or between a
// kill and a restart on the same address) any client connect on the machine
// can take it, and the server fails with "address already in use". Ports here
// come from below the ephemeral range, which connects never use. Processes
// running at once (`go test` runs packages in parallel) share that range
// through a lock file per port under the temp directory: a port stays with the
// process that took it until it exits (flock is released with the process, so
// a crash leaves nothing behind).
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// lowest is the first port handed out; below it live well-known services.
const lowest = 10000

var (
	mu   sync.Mutex
	held []*os.File // the lock files of ports this process took; never closed
)

// Take returns n distinct loopback ports no other process of this machine
// holds through Take, that were free when chosen, and that outgoing
// connections cannot take in the meantime.
func Take(n int) ([]int, error) {
	mu.Lock()
	defer mu.Unlock()
	hi := ephemeralStart()
	if hi-lowest < 1000 {
		return nil, fmt.Errorf("freeport: ephemeral range starts at %d, leaving no room below it", hi)
	}
	dir := filepath.Join(os.TempDir(), "strata-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, fmt.Errorf("freeport: %w", err)
	}
	span := hi - lowest
	start := rand.IntN(span)
	out := make([]int, 0, n)
	for i := 0; i < span && len(out) < n; i++ {
		port := lowest + (start+i)%span
		f, ok := lock(dir, port)
		if !ok {
			continue
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil { // a service outside our scheme uses it
			f.Close()
			continue
		}
		ln.Close()
		held = append(held, f)
		out = append(out, port)
	}
	if len(out) < n {
		return nil, errors.New("freeport: no free port left below the ephemeral range")
	}
	return out, nil
}

// lock takes port's lock file without waiting; the lock lives as long as the
// returned file stays open.
func lock(dir string, port int) (*os.File, bool) {
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return f, true
}

// ephemeralStart reads the first port of the kernel's ephemeral range
// (Linux's default is 32768).
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	var lo, hi int
	if _, err := fmt.Sscan(string(b), &lo, &hi); err != nil || lo <= 0 {
		return 32768
	}
	return lo
}
