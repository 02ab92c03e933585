package raftstore

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/stratadb/strata/kv/keys"
)

// Engine settings. Pebble's defaults (a 4 MiB memtable, writes stopped
// once two memtables wait for a flush or L0 holds 12 sublevels) stop a
// store's writes for seconds under a bulk load on a small machine: a
// go-tpc prepare on 2 cores saw a 1.8 s apply commit, longer than an
// election timeout, and the other stores then moved the store's leaders
// away. Larger memtables absorb bursts and the L0 limits are RocksDB's
// (and TiKV's): 36 files stop writes, where compaction debt is then
// already far behind.
const (
	engineMemTableSize       = 64 << 20
	engineMemTableStopWrites = 4
	engineL0StopWrites       = 36
	// engineDiskSlow is how long one write or sync to a file may take
	// before it is logged (Pebble's disk health check).
	engineDiskSlow = time.Second
	// engineBloomBitsPerKey sizes the bloom filter of every SSTable (about
	// 1 % false positives): a point read (SeekPrefixGE, Get) skips the
	// tables that do not hold its key's prefix (keys.Comparer).
	engineBloomBitsPerKey = 10
)

// ErrEngineComparer is returned by Open (and the test helpers that open a
// data directory) for a data directory whose engine
// was written with another key comparer than keys.Comparer.
var ErrEngineComparer = errors.New("raftstore: the data directory was written by an older Strata with another engine key comparer")

// snapshotWriterOptions are the options of the SSTables a snapshot is sent
// in, ingested by the receiving store's engine of format.
func snapshotWriterOptions(format sstable.TableFormat) sstable.WriterOptions {
	opts := engineOptions()
	opts.EnsureDefaults()
	return opts.MakeWriterOptions(0, format)
}

// engineOptions returns the Pebble options of a store's engine: the
// engine key order of kv/keys and a bloom filter on every level. Anything
// that opens a store's data directory, or writes SSTables for it, uses
// them.
func engineOptions() *pebble.Options {
	opts := &pebble.Options{Comparer: keys.Comparer}
	for i := range opts.Levels {
		opts.Levels[i].FilterPolicy = bloom.FilterPolicy(engineBloomBitsPerKey)
	}
	return opts
}

// openPebble opens the engine in dir with opts, naming a data directory
// of an older binary (Pebble's default comparer) as such.
func openPebble(dir string, opts *pebble.Options) (*pebble.DB, error) {
	db, err := pebble.Open(dir, opts)
	if err != nil && strings.Contains(err.Error(), "comparer name from") {
		return nil, fmt.Errorf("%w (this binary needs %q): %v. The directory %s cannot be opened in place: "+
			"with the old binary still running, remove the store (curl -X DELETE http://PD:2382/pd/api/v1/store/ID) and wait until PD shows it Tombstone, "+
			"then stop it, empty the data directory and start this binary on it (it joins as a new store); a test cluster may instead be recreated with empty data directories",
			ErrEngineComparer, keys.ComparerName, err, dir)
	}
	return db, err
}

// engine is the store's Pebble instance and the disk health checker
// wrapped around its file system.
type engine struct {
	db     *pebble.DB
	health io.Closer // nil without a health check
}

// openEngine opens the Pebble engine in dir. Write stalls and slow disk
// operations are logged and counted: each one can stall the Ready loop.
func openEngine(dir string, fs vfs.FS, cacheSize int64, log *slog.Logger) (engine, error) {
	var e engine
	stalls := &stallLog{log: log.With("component", "pebble")}
	if fs == nil {
		fs = vfs.Default
		fs, e.health = vfs.WithDiskHealthChecks(fs, engineDiskSlow, nil, stalls.diskSlow)
	}
	opts := engineOptions()
	opts.Logger = pebbleLogger{l: log}
	opts.FS = fs
	opts.CacheSize = cacheSize
	opts.MemTableSize = engineMemTableSize
	opts.MemTableStopWritesThreshold = engineMemTableStopWrites
	opts.L0StopWritesThreshold = engineL0StopWrites
	opts.EventListener = &pebble.EventListener{
		WriteStallBegin: stalls.begin,
		WriteStallEnd:   stalls.end,
	}
	db, err := openPebble(dir, opts)
	if err != nil {
		e.closeHealth()
		return engine{}, err
	}
	e.db = db
	engines.add(db, dir)
	return e, nil
}

// close closes the engine (after the store stopped using it).
func (e engine) close() error {
	engines.remove(e.db)
	err := e.db.Close()
	return errors.Join(err, e.closeHealth())
}

func (e engine) closeHealth() error {
	if e.health == nil {
		return nil
	}
	return e.health.Close()
}

// stallLog logs and counts Pebble's write stalls and slow disk operations.
type stallLog struct {
	log   *slog.Logger
	mu    sync.Mutex
	since time.Time // start of the current write stall
}

func (l *stallLog) begin(info pebble.WriteStallBeginInfo) {
	l.mu.Lock()
	l.since = time.Now()
	l.mu.Unlock()
	engineWriteStalls.WithLabelValues(info.Reason).Inc()
	l.log.Warn("engine write stall: writes wait for a flush or compaction (the Ready loop is blocked; check disk throughput and compaction debt)", "reason", info.Reason)
}

func (l *stallLog) end() {
	l.mu.Lock()
	d := time.Since(l.since)
	l.mu.Unlock()
	engineWriteStallSeconds.Observe(d.Seconds())
	l.log.Warn("engine write stall ended", "took", d)
}

// diskSlow runs on Pebble's health-check goroutine, which must not block on
// I/O: the log line is written from a goroutine of its own.
func (l *stallLog) diskSlow(info vfs.DiskSlowInfo) {
	engineDiskSlowOps.Inc()
	go l.log.Warn("engine disk operation slow (check the disk and what else writes to it)",
		"op", info.OpType.String(), "path", info.Path, "bytes", info.WriteSize, "ongoing", info.Duration)
}
