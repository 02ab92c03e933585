package gc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/stratadb/strata/kv/regionkeys"
	"github.com/stratadb/strata/proto/errorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
	"github.com/stratadb/strata/store/mvcc"
	"github.com/stratadb/strata/store/txn"
)

// Snapshot is a consistent view of the store's engine; Close releases it.
type Snapshot interface {
	mvcc.Snapshot
	Close() error
}

// Store is what the worker needs from its store node (store/server adapts a
// raftstore.Store).
type Store interface {
	// Regions returns the regions hosted here (copies, or shared read-only).
	Regions() []*metapb.Region
	// IsLeader reports whether this store leads regionID now.
	IsLeader(regionID uint64) bool
	// ReadIndex waits until the region of rctx may be read linearizably
	// here and returns it, or a region error.
	ReadIndex(ctx context.Context, rctx *kvrpcpb.Context) (*metapb.Region, *errorpb.Error, error)
	// Snapshot is a consistent view of the engine as of now.
	Snapshot() Snapshot
	// Write replicates reqs, GC's deletes under safePoint, in region
	// (epoch checked at apply) and returns once they applied here; a
	// region error means nothing was written. Every replica applying them
	// raises its store's SafePoint to safePoint before the deletes are
	// visible in its engine (raftstore carries it in the raft command).
	Write(ctx context.Context, region *metapb.Region, reqs []*raft_cmdpb.Request, safePoint uint64) (*errorpb.Error, error)
	// SafePoint is the GC safe point the store knows: the newest one
	// raised here or learned through raft (Write's, a region snapshot's).
	// Safe for concurrent use.
	SafePoint() uint64
	// RaiseSafePoint raises SafePoint to sp; it never lowers it.
	RaiseSafePoint(sp uint64)
}

// PD gives the cluster's GC safe point (*pdclient.Client is one).
type PD interface {
	GetGCSafePoint(ctx context.Context) (uint64, error)
}

// Config tunes a Worker. Zero fields take the defaults.
type Config struct {
	// PollInterval is how often PD's safe point is read (default 10s).
	PollInterval time.Duration
	// DeleteDelay is how long a new safe point is only published to
	// readers before versions below it are deleted (default 2×PollInterval).
	DeleteDelay time.Duration
	// BatchKeys is the most keys one GC write covers (default 256).
	BatchKeys int
	// MaxBatchRequests bounds the deletes in one raft command (default
	// 4096); a key with more garbage is deleted over several, oldest first.
	MaxBatchRequests int
	// BatchPause is the pause after each batch (default 5ms): the rate
	// limit that keeps GC out of foreground latency.
	BatchPause time.Duration
	Logger     *slog.Logger
}

func (c *Config) setDefaults() {
	if c.PollInterval <= 0 {
		c.PollInterval = 10 * time.Second
	}
	if c.DeleteDelay <= 0 {
		c.DeleteDelay = 2 * c.PollInterval
	}
	if c.BatchKeys <= 0 {
		c.BatchKeys = 256
	}
	if c.MaxBatchRequests <= 0 {
		c.MaxBatchRequests = 4096
	}
	if c.BatchPause <= 0 {
		c.BatchPause = 5 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Worker is one store's GC worker. See the package documentation.
type Worker struct {
	store   Store
	storeID uint64
	pd      PD
	latches *txn.Latches
	cfg     Config
	log     *slog.Logger

	// done is the safe point every region this store led was collected at
	// in the last complete round (tests wait on it).
	done atomic.Uint64
}

// NewWorker returns a worker for the store storeID; latches are the ones
// the store's transaction commands take (txn.Storage.Latches).
func NewWorker(store Store, storeID uint64, pd PD, latches *txn.Latches, cfg Config) *Worker {
	cfg.setDefaults()
	return &Worker{store: store, storeID: storeID, pd: pd, latches: latches, cfg: cfg,
		log: cfg.Logger.With("component", "gc", "store", storeID)}
}

// SafePoint is the GC safe point this store knows, from its own PD polls
// or through raft from the leaders that collected under it: reads below it
// must be refused (versions they would see may be gone). Check it after
// taking the snapshot the read uses. Safe for concurrent use.
func (w *Worker) SafePoint() uint64 { return w.store.SafePoint() }

// CollectedSafePoint is the safe point of the last round that went over
// every region this store led.
func (w *Worker) CollectedSafePoint() uint64 { return w.done.Load() }

// CheckRead returns the KeyError for a read at ts below the safe point,
// or nil. Call it after taking the read's snapshot.
func (w *Worker) CheckRead(ts uint64) *kvrpcpb.KeyError {
	if w == nil {
		return nil
	}
	if sp := w.store.SafePoint(); ts < sp {
		readsRefused.Inc()
		return &kvrpcpb.KeyError{
			GcTooEarly: &kvrpcpb.GCTooEarly{StartTs: ts, SafePoint: sp},
			Abort:      fmt.Sprintf("GC life time is shorter than transaction duration, transaction starts at %d, GC safe point is %d", ts, sp),
		}
	}
	return nil
}

// Run polls PD and collects garbage until ctx ends.
func (w *Worker) Run(ctx context.Context) {
	var polled uint64  // newest safe point PD gave
	var pending uint64 // newest safe point polled, not yet used for deletion
	var seenAt time.Time
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if sp, err := w.pd.GetGCSafePoint(ctx); err != nil {
			if ctx.Err() == nil {
				w.log.Warn("get gc safe point", "err", err)
			}
		} else if sp > polled {
			// Perhaps known already through raft; deleted under only by
			// the leaders that polled it DeleteDelay ago.
			w.store.RaiseSafePoint(sp)
			polled, pending, seenAt = sp, sp, time.Now()
			w.log.Info("gc safe point", "safe_point", sp)
		}
		storeSafePoint.Set(float64(w.store.SafePoint()))
		if pending > w.done.Load() && time.Since(seenAt) >= w.cfg.DeleteDelay {
			if err := w.round(ctx, pending); err != nil {
				if ctx.Err() != nil {
					return
				}
				w.log.Warn("gc round", "safe_point", pending, "err", err)
			} else {
				w.done.Store(pending)
			}
		}
		next := w.cfg.PollInterval
		if pending > w.done.Load() {
			if d := w.cfg.DeleteDelay - time.Since(seenAt); d > 0 && d < next {
				next = d
			}
		}
		t.Reset(next)
	}
}

// round collects every region this store leads at safePoint. A region
// that fails (leadership lost, epoch changed) is skipped and the round
// reports it, so the next poll tries again.
func (w *Worker) round(ctx context.Context, safePoint uint64) error {
	start := time.Now()
	var errs []error
	var deleted int
	for _, r := range w.store.Regions() {
		if !w.store.IsLeader(r.GetId()) {
			continue
		}
		n, err := w.Region(ctx, r, safePoint)
		deleted += n
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			regionRounds.WithLabelValues("error").Inc()
			errs = append(errs, fmt.Errorf("region %d: %w", r.GetId(), err))
			continue
		}
		regionRounds.WithLabelValues("ok").Inc()
	}
	w.log.Info("gc round done", "safe_point", safePoint, "deleted", deleted, "took", time.Since(start), "errors", len(errs))
	return errors.Join(errs...)
}

