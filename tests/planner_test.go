package tests

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSysbenchPlans: the statements of sysbench's OLTP scripts, against
// real binaries, use point and range plans (EXPLAIN names the operators)
// and return what a forced full table scan returns, before and after the
// table and its index are split into several regions; ordered reads with a
// LIMIT need no sort; an index added to the running table (ALTER TABLE ...
// ADD INDEX) is used once public.
func TestSysbenchPlans(t *testing.T) {
	c := startCluster(t, clusterOpts{})
	db := openDB(t, c, 0, "")
	mustExec(t, db, "CREATE DATABASE sbtest")
	db = openDB(t, c, 0, "sbtest")
	mustExec(t, db, "CREATE TABLE sbtest1 (id INT NOT NULL AUTO_INCREMENT, k INT NOT NULL DEFAULT '0', "+
		"c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', PRIMARY KEY (id), KEY k_1 (k))")
	const rows = 300
	var sb strings.Builder
	sb.WriteString("INSERT INTO sbtest1 (k, c, pad) VALUES ")
	for i := range rows {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "(%d, 'c-%05d', 'pad')", (i*7919)%101, (i*104729)%rows)
	}
	mustExec(t, db, sb.String())

	plan := func(q string) string {
		t.Helper()
		var lines []string
		for _, r := range queryRows(t, db, "EXPLAIN FORMAT='brief' "+q) {
			lines = append(lines, strings.Join(r, " | "))
		}
		return strings.Join(lines, "\n")
	}
	cases := []struct {
		q     string
		ops   []string // operators (and access objects) the plan must have
		noOps []string
		full  string // the same query forced to scan the table ("": not comparable)
	}{
		{"SELECT c FROM sbtest1 WHERE id = 17", []string{"Point_Get", "handle:17"}, []string{"TableFullScan"},
			"SELECT c FROM sbtest1 IGNORE INDEX (PRIMARY) WHERE id = 17"},
		{"SELECT c FROM sbtest1 WHERE id BETWEEN 20 AND 29", []string{"TableRangeScan", "range:[20,29]"}, []string{"TableFullScan", "Sort"},
			"SELECT c FROM sbtest1 IGNORE INDEX (PRIMARY) WHERE id BETWEEN 20 AND 29"},
		{"SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN 20 AND 119", []string{"HashAgg", "TableRangeScan"}, []string{"TableFullScan"},
			"SELECT SUM(k) FROM sbtest1 IGNORE INDEX (PRIMARY) WHERE id BETWEEN 20 AND 119"},
		{"SELECT c FROM sbtest1 WHERE id BETWEEN 50 AND 149 ORDER BY c", []string{"Sort", "TableRangeScan"}, []string{"TableFullScan"},
			"SELECT c FROM sbtest1 IGNORE INDEX (PRIMARY) WHERE id BETWEEN 50 AND 149 ORDER BY c"},
		{"SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN 50 AND 149 ORDER BY c", []string{"HashAgg", "Sort", "TableRangeScan"}, []string{"TableFullScan"},
			"SELECT DISTINCT c FROM sbtest1 IGNORE INDEX (PRIMARY) WHERE id BETWEEN 50 AND 149 ORDER BY c"},
		{"SELECT id FROM sbtest1 WHERE k = 42 ORDER BY id", []string{"IndexReader", "IndexRangeScan", "index:k_1(k)", "range:[42,42]"}, []string{"TableFullScan"},
			"SELECT id FROM sbtest1 IGNORE INDEX (k_1) WHERE k = 42 ORDER BY id"},
		{"SELECT id, k, c, pad FROM sbtest1 WHERE k IN (3, 42, 77) ORDER BY id", []string{"IndexLookUp", "IndexRangeScan(Build)", "TableRowIDScan(Probe)"}, []string{"TableFullScan"},
			"SELECT id, k, c, pad FROM sbtest1 IGNORE INDEX (k_1) WHERE k IN (3, 42, 77) ORDER BY id"},
		{"SELECT count(k) FROM sbtest1 WHERE k BETWEEN 10 AND 14 OR k BETWEEN 60 AND 62", []string{"IndexReader", "range:[10,14], [60,62]"}, []string{"TableFullScan"},
			"SELECT count(k) FROM sbtest1 IGNORE INDEX (k_1) WHERE k BETWEEN 10 AND 14 OR k BETWEEN 60 AND 62"},
		{"UPDATE sbtest1 SET k = k + 1 WHERE id = 5", []string{"Update", "Point_Get"}, []string{"TableFullScan"}, ""},
		{"UPDATE sbtest1 SET c = 'x' WHERE k = 9", []string{"Update", "IndexLookUp"}, []string{"TableFullScan"}, ""},
		{"DELETE FROM sbtest1 WHERE id = 5", []string{"Delete", "Point_Get"}, []string{"TableFullScan"}, ""},
	}
	check := func(round string) {
		for _, tc := range cases {
			p := plan(tc.q)
			for _, op := range tc.ops {
				require.Contains(t, p, op, "%s: %s:\n%s", round, tc.q, p)
			}
			for _, op := range tc.noOps {
				require.NotContains(t, p, op, "%s: %s:\n%s", round, tc.q, p)
			}
			if tc.full != "" {
				require.Contains(t, plan(tc.full), "TableFullScan", tc.full)
				require.Equal(t, queryRows(t, db, tc.full), queryRows(t, db, tc.q), "%s: %s", round, tc.q)
			}
		}
		// Ordered reads with a LIMIT stop early and keep key order across
		// regions, forwards and backwards, on the table and on an index.
		for _, q := range []string{
			"SELECT id FROM sbtest1 ORDER BY id LIMIT 150",
			"SELECT id FROM sbtest1 WHERE id > 100 ORDER BY id DESC LIMIT 120",
			"SELECT k, id FROM sbtest1 WHERE k > 30 ORDER BY k LIMIT 90",
			"SELECT k FROM sbtest1 WHERE k < 90 ORDER BY k DESC LIMIT 90",
		} {
			require.NotContains(t, plan(q), "TopN", q)
			got := queryRows(t, db, q)
			want := queryRows(t, db, strings.Replace(q, "FROM sbtest1", "FROM sbtest1 IGNORE INDEX (PRIMARY, k_1)", 1))
			require.Equal(t, len(want), len(got), "%s: %s", round, q)
			for i := range got { // ties on k may come in another order
				require.Equal(t, want[i][0], got[i][0], "%s: %s row %d", round, q, i)
			}
		}
	}
	check("one region")
	var total int
	var ratio float64
	require.NoError(t, db.QueryRow("SPLIT TABLE sbtest1 BY (50), (100), (150), (200), (250)").Scan(&total, &ratio))
	require.GreaterOrEqual(t, total, 5)
	require.NoError(t, db.QueryRow("SPLIT TABLE sbtest1 INDEX k_1 BY (20), (50), (80)").Scan(&total, &ratio))
	require.GreaterOrEqual(t, total, 3)
	check("split table and index")
	// The prepared forms sysbench sends plan the same way.
	var cval string
	require.NoError(t, db.QueryRow("SELECT c FROM sbtest1 WHERE id = ?", 17).Scan(&cval))
	n := 0
	rs, err := db.Query("SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ?", 20, 29)
	require.NoError(t, err)
	for rs.Next() {
		n++
	}
	require.NoError(t, rs.Close())
	require.Equal(t, 10, n)

	// EXPLAIN ANALYZE reports the rows each operator produced.
	an := queryRows(t, db, "EXPLAIN ANALYZE SELECT c FROM sbtest1 WHERE id BETWEEN 20 AND 29")
	require.Equal(t, "10", an[0][2], "actRows of %v", an)

	// An index added while the table is in use is read once public.
	require.Contains(t, plan("SELECT id FROM sbtest1 WHERE c = 'c-00042'"), "TableFullScan")
	mustExec(t, db, "ALTER TABLE sbtest1 ADD INDEX c_idx (c)")
	p := plan("SELECT id FROM sbtest1 WHERE c = 'c-00042'")
	require.Contains(t, p, "index:c_idx(c)", p)
	require.Equal(t, queryRows(t, db, "SELECT id FROM sbtest1 IGNORE INDEX (c_idx) WHERE c = 'c-00042'"),
		queryRows(t, db, "SELECT id FROM sbtest1 WHERE c = 'c-00042'"))
	mustExec(t, db, "ADMIN CHECK TABLE sbtest1")
}

// queryRows returns every row of q as strings ("NULL" for NULL).
func queryRows(t *testing.T, db *sql.DB, q string) [][]string {
	t.Helper()
	rows, err := db.Query(q)
	require.NoError(t, err, q)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = "NULL"
			if v.Valid {
				row[i] = v.String
			}
		}
		out = append(out, row)
	}
	require.NoError(t, rows.Err())
	return out
}
