package br

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/kv/backupfile"
	"github.com/stratadb/strata/kvclient"
	"github.com/stratadb/strata/kvclient/locate"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/storepb"
	"github.com/stratadb/strata/sql/autoid"
	"github.com/stratadb/strata/sql/catalog"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/tablecodec"
)

// ErrGCSafePoint: the backup ts is below the cluster's GC safe point.
var ErrGCSafePoint = errors.New("br: backup ts below the GC safe point")

// Backup takes a backup of the cluster at cfg.BackupTS (or a fresh TSO)
// into cfg.Storage and returns its manifest (doc.go).
func Backup(ctx context.Context, cfg Config) (*Manifest, error) {
	cfg.defaults()
	start := time.Now()
	dir, err := LocalDir(cfg.Storage)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, ManifestName)); err == nil {
		return nil, fmt.Errorf("br: %s already holds a backup (%s): give an empty directory", dir, ManifestName)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("br: create %s: %w", dir, err)
	}
	c, err := connect(ctx, &cfg)
	if err != nil {
		return nil, err
	}
	defer c.close()
	log := cfg.Logger.With("component", "br", "op", "backup")

	ts := cfg.BackupTS
	if ts == 0 {
		if ts, err = c.pd.GetTS(ctx); err != nil {
			return nil, fmt.Errorf("br: get backup ts: %w", err)
		}
	}
	// Hold the GC safe point at ts while the backup runs.
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	service := "br-" + hex.EncodeToString(rnd[:])
	if err := holdGC(ctx, c, service, cfg.GCTTL, ts); err != nil {
		return nil, err
	}
	// A renewal refused because the hold expired (br stalled past the
	// TTL and GC went on) fails the backup: its versions may be gone.
	ctx, failBackup := context.WithCancelCause(ctx)
	defer failBackup(nil)
	keepCtx, stopKeep := context.WithCancel(ctx)
	var keepWG sync.WaitGroup
	keepWG.Add(1)
	go func() {
		defer keepWG.Done()
		t := time.NewTicker(cfg.GCTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-keepCtx.Done():
				return
			case <-t.C:
				err := holdGC(keepCtx, c, service, cfg.GCTTL, ts)
				if errors.Is(err, ErrGCSafePoint) {
					failBackup(err)
					return
				}
				if err != nil && keepCtx.Err() == nil {
					log.Warn("renew the backup's service GC safe point", "service", service, "err", err)
				}
			}
		}
	}()
	defer func() {
		stopKeep()
		keepWG.Wait()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, err := c.pd.UpdateServiceGCSafePoint(rctx, service, 0, 0); err != nil {
			log.Warn("remove the backup's service GC safe point (it expires by itself)", "service", service, "ttl", cfg.GCTTL, "err", err)
		}
	}()
	log.Info("backup started", "backup_ts", ts, "storage", cfg.Storage, "gc_service", service, "db", cfg.DB, "table", cfg.Table)

	m := &Manifest{Format: manifestFormat, BackupTS: ts, Started: start}
	if mem, err := c.pd.GetMembers(ctx); err == nil {
		m.ClusterID = mem.GetHeader().GetClusterId()
	}
	if m.AllocIDBound, err = c.pd.AllocID(ctx, 1); err != nil {
		return nil, fmt.Errorf("br: read PD's id allocator: %w", err)
	}
	t0 := time.Now()
	if m.Databases, err = readSchema(ctx, c.store, ts, cfg.Filter); err != nil {
		return nil, err
	}
	if cfg.DB != "" && len(m.Databases) == 0 {
		return nil, fmt.Errorf("br: database %q not found at ts %d", cfg.DB, ts)
	}
	brSeconds.WithLabelValues("backup", "schema").Observe(time.Since(t0).Seconds())

	// Work units: each table's key range cut at today's region boundaries.
	type unit struct {
		table    *TableMeta
		lo, hi   []byte
		seq      int
		filesMu  *sync.Mutex
		outFiles *[]FileMeta
	}
	var units []unit
	var filesMu sync.Mutex
	var files []FileMeta
	for i := range m.Databases {
		for j := range m.Databases[i].Tables {
			t := &m.Databases[i].Tables[j]
			lo, hi := tablecodec.TableRange(t.ID)
			ps, err := c.pieces(ctx, lo, hi)
			if err != nil {
				return nil, err
			}
			for _, p := range ps {
				units = append(units, unit{table: t, lo: p[0], hi: p[1], seq: len(units), filesMu: &filesMu, outFiles: &files})
			}
		}
	}
	t0 = time.Now()
	prog := newProgress(cfg.Progress, "Backup", len(units))
	err = runParallel(ctx, len(units), cfg.Concurrency, func(ctx context.Context, i int) error {
		u := units[i]
		sub := 0
		return c.eachRegion(ctx, u.lo, u.hi, func(bo *kvclient.Backoffer, r *locate.Region, lo, hi []byte) (bool, error) {
			name := fmt.Sprintf("t%d_%06d_%d.sst", u.table.ID, u.seq, sub)
			f, retry, err := exportPiece(ctx, c, bo, r, lo, hi, ts, dir, name, cfg.RateLimit)
			if err != nil || retry {
				return retry, err
			}
			sub++
			if f.Name != "" {
				f.TableID = u.table.ID
				u.filesMu.Lock()
				*u.outFiles = append(*u.outFiles, *f)
				u.filesMu.Unlock()
				prog.add(0, f.Bytes)
				brBytes.WithLabelValues("backup").Add(float64(f.Bytes))
				brKVs.WithLabelValues("backup").Add(float64(f.KVs))
			}
			if len(hi) > 0 && bytes.Equal(hi, u.hi) {
				prog.add(1, 0)
			}
			return false, nil
		})
	})
	if cause := context.Cause(ctx); cause != nil && errors.Is(cause, ErrGCSafePoint) {
		return nil, cause
	}
	if err != nil {
		return nil, err
	}
	brSeconds.WithLabelValues("backup", "data").Observe(time.Since(t0).Seconds())
	slices.SortFunc(files, func(a, b FileMeta) int { return bytes.Compare(a.StartKey, b.StartKey) })
	m.Files = files
	byTable := map[int64]*TableMeta{}
	for i := range m.Databases {
		for j := range m.Databases[i].Tables {
			byTable[m.Databases[i].Tables[j].ID] = &m.Databases[i].Tables[j]
		}
	}
	for _, f := range files {
		byTable[f.TableID].Checksum.Merge(f.Checksum)
		m.Total.Merge(f.Checksum)
	}
	m.Finished = time.Now()
	if err := WriteManifest(dir, m); err != nil {
		return nil, err
	}
	took := time.Since(start)
	brSeconds.WithLabelValues("backup", "total").Observe(took.Seconds())
	log.Info("backup done", "backup_ts", ts, "files", len(files), "kvs", m.Total.KVs, "bytes", m.Total.Bytes,
		"took", took, "mb_per_s", float64(m.Total.Bytes)/1e6/max(took.Seconds(), 1e-3))
	return m, nil
}

