package tests

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGCSettingsGlobalVariables: tidb_gc_life_time and tidb_gc_run_interval
// are cluster-wide (kept by PD): set on one SQL node, read on another; they
// exist only in GLOBAL scope and take Go durations.
func TestGCSettingsGlobalVariables(t *testing.T) {
	c := startCluster(t, clusterOpts{sqlNodes: 2})
	db0, db1 := openDB(t, c, 0, ""), openDB(t, c, 1, "")

	var v string
	require.NoError(t, db1.QueryRow("SELECT @@global.tidb_gc_life_time").Scan(&v))
	require.Equal(t, "10m0s", v, "TiDB's default")
	require.NoError(t, db1.QueryRow("SELECT @@global.tidb_gc_run_interval").Scan(&v))
	require.Equal(t, "10m0s", v)

	mustExec(t, db0, "SET GLOBAL tidb_gc_life_time = '24h'")
	mustExec(t, db0, "SET GLOBAL tidb_gc_run_interval = '30m'")
	require.NoError(t, db1.QueryRow("SELECT @@global.tidb_gc_life_time").Scan(&v))
	require.Equal(t, "24h0m0s", v, "set on another SQL node, kept by PD")
	require.NoError(t, db1.QueryRow("SELECT @@global.tidb_gc_run_interval").Scan(&v))
	require.Equal(t, "30m0s", v)

	_, err := db0.Exec("SET tidb_gc_life_time = '1h'")
	require.ErrorContains(t, err, "1229")
	_, err = db0.Exec("SET GLOBAL tidb_gc_life_time = 'soon'")
	require.ErrorContains(t, err, "1231")
}
