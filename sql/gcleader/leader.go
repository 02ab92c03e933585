package gcleader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/kvclient"
	"github.com/stratadb/strata/kvclient/txn"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/pdpb"
	"github.com/stratadb/strata/proto/storepb"
	"github.com/stratadb/strata/tso"
)

var (
	runs = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "gc", Name: "runs_total",
		Help: "GC rounds run by this SQL node as GC leader, by result (ok, skipped, error).",
	}, []string{"result"})
	runSeconds = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "gc", Name: "run_phase_seconds",
		Help:    "Duration of the phases of a GC round (resolve_locks, update_safe_point, total).",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 18),
	}, []string{"phase"})
	locksResolved = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "gc", Name: "locks_resolved_total",
		Help: "Locks below the safe point a GC round handed to the lock resolver.",
	})
	safePointGauge = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: "strata", Subsystem: "gc", Name: "safe_point",
		Help: "The last safe point this SQL node set as GC leader (TSO timestamp; physical ms = value >> 18).",
	})
	isLeader = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: "strata", Subsystem: "gc", Name: "is_leader",
		Help: "1 while this SQL node is GC leader.",
	})
)

// PD is what the GC leader needs from PD (*pdclient.Client is one).
type PD interface {
	GetTS(ctx context.Context) (uint64, error)
	GCNodeHeartbeat(ctx context.Context, nodeID string, minStartTS uint64, ttl time.Duration, campaign bool) (*pdpb.GCNodeHeartbeatResponse, error)
	UpdateGCSafePoint(ctx context.Context, sp uint64) (uint64, error)
	GetGCSafePoint(ctx context.Context) (uint64, error)
}

// DefaultMinLifeTime is the smallest life time used whatever
// tidb_gc_life_time says (TiDB's 10m).
const DefaultMinLifeTime = 10 * time.Minute

// Config tunes a Leader. Zero fields take the defaults.
type Config struct {
	// NodeID identifies this SQL node to PD (default: a random id).
	NodeID string
	// HeartbeatInterval is how often PD hears from this node (default
	// 5s); its heartbeat counts for 3 intervals.
	HeartbeatInterval time.Duration
	// MinLifeTime bounds tidb_gc_life_time from below (default 10m; tests
	// lower it).
	MinLifeTime time.Duration
	// MinStartTS returns the smallest start_ts of this node's running
	// transactions, 0 if none; nil reports none.
	MinStartTS func() uint64
	// ScanLockLimit is the page size of KvScanLock (default 256).
	ScanLockLimit int
	// Meta is the node's kv.Storage, through which the leader reads and
	// updates the queue of ranges dropped tables and indexes left
	// (sql/deleterange); nil leaves them alone.
	Meta   kv.Storage
	Logger *slog.Logger
}

// Leader takes part in the GC leader election and, while leader, runs GC
// rounds. See the package documentation.
type Leader struct {
	pd       PD
	kv       *kvclient.Client
	resolver *txn.LockResolver
	cfg      Config
	log      *slog.Logger
	lastRun  time.Time
}