// holdGC registers or renews the backup's service GC safe point at ts.
func holdGC(ctx context.Context, c *cluster, service string, ttl time.Duration, ts uint64) error {
	min, err := c.pd.UpdateServiceGCSafePoint(ctx, service, ttl, ts)
	if err != nil {
		return fmt.Errorf("br: register the backup's service GC safe point: %w", err)
	}
	if min > ts {
		return fmt.Errorf("%w: backup ts %d, GC safe point %d: versions it needs may be gone; back up at a newer --backupts (or raise tidb_gc_life_time)", ErrGCSafePoint, ts, min)
	}
	return nil
}

// exportPiece asks r's leader to export [lo, hi) at ts into dir/name (dir
// empty: only checksum it) and returns what it exported (Name empty: no
// file, the range held no pair); a lock is resolved (or waited for) and
// the piece sent again.
func exportPiece(ctx context.Context, c *cluster, bo *kvclient.Backoffer, r *locate.Region, lo, hi []byte, ts uint64, dir, name string, rate uint64) (*FileMeta, bool, error) {
	var resolved []uint64
	for {
		req := &kvrpcpb.ExportRequest{Context: &kvrpcpb.Context{ResolvedLocks: resolved}, StartKey: lo, EndKey: hi, Version: ts,
			Dir: dir, FileName: name, RateLimitBytesPerSec: rate}
		resp, retry, err := c.kv.SendRequest(ctx, bo, r, &kvclient.Request{Cmd: &storepb.BatchCommandsRequest_Request_Export{Export: req}})
		if err != nil || retry {
			return nil, retry, err
		}
		ex := resp.GetExport()
		if ke := ex.GetError(); ke != nil {
			if l := ke.GetLocked(); l != nil {
				res, err := c.resolver.Resolve(ctx, bo, ts, []*kvrpcpb.LockInfo{l})
				if err != nil {
					return nil, false, fmt.Errorf("br: resolve lock on %x: %w", l.GetKey(), err)
				}
				resolved = append(resolved, res.Skip...)
				if res.Wait {
					if err := bo.Backoff(ctx, errors.New("br: lock of a live transaction below the backup ts")); err != nil {
						return nil, false, err
					}
				}
				continue
			}
			if g := ke.GetGcTooEarly(); g != nil {
				return nil, false, fmt.Errorf("%w: backup ts %d, a store's GC safe point %d", ErrGCSafePoint, ts, g.GetSafePoint())
			}
			return nil, false, fmt.Errorf("br: export [%x, %x) in region %d: %v", lo, hi, r.ID(), ke)
		}
		if ex.GetOtherError() != "" {
			return nil, false, fmt.Errorf("br: export [%x, %x) in region %d: %s", lo, hi, r.ID(), ex.GetOtherError())
		}
		return &FileMeta{Name: ex.GetFileName(), StartKey: ex.GetStartKey(), EndKey: ex.GetEndKey(), Size: ex.GetFileSize(),
			Checksum: backupfile.Checksum{KVs: ex.GetKvs(), Bytes: ex.GetBytes(), CRC64: ex.GetCrc64Xor()}}, false, nil
	}
}

