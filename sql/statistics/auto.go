package statistics

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/kv/codec"
	"github.com/stratadb/strata/sql/catalog"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/tablecodec"
)

// Modify counts and auto-analyze (TiDB's stats_meta.modify_count and
// auto-analyze worker, in small).
//
// Every SQL node counts, per table, the rows its committed transactions
// added (net: inserts minus deletes) and modified (inserted, updated or
// deleted), in memory (NoteModified), and adds them every lease to the
// table's Delta under `m StatsDelta` + table id in one transaction. ANALYZE
// resets the Delta with the statistics it saves. The DDL owner checks the
// Deltas every lease and analyzes, one table per lease, a table that was
// never analyzed once it holds AutoAnalyzeMinCount rows, or an analyzed one
// once its modifications exceed tidb_auto_analyze_ratio of its rows.
// tidb_enable_auto_analyze and tidb_auto_analyze_ratio are cluster-wide
// (`m StatsAutoAnalyze`).

// AutoAnalyzeMinCount is the smallest table auto-analyze looks at (TiDB's
// AutoAnalyzeMinCnt).
const AutoAnalyzeMinCount = 1000

// DefaultAutoAnalyzeRatio is tidb_auto_analyze_ratio's default.
const DefaultAutoAnalyzeRatio = 0.5

var (
	autoAnalyzeTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "strata_sql_auto_analyze_total", Help: "Auto-analyze runs by result (ok, error).",
	}, []string{"result"})
	deltaFlushes = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "strata_sql_stats_delta_flushes_total", Help: "Flushes of this SQL node's modify counts to the cluster, by result (ok, error; an error keeps the counts for the next flush).",
	}, []string{"result"})
)

func deltaPrefix() []byte           { return catalog.MetaKey("StatsDelta") }
func deltaKey(tableID int64) []byte { return codec.EncodeInt(deltaPrefix(), tableID) }
func autoKey() []byte               { return catalog.MetaKey("StatsAutoAnalyze") }

// Delta is a table's row count and modifications since its last ANALYZE.
type Delta struct {
	Count  int64 `json:"count"`  // rows now (the analyzed count plus the net rows added since)
	Modify int64 `json:"modify"` // rows inserted, updated or deleted since
}

// AddDeltas adds src's counts to dst's (dst is allocated when nil and
// src is not empty) and returns dst.
func AddDeltas(dst, src map[int64]Delta) map[int64]Delta {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = make(map[int64]Delta, len(src))
	}
	for id, x := range src {
		d := dst[id]
		d.Count += x.Count
		d.Modify += x.Modify
		dst[id] = d
	}
	return dst
}

// AutoSettings are the cluster-wide auto-analyze variables.
type AutoSettings struct {
	Enabled bool    `json:"enabled"`
	Ratio   float64 `json:"ratio"`
}

// DefaultAutoSettings are TiDB's defaults.
var DefaultAutoSettings = AutoSettings{Enabled: true, Ratio: DefaultAutoAnalyzeRatio}

// NoteModified adds the row counts of a committed transaction (by table
// id) to what this node flushes next.
func (h *Handle) NoteModified(d map[int64]Delta) {
	if h == nil || len(d) == 0 {
		return
	}
	h.pendingMu.Lock()
	h.pending = AddDeltas(h.pending, d)
	h.pendingMu.Unlock()
}

// Delta returns table id's row count and modifications since its last
// ANALYZE as of the last reload (ok false: none recorded).
func (h *Handle) Delta(tableID int64) (Delta, bool) {
	if h == nil {
		return Delta{}, false
	}
	d, ok := (*h.deltas.Load())[tableID]
	return d, ok
}

// AutoSettings returns the cluster's auto-analyze settings as of the last
// reload.
func (h *Handle) AutoSettings() AutoSettings { return *h.auto.Load() }

// SetAutoSettings stores the cluster's auto-analyze settings.
func (h *Handle) SetAutoSettings(ctx context.Context, s AutoSettings) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	txn, err := h.store.Begin(ctx, kv.TxnOptions{})
	if err != nil {
		return err
	}
	if err := txn.Set(autoKey(), b); err != nil {
		_ = txn.Rollback(ctx)
		return err
	}
	if err := txn.Commit(ctx); err != nil {
		return err
	}
	h.auto.Store(&s)
	return nil
}

// Analyze flushes this node's pending counts, then reads every row of t
// at one snapshot and builds its statistics (Save stores them). Counts of
// rows the scan sees must reach the cluster before Save resets the Delta
// to the scanned count, or they would be added to it again afterwards;
// other nodes' unflushed counts (at most one lease of their writes) still
// are.
func (h *Handle) Analyze(ctx context.Context, t *model.TableInfo) (*Table, error) {
	if err := h.flush(ctx); err != nil {
		return nil, err
	}
	return analyze(ctx, h.store, t)
}

