package raftstore

import (
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
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
)

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
	opts := &pebble.Options{
		Logger:                      pebbleLogger{l: log},
		FS:                          fs,
		CacheSize:                   cacheSize,
		MemTableSize:                engineMemTableSize,
		MemTableStopWritesThreshold: engineMemTableStopWrites,
		L0StopWritesThreshold:       engineL0StopWrites,
		EventListener: &pebble.EventListener{
			WriteStallBegin: stalls.begin,
			WriteStallEnd:   stalls.end,
		},
	}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		e.closeHealth()
		return engine{}, err
	}
	e.db = db
	return e, nil
}

// close closes the engine (after the store stopped using it).
func (e engine) close() error {
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
