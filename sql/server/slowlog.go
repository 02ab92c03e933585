package server

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/stratadb/strata/sql/session"
)

// Slow query log defaults.
const (
	// DefaultSlowThreshold is TiDB's tidb_slow_log_threshold (300 ms).
	DefaultSlowThreshold = 300 * time.Millisecond
	// slowLogMaxBytes is the size at which the file is rotated.
	slowLogMaxBytes = 64 << 20
	// slowLogKeep is how many rotated files are kept (path.1 ... path.N).
	slowLogKeep = 4
	// slowQueryMaxLen bounds the statement text written per entry.
	slowQueryMaxLen = 4096
)

var (
	slowQueries = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "sql", Name: "slow_queries_total",
		Help: "Statements that ran longer than the slow query threshold (written to the slow query log), by statement type.",
	}, []string{"type"})
	slowLogErrors = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "sql", Name: "slow_log_errors_total",
		Help: "Slow query log entries that could not be written (the disk is full or the file cannot be opened); the entry goes to the process log instead.",
	})
)

// SlowEntry is one line of the slow query log (JSON), and one row of
// information_schema.SLOW_QUERY.
type SlowEntry = session.SlowQuery

// SlowLog writes the statements that took at least its threshold as JSON
// lines to a file rotated at 64 MiB (four old files kept), or, without a
// file, to the process log. Safe for concurrent use.
type SlowLog struct {
	threshold time.Duration
	log       *slog.Logger
	maxBytes  int64

	mu   sync.Mutex
	path string
	f    *os.File
	size int64
}

// OpenSlowLog returns a slow log for statements of threshold or longer
// (0: DefaultSlowThreshold; negative: none is logged) written to path
// (empty: to log at WARN).
func OpenSlowLog(path string, threshold time.Duration, log *slog.Logger) (*SlowLog, error) {
	if threshold == 0 {
		threshold = DefaultSlowThreshold
	}
	l := &SlowLog{threshold: threshold, log: log, maxBytes: slowLogMaxBytes, path: path}
	if path != "" {
		if err := l.open(); err != nil {
			return nil, fmt.Errorf("slow query log: %w", err)
		}
	}
	return l, nil
}

func (l *SlowLog) open() error {
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	l.f, l.size = f, st.Size()
	return nil
}

// Slow reports whether a statement that took d is logged.
func (l *SlowLog) Slow(d time.Duration) bool {
	return l != nil && l.threshold > 0 && d >= l.threshold
}

// Write logs e (the caller checked Slow).
func (l *SlowLog) Write(e SlowEntry) {
	if len(e.Query) > slowQueryMaxLen {
		e.Query = fmt.Sprintf("%s...(%d bytes)", e.Query[:slowQueryMaxLen], len(e.Query))
	}
	slowQueries.WithLabelValues(e.Type).Inc()
	line, err := json.Marshal(e)
	if err == nil {
		line = append(line, '\n')
		err = l.append(line)
	}
	if err != nil {
		slowLogErrors.Inc()
		l.log.Warn("slow query (the slow query log could not be written: check the disk and the file's directory)",
			"err", err, "query_time", e.QueryTime, "conn_id", e.ConnID, "query", e.Query)
		return
	}
	if l.path == "" {
		l.log.Warn("slow query", "query_time", e.QueryTime, "conn_id", e.ConnID, "user", e.User, "host", e.Host, "db", e.DB,
			"type", e.Type, "succ", e.Succ, "error_code", e.ErrorCode, "rows", e.Rows, "digest", e.Digest, "query", e.Query)
	}
}

// append writes line to the file, rotating it first when it would pass
// maxBytes. Without a file it does nothing.
func (l *SlowLog) append(line []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.path == "" {
		return nil
	}
	if l.f == nil { // a failed rotation: try again
		if err := l.open(); err != nil {
			return err
		}
	}
	if l.size > 0 && l.size+int64(len(line)) > l.maxBytes {
		if err := l.rotate(); err != nil {
			return err
		}
	}
	n, err := l.f.Write(line)
	l.size += int64(n)
	return err
}

// rotate renames path to path.1 (path.1 to path.2, ..., dropping the
// oldest) and opens a new path.
func (l *SlowLog) rotate() error {
	l.f.Close()
	l.f = nil
	for i := slowLogKeep - 1; i >= 1; i-- {
		if err := os.Rename(fmt.Sprintf("%s.%d", l.path, i), fmt.Sprintf("%s.%d", l.path, i+1)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	if err := os.Rename(l.path, l.path+".1"); err != nil && !os.IsNotExist(err) {
		return err
	}
	return l.open()
}

// Entries returns the entries of the log's files, the oldest file first
// (none without a file). A line that is not an entry (a torn write) is
// skipped.
func (l *SlowLog) Entries() ([]SlowEntry, error) {
	if l == nil || l.path == "" {
		return nil, nil
	}
	l.mu.Lock() // no rotation while the files are read
	defer l.mu.Unlock()
	var out []SlowEntry
	for i := slowLogKeep; i >= 0; i-- {
		p := l.path
		if i > 0 {
			p = fmt.Sprintf("%s.%d", l.path, i)
		}
		f, err := os.Open(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("slow query log: %w", err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			var e SlowEntry
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				out = append(out, e)
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("slow query log %s: %w", p, err)
		}
	}
	return out, nil
}

// Close closes the file.
func (l *SlowLog) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