// flush adds the pending counts to the cluster's Deltas in one
// transaction; on failure they stay pending.
func (h *Handle) flush(ctx context.Context) error {
	h.pendingMu.Lock()
	p := h.pending
	h.pending = nil
	h.pendingMu.Unlock()
	if len(p) == 0 {
		return nil
	}
	err := h.addDeltas(ctx, p)
	if err != nil {
		deltaFlushes.WithLabelValues("error").Inc()
		h.NoteModified(p)
		return err
	}
	deltaFlushes.WithLabelValues("ok").Inc()
	return nil
}

func (h *Handle) addDeltas(ctx context.Context, p map[int64]Delta) error {
	txn, err := h.store.Begin(ctx, kv.TxnOptions{})
	if err != nil {
		return err
	}
	for id, x := range p {
		var d Delta
		v, found, err := txn.Get(ctx, deltaKey(id))
		if err == nil && found {
			err = json.Unmarshal(v, &d)
		}
		if err == nil {
			d.Count = max(0, d.Count+x.Count)
			d.Modify += x.Modify
			v, err = json.Marshal(d)
		}
		if err == nil {
			err = txn.Set(deltaKey(id), v)
		}
		if err != nil {
			_ = txn.Rollback(ctx)
			return err
		}
	}
	return txn.Commit(ctx)
}

// reloadDeltas reads every table's Delta and the auto-analyze settings at
// ts.
func (h *Handle) reloadDeltas(ctx context.Context, ts uint64) error {
	start := deltaPrefix()
	end := tablecodec.PrefixNext(start)
	m := map[int64]Delta{}
	for {
		pairs, err := kv.ScanAt(ctx, h.store, start, end, ts, 256)
		if err != nil {
			return err
		}
		for _, p := range pairs {
			_, id, err := codec.DecodeInt(p.Key[len(deltaPrefix()):])
			if err != nil {
				return fmt.Errorf("stats delta key %q: %w", p.Key, err)
			}
			var d Delta
			if err := json.Unmarshal(p.Value, &d); err != nil {
				return fmt.Errorf("stats delta of table %d: %w", id, err)
			}
			m[id] = d
		}
		if len(pairs) < 256 {
			break
		}
		start = append(bytes.Clone(pairs[len(pairs)-1].Key), 0)
	}
	h.deltas.Store(&m)
	s := DefaultAutoSettings
	v, found, err := kv.GetAt(ctx, h.store, autoKey(), ts)
	if err != nil {
		return err
	}
	if found {
		if err := json.Unmarshal(v, &s); err != nil {
			return fmt.Errorf("auto-analyze settings: %w", err)
		}
	}
	h.auto.Store(&s)
	return nil
}

// NeedsAnalyze reports why a table with statistics st (nil: never
// analyzed) and Delta d should be analyzed under s ("" when it should
// not).
func NeedsAnalyze(st *Table, d Delta, s AutoSettings) string {
	if !s.Enabled || d.Count < AutoAnalyzeMinCount {
		return ""
	}
	if st == nil {
		if d.Modify > 0 {
			return "never analyzed"
		}
		return ""
	}
	ratio := s.Ratio
	if ratio <= 0 {
		ratio = DefaultAutoAnalyzeRatio
	}
	if float64(d.Modify) > ratio*math.Max(float64(st.Count), 1) {
		return fmt.Sprintf("%d rows modified since the last analyze of %d rows (tidb_auto_analyze_ratio %g)", d.Modify, st.Count, ratio)
	}
	return ""
}

// Tables lists the catalog's tables for auto-analyze.
type Tables interface {
	ListDBs(ctx context.Context) ([]*model.DBInfo, error)
	ListTables(ctx context.Context, db *model.DBInfo) ([]*model.TableInfo, error)
}

// autoAnalyze analyzes the first table (in catalog order) that needs it,
// if any. The catalog is read only when some table's Delta says so.
func (h *Handle) autoAnalyze(ctx context.Context, cat Tables) error {
	s := h.AutoSettings()
	if !s.Enabled {
		return nil
	}
	due := map[int64]string{} // table id -> why
	for id, d := range *h.deltas.Load() {
		if why := NeedsAnalyze(h.Get(id), d, s); why != "" {
			due[id] = why
		}
	}
	if len(due) == 0 {
		return nil
	}
	dbs, err := cat.ListDBs(ctx)
	if err != nil {
		return err
	}
	for _, db := range dbs {
		tables, err := cat.ListTables(ctx, db)
		if err != nil {
			return err
		}
		for _, t := range tables {
			why, ok := due[t.ID]
			if !ok {
				continue
			}
			began := time.Now()
			st, err := h.Analyze(ctx, t)
			if err == nil {
				err = h.Save(ctx, st)
			}
			if err != nil {
				autoAnalyzeTotal.WithLabelValues("error").Inc()
				return fmt.Errorf("auto analyze %s.%s: %w", db.Name, t.Name, err)
			}
			autoAnalyzeTotal.WithLabelValues("ok").Inc()
			h.log.Info("auto analyze", "db", db.Name, "table", t.Name, "reason", why, "rows", st.Count, "took", time.Since(began))
			return nil
		}
	}
	return nil
}
