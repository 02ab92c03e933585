package raftstore

import (
	"strconv"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// engineCollector exports the Pebble metrics of every open engine of the
// process at scrape time (one in a store node; tests open several), by
// data directory: what a read's seek walks (memtables, L0 sublevels, read
// amplification), what the block cache and bloom filters save, and how far
// compactions are behind.
type engineCollector struct {
	mu   sync.Mutex
	open map[*pebble.DB]string // engine -> data directory
}

var engines = &engineCollector{open: map[*pebble.DB]string{}}

func init() { prometheus.MustRegister(engines) }

func (c *engineCollector) add(db *pebble.DB, dir string) {
	c.mu.Lock()
	c.open[db] = dir
	c.mu.Unlock()
}

func (c *engineCollector) remove(db *pebble.DB) {
	c.mu.Lock()
	delete(c.open, db)
	c.mu.Unlock()
}

func engineDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("strata_engine_"+name, help, append([]string{"dir"}, labels...), nil)
}

var (
	engineMemtableBytes  = engineDesc("memtable_bytes", "Bytes in the engine's memtables (the mutable one and those waiting for a flush); every read seeks each memtable.")
	engineMemtables      = engineDesc("memtables", "Memtables in the engine, the mutable one included.")
	engineLevelFiles     = engineDesc("level_files", "SSTables per LSM level.", "level")
	engineLevelBytes     = engineDesc("level_bytes", "Bytes of SSTables per LSM level.", "level")
	engineL0Sublevels    = engineDesc("l0_sublevels", "L0 sublevels: each is one more table a read may seek (writes stop at 36 files).")
	engineReadAmp        = engineDesc("read_amp", "Read amplification: memtables + L0 sublevels + non-empty levels below.")
	engineCompactionDebt = engineDesc("compaction_debt_bytes", "Estimated bytes compactions must rewrite to bring the LSM back into shape.")
	engineCompactions    = engineDesc("compactions_total", "Compactions finished.")
	engineFlushes        = engineDesc("flushes_total", "Memtable flushes finished.")
	engineCacheHits      = engineDesc("block_cache_hits_total", "Block cache hits.")
	engineCacheMisses    = engineDesc("block_cache_misses_total", "Block cache misses (a block read from the file system).")
	engineCacheBytes     = engineDesc("block_cache_bytes", "Bytes in the block cache.")
	engineFilterHits     = engineDesc("bloom_filter_hits_total", "Table reads a bloom filter saved (the key's prefix is not in the table).")
	engineFilterMisses   = engineDesc("bloom_filter_misses_total", "Bloom filter checks that could not rule the table out.")
	engineWALBytes       = engineDesc("wal_bytes_written_total", "Bytes written to the write-ahead log.")
	engineIterators      = engineDesc("open_iterators", "Open table iterators.")
)

// Describe implements prometheus.Collector.
func (c *engineCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{engineMemtableBytes, engineMemtables, engineLevelFiles, engineLevelBytes,
		engineL0Sublevels, engineReadAmp, engineCompactionDebt, engineCompactions, engineFlushes, engineCacheHits,
		engineCacheMisses, engineCacheBytes, engineFilterHits, engineFilterMisses, engineWALBytes, engineIterators} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *engineCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock() // an engine is not closed while it is read here
	for db, dir := range c.open {
		m := db.Metrics()
		gauge := func(d *prometheus.Desc, v float64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{dir}, labels...)...)
		}
		counter := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, dir)
		}
		gauge(engineMemtableBytes, float64(m.MemTable.Size))
		gauge(engineMemtables, float64(m.MemTable.Count))
		for i, l := range m.Levels {
			gauge(engineLevelFiles, float64(l.TablesCount), strconv.Itoa(i))
			gauge(engineLevelBytes, float64(l.TablesSize), strconv.Itoa(i))
		}
		gauge(engineL0Sublevels, float64(m.Levels[0].Sublevels))
		gauge(engineReadAmp, float64(m.ReadAmp()))
		gauge(engineCompactionDebt, float64(m.Compact.EstimatedDebt))
		counter(engineCompactions, float64(m.Compact.Count))
		counter(engineFlushes, float64(m.Flush.Count))
		counter(engineCacheHits, float64(m.BlockCache.Hits))
		counter(engineCacheMisses, float64(m.BlockCache.Misses))
		gauge(engineCacheBytes, float64(m.BlockCache.Size))
		counter(engineFilterHits, float64(m.Filter.Hits))
		counter(engineFilterMisses, float64(m.Filter.Misses))
		counter(engineWALBytes, float64(m.WAL.BytesWritten))
		gauge(engineIterators, float64(m.TableIters))
	}
}
