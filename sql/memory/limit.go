package memory

import (
	"bufio"
	"bytes"
	"context"
	"log/slog"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// DefaultServerLimitPercent is tidb_server_memory_limit's default: 80% of
// the machine's (or the cgroup's) memory.
const DefaultServerLimitPercent = 80

// watchInterval is how often the Limiter reads the heap.
const watchInterval = 100 * time.Millisecond

// Limiter enforces tidb_server_memory_limit on this SQL node. The zero
// value is not usable; use NodeLimiter.
type Limiter struct {
	limit atomic.Int64 // bytes; 0: none
	text  atomic.Pointer[string]
	// readHeap returns the heap in use (tests replace it).
	readHeap func() uint64
	// victim is the statement killed last, until it ends.
	victim *Statement
	// setSoft is debug.SetMemoryLimit unless GOMEMLIMIT is set.
	setSoft func(int64)
}

// NodeLimiter is the SQL node's Limiter.
var NodeLimiter = newLimiter()

func newLimiter() *Limiter {
	l := &Limiter{readHeap: heapInUse}
	if os.Getenv("GOMEMLIMIT") == "" {
		l.setSoft = func(n int64) { debug.SetMemoryLimit(n) }
	} else {
		l.setSoft = func(int64) {}
	}
	return l
}

// SetLimit sets the limit in bytes (0: none) and the runtime's soft memory
// limit to it.
func (l *Limiter) SetLimit(n int64) {
	n = max(n, 0)
	l.limit.Store(n)
	serverLimit.Set(float64(n))
	if n == 0 {
		l.setSoft(1<<63 - 1) // math.MaxInt64: no soft limit
		return
	}
	l.setSoft(n)
}

// Set sets the limit from a tidb_server_memory_limit value (see
// ParseServerLimit); false if the value is not one.
func (l *Limiter) Set(text string) bool {
	n, ok := ParseServerLimit(text, TotalMemory())
	if !ok {
		return false
	}
	l.SetLimit(n)
	l.text.Store(&text)
	return true
}

// Text is the value Set was given last ("80%" before any).
func (l *Limiter) Text() string {
	if p := l.text.Load(); p != nil {
		return *p
	}
	return strconv.Itoa(DefaultServerLimitPercent) + "%"
}

// Limit is the limit in bytes (0: none).
func (l *Limiter) Limit() int64 { return l.limit.Load() }

// Run checks the heap every 100 ms until ctx ends.
func (l *Limiter) Run(ctx context.Context) {
	t := time.NewTicker(watchInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			l.check()
		}
	}
}

// check kills the largest running statement when the heap is over the
// limit and no earlier victim is still running.
func (l *Limiter) check() *Statement {
	heap := l.readHeap()
	heapBytes.Set(float64(heap))
	limit := l.limit.Load()
	if limit <= 0 || heap <= uint64(limit) {
		return nil
	}
	if l.victim != nil && l.victim.running.Load() && l.victim.killed.Load() != notKilled {
		return nil // still unwinding
	}
	l.victim = nil
	var big *Statement
	var most int64
	registry.Lock()
	for s := range registry.m {
		if n := s.bytes.Load(); s.running.Load() && n > most {
			big, most = s, n
		}
	}
	registry.Unlock()
	if big == nil {
		return nil
	}
	big.killed.Store(killedServerLimit)
	l.victim = big
	oomCancels.WithLabelValues("server_limit").Inc()
	slog.Warn("sql node over tidb_server_memory_limit: cancelling the statement that tracks the most memory",
		"heap_bytes", heap, "limit_bytes", limit, "conn", big.connID, "statement_bytes", most)
	return big
}

var heapSamples = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}

// heapInUse is the heap's spans in use (runtime.MemStats.HeapInuse),
// read without stopping the world.
func heapInUse() uint64 {
	s := make([]metrics.Sample, len(heapSamples))
	copy(s, heapSamples)
	metrics.Read(s)
	var n uint64
	for _, x := range s {
		if x.Value.Kind() == metrics.KindUint64 {
			n += x.Value.Uint64()
		}
	}
	return n
}

// ParseServerLimit parses a tidb_server_memory_limit value: "0" (none),
// a byte count with an optional KB / MB / GB / TB suffix (powers of 1024),
// or a percentage of total memory ("80%", 1% to 99%).
func ParseServerLimit(v string, total uint64) (int64, bool) {
	v = strings.ToUpper(strings.TrimSpace(v))
	if p, ok := strings.CutSuffix(v, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || f < 1 || f > 99 {
			return 0, false
		}
		return int64(float64(total) * f / 100), true
	}
	mul := int64(1)
	for i, suf := range []string{"KB", "MB", "GB", "TB"} {
		if p, ok := strings.CutSuffix(v, suf); ok {
			v, mul = p, 1<<(10*(i+1))
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mul {
		return 0, false
	}
	return n * mul, true
}

// TotalMemory is the memory this process may use: the cgroup's limit when
// there is one, else the machine's.
func TotalMemory() uint64 {
	total := memInfoTotal()
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && (total == 0 || n < total) {
			total = n
		}
	}
	return total
}

func memInfoTotal() uint64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
