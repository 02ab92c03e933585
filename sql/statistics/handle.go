package statistics

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/kv/codec"
	"github.com/stratadb/strata/sql/catalog"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
)

var (
	analyzeSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Name: "strata_sql_analyze_seconds", Help: "ANALYZE TABLE duration per table.",
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 16),
	})
	analyzeRows = promauto.NewCounter(prometheus.CounterOpts{
		Name: "strata_sql_analyze_rows_total", Help: "Rows read by ANALYZE TABLE.",
	})
	statsReloads = promauto.NewCounter(prometheus.CounterOpts{
		Name: "strata_sql_stats_reloads_total", Help: "Times this SQL node reloaded table statistics after another node's ANALYZE.",
	})
	statsSaveConflicts = promauto.NewCounter(prometheus.CounterOpts{
		Name: "strata_sql_stats_save_conflicts_total", Help: "Statistics saves written again because a Delta flush committed the same key meanwhile.",
	})
)

func statsPrefix() []byte           { return catalog.MetaKey("Stats") }
func statsKey(tableID int64) []byte { return codec.EncodeInt(statsPrefix(), tableID) }
func versionKey() []byte            { return catalog.MetaKey("StatsVersion") }

// Handle serves the statistics of every analyzed table to the planner. It
// holds them in memory and reloads them when `m StatsVersion` changes
// (another SQL node ran ANALYZE), checked every lease.
type Handle struct {
	store   kv.Storage
	log     *slog.Logger
	tables  atomic.Pointer[map[int64]*Table]
	mu      sync.Mutex // serialises reloads and saves
	version uint64

	deltas    atomic.Pointer[map[int64]Delta] // as of the last reload (auto.go)
	auto      atomic.Pointer[AutoSettings]
	pendingMu sync.Mutex
	pending   map[int64]Delta // this node's counts not flushed yet
}

// NewHandle returns a handle with nothing loaded.
func NewHandle(store kv.Storage, log *slog.Logger) *Handle {
	h := &Handle{store: store, log: log}
	m := map[int64]*Table{}
	h.tables.Store(&m)
	d := map[int64]Delta{}
	h.deltas.Store(&d)
	a := DefaultAutoSettings
	h.auto.Store(&a)
	return h
}

// Get returns table id's statistics (nil: never analyzed). The result is
// shared: do not modify it.
func (h *Handle) Get(tableID int64) *Table {
	if h == nil {
		return nil
	}
	return (*h.tables.Load())[tableID]
}

// All returns every table's statistics.
func (h *Handle) All() []*Table {
	m := *h.tables.Load()
	out := make([]*Table, 0, len(m))
	for _, t := range m {
		out = append(out, t)
	}
	return out
}

