package txn

import (
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/stratadb/strata/tso"
)

// MaxGCWait is how long GC waits for a running transaction: one older than
// this no longer holds the GC safe point back (TiDB's
// tidb_gc_max_wait_time, 24 h); its reads then fail with 9006.
const MaxGCWait = 24 * time.Hour

var oldestTxnAge = promauto.NewGauge(prometheus.GaugeOpts{
	Namespace: "strata", Subsystem: "txn", Name: "oldest_running_seconds",
	Help: "Age of this SQL node's oldest running transaction (0 if none), as of the last GC heartbeat.",
})

// activeTxns counts running transactions by start_ts, so that the GC
// leader never sets the safe point above a snapshot still in use.
type activeTxns struct {
	mu sync.Mutex
	n  map[uint64]int
}

func (a *activeTxns) add(ts uint64) {
	if ts == math.MaxUint64 { // a one-key read of the newest version
		return
	}
	a.mu.Lock()
	if a.n == nil {
		a.n = map[uint64]int{}
	}
	a.n[ts]++
	a.mu.Unlock()
}

func (a *activeTxns) remove(ts uint64) {
	if ts == math.MaxUint64 {
		return
	}
	a.mu.Lock()
	if a.n[ts] <= 1 {
		delete(a.n, ts)
	} else {
		a.n[ts]--
	}
	a.mu.Unlock()
}

// MinStartTS is the smallest start_ts of this client's running
// transactions (0 if none), leaving out those that began more than
// MaxGCWait ago (a timestamp's physical part is wall-clock milliseconds).
func (c *Client) MinStartTS() uint64 {
	now := time.Now().UnixMilli()
	floor := tso.ComposeTS(max(now-MaxGCWait.Milliseconds(), 0), 0)
	var min uint64
	c.active.mu.Lock()
	for ts := range c.active.n {
		if ts < floor {
			continue
		}
		if min == 0 || ts < min {
			min = ts
		}
	}
	c.active.mu.Unlock()
	age := 0.0
	if min != 0 {
		age = float64(now-tso.Physical(min)) / 1000
		if age > 600 {
			slog.Warn("a transaction running for over 10 minutes holds the GC safe point back", "start_ts", min, "age_s", age)
		}
	}
	oldestTxnAge.Set(age)
	return min
}
