//go:build e2e

package e2e

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// openDB opens a pool to a published SQL address.
func openDB(t *testing.T, addr, db string) *sql.DB {
	t.Helper()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.DBName = "root", "tcp", addr, db
	cfg.Timeout = 5 * time.Second
	cfg.ReadTimeout = 60 * time.Second
	cfg.WriteTimeout = 10 * time.Second
	cfg.InterpolateParams = true
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := sql.OpenDB(conn)
	t.Cleanup(func() { d.Close() })
	return d
}

// write is one acknowledged INSERT.
type write struct {
	id         int64
	start, end time.Time
}

// load inserts rows with unique ids into e2e.w through every SQL node, each
// writer one statement at a time, and records what was acknowledged.
type load struct {
	next   atomic.Int64
	stop   chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	acked  []write
	failed int
	errs   map[string]int // first line of each distinct error -> count
	failAt []failure      // every failed statement
}

// failure is one failed statement: when it ended and its MySQL error
// code (0: not a MySQL error, e.g. a broken connection).
type failure struct {
	at   time.Time
	code uint16
	msg  string
}

// retryableCodes are the MySQL errors a client runs the statement again
// for: deadlock or a lost transaction (1213), lock wait timeout (1205),
// region unavailable (9005), write conflict (9007), schema changed (8028).
var retryableCodes = []uint16{1213, 1205, 9005, 9007, 8028}

// notRetryableSince lists the failures after t other than retryable
// MySQL errors.
func (l *load) notRetryableSince(t time.Time) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, f := range l.failAt {
		if f.at.After(t) && !slices.Contains(retryableCodes, f.code) {
			out = append(out, fmt.Sprintf("%s (%d): %s", f.at.Format(time.StampMilli), f.code, f.msg))
		}
	}
	return out
}

// startLoad starts writersPer writers on each db, inserting ids above
// after (a previous load's last id).
func startLoad(dbs map[string]*sql.DB, writersPer int, after int64) *load {
	l := &load{stop: make(chan struct{}), errs: map[string]int{}}
	l.next.Store(after)
	for node, db := range dbs {
		for range writersPer {
			l.wg.Add(1)
			go l.writer(node, db)
		}
	}
	return l
}

func (l *load) writer(node string, db *sql.DB) {
	defer l.wg.Done()
	for {
		select {
		case <-l.stop:
			return
		default:
		}
		id := l.next.Add(1)
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		_, err := db.ExecContext(ctx, "INSERT INTO e2e.w (id, node) VALUES (?, ?)", id, node)
		cancel()
		end := time.Now()
		l.mu.Lock()
		if err == nil {
			l.acked = append(l.acked, write{id: id, start: start, end: end})
		} else {
			l.failed++
			msg := err.Error()
			if len(msg) > 120 {
				msg = msg[:120]
			}
			l.errs[msg]++
			var me *mysql.MySQLError
			code := uint16(0)
			if errors.As(err, &me) {
				code = me.Number
			}
			l.failAt = append(l.failAt, failure{at: end, code: code, msg: msg})
		}
		l.mu.Unlock()
		if err != nil {
			// Do not spin on a node that answers errors at once.
			select {
			case <-l.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}

// Stop stops the writers and waits for the statements in flight.
func (l *load) Stop() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

// okStartedAfter counts acknowledged writes issued at or after t.
func (l *load) okStartedAfter(t time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, w := range l.acked {
		if !w.start.Before(t) {
			n++
		}
	}
	return n
}

// waitProgress polls until n writes issued after t were acknowledged.
func (l *load) waitProgress(tb testing.TB, t time.Time, n int, timeout time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for l.okStartedAfter(t) < n {
		if time.Now().After(deadline) {
			tb.Fatalf("only %d of %d writes issued after %s were acknowledged within %v; errors: %v",
				l.okStartedAfter(t), n, t.Format(time.StampMilli), timeout, l.errors())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// outage measures SQL write availability around a fault injected at fault
// and complete at done (the container had exited, the network was cut):
// gap is the longest time without an acknowledged write in [fault, to]
// (counted from the last acknowledgement before the fault), and resumed is
// how long after done the first write issued after done was acknowledged.
func (l *load) outage(fault, done, to time.Time) (gap, resumed time.Duration) {
	l.mu.Lock()
	ends := make([]time.Time, 0, len(l.acked))
	resumedAt := time.Time{}
	for _, w := range l.acked {
		ends = append(ends, w.end)
		if !w.start.Before(done) && (resumedAt.IsZero() || w.end.Before(resumedAt)) {
			resumedAt = w.end
		}
	}
	l.mu.Unlock()
	sort.Slice(ends, func(i, j int) bool { return ends[i].Before(ends[j]) })
	prev := fault
	for _, e := range ends {
		if e.After(fault) {
			break
		}
		prev = e
	}
	for _, e := range ends {
		if !e.After(fault) || e.After(to) {
			continue
		}
		gap = max(gap, e.Sub(prev))
		prev = e
	}
	gap = max(gap, to.Sub(prev))
	if resumedAt.IsZero() {
		resumedAt = to
	}
	return gap, resumedAt.Sub(done)
}

func (l *load) errors() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprintf("%d failed %v", l.failed, l.errs)
}

// ackedIDs returns the ids of every acknowledged write.
func (l *load) ackedIDs() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := make([]int64, len(l.acked))
	for i, w := range l.acked {
		ids[i] = w.id
	}
	return ids
}