func peerOf(r *metapb.Region, storeID uint64) *metapb.Peer {
	for _, p := range r.GetPeers() {
		if p.GetStoreId() == storeID {
			return p
		}
	}
	return nil
}

// Region collects the garbage of region at safePoint, batch by batch, and
// returns how many records (write and default) it deleted.
func (w *Worker) Region(ctx context.Context, region *metapb.Region, safePoint uint64) (int, error) {
	rctx := &kvrpcpb.Context{RegionId: region.GetId(), RegionEpoch: region.GetRegionEpoch(), Peer: peerOf(region, w.storeID)}
	start, end := region.GetStartKey(), region.GetEndKey()
	deleted := 0
	for {
		garbage, resume, err := w.scan(start, end, safePoint)
		if err != nil {
			return deleted, err
		}
		if len(garbage) > 0 {
			n, err := w.collectBatch(ctx, rctx, garbage, safePoint)
			deleted += n
			if err != nil {
				return deleted, err
			}
		}
		if resume == nil {
			return deleted, nil
		}
		start = resume
		select {
		case <-ctx.Done():
			return deleted, ctx.Err()
		case <-time.After(w.cfg.BatchPause):
		}
	}
}

// scan finds the next BatchKeys keys with garbage in [start, end) on a
// fresh snapshot, without latches.
func (w *Worker) scan(start, end []byte, safePoint uint64) ([]keyGC, []byte, error) {
	snap := w.store.Snapshot()
	defer snap.Close()
	sc, err := newScanner(snap, start, end)
	if err != nil {
		return nil, nil, err
	}
	defer sc.close()
	garbage, resume, scanned, err := sc.collect(safePoint, w.cfg.BatchKeys)
	keysScanned.Add(float64(scanned))
	return garbage, resume, err
}

// collectBatch deletes the garbage of candidates under their latches, as
// computed again on a snapshot taken after a linearizable read of the
// region.
func (w *Worker) collectBatch(ctx context.Context, rctx *kvrpcpb.Context, candidates []keyGC, safePoint uint64) (int, error) {
	start := time.Now()
	defer func() { batchSeconds.Observe(time.Since(start).Seconds()) }()
	ks := make([][]byte, len(candidates))
	for i := range candidates {
		ks[i] = candidates[i].key
	}
	guard, err := w.latches.Acquire(ctx, ks)
	if err != nil {
		return 0, err
	}
	defer guard.Release()
	region, rerr, err := w.store.ReadIndex(ctx, rctx)
	if err != nil {
		return 0, err
	}
	if rerr != nil {
		return 0, fmt.Errorf("gc: read index: %s", rerr.GetMessage())
	}
	snap := w.store.Snapshot()
	var reqs []*raft_cmdpb.Request
	var writes, values int
	for _, k := range ks {
		if !regionkeys.KeyIn(k, region) {
			continue // the region changed since the scan
		}
		g, err := keyGarbage(snap, k, safePoint)
		if err != nil {
			snap.Close()
			return 0, err
		}
		writes += len(g.writes)
		values += len(g.values)
		reqs = g.deletes(reqs)
	}
	snap.Close()
	deleted := 0
	for len(reqs) > 0 {
		n := min(len(reqs), w.cfg.MaxBatchRequests)
		rerr, err := w.store.Write(context.WithoutCancel(ctx), region, reqs[:n], safePoint)
		if err != nil {
			return deleted, err
		}
		if rerr != nil {
			return deleted, fmt.Errorf("gc: write: %s", rerr.GetMessage())
		}
		deleted += n
		reqs = reqs[n:]
	}
	versionsDeleted.WithLabelValues("write").Add(float64(writes))
	versionsDeleted.WithLabelValues("default").Add(float64(values))
	return deleted, nil
}