// readSchema reads the databases and tables the filter selects as the
// catalog stores them, with their AUTO_INCREMENT bounds, at ts.
func readSchema(ctx context.Context, store kv.Storage, ts uint64, f Filter) ([]DatabaseMeta, error) {
	dbPrefix := catalog.MetaKey("DB")
	dbs, err := kv.ScanAt(ctx, store, dbPrefix, tablecodec.PrefixNext(dbPrefix), ts, 0)
	if err != nil {
		return nil, fmt.Errorf("br: read databases at %d: %w", ts, err)
	}
	tblPrefix := catalog.MetaKey("TBL")
	tbls, err := kv.ScanAt(ctx, store, tblPrefix, tablecodec.PrefixNext(tblPrefix), ts, 0)
	if err != nil {
		return nil, fmt.Errorf("br: read tables at %d: %w", ts, err)
	}
	byDB := map[int64][]TableMeta{}
	for _, p := range tbls {
		var ti model.TableInfo
		if err := json.Unmarshal(p.Value, &ti); err != nil {
			return nil, fmt.Errorf("br: decode table %x: %w", p.Key, err)
		}
		if !f.matchTable(ti.Name) {
			continue
		}
		tm := TableMeta{Name: ti.Name, ID: ti.ID, Info: json.RawMessage(p.Value)}
		if ti.AutoIncOffset >= 0 {
			v, ok, err := kv.GetAt(ctx, store, autoid.AutoIncKey(ti.ID), ts)
			if err != nil {
				return nil, fmt.Errorf("br: read AUTO_INCREMENT of %s: %w", ti.Name, err)
			}
			if ok {
				tm.AutoInc = v
			}
		}
		byDB[ti.DBID] = append(byDB[ti.DBID], tm)
	}
	var out []DatabaseMeta
	for _, p := range dbs {
		var di model.DBInfo
		if err := json.Unmarshal(p.Value, &di); err != nil {
			return nil, fmt.Errorf("br: decode database %x: %w", p.Key, err)
		}
		if systemDB(di.Name) || !f.matchDB(di.Name) {
			continue
		}
		ts := byDB[di.ID]
		if f.Table != "" && len(ts) == 0 {
			continue
		}
		slices.SortFunc(ts, func(a, b TableMeta) int { return int(a.ID - b.ID) })
		out = append(out, DatabaseMeta{Name: di.Name, Info: json.RawMessage(p.Value), Tables: ts})
	}
	return out, nil
}
