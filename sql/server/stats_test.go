package server_test

import (
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/server"
)

// TestAnalyzeStatistics: ANALYZE TABLE gives the planner real estimates.
// k is 1 in 900 of 1,000 rows and unique otherwise: before ANALYZE the
// pseudo estimate (10 rows) reads k = 1 through the index; after it, a
// full scan reads k = 1 and the index still serves a rare k. SHOW
// STATS_META / STATS_HISTOGRAMS report the counts, and a second SQL node
// on the same cluster picks the statistics up within the stats lease.
func TestAnalyzeStatistics(t *testing.T) {
	ts := startServer(t)
	db := ts.open(t, "test", "")
	mustExecDB := func(q string) {
		t.Helper()
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	mustExecDB("CREATE TABLE s (id INT PRIMARY KEY, k INT, c VARCHAR(10), KEY ik (k))")
	for lo := 0; lo < 1000; lo += 250 {
		var vals []string
		for i := lo; i < lo+250; i++ {
			k, c := 1, "'x'"
			if i >= 900 {
				k = i
			}
			if i%10 == 0 {
				c = "NULL"
			}
			vals = append(vals, fmt.Sprintf("(%d, %d, %s)", i, k, c))
		}
		mustExecDB("INSERT INTO s VALUES " + strings.Join(vals, ", "))
	}
	plan := func(db *sql.DB, q string) string {
		t.Helper()
		var lines []string
		for _, r := range queryStrings(t, db, "EXPLAIN "+q) {
			lines = append(lines, strings.Join(r, " "))
		}
		return strings.Join(lines, "\n")
	}
	before := plan(db, "SELECT * FROM s WHERE k = 1")
	require.Contains(t, before, "IndexRangeScan")
	require.Contains(t, before, "stats:pseudo")

	mustExecDB("ANALYZE TABLE s")
	after := plan(db, "SELECT * FROM s WHERE k = 1")
	require.Contains(t, after, "TableFullScan", after)
	require.NotContains(t, after, "stats:pseudo")
	rare := plan(db, "SELECT * FROM s WHERE k = 950")
	require.Contains(t, rare, "IndexRangeScan", rare)
	est := func(plan string) float64 { // the access path's estimated rows
		t.Helper()
		v, err := strconv.ParseFloat(strings.Fields(strings.Split(plan, "\n")[1])[1], 64)
		require.NoError(t, err, plan)
		return v
	}
	require.InDelta(t, 1, est(rare), 0.1, "a value seen once is estimated at one row:\n%s", rare)
	rng := plan(db, "SELECT * FROM s WHERE id < 100")
	require.InDelta(t, 100, est(rng), 30, "estimate of id < 100:\n%s", rng)

	meta := queryStrings(t, db, "SHOW STATS_META WHERE Table_name = 's'")
	require.Len(t, meta, 1)
	require.Equal(t, []string{"test", "s", ""}, meta[0][:3])
	require.Equal(t, "1000", meta[0][5], "Row_count")
	hist := queryStrings(t, db, "SHOW STATS_HISTOGRAMS WHERE Table_name = 's'")
	byName := map[string][]string{}
	for _, r := range hist {
		byName[r[3]+"/"+r[4]] = r
	}
	ndv := func(key string) float64 {
		v, err := strconv.ParseFloat(byName[key][6], 64)
		require.NoError(t, err, key)
		return v
	}
	// Distinct counts come from a HyperLogLog sketch: within 2 %.
	require.InDelta(t, 1000, ndv("id/0"), 20, "Distinct_count of id")
	require.InDelta(t, 101, ndv("k/0"), 2, "Distinct_count of k")
	require.InDelta(t, 101, ndv("ik/1"), 2, "Distinct_count of index ik")
	require.Equal(t, "100", byName["c/0"][7], "Null_count of c")

	// Another SQL node on the same store reloads the statistics.
	other, _ := startServerWith(t, func(c *server.Config) { c.Store = ts.store })
	odb := other.open(t, "test", "")
	deadline := time.Now().Add(10 * time.Second)
	for strings.Contains(plan(odb, "SELECT * FROM s WHERE k = 1"), "IndexRangeScan") {
		require.True(t, time.Now().Before(deadline), "the second node never loaded the statistics")
		time.Sleep(50 * time.Millisecond) // polling the node's stats reload
	}

	// A missing table is 1146.
	_, err := db.Exec("ANALYZE TABLE nosuch")
	require.EqualValues(t, 1146, mysqlCode(err))
}
