package tests

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPushdownMatchesRoot: on random data in a table split into several
// regions, queries whose filters, limits, top-N (ties keep scan order on
// both paths) and aggregates the planner
// pushes to the stores (EXPLAIN shows them as cop[tikv]) return exactly
// what the same queries return with strata_allow_pushdown=0, where every
// operator runs on the SQL node.
func TestPushdownMatchesRoot(t *testing.T) {
	c := startCluster(t, clusterOpts{})
	mustExec(t, openDB(t, c, 0, ""), "CREATE DATABASE pd")
	on := openDB(t, c, 0, "pd")
	off, err := sql.Open("mysql", c.DSN(0, "pd")+"&strata_allow_pushdown=0")
	require.NoError(t, err)
	t.Cleanup(func() { off.Close() })

	mustExec(t, on, "CREATE TABLE t (id BIGINT PRIMARY KEY, k INT NOT NULL, c VARCHAR(40) NOT NULL, "+
		"pad CHAR(20), d DECIMAL(10,2), f DOUBLE, n INT, KEY k_1 (k))")
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	const rows = 1200
	for lo := 0; lo < rows; lo += 300 {
		var sb strings.Builder
		sb.WriteString("INSERT INTO t VALUES ")
		for i := lo; i < lo+300; i++ {
			if i > lo {
				sb.WriteString(", ")
			}
			pad, n := "NULL", "NULL"
			if rng.IntN(5) > 0 {
				pad = fmt.Sprintf("'%s'", strings.Repeat(string(rune('a'+rng.IntN(26))), 1+rng.IntN(10)))
			}
			if rng.IntN(3) > 0 {
				n = fmt.Sprint(rng.IntN(50) - 25)
			}
			fmt.Fprintf(&sb, "(%d, %d, 'c-%06d', %s, %d.%02d, %g, %s)", i*7, rng.IntN(500), rng.IntN(1000000), pad,
				rng.IntN(20000)-10000, rng.IntN(100), rng.Float64()*100, n)
		}
		mustExec(t, on, sb.String())
	}
	var total int
	var ratio float64
	require.NoError(t, on.QueryRow("SPLIT TABLE t BETWEEN (0) AND (8400) REGIONS 8").Scan(&total, &ratio))
	require.GreaterOrEqual(t, total, 7)

	cases := []struct {
		q       string
		ordered bool     // the result order is defined by the query
		cop     []string // what EXPLAIN must show on the stores
	}{
		{q: "SELECT * FROM t WHERE pad LIKE '%x%'", cop: []string{"Selection"}},
		{q: "SELECT id, k FROM t IGNORE INDEX (k_1) WHERE k > 250 AND n IS NOT NULL", cop: []string{"Selection"}},
		{q: "SELECT id FROM t IGNORE INDEX (k_1) WHERE k BETWEEN 100 AND 120 OR n IN (1, 2, 3)", cop: []string{"Selection"}},
		{q: "SELECT id, d FROM t WHERE d * 2 > 5000.5 AND f < 50", cop: []string{"Selection"}},
		{q: "SELECT id FROM t WHERE n IS NULL OR NOT (n > 0)", cop: []string{"Selection"}},
		{q: "SELECT id FROM t WHERE CASE WHEN n > 0 THEN k ELSE -k END > 100", cop: []string{"Selection"}},
		{q: "SELECT id, c FROM t WHERE id BETWEEN 300 AND 2400 AND c > 'c-5'", cop: []string{"Selection", "TableRangeScan"}},
		{q: "SELECT id FROM t WHERE pad LIKE 'b%' ORDER BY id LIMIT 7", ordered: true, cop: []string{"Selection"}},
		{q: "SELECT id FROM t WHERE k % 7 = 3 LIMIT 1000", cop: []string{"Selection"}},
		{q: "SELECT COUNT(*), SUM(k) FROM t", cop: []string{"HashAgg"}},
		{q: "SELECT id, c FROM t ORDER BY c LIMIT 10", ordered: true, cop: []string{"TopN"}},
		{q: "SELECT id, k, d FROM t WHERE pad LIKE '%a%' ORDER BY k DESC, d LIMIT 5 OFFSET 3", ordered: true, cop: []string{"TopN", "Selection"}},
		{q: "SELECT id, n FROM t ORDER BY n, k * 2 - id LIMIT 40", ordered: true, cop: []string{"TopN"}},
		{q: "SELECT id FROM t ORDER BY k DESC, id LIMIT 6", ordered: true, cop: []string{"TopN"}},
		{q: "SELECT id FROM t WHERE n > 0 ORDER BY k + 1, id LIMIT 6", ordered: true, cop: []string{"TopN", "Selection"}},
		{q: "SELECT id, d FROM t WHERE id > 2000 ORDER BY d DESC LIMIT 25", ordered: true, cop: []string{"TopN", "TableRangeScan"}},
		{q: "SELECT COUNT(*), SUM(d), AVG(k), MIN(c), MAX(c), MIN(f), MAX(d), COUNT(n), SUM(n), AVG(d) FROM t WHERE pad LIKE '%x%'", cop: []string{"HashAgg", "Selection"}},
		{q: "SELECT COUNT(*) + 1, MAX(k) - MIN(k) FROM t WHERE id BETWEEN 700 AND 5000", cop: []string{"HashAgg", "TableRangeScan"}},
		{q: "SELECT SUM(n), MIN(pad), AVG(n) FROM t WHERE n > 100", cop: []string{"HashAgg"}},
		{q: "SELECT COUNT(*) FROM t WHERE pad LIKE '%x%' HAVING COUNT(*) > 0", cop: []string{"HashAgg"}},
		// GROUP BY: partial groups per region, merged on the SQL node in
		// region order, so even the order of the groups (first scanned
		// first) and the first-row values match.
		{q: "SELECT n, COUNT(*), SUM(k), AVG(d), MIN(c), MAX(f) FROM t GROUP BY n", ordered: true, cop: []string{"HashAgg"}},
		{q: "SELECT k % 10, COUNT(*), SUM(d), MIN(f), MIN(c), MAX(pad) FROM t GROUP BY k % 10", cop: []string{"HashAgg"}},
		{q: "SELECT pad, COUNT(*), AVG(d), MAX(f), COUNT(n) FROM t GROUP BY pad", cop: []string{"HashAgg"}},
		{q: "SELECT d, COUNT(*), SUM(n) FROM t WHERE f < 50 GROUP BY d", cop: []string{"HashAgg", "Selection"}},
		{q: "SELECT n, k > 250, COUNT(*), SUM(d) FROM t GROUP BY n, k > 250 HAVING COUNT(*) > 5", cop: []string{"HashAgg"}},
		{q: "SELECT ANY_VALUE(c), ANY_VALUE(id), COUNT(*) FROM t GROUP BY pad", ordered: true, cop: []string{"HashAgg"}},
		{q: "SELECT n, SUM(k) AS s FROM t WHERE id BETWEEN 1000 AND 6000 GROUP BY n ORDER BY s DESC, n LIMIT 5", ordered: true, cop: []string{"HashAgg", "TableRangeScan"}},
		{q: "SELECT ANY_VALUE(k), COUNT(*) FROM t", cop: []string{"HashAgg"}},
		{q: "SELECT n, COUNT(*) FROM t WHERE n > 100 GROUP BY n", cop: []string{"HashAgg"}},
	}
	explain := func(db *sql.DB, q string) string {
		var lines []string
		for _, r := range queryRows(t, db, "EXPLAIN FORMAT='brief' "+q) {
			lines = append(lines, strings.Join(r, " | "))
		}
		return strings.Join(lines, "\n")
	}
	for _, tc := range cases {
		p := explain(on, tc.q)
		for _, op := range tc.cop {
			found := false
			for _, l := range strings.Split(p, "\n") {
				found = found || (strings.Contains(l, op) && strings.Contains(l, "cop[tikv]"))
			}
			require.True(t, found, "%s: no %s on the stores:\n%s", tc.q, op, p)
		}
		require.NotContains(t, explain(off, tc.q), "Selection | cop", tc.q)
		got, want := queryRows(t, on, tc.q), queryRows(t, off, tc.q)
		if !tc.ordered {
			sortRows(got)
			sortRows(want)
		}
		require.Equal(t, want, got, tc.q)
	}
	// Store batching: seven or more regions on three stores, so some store
	// leads two of them and their tasks went in one RPC; the SQL node
	// counted each statement's RPCs.
	require.Greater(t, metric(t, c.SQL[0], "strata_kvclient_cop_batched_tasks_total"), 0.0)
	require.Greater(t, metric(t, c.SQL[0], "strata_distsql_rpcs_per_statement_count"), 0.0)
	// A sort the access path cannot provide (mixed directions) comes
	// before the LIMIT: the reader must not stop after 6 rows.
	all := queryRows(t, off, "SELECT id, k FROM t")
	slices.SortFunc(all, func(a, b []string) int {
		ka, _ := strconv.Atoi(a[1])
		kb, _ := strconv.Atoi(b[1])
		ia, _ := strconv.Atoi(a[0])
		ib, _ := strconv.Atoi(b[0])
		if ka != kb {
			return kb - ka
		}
		return ia - ib
	})
	var top6 [][]string
	for _, r := range all[:6] {
		top6 = append(top6, r[:1])
	}
	require.Equal(t, top6, queryRows(t, off, "SELECT id FROM t ORDER BY k DESC, id LIMIT 6"))
	require.Equal(t, top6, queryRows(t, on, "SELECT id FROM t ORDER BY k DESC, id LIMIT 6"))
	// Inside a transaction with its own writes the reader applies the
	// pushed conditions itself.
	tx, err := on.Begin()
	require.NoError(t, err)
	_, err = tx.Exec("INSERT INTO t VALUES (1, 7, 'c-x', 'xx', 1.00, 1, 1)")
	require.NoError(t, err)
	var n1, n2 int
	require.NoError(t, tx.QueryRow("SELECT COUNT(*) FROM t WHERE pad LIKE '%x%'").Scan(&n1))
	require.NoError(t, tx.Rollback())
	require.NoError(t, off.QueryRow("SELECT COUNT(*) FROM t WHERE pad LIKE '%x%'").Scan(&n2))
	require.Equal(t, n2+1, n1)
	// So does UPDATE ... ORDER BY ... LIMIT: it changes the first row in
	// that order, not the first row read.
	mustExec(t, on, "UPDATE t SET n = 999 ORDER BY k DESC, id LIMIT 1")
	require.Equal(t, top6[:1], queryRows(t, off, "SELECT id FROM t WHERE n = 999"))
	// EXPLAIN ANALYZE reads the stores' execution summaries: the reader
	// shows its cop tasks (one per region), each pushed operator the rows
	// it produced over all tasks.
	var nrows, nsel int
	require.NoError(t, off.QueryRow("SELECT COUNT(*) FROM t").Scan(&nrows))
	require.NoError(t, off.QueryRow("SELECT COUNT(*) FROM t WHERE pad LIKE '%a%'").Scan(&nsel))
	an := map[string][]string{}
	for _, r := range queryRows(t, on, "EXPLAIN ANALYZE SELECT n, COUNT(*) FROM t WHERE pad LIKE '%a%' GROUP BY n") {
		an[strings.TrimLeft(strings.SplitN(r[0], "_", 2)[0], "└─│ ")+"|"+r[3]] = r
	}
	reader := an["TableReader|root"]
	require.NotNil(t, reader, "%v", an)
	require.Regexp(t, `cop_task: \{num: ([7-9]|[1-9][0-9]), max: .*rpc_num: 1,`, reader[5])
	require.Equal(t, strconv.Itoa(nrows), an["TableFullScan|cop[tikv]"][2])
	require.Contains(t, an["TableFullScan|cop[tikv]"][5], "tikv_task:{proc max:")
	require.Equal(t, strconv.Itoa(nsel), an["Selection|cop[tikv]"][2])
	groups := len(queryRows(t, off, "SELECT DISTINCT n FROM t WHERE pad LIKE '%a%'"))
	partial, _ := strconv.Atoi(an["HashAgg|cop[tikv]"][2])
	require.GreaterOrEqual(t, partial, groups) // each region's groups
	require.Equal(t, strconv.Itoa(groups), an["HashAgg|root"][2])

	// COUNT(DISTINCT) stays on the SQL node.
	require.NotContains(t, explain(on, "SELECT n, COUNT(DISTINCT k) FROM t GROUP BY n"), "HashAgg | cop")
	require.Equal(t, queryRows(t, off, "SELECT n, COUNT(DISTINCT k) FROM t GROUP BY n"), queryRows(t, on, "SELECT n, COUNT(DISTINCT k) FROM t GROUP BY n"))
	// EXPLAIN shows the partial aggregation with its groups on the stores
	// and the final one on the SQL node, as TiDB does.
	p := explain(on, "SELECT n, COUNT(*), SUM(k) FROM t GROUP BY n")
	require.Regexp(t, `HashAgg \| [0-9.]+ \| root \|  \| group by:.*n, funcs:count\(1\), sum\(.*k\), firstrow\(.*n\)`, p)
	require.Regexp(t, `HashAgg \| [0-9.]+ \| cop\[tikv\] \|  \| group by:.*n, funcs:count\(1\), sum\(.*k\), firstrow\(.*n\)`, p)

	// An overflow inside an expression is MySQL's 1690 (SQLSTATE 22003),
	// whether a store evaluated it (pushed down) or the SQL node did.
	for _, q := range []string{
		"SELECT id FROM t WHERE k * 9223372036854775807 > 1",
		"SELECT SUM(k * 9223372036854775807) FROM t",
		"SELECT id FROM t ORDER BY k * 9223372036854775807 LIMIT 3",
		"SELECT COUNT(*) FROM t WHERE d * 9999999999999999999999999999999999999999999999999999999999999999 > 0",
	} {
		require.Contains(t, explain(on, q), "cop[tikv]", q)
		for _, db := range []*sql.DB{on, off} {
			err := queryErr(db, q)
			requireMySQLError(t, err, 1690)
			require.Contains(t, err.Error(), "value is out of range in", q)
			require.NotContains(t, err.Error(), "coprocessor", q)
		}
	}

	// TIMESTAMPs in a session zone that is not UTC: a constant compared
	// with one is converted to UTC before it reaches the stores (the
	// Selection stays pushed), a function of one is read in the session
	// zone on the SQL node (never pushed), and either way the answers are
	// those of the same session without pushdown, and the instants those
	// of a UTC session.
	mustExec(t, on, "CREATE TABLE tz (id BIGINT PRIMARY KEY, ts TIMESTAMP NOT NULL, dt DATETIME NOT NULL)")
	var sb strings.Builder
	sb.WriteString("INSERT INTO tz VALUES ")
	for i := range 600 {
		if i > 0 {
			sb.WriteString(", ")
		}
		at := time.Date(2024, 3, 30, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.IntN(72*60)) * time.Minute).Format(time.DateTime)
		fmt.Fprintf(&sb, "(%d, '%s', '%s')", i*7, at, at)
	}
	mustExec(t, on, sb.String()) // a UTC session: the text is the instant
	require.NoError(t, on.QueryRow("SPLIT TABLE tz BETWEEN (0) AND (4200) REGIONS 4").Scan(&total, &ratio))
	zoned := func(extra string) *sql.DB {
		db, err := sql.Open("mysql", c.DSN(0, "pd")+"&time_zone=%27Europe%2FBerlin%27"+extra)
		require.NoError(t, err)
		t.Cleanup(func() { db.Close() })
		return db
	}
	zOn, zOff := zoned(""), zoned("&strata_allow_pushdown=0")
	for _, tc := range []struct {
		q, utc string // utc: the same question in UTC (on the UTC session)
		pushed bool
	}{
		{"SELECT id FROM tz WHERE ts > '2024-03-31 03:00:00'", "SELECT id FROM tz WHERE ts > '2024-03-31 01:00:00'", true},
		{"SELECT id FROM tz WHERE ts BETWEEN '2024-03-30 12:00:00' AND '2024-03-30 13:00:00'", "SELECT id FROM tz WHERE ts BETWEEN '2024-03-30 11:00:00' AND '2024-03-30 12:00:00'", true},
		{"SELECT id FROM tz WHERE ts IN ('2024-03-30 12:00:00', '2024-04-01 12:00:00')", "SELECT id FROM tz WHERE ts IN ('2024-03-30 11:00:00', '2024-04-01 10:00:00')", true},
		{"SELECT COUNT(*) FROM tz WHERE ts < '2024-03-31 00:00:00'", "SELECT COUNT(*) FROM tz WHERE ts < '2024-03-30 23:00:00'", true},
		{"SELECT id FROM tz WHERE HOUR(ts) = 3", "SELECT id FROM tz WHERE HOUR(ts) = 1 AND ts >= '2024-03-31 01:00:00' OR HOUR(ts) = 2 AND ts < '2024-03-31 01:00:00'", false},
		{"SELECT DATE(ts), COUNT(*) FROM tz GROUP BY DATE(ts)", "", false},
		{"SELECT id, DATE_FORMAT(ts, '%H:%i') FROM tz WHERE ts = dt", "", false},
		{"SELECT MIN(ts), MAX(ts), COUNT(*) FROM tz", "", true},
	} {
		p := explain(zOn, tc.q)
		pushed := false
		for _, l := range strings.Split(p, "\n") {
			pushed = pushed || ((strings.Contains(l, "Selection") || strings.Contains(l, "HashAgg")) && strings.Contains(l, "cop[tikv]"))
		}
		require.Equal(t, tc.pushed, pushed, "%s:\n%s", tc.q, p)
		got, want := queryRows(t, zOn, tc.q), queryRows(t, zOff, tc.q)
		sortRows(got)
		sortRows(want)
		require.Equal(t, want, got, tc.q)
		if tc.utc != "" {
			u := queryRows(t, on, tc.utc)
			sortRows(u)
			require.Equal(t, u, got, tc.q)
		}
	}
}

// queryErr runs q and returns its error, from the query or its rows.
func queryErr(db *sql.DB, q string) error {
	rows, err := db.Query(q)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
	}
	return rows.Err()
}

func sortRows(rows [][]string) {
	slices.SortFunc(rows, func(a, b []string) int { return strings.Compare(strings.Join(a, "\x00"), strings.Join(b, "\x00")) })
}
