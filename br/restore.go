package br

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
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

// ErrTargetNotEmpty: a table to restore exists in the target cluster (by
// name or id) or its key range holds data.
var ErrTargetNotEmpty = errors.New("br: restore target not empty")

// ErrChecksum: the data read back after a restore differs from the
// backup's checksum.
var ErrChecksum = errors.New("br: restored data checksum mismatch")

// RestoreResult is what a restore did.
type RestoreResult struct {
	Tables   int
	Files    int
	Total    backupfile.Checksum // restored (and verified) pairs
	CommitTS uint64              // the restored versions' commit ts
}

// Restore restores the backup in cfg.Storage, or the databases and tables
// cfg.Filter selects, into the cluster (doc.go).
func Restore(ctx context.Context, cfg Config) (*RestoreResult, error) {
	cfg.defaults()
	start := time.Now()
	dir, err := LocalDir(cfg.Storage)
	if err != nil {
		return nil, err
	}
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	c, err := connect(ctx, &cfg)
	if err != nil {
		return nil, err
	}
	defer c.close()
	log := cfg.Logger.With("component", "br", "op", "restore")

	// What to restore.
	type table struct {
		db   string
		meta TableMeta
		info *model.TableInfo
	}
	var tables []table
	dbInfos := map[string]*model.DBInfo{}
	for _, db := range m.Databases {
		if !cfg.matchDB(db.Name) {
			continue
		}
		for _, t := range db.Tables {
			if !cfg.matchTable(t.Name) {
				continue
			}
			ti := &model.TableInfo{}
			if err := json.Unmarshal(t.Info, ti); err != nil {
				return nil, fmt.Errorf("br: decode table %s.%s from the manifest: %w", db.Name, t.Name, err)
			}
			di := &model.DBInfo{}
			if err := json.Unmarshal(db.Info, di); err != nil {
				return nil, fmt.Errorf("br: decode database %s from the manifest: %w", db.Name, err)
			}
			dbInfos[strings.ToLower(db.Name)] = di
			tables = append(tables, table{db: db.Name, meta: t, info: ti})
		}
	}
	if len(tables) == 0 {
		return nil, fmt.Errorf("br: the backup has no table matching --db %q --table %q", cfg.DB, cfg.Table)
	}
	log.Info("restore started", "backup_ts", m.BackupTS, "storage", cfg.Storage, "tables", len(tables), "db", cfg.DB, "table", cfg.Table)

	// Refuse a target that has any of them.
	t0 := time.Now()
	now, err := c.pd.GetTS(ctx)
	if err != nil {
		return nil, fmt.Errorf("br: get ts: %w", err)
	}
	existing, err := readSchema(ctx, c.store, now, Filter{})
	if err != nil {
		return nil, err
	}
	ids := map[int64]string{}
	names := map[string]bool{}
	for _, db := range existing {
		for _, t := range db.Tables {
			ids[t.ID] = db.Name + "." + t.Name
			names[strings.ToLower(db.Name+"."+t.Name)] = true
		}
	}
	for _, t := range tables {
		full := t.db + "." + t.meta.Name
		if names[strings.ToLower(full)] {
			return nil, fmt.Errorf("%w: table %s already exists in the target cluster; restore only into a cluster without it (drop it first, or leave it out with --db/--table)", ErrTargetNotEmpty, full)
		}
		if other, ok := ids[t.meta.ID]; ok {
			return nil, fmt.Errorf("%w: table id %d of %s is taken by %s in the target cluster; restore into a fresh cluster", ErrTargetNotEmpty, t.meta.ID, full, other)
		}
		lo, hi := tablecodec.TableRange(t.meta.ID)
		pairs, err := kv.ScanAt(ctx, c.store, lo, hi, now, 1)
		if err != nil {
			return nil, fmt.Errorf("br: check the key range of %s: %w", full, err)
		}
		if len(pairs) > 0 {
			return nil, fmt.Errorf("%w: the key range of table id %d (%s) holds data in the target cluster; restore into a fresh cluster", ErrTargetNotEmpty, t.meta.ID, full)
		}
	}

	// Ids: past the backup's allocator and every restored table id, so
	// new tables and row handles never collide with restored ones.
	bound := m.AllocIDBound
	for _, t := range tables {
		bound = max(bound, uint64(t.meta.ID)+1)
	}
	if err := raiseAllocID(ctx, c, bound); err != nil {
		return nil, err
	}

	// Schema: databases (new ids when missing), tables with their ids,
	// AUTO_INCREMENT bounds.
	cat := catalog.New(c.store)
	cat.SetLogger(cfg.Logger)
	for _, t := range tables {
		db, err := cat.GetDB(ctx, t.db)
		if err != nil {
			di := dbInfos[strings.ToLower(t.db)]
			if err := cat.CreateDB(ctx, &model.DBInfo{Name: di.Name, Collate: di.Collate}, true, nil); err != nil {
				return nil, fmt.Errorf("br: create database %s: %w", t.db, err)
			}
			if db, err = cat.GetDB(ctx, t.db); err != nil {
				return nil, fmt.Errorf("br: create database %s: %w", t.db, err)
			}
		}
		ti := publicOnly(t.info)
		if err := cat.CreateTable(ctx, db, ti, false, nil); err != nil {
			return nil, fmt.Errorf("br: create table %s.%s: %w", t.db, t.meta.Name, err)
		}
		if len(t.meta.AutoInc) > 0 {
			if err := kv.Update(ctx, c.store, func(txn kv.Txn) error { return txn.Set(autoid.AutoIncKey(t.meta.ID), t.meta.AutoInc) }); err != nil {
				return nil, fmt.Errorf("br: restore AUTO_INCREMENT of %s.%s: %w", t.db, t.meta.Name, err)
			}
		}
		log.Info("table created", "table", t.db+"."+t.meta.Name, "id", t.meta.ID)
	}
	brSeconds.WithLabelValues("restore", "schema").Observe(time.Since(t0).Seconds())

	// Data: split at the table and file boundaries, then ingest each file
	// through the raft groups of the regions it covers.
	restoring := map[int64]bool{}
	var splitKeys [][]byte
	for _, t := range tables {
		restoring[t.meta.ID] = true
		lo, hi := tablecodec.TableRange(t.meta.ID)
		splitKeys = append(splitKeys, lo, hi)
	}
	var files []FileMeta
	var units []ingestUnit
	for _, f := range m.Files {
		if !restoring[f.TableID] {
			continue
		}
		files = append(files, f)
		// A large file is cut at about every restoreSplitBytes of its
		// pairs: regions to split at, ingested in parallel.
		cuts, err := fileCuts(filepath.Join(dir, f.Name), f, restoreSplitBytes)
		if err != nil {
			return nil, err
		}
		splitKeys = append(splitKeys, f.StartKey)
		splitKeys = append(splitKeys, cuts...)
		bounds := append(append([][]byte{f.StartKey}, cuts...), f.EndKey)
		for i := range len(bounds) - 1 {
			units = append(units, ingestUnit{file: len(files) - 1, lo: bounds[i], hi: bounds[i+1]})
		}
	}
	t0 = time.Now()
	if n, err := c.kv.SplitRegions(ctx, splitKeys); err != nil {
		return nil, fmt.Errorf("br: pre-split regions: %w", err)
	} else {
		log.Info("regions pre-split", "new_regions", n, "keys", len(splitKeys), "took", time.Since(t0))
	}
	startTS, err := c.pd.GetTS(ctx)
	if err != nil {
		return nil, fmt.Errorf("br: get restore ts: %w", err)
	}
	commitTS, err := c.pd.GetTS(ctx)
	if err != nil {
		return nil, fmt.Errorf("br: get restore ts: %w", err)
	}
	t0 = time.Now()
	prog := newProgress(cfg.Progress, "Restore", len(units))
	ingested := make([]backupfile.Checksum, len(files))
	var ingestedMu sync.Mutex
	err = runParallel(ctx, len(units), cfg.Concurrency, func(ctx context.Context, i int) error {
		u := units[i]
		f := files[u.file]
		var got backupfile.Checksum
		err := c.eachRegion(ctx, u.lo, u.hi, func(bo *kvclient.Backoffer, r *locate.Region, lo, hi []byte) (bool, error) {
			req := &kvrpcpb.IngestRequest{Path: filepath.Join(dir, f.Name), StartKey: lo, EndKey: hi, StartVersion: startTS, CommitVersion: commitTS}
			resp, retry, err := c.kv.SendRequest(ctx, bo, r, &kvclient.Request{Cmd: &storepb.BatchCommandsRequest_Request_Ingest{Ingest: req}})
			if errors.Is(err, kvclient.ErrUndetermined) {
				// Ingesting again writes the same versions.
				return true, bo.Backoff(ctx, err)
			}
			if err != nil || retry {
				return retry, err
			}
			in := resp.GetIngest()
			if in.GetError() != "" {
				return false, fmt.Errorf("br: ingest %s into region %d: %s", f.Name, r.ID(), in.GetError())
			}
			got.KVs += in.GetKvs()
			got.Bytes += in.GetBytes()
			return false, nil
		})
		if err != nil {
			return err
		}
		ingestedMu.Lock()
		ingested[u.file].KVs += got.KVs
		ingested[u.file].Bytes += got.Bytes
		ingestedMu.Unlock()
		prog.add(1, got.Bytes)
		brBytes.WithLabelValues("restore").Add(float64(got.Bytes))
		brKVs.WithLabelValues("restore").Add(float64(got.KVs))
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, f := range files {
		if got := ingested[i]; got.KVs != f.KVs || got.Bytes != f.Bytes {
			return nil, fmt.Errorf("%w: file %s: wrote %d pairs (%d bytes), the manifest says %d (%d)", ErrChecksum, f.Name, got.KVs, got.Bytes, f.KVs, f.Bytes)
		}
	}
	dataTook := time.Since(t0)
	brSeconds.WithLabelValues("restore", "data").Observe(time.Since(t0).Seconds())

	// Verify: read every restored table back and compare checksums.
	t0 = time.Now()
	verifyTS, err := c.pd.GetTS(ctx)
	if err != nil {
		return nil, fmt.Errorf("br: get verify ts: %w", err)
	}
	res := &RestoreResult{Tables: len(tables), Files: len(files), CommitTS: commitTS}
	for _, t := range tables {
		got, err := tableChecksum(ctx, c, t.meta.ID, verifyTS)
		if err != nil {
			return nil, err
		}
		if got != t.meta.Checksum {
			return nil, fmt.Errorf("%w: table %s.%s: restored %v, backed up %v", ErrChecksum, t.db, t.meta.Name, got, t.meta.Checksum)
		}
		brBytes.WithLabelValues("verify").Add(float64(got.Bytes))
		brKVs.WithLabelValues("verify").Add(float64(got.KVs))
		res.Total.Merge(got)
	}
	brSeconds.WithLabelValues("restore", "verify").Observe(time.Since(t0).Seconds())
	took := time.Since(start)
	brSeconds.WithLabelValues("restore", "total").Observe(took.Seconds())
	log.Info("restore done", "tables", len(tables), "files", len(files), "kvs", res.Total.KVs, "bytes", res.Total.Bytes,
		"commit_ts", commitTS, "took", took, "data_took", dataTook, "verify_took", time.Since(t0), "mb_per_s", float64(res.Total.Bytes)/1e6/max(took.Seconds(), 1e-3))
	return res, nil
}

// tableChecksum reads table id's keys at ts on the stores (an export that
// writes no file) and returns their checksum.
func tableChecksum(ctx context.Context, c *cluster, id int64, ts uint64) (backupfile.Checksum, error) {
	var sum backupfile.Checksum
	lo, hi := tablecodec.TableRange(id)
	err := c.eachRegion(ctx, lo, hi, func(bo *kvclient.Backoffer, r *locate.Region, lo, hi []byte) (bool, error) {
		f, retry, err := exportPiece(ctx, c, bo, r, lo, hi, ts, "", "", 0)
		if err == nil && !retry {
			sum.Merge(f.Checksum)
		}
		return retry, err
	})
	return sum, err
}

// restoreSplitBytes: a restore splits a file's range about every this many
// bytes of pairs (a region per piece, ingested in parallel).
const restoreSplitBytes = 8 << 20

type ingestUnit struct {
	file   int // index in the restore's files
	lo, hi []byte
}

// fileCuts returns keys of file f (at path) that cut it into pieces of
// about every bytes of pairs (none for a smaller file).
func fileCuts(path string, f FileMeta, every uint64) ([][]byte, error) {
	if f.Bytes <= every {
		return nil, nil
	}
	var cuts [][]byte
	var n uint64
	err := backupfile.Read(path, f.StartKey, f.EndKey, func(k, v []byte) error {
		if n >= every {
			cuts = append(cuts, bytes.Clone(k))
			n = 0
		}
		n += uint64(len(k) + len(v))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("br: read %s: %w", path, err)
	}
	return cuts, nil
}

// raiseAllocID moves PD's id allocator to at least bound.
func raiseAllocID(ctx context.Context, c *cluster, bound uint64) error {
	for {
		cur, err := c.pd.AllocID(ctx, 1)
		if err != nil {
			return fmt.Errorf("br: raise PD's id allocator: %w", err)
		}
		if cur >= bound {
			return nil
		}
		if _, err := c.pd.AllocID(ctx, uint32(min(bound-cur, 1<<30))); err != nil {
			return fmt.Errorf("br: raise PD's id allocator: %w", err)
		}
	}
}

// publicOnly returns t without the indexes and columns a DDL job was
// moving through its states at the backup (no job finishes them in the
// target); their stray keys are never read.
func publicOnly(t *model.TableInfo) *model.TableInfo {
	out := *t
	out.NonPublic = nil
	out.Indices = nil
	for _, ix := range t.Indices {
		if ix.State == model.StatePublic {
			out.Indices = append(out.Indices, ix)
		}
	}
	return &out
}
