package raftstore

import (
	"log/slog"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/store/mvcc"
)

// A point read of a key no SSTable holds is answered by the bloom filters
// (keys.Comparer's prefix of the key's versions), not by the tables' blocks.
func TestEngineBloomFiltersServePointReads(t *testing.T) {
	e, err := openEngine("/db", vfs.NewMem(), 1<<20, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer e.close()
	for i := range 3 { // three L0 tables
		b := e.db.NewBatch()
		for j := range 100 {
			k := []byte{byte('a' + i), byte(j)}
			require.NoError(t, b.Set(keys.EncodeVersioned([]byte{keys.PrefixWrite}, k, 10), []byte("x"), nil))
		}
		require.NoError(t, b.Commit(pebble.Sync))
		require.NoError(t, e.db.Flush())
	}
	snap := e.db.NewSnapshot()
	defer snap.Close()
	r := mvcc.NewTxnReader(snap)
	defer r.Close()
	before := e.db.Metrics().Filter.Hits
	_, w, err := r.SeekWrite([]byte("b\x05x"), 20)
	require.NoError(t, err)
	require.Nil(t, w)
	require.Greater(t, e.db.Metrics().Filter.Hits, before, "no table's filter was consulted")
}

// A data directory written with Pebble's default comparer (older binaries)
// is refused with an error that says what to do.
func TestEngineRefusesOldComparer(t *testing.T) {
	fs := vfs.NewMem()
	db, err := pebble.Open("/db", &pebble.Options{FS: fs})
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("k"), []byte("v"), pebble.Sync))
	require.NoError(t, db.Close())
	_, err = openEngine("/db", fs, 1<<20, slog.New(slog.DiscardHandler))
	require.ErrorIs(t, err, ErrEngineComparer)
	require.Contains(t, err.Error(), "empty the data directory")
}

// The engine's Pebble metrics are exported by data directory while it is
// open, and no longer once it is closed.
func TestEngineMetricsExported(t *testing.T) {
	const dir = "/metrics-db"
	e, err := openEngine(dir, vfs.NewMem(), 1<<20, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, e.db.Set([]byte("k"), []byte("v"), pebble.Sync))
	require.NoError(t, e.db.Flush())
	require.NoError(t, e.db.Set([]byte("k2"), []byte("v"), pebble.Sync))

	value := func(name string, labels map[string]string) (float64, bool) {
		mfs, err := prometheus.DefaultGatherer.Gather()
		require.NoError(t, err)
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
		next:
			for _, m := range mf.GetMetric() {
				for _, lp := range m.GetLabel() {
					if want, ok := labels[lp.GetName()]; ok && want != lp.GetValue() {
						continue next
					}
				}
				if m.GetGauge() != nil {
					return m.GetGauge().GetValue(), true
				}
				return m.GetCounter().GetValue(), true
			}
		}
		return 0, false
	}
	l0, ok := value("strata_engine_level_files", map[string]string{"dir": dir, "level": "0"})
	require.True(t, ok)
	require.Equal(t, 1.0, l0)
	flushes, ok := value("strata_engine_flushes_total", map[string]string{"dir": dir})
	require.True(t, ok)
	require.GreaterOrEqual(t, flushes, 1.0)
	mem, ok := value("strata_engine_memtable_bytes", map[string]string{"dir": dir})
	require.True(t, ok)
	require.Greater(t, mem, 0.0)

	require.NoError(t, e.close())
	_, ok = value("strata_engine_memtable_bytes", map[string]string{"dir": dir})
	require.False(t, ok, "a closed engine's metrics are gone")
}