// Run, every lease until ctx ends: flushes this node's modify counts,
// reloads statistics and Deltas, and, while owner() (the DDL owner), runs
// auto-analyze on cat's tables.
func (h *Handle) Run(ctx context.Context, lease time.Duration, cat Tables, owner func() bool) {
	t := time.NewTicker(lease)
	defer t.Stop()
	for {
		if err := h.flush(ctx); err != nil && ctx.Err() == nil {
			h.log.Warn("flushing modify counts; kept for the next flush", "err", err)
		}
		if err := h.Reload(ctx); err != nil && ctx.Err() == nil {
			h.log.Warn("reloading statistics", "err", err)
		}
		if owner != nil && owner() {
			if err := h.autoAnalyze(ctx, cat); err != nil && ctx.Err() == nil {
				h.log.Warn("auto analyze failed; retried next lease", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			// What was counted since the last flush is not lost with
			// this node's shutdown.
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			_ = h.flush(fctx)
			cancel()
			return
		case <-t.C:
		}
	}
}

// Reload reads every table's Delta, and the statistics if their version
// changed.
func (h *Handle) Reload(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	ts, err := h.store.GetTS(ctx)
	if err != nil {
		return err
	}
	if err := h.reloadDeltas(ctx, ts); err != nil {
		return err
	}
	v, found, err := kv.GetAt(ctx, h.store, versionKey(), ts)
	if err != nil || !found {
		return err
	}
	ver := binary.BigEndian.Uint64(v)
	if ver == h.version {
		return nil
	}
	start := statsPrefix()
	end := tablecodec.PrefixNext(start)
	m := map[int64]*Table{}
	for {
		pairs, err := kv.ScanAt(ctx, h.store, start, end, ts, 256)
		if err != nil {
			return err
		}
		for _, p := range pairs {
			var t Table
			if err := json.Unmarshal(p.Value, &t); err != nil {
				return fmt.Errorf("statistics of %q: %w", p.Key, err)
			}
			m[t.TableID] = &t
		}
		if len(pairs) < 256 {
			break
		}
		start = append(bytes.Clone(pairs[len(pairs)-1].Key), 0)
	}
	h.tables.Store(&m)
	h.version = ver
	statsReloads.Inc()
	return nil
}

// Save stores t (one transaction with the version bump and the table's
// Delta reset to its row count) and serves both.
func (h *Handle) Save(ctx context.Context, t *Table) error {
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	d, err := json.Marshal(Delta{Count: t.Count})
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	// A Delta flush of this or another node (every stats lease) may commit
	// the same Delta key meanwhile: the save is then written again at a
	// new timestamp, as ANALYZE must not fail for the statistics' own
	// bookkeeping.
	for attempt := 0; attempt < saveAttempts; attempt++ {
		if err = h.save(ctx, t.TableID, b, d); !errors.As(err, new(*kv.WriteConflictError)) {
			break
		}
		statsSaveConflicts.Inc()
	}
	if err != nil {
		return err
	}
	m := maps.Clone(*h.tables.Load())
	m[t.TableID] = t
	h.tables.Store(&m)
	dm := maps.Clone(*h.deltas.Load())
	dm[t.TableID] = Delta{Count: t.Count}
	h.deltas.Store(&dm)
	return nil
}

// saveAttempts bounds how often Save writes again after a write conflict.
const saveAttempts = 5

// save writes a table's statistics, the version bump and its Delta in one
// transaction.
func (h *Handle) save(ctx context.Context, tableID int64, stats, delta []byte) error {
	txn, err := h.store.Begin(ctx, kv.TxnOptions{})
	if err != nil {
		return err
	}
	ver := binary.BigEndian.AppendUint64(nil, txn.StartTS())
	for _, kv := range []struct{ k, v []byte }{{statsKey(tableID), stats}, {versionKey(), ver}, {deltaKey(tableID), delta}} {
		if err := txn.Set(kv.k, kv.v); err != nil {
			_ = txn.Rollback(ctx)
			return err
		}
	}
	return txn.Commit(ctx)
}

// analyze reads every row of t at one snapshot and builds its statistics.
func analyze(ctx context.Context, store kv.Storage, t *model.TableInfo) (*Table, error) {
	began := time.Now()
	ts, err := store.GetTS(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(t.Columns))
	names := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		ids[i], names[i] = c.ID, c.Name
	}
	var ixIDs []int64
	var ixNames []string
	var ixs []*model.IndexInfo
	for _, ix := range t.Indices {
		if ix.Public() {
			ixIDs, ixNames, ixs = append(ixIDs, ix.ID), append(ixNames, ix.Name), append(ixs, ix)
		}
	}
	b := NewBuilder(ids, names, ixIDs, ixNames)
	row := make([]types.Datum, t.RowWidth())
	vals := make([][]byte, len(t.Columns))
	idx := make(map[int64][]byte, len(ixs))
	start, end := tablecodec.RecordRange(t.ID)
	const page = 1024
	for {
		pairs, err := kv.ScanAt(ctx, store, start, end, ts, page)
		if err != nil {
			return nil, err
		}
		for _, p := range pairs {
			if err := t.DecodeRow(p.Key, p.Value, row); err != nil {
				return nil, fmt.Errorf("analyze %s: %w", t.Name, err)
			}
			for i := range t.Columns {
				vals[i] = nil
				if !row[i].IsNull() {
					vals[i] = tablecodec.AppendMemComparable(nil, row[i])
				}
			}
			for _, ix := range ixs {
				var k []byte
				for _, c := range ix.Columns {
					if row[c.Offset].IsNull() {
						k = nil
						break
					}
					k = tablecodec.AppendMemComparable(k, row[c.Offset])
				}
				idx[ix.ID] = k
			}
			b.AddRow(vals, idx)
		}
		analyzeRows.Add(float64(len(pairs)))
		if len(pairs) < page {
			break
		}
		start = append(bytes.Clone(pairs[len(pairs)-1].Key), 0)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	st := b.Finish(t.ID, ts, time.Now())
	analyzeSeconds.Observe(time.Since(began).Seconds())
	return st, nil
}
