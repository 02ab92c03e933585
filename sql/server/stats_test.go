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
	other, _ := startServerWith(t, func(c *server.Config) { c.Store = ts.store.newNode(t) })
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

// TestAutoAnalyze: committed writes count towards a table's modify count
// (SHOW STATS_META), rolled back ones do not; the DDL owner analyzes a
// never-analyzed table once it has 1,000 rows, and an analyzed one once
// its modifications pass tidb_auto_analyze_ratio of its rows. The
// variables are GLOBAL only and checked.
func TestAutoAnalyze(t *testing.T) {
	ts, _ := startServerWith(t, func(c *server.Config) {
		c.NoAutoAnalyze = false
		c.StatsLease = 50 * time.Millisecond
	})
	db := ts.open(t, "test", "")
	db.SetMaxOpenConns(1) // BEGIN … ROLLBACK on one connection
	exec := func(q string) {
		t.Helper()
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	require.Equal(t, [][]string{{"ON", "0.5"}}, queryStrings(t, db, "SELECT @@global.tidb_enable_auto_analyze, @@global.tidb_auto_analyze_ratio"))
	_, err := db.Exec("SET tidb_auto_analyze_ratio = 0.3")
	require.EqualValues(t, 1229, mysqlCode(err), "session scope")
	_, err = db.Exec("SET GLOBAL tidb_auto_analyze_ratio = 0")
	require.EqualValues(t, 1231, mysqlCode(err))
	_, err = db.Exec("SET GLOBAL tidb_enable_auto_analyze = 'maybe'")
	require.EqualValues(t, 1231, mysqlCode(err))
	exec("SET GLOBAL tidb_auto_analyze_ratio = 0.5")

	exec("CREATE TABLE a (id INT PRIMARY KEY, k INT)")
	for lo := 0; lo < 1200; lo += 300 {
		var vals []string
		for i := lo; i < lo+300; i++ {
			vals = append(vals, fmt.Sprintf("(%d, %d)", i, i%10))
		}
		exec("INSERT INTO a VALUES " + strings.Join(vals, ", "))
	}
	meta := func() (updated string, modify, count int64) {
		t.Helper()
		rows := queryStrings(t, db, "SHOW STATS_META WHERE Table_name = 'a'")
		if len(rows) == 0 {
			return "", 0, 0
		}
		m, err := strconv.ParseInt(rows[0][4], 10, 64)
		require.NoError(t, err)
		c, err := strconv.ParseInt(rows[0][5], 10, 64)
		require.NoError(t, err)
		return rows[0][3], m, c
	}
	ndvK := func() int64 {
		t.Helper()
		for _, r := range queryStrings(t, db, "SHOW STATS_HISTOGRAMS WHERE Table_name = 'a' AND Column_name = 'k'") {
			n, err := strconv.ParseInt(r[6], 10, 64)
			require.NoError(t, err)
			return n
		}
		return 0
	}
	// Polling the statistics lease: the owner analyzes on its own schedule.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			require.True(t, time.Now().Before(deadline), "timed out waiting for %s", what)
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("the first auto analyze", func() bool { u, m, c := meta(); return u != "" && m == 0 && c == 1200 })
	require.InDelta(t, 10, ndvK(), 1)

	// 700 of 1,200 rows modified > 0.5: analyzed again (k's NDV grows).
	exec("UPDATE a SET k = id WHERE id < 700")
	waitFor("the second auto analyze", func() bool { return ndvK() > 500 })
	waitFor("the modify count reset", func() bool { _, m, _ := meta(); return m == 0 })

	// A rolled back transaction counts nothing; 100 committed updates
	// (below the ratio) and 5 inserts count, and add to the row count.
	exec("BEGIN")
	exec("UPDATE a SET k = k + 1 WHERE id < 300")
	exec("ROLLBACK")
	exec("UPDATE a SET k = k + 1 WHERE id < 100")
	exec("INSERT INTO a VALUES (5000, 0), (5001, 0), (5002, 0), (5003, 0), (5004, 0)")
	waitFor("the modify count", func() bool { _, m, _ := meta(); return m >= 105 })
	_, m, c := meta()
	require.Equal(t, int64(105), m, "Modify_count")
	require.Equal(t, int64(1205), c, "Row_count")
}

// TestJoinReorderByCardinality: the greedy join order adds, at each step,
// the table whose join with the tables so far is estimated smallest from
// the join keys' distinct counts, not the smallest table. c joins s
// through an expression of a 5-value column (fan-out 200 per s row), o
// through s's key: o goes first. A function of one column has at most
// that column's distinct values.
func TestJoinReorderByCardinality(t *testing.T) {
	ts := startServer(t)
	db := ts.open(t, "test", "")
	exec := func(q string) {
		t.Helper()
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	exec("CREATE TABLE r (id INT PRIMARY KEY, name VARCHAR(10))")
	exec("CREATE TABLE s (id INT PRIMARY KEY, rk INT)")
	exec("CREATE TABLE c (id INT PRIMARY KEY, st VARCHAR(4))")
	exec("CREATE TABLE o (id INT PRIMARY KEY, sid INT, cid INT)")
	exec("INSERT INTO r VALUES (0, 'a'), (1, 'b'), (2, 'c'), (3, 'd'), (4, 'e')")
	insert := func(table string, n int, row func(i int) string) {
		var vals []string
		for i := range n {
			vals = append(vals, row(i))
		}
		exec("INSERT INTO " + table + " VALUES " + strings.Join(vals, ", "))
	}
	insert("s", 1000, func(i int) string { return fmt.Sprintf("(%d, %d)", i, i%5) })
	insert("c", 1000, func(i int) string { return fmt.Sprintf("(%d, '%c')", i, 'A'+i%5) })
	insert("c", 1000, func(i int) string { return fmt.Sprintf("(%d, '%c')", 1000+i, 'A'+i%5) })
	insert("o", 1500, func(i int) string { return fmt.Sprintf("(%d, %d, %d)", i, i%1000, i%2000) })
	insert("o", 1500, func(i int) string { return fmt.Sprintf("(%d, %d, %d)", 1500+i, (7*i)%1000, (3*i)%2000) })
	exec("ANALYZE TABLE r, s, c, o")
	q := "SELECT COUNT(*) FROM r, s, c, o WHERE s.rk = r.id AND ascii(c.st) - 65 = s.rk AND o.sid = s.id AND o.cid = c.id AND r.name = 'b'"
	// ((r ⋈ s) ⋈ o) ⋈ c: the joins from the top down.
	var joins []string
	for _, row := range queryStrings(t, db, "EXPLAIN "+q) {
		if strings.Contains(row[0], "HashJoin") {
			joins = append(joins, row[4])
		}
	}
	require.Len(t, joins, 3)
	require.Contains(t, joins[0], "eq(test.o.cid, test.c.id)", "c joins last")
	require.Contains(t, joins[1], "eq(test.o.sid, test.s.id)", "o joins r ⋈ s")
	require.Contains(t, joins[2], "eq(test.s.rk, test.r.id)")
	require.Equal(t, [][]string{{"300"}}, queryStrings(t, db, q))
}

// TestRealtimeRowCount: estimates from statistics are scaled to the
// table's rows now (the modify counts' row count), as TiDB's are: a table
// that quadrupled since its ANALYZE is estimated at its new size, and so
// is a range of it, without another ANALYZE.
func TestRealtimeRowCount(t *testing.T) {
	ts, _ := startServerWith(t, func(c *server.Config) { c.StatsLease = 50 * time.Millisecond })
	db := ts.open(t, "test", "")
	exec := func(q string) {
		t.Helper()
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	insert := func(lo, hi int) {
		t.Helper()
		for ; lo < hi; lo += 500 {
			var vals []string
			for i := lo; i < lo+500; i++ {
				vals = append(vals, fmt.Sprintf("(%d, %d)", i, i%100))
			}
			exec("INSERT INTO r VALUES " + strings.Join(vals, ", "))
		}
	}
	exec("CREATE TABLE r (id INT PRIMARY KEY, k INT, KEY ik (k))")
	insert(0, 1000)
	exec("ANALYZE TABLE r")
	est := func(q, op string) float64 {
		t.Helper()
		for _, r := range queryStrings(t, db, "EXPLAIN "+q) {
			if strings.Contains(r[0], op) {
				f, err := strconv.ParseFloat(r[1], 64)
				require.NoError(t, err, r)
				return f
			}
		}
		t.Fatalf("no %s in the plan of %s", op, q)
		return 0
	}
	require.Equal(t, 1000.0, est("SELECT * FROM r", "TableFullScan"))
	require.InDelta(t, 10, est("SELECT * FROM r WHERE k = 5", "IndexRangeScan"), 1)

	insert(1000, 4000)
	deadline := time.Now().Add(20 * time.Second)
	for {
		rows := queryStrings(t, db, "SHOW STATS_META WHERE Table_name = 'r'")
		if len(rows) == 1 && rows[0][5] == "4000" {
			break
		}
		require.True(t, time.Now().Before(deadline), "Row_count never reached 4000: %v", rows)
		time.Sleep(20 * time.Millisecond)
	}
	require.Equal(t, 4000.0, est("SELECT * FROM r", "TableFullScan"))
	require.InDelta(t, 40, est("SELECT * FROM r WHERE k = 5", "IndexRangeScan"), 4)
}
