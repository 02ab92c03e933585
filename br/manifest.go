package br

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/stratadb/strata/kv/backupfile"
)

// ManifestName is the manifest's file name in a backup's directory.
const ManifestName = "backupmeta.json"

// manifestFormat is the version of the manifest's layout.
const manifestFormat = 1

// ErrStorage: the --storage URL is not one br can use.
var ErrStorage = errors.New("br: storage")

// Manifest describes one backup (written last: a directory without it is
// an unfinished backup).
type Manifest struct {
	Format    int    `json:"format"`
	ClusterID uint64 `json:"cluster_id"`
	// BackupTS is the TSO the data is a snapshot at.
	BackupTS uint64 `json:"backup_ts"`
	// AllocIDBound is above every id PD had handed out at the backup
	// (table ids, row handles of tables without an integer key): a restore
	// raises the target's allocator past it so new ids never collide.
	AllocIDBound uint64         `json:"alloc_id_bound"`
	Started      time.Time      `json:"started"`
	Finished     time.Time      `json:"finished"`
	Databases    []DatabaseMeta `json:"databases"`
	Files        []FileMeta     `json:"files"`
	// Total is the Merge of every file's checksum.
	Total backupfile.Checksum `json:"total"`
}

// DatabaseMeta is a database as the catalog stores it (its DBInfo JSON)
// and its backed-up tables.
type DatabaseMeta struct {
	Name   string          `json:"name"`
	Info   json.RawMessage `json:"info"`
	Tables []TableMeta     `json:"tables"`
}

// TableMeta is a table as the catalog stores it (its TableInfo JSON), its
// AUTO_INCREMENT bound (the raw value of sql/autoid's key, if any) and the
// checksum of all its keys (rows and index entries) at the backup ts.
type TableMeta struct {
	Name     string              `json:"name"`
	ID       int64               `json:"id"`
	Info     json.RawMessage     `json:"info"`
	AutoInc  []byte              `json:"auto_inc,omitempty"`
	Checksum backupfile.Checksum `json:"checksum"`
}

// FileMeta is one data file: the table it belongs to, the key range it
// covers (its pairs are inside it), its checksum and size.
type FileMeta struct {
	Name     string `json:"name"`
	TableID  int64  `json:"table_id"`
	StartKey []byte `json:"start_key"`
	EndKey   []byte `json:"end_key"`
	backupfile.Checksum
	Size uint64 `json:"size"`
}

// LocalDir returns the directory of a local:///path storage URL (a path
// every store and br see: a shared mount in a deployment).
func LocalDir(storage string) (string, error) {
	const scheme = "local://"
	if !strings.HasPrefix(storage, scheme) {
		return "", fmt.Errorf("%w: %q: only local:///absolute/path is supported (a directory every store can write, e.g. a shared mount)", ErrStorage, storage)
	}
	dir := strings.TrimPrefix(storage, scheme)
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("%w: %q: the path must be absolute (local:///dir)", ErrStorage, storage)
	}
	return filepath.Clean(dir), nil
}

// WriteManifest writes m to dir atomically (a temporary file, synced, then
// renamed).
func WriteManifest(dir string, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, ManifestName+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("br: write manifest: %w", err)
	}
	if _, err = f.Write(b); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, ManifestName))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("br: write manifest: %w", err)
	}
	return nil
}

// ReadManifest reads dir's manifest and checks that its tables' checksums
// are the Merge of their files'.
func ReadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("br: %s has no %s: not a finished backup", dir, ManifestName)
	}
	if err != nil {
		return nil, fmt.Errorf("br: read manifest: %w", err)
	}
	m := &Manifest{}
	if err := json.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("br: decode %s: %w", filepath.Join(dir, ManifestName), err)
	}
	if m.Format != manifestFormat {
		return nil, fmt.Errorf("br: manifest format %d, this br reads %d", m.Format, manifestFormat)
	}
	return m, m.check()
}

// check verifies the manifest's internal consistency: per table and in
// total, the checksums equal the Merge of the files'.
func (m *Manifest) check() error {
	byTable := map[int64]backupfile.Checksum{}
	var total backupfile.Checksum
	for _, f := range m.Files {
		c := byTable[f.TableID]
		c.Merge(f.Checksum)
		byTable[f.TableID] = c
		total.Merge(f.Checksum)
	}
	for _, db := range m.Databases {
		for _, t := range db.Tables {
			if byTable[t.ID] != t.Checksum {
				return fmt.Errorf("br: manifest: table %s.%s checksum %v, its files sum to %v: the manifest is corrupt", db.Name, t.Name, t.Checksum, byTable[t.ID])
			}
		}
	}
	if total != m.Total {
		return fmt.Errorf("br: manifest: total %v, the files sum to %v: the manifest is corrupt", m.Total, total)
	}
	return nil
}

// Filter selects databases and tables by name (case-insensitive; empty:
// all).
type Filter struct {
	DB    string
	Table string
}

func (f Filter) matchDB(name string) bool {
	return f.DB == "" || strings.EqualFold(f.DB, name)
}

func (f Filter) matchTable(name string) bool {
	return f.Table == "" || strings.EqualFold(f.Table, name)
}

// systemDB: databases br never backs up (TiDB's BR skips them too).
func systemDB(name string) bool {
	switch strings.ToLower(name) {
	case "mysql", "information_schema", "performance_schema", "metrics_schema", "sys":
		return true
	}
	return false
}
