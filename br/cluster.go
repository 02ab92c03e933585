package br

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/stratadb/strata/internal/security"
	"github.com/stratadb/strata/kvclient"
	"github.com/stratadb/strata/kvclient/locate"
	"github.com/stratadb/strata/kvclient/txn"
	"github.com/stratadb/strata/pd/pdclient"
)

var (
	brBytes = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "br", Name: "bytes_total",
		Help: "Key+value bytes backed up (op=backup), restored (op=restore) or verified after a restore (op=verify).",
	}, []string{"op"})
	brKVs = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "strata", Subsystem: "br", Name: "kvs_total",
		Help: "Pairs backed up (op=backup), restored (op=restore) or verified (op=verify).",
	}, []string{"op"})
	brSeconds = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "strata", Subsystem: "br", Name: "duration_seconds",
		Help:    "Duration of a backup or restore (op) and of its stages (stage: schema, data, verify; total).",
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 20),
	}, []string{"op", "stage"})
)

// Config is what a backup or restore runs with.
type Config struct {
	// PD lists PD's client addresses.
	PD []string
	// Security: cluster TLS (nil: plaintext).
	Security *security.TLS
	// Storage is the backup's location, local:///dir.
	Storage string
	// BackupTS: the snapshot to back up (0: a fresh TSO).
	BackupTS uint64
	// RateLimit caps each store's export writes in bytes/s (0: none).
	RateLimit uint64
	// Concurrency is the number of region requests in flight (default 4).
	Concurrency int
	Filter
	// GCTTL is the TTL of the backup's service GC safe point, renewed
	// every third of it while the backup runs (default 5 min).
	GCTTL time.Duration
	// Progress, when set, receives progress lines.
	Progress io.Writer
	Logger   *slog.Logger
	// RPCTimeout bounds one export or ingest request (default 10 min).
	RPCTimeout time.Duration
}

func (c *Config) defaults() {
	if c.Concurrency <= 0 {
		c.Concurrency = 4
	}
	if c.GCTTL <= 0 {
		c.GCTTL = 5 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.RPCTimeout <= 0 {
		c.RPCTimeout = 10 * time.Minute
	}
}

// cluster is br's connection to a cluster.
type cluster struct {
	pd       *pdclient.Client
	kv       *kvclient.Client
	txn      *txn.Client
	store    *txn.Storage
	resolver *txn.LockResolver
}

func connect(ctx context.Context, cfg *Config) (*cluster, error) {
	if len(cfg.PD) == 0 {
		return nil, errors.New("br: no PD address (--pd host:port[,host:port])")
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	pd, err := pdclient.New(cctx, cfg.PD, pdclient.WithSecurity(cfg.Security))
	if err != nil {
		return nil, fmt.Errorf("br: connect to PD %v: %w", cfg.PD, err)
	}
	kv := kvclient.New(pd, kvclient.Config{Security: cfg.Security, RPCTimeout: cfg.RPCTimeout})
	tc := txn.NewClient(kv, pd, txn.Config{})
	return &cluster{pd: pd, kv: kv, txn: tc, store: txn.NewStorage(pd, kv, tc), resolver: tc.Resolver()}, nil
}

func (c *cluster) close() {
	c.kv.Close()
	c.pd.Close()
}

// eachRegion walks [start, end) region by region: send gets the region
// and the piece [lo, hi) of the range inside it, with a Backoffer of its
// own, and returns retry=true to have the piece located and sent again
// (a region error, a lock resolved).
func (c *cluster) eachRegion(ctx context.Context, start, end []byte, send func(bo *kvclient.Backoffer, r *locate.Region, lo, hi []byte) (retry bool, err error)) error {
	key := start
	bo := c.kv.NewBackoffer()
	for len(end) == 0 || bytes.Compare(key, end) < 0 {
		r, err := c.kv.Locate(ctx, bo, key)
		if err != nil {
			return fmt.Errorf("br: locate %x: %w", key, err)
		}
		hi := end
		if re := r.EndKey(); len(re) > 0 && (len(end) == 0 || bytes.Compare(re, end) < 0) {
			hi = re
		}
		retry, err := send(bo, r, key, hi)
		if err != nil {
			return err
		}
		if retry {
			continue
		}
		if len(hi) == 0 {
			return nil
		}
		key, bo = hi, c.kv.NewBackoffer()
	}
	return nil
}

// pieces cuts [start, end) at the region boundaries the region cache
// knows now (the work units of a parallel export or ingest; each is
// walked again by eachRegion, so a split since is harmless).
func (c *cluster) pieces(ctx context.Context, start, end []byte) ([][2][]byte, error) {
	var out [][2][]byte
	bo := c.kv.NewBackoffer()
	key := start
	for bytes.Compare(key, end) < 0 {
		r, err := c.kv.Locate(ctx, bo, key)
		if err != nil {
			return nil, fmt.Errorf("br: locate %x: %w", key, err)
		}
		hi := end
		if re := r.EndKey(); len(re) > 0 && bytes.Compare(re, end) < 0 {
			hi = re
		}
		out = append(out, [2][]byte{key, hi})
		key = hi
	}
	return out, nil
}

// runParallel runs fn(i) for i in [0, n) on up to workers goroutines and
// returns the first error (the others stop taking work).
func runParallel(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

// progress prints "<what> [=====>    ] 45% 12/26 ranges, 34.5 MB, 12.3 MB/s"
// lines, at most two a second plus the last.
type progress struct {
	what  string
	w     io.Writer
	total int
	start time.Time

	mu    sync.Mutex
	done  int
	bytes uint64
	last  time.Time
}

func newProgress(w io.Writer, what string, total int) *progress {
	return &progress{what: what, w: w, total: total, start: time.Now()}
}

func (p *progress) add(units int, n uint64) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += units
	p.bytes += n
	now := time.Now()
	if p.done < p.total && now.Sub(p.last) < 500*time.Millisecond {
		return
	}
	p.last = now
	pct := 100
	if p.total > 0 {
		pct = p.done * 100 / p.total
	}
	const width = 30
	bar := bytes.Repeat([]byte{' '}, width)
	for i := range pct * width / 100 {
		bar[i] = '='
	}
	if pct < 100 {
		bar[pct*width/100] = '>'
	}
	secs := max(now.Sub(p.start).Seconds(), 1e-3)
	fmt.Fprintf(p.w, "%s [%s] %3d%% %d/%d, %.1f MB, %.1f MB/s\n", p.what, bar, pct, p.done, p.total,
		float64(p.bytes)/1e6, float64(p.bytes)/1e6/secs)
}