// New returns a Leader using kv to reach stores and resolver to resolve
// locks.
func New(pd PD, kv *kvclient.Client, resolver *txn.LockResolver, cfg Config) *Leader {
	if cfg.NodeID == "" {
		cfg.NodeID = fmt.Sprintf("sql-%d", time.Now().UnixNano())
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = 5 * time.Second
	}
	if cfg.MinLifeTime <= 0 {
		cfg.MinLifeTime = DefaultMinLifeTime
	}
	if cfg.ScanLockLimit <= 0 {
		cfg.ScanLockLimit = 256
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Leader{pd: pd, kv: kv, resolver: resolver, cfg: cfg,
		log: cfg.Logger.With("component", "gc_leader", "node", cfg.NodeID)}
}

// Run heartbeats PD and runs GC rounds while leader, until ctx ends; then
// it resigns.
func (l *Leader) Run(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	defer func() {
		isLeader.Set(0)
		rctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, _ = l.pd.GCNodeHeartbeat(rctx, l.cfg.NodeID, 0, l.cfg.HeartbeatInterval, false)
		cancel()
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		l.tick(ctx)
		t.Reset(l.cfg.HeartbeatInterval)
	}
}

func (l *Leader) tick(ctx context.Context) {
	var minTS uint64
	if l.cfg.MinStartTS != nil {
		minTS = l.cfg.MinStartTS()
	}
	resp, err := l.pd.GCNodeHeartbeat(ctx, l.cfg.NodeID, minTS, 3*l.cfg.HeartbeatInterval, true)
	if err != nil {
		if ctx.Err() == nil {
			l.log.Warn("gc heartbeat", "err", err)
		}
		return
	}
	if !resp.GetIsLeader() {
		isLeader.Set(0)
		return
	}
	isLeader.Set(1)
	interval := time.Duration(resp.GetConfig().GetRunIntervalMs()) * time.Millisecond
	if !l.lastRun.IsZero() && time.Since(l.lastRun) < interval {
		return
	}
	l.lastRun = time.Now()
	life := max(time.Duration(resp.GetConfig().GetLifeTimeMs())*time.Millisecond, l.cfg.MinLifeTime)
	if _, err := l.RunOnce(ctx, life, resp.GetMinStartTs()); err != nil && ctx.Err() == nil {
		l.log.Warn("gc round failed", "err", err)
	}
}

// RunOnce runs one GC round with life time life, never setting the safe
// point above minStartTS (when not 0), and returns the safe point PD has
// afterwards. It does not check the GC leadership (Run does).
func (l *Leader) RunOnce(ctx context.Context, life time.Duration, minStartTS uint64) (uint64, error) {
	start := time.Now()
	now, err := l.pd.GetTS(ctx)
	if err != nil {
		runs.WithLabelValues("error").Inc()
		return 0, fmt.Errorf("gcleader: get ts: %w", err)
	}
	phys, _ := tso.ParseTS(now)
	sp := tso.ComposeTS(phys-life.Milliseconds(), 0)
	if minStartTS != 0 && minStartTS < sp {
		sp = minStartTS
	}
	cur, err := l.pd.GetGCSafePoint(ctx)
	if err != nil {
		runs.WithLabelValues("error").Inc()
		return 0, fmt.Errorf("gcleader: get safe point: %w", err)
	}
	if sp <= cur {
		runs.WithLabelValues("skipped").Inc()
		// Ranges left by a leader that stopped mid-way, or recorded
		// before the safe point it set.
		return cur, l.DeleteRanges(ctx, cur, now)
	}
	n, err := l.ResolveLocks(ctx, sp)
	runSeconds.WithLabelValues("resolve_locks").Observe(time.Since(start).Seconds())
	if err != nil {
		runs.WithLabelValues("error").Inc()
		return cur, err
	}
	t := time.Now()
	got, err := l.pd.UpdateGCSafePoint(ctx, sp)
	runSeconds.WithLabelValues("update_safe_point").Observe(time.Since(t).Seconds())
	if err != nil {
		runs.WithLabelValues("error").Inc()
		return cur, fmt.Errorf("gcleader: update safe point: %w", err)
	}
	runSeconds.WithLabelValues("total").Observe(time.Since(start).Seconds())
	runs.WithLabelValues("ok").Inc()
	safePointGauge.Set(float64(got))
	l.log.Info("gc round done", "safe_point", got, "locks_resolved", n, "took", time.Since(start))
	return got, l.DeleteRanges(ctx, got, now)
}

// ResolveLocks resolves every lock with start_ts <= safePoint in the whole
// key space and returns how many it handed to the resolver.
func (l *Leader) ResolveLocks(ctx context.Context, safePoint uint64) (int, error) {
	bo := l.kv.NewBackoffer()
	total := 0
	key := []byte{}
	for {
		r, err := l.kv.Locate(ctx, bo, key)
		if err != nil {
			return total, fmt.Errorf("gcleader: locate %q: %w", key, err)
		}
		req := &kvrpcpb.ScanLockRequest{MaxVersion: safePoint, StartKey: key, EndKey: r.EndKey(), Limit: uint32(l.cfg.ScanLockLimit)}
		resp, retry, err := l.kv.SendRequest(ctx, bo, r, &kvclient.Request{Cmd: &storepb.BatchCommandsRequest_Request_ScanLock{ScanLock: req}})
		if err != nil {
			return total, fmt.Errorf("gcleader: scan locks in region %d: %w", r.ID(), err)
		}
		if retry {
			continue
		}
		sl := resp.GetScanLock()
		if ke := sl.GetError(); ke != nil {
			return total, fmt.Errorf("gcleader: scan locks in region %d: %v", r.ID(), ke)
		}
		locks := sl.GetLocks()
		if len(locks) > 0 {
			res, err := l.resolver.Resolve(ctx, bo.Fork(), 0, locks)
			if err != nil {
				return total, fmt.Errorf("gcleader: resolve locks: %w", err)
			}
			if res.Wait {
				// A transaction below the safe point is still alive: wait
				// for it (its TTL), then scan the same page again.
				if err := bo.Backoff(ctx, errors.New("gcleader: lock below the safe point held by a live transaction")); err != nil {
					return total, err
				}
				continue
			}
			total += len(locks)
			locksResolved.Add(float64(len(locks)))
		}
		if len(locks) >= l.cfg.ScanLockLimit {
			key = append(append([]byte{}, locks[len(locks)-1].GetKey()...), 0)
			continue
		}
		if len(r.EndKey()) == 0 {
			return total, nil
		}
		key = r.EndKey()
	}
}
