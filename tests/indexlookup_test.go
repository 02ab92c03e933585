package tests

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/localcluster"
)

// Index lookup pushdown against real binaries (issue 11): an sbtest-like
// table split into 8 row regions and 8 index regions, with leaders placed
// so that some lookups are local (the index entry's store leads the row's
// region) and some remote. Random index-range, IN-list, ordered, limited
// and filtered queries return exactly what the two-RPC path returns
// (strata_index_lookup_pushdown=0). Then, with the table an affinity group
// (every region led from one store), sysbench's select_random_points and
// `SELECT c ... WHERE k BETWEEN` do at least 90 % of their lookups locally
// by the SQL node's metric.
func TestIndexLookUpPushdown(t *testing.T) {
	c := startPDCluster(t, 3, nil)
	require.NoError(t, c.Start())
	waitReady(t, c)
	waitStoresUp(t, c, len(c.Stores))
	mustExec(t, openDB(t, c, 0, ""), "CREATE DATABASE sbtest")
	on := openDB(t, c, 0, "sbtest")
	off, err := sql.Open("mysql", c.DSN(0, "sbtest")+"&strata_index_lookup_pushdown=0")
	require.NoError(t, err)
	t.Cleanup(func() { off.Close() })

	mustExec(t, on, "CREATE TABLE sbtest1 (id INT PRIMARY KEY, k INT NOT NULL DEFAULT 0, c CHAR(120) NOT NULL DEFAULT '', "+
		"pad CHAR(60) NOT NULL DEFAULT '', KEY k_1 (k))")
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	const rows, kMax = 8000, 8000
	for lo := 1; lo <= rows; lo += 1000 {
		var sb strings.Builder
		sb.WriteString("INSERT INTO sbtest1 VALUES ")
		for i := lo; i < lo+1000; i++ {
			if i > lo {
				sb.WriteString(", ")
			}
			fmt.Fprintf(&sb, "(%d, %d, '%d-%d', 'pad-%d')", i, rng.IntN(kMax), rng.IntN(100000), i, rng.IntN(1000))
		}
		mustExec(t, on, sb.String())
	}
	mustExec(t, on, fmt.Sprintf("SPLIT TABLE sbtest1 BETWEEN (0) AND (%d) REGIONS 8", rows))
	mustExec(t, on, fmt.Sprintf("SPLIT TABLE sbtest1 INDEX k_1 BETWEEN (0) AND (%d) REGIONS 8", kMax))
	tid := tableID(t, on, "sbtest1")

	// Leaders: every index region on store A, row regions alternately on A
	// and B, so an index region finds some of its rows local and some not.
	require.NoError(t, pdAPI(t, c, "DELETE", "schedulers/balance-leader-scheduler", nil, nil))
	require.NoError(t, pdAPI(t, c, "DELETE", "schedulers/balance-hot-region-scheduler", nil, nil))
	stores := storeIDs(t, c)
	a, b := stores[0], stores[1]
	var g apiAffinityGroup
	require.Eventually(t, func() bool {
		if g, err = affinityGroup(t, c, tid); err != nil {
			return false
		}
		kinds := map[string]int{}
		placed := true
		for _, r := range g.Regions {
			kinds[r.Kind]++
			to := a
			if r.Kind == "row" && kinds["row"]%2 == 0 {
				to = b
			}
			if r.LeaderStoreID != to {
				placed = false
				_ = pdAPI(t, c, "POST", "operators", map[string]any{"name": "transfer-leader", "region_id": r.ID, "to_store_id": to}, nil)
			}
		}
		return placed && kinds["index"] >= 8 && kinds["row"] >= 8
	}, 2*time.Minute, 200*time.Millisecond, "regions of table %d: %+v", tid, g)
	t.Logf("table %d: %d regions; index leaders on store %d, row leaders on %d and %d", tid, len(g.Regions), a, a, b)

	explain := func(db *sql.DB, q string) string {
		rs, err := db.Query("EXPLAIN " + q)
		require.NoError(t, err)
		defer rs.Close()
		var sb strings.Builder
		for rs.Next() {
			var id, est, task, obj, info string
			require.NoError(t, rs.Scan(&id, &est, &task, &obj, &info))
			fmt.Fprintf(&sb, "%s %s %s\n", id, task, info)
		}
		return sb.String()
	}
	q := "SELECT id, k, c, pad FROM sbtest1 WHERE k BETWEEN 10 AND 20"
	require.Regexp(t, `IndexLookUp_\d+ cop\[tikv\]`, explain(on, q))
	require.NotRegexp(t, `IndexLookUp_\d+ cop\[tikv\]`, explain(off, q))
	require.NotRegexp(t, `IndexLookUp_\d+ cop\[tikv\]`, explain(on, "SELECT /*+ NO_INDEX_LOOKUP_PUSHDOWN(sbtest1) */ c FROM sbtest1 WHERE k BETWEEN 10 AND 20"))

	local0, remote0 := lookupMetrics(t, c)
	type query struct {
		q       string
		args    []any
		ordered bool
	}
	gen := func() query {
		lo := rng.IntN(kMax)
		hi := lo + rng.IntN(150)
		in := func(n int) (string, []any) {
			ps := make([]string, n)
			args := make([]any, n)
			for i := range ps {
				ps[i], args[i] = "?", rng.IntN(kMax)
			}
			return strings.Join(ps, ", "), args
		}
		switch rng.IntN(7) {
		case 0:
			return query{q: "SELECT id, k, c, pad FROM sbtest1 WHERE k BETWEEN ? AND ?", args: []any{lo, hi}}
		case 1:
			return query{q: "SELECT c FROM sbtest1 WHERE k BETWEEN ? AND ? ORDER BY k", args: []any{lo, hi}, ordered: true}
		case 2:
			return query{q: "SELECT id, c FROM sbtest1 WHERE k BETWEEN ? AND ? ORDER BY k DESC LIMIT ?", args: []any{lo, hi, 1 + rng.IntN(30)}, ordered: true}
		case 3:
			ps, args := in(1 + rng.IntN(12))
			return query{q: "SELECT id, k, c, pad FROM sbtest1 WHERE k IN (" + ps + ")", args: args}
		case 4:
			ps, args := in(2 + rng.IntN(10))
			return query{q: "SELECT id, pad FROM sbtest1 WHERE k IN (" + ps + ") ORDER BY k LIMIT 7", args: args, ordered: true}
		case 5:
			return query{q: "SELECT id, k, c FROM sbtest1 WHERE k BETWEEN ? AND ? AND c LIKE ?", args: []any{lo, hi, fmt.Sprintf("%%%d%%", rng.IntN(10))}}
		default:
			return query{q: "SELECT id, c FROM sbtest1 WHERE k >= ? AND k < ? AND id % 3 = 1 ORDER BY k LIMIT 20", args: []any{lo, hi}, ordered: true}
		}
	}
	nonEmpty := 0
	for range 150 {
		qq := gen()
		want := joinedRows(t, off, qq.q, qq.args...)
		got := joinedRows(t, on, qq.q, qq.args...)
		if !qq.ordered {
			slices.Sort(want)
			slices.Sort(got)
		}
		require.Equal(t, want, got, "%s %v", qq.q, qq.args)
		if len(got) > 0 {
			nonEmpty++
		}
	}
	local1, remote1 := lookupMetrics(t, c)
	t.Logf("mixed placement: %d of 150 queries returned rows; lookups local %v, remote %v", nonEmpty, local1-local0, remote1-remote0)
	require.Greater(t, nonEmpty, 75)
	require.Positive(t, local1-local0, "no lookup was local")
	require.Positive(t, remote1-remote0, "no lookup was remote")

	// The transaction's own writes: read through the transaction, not the
	// stores.
	tx, err := on.Begin()
	require.NoError(t, err)
	_, err = tx.Exec("UPDATE sbtest1 SET c = 'mine' WHERE id = 7")
	require.NoError(t, err)
	var k int
	require.NoError(t, tx.QueryRow("SELECT k FROM sbtest1 WHERE id = 7").Scan(&k))
	var got string
	require.NoError(t, tx.QueryRow("SELECT c FROM sbtest1 WHERE k = ? AND id = 7", k).Scan(&got))
	require.Equal(t, "mine", got)
	require.NoError(t, tx.Rollback())

	// Affinity: every region of the table led from one store.
	require.NoError(t, pdAPI(t, c, "POST", "affinity-groups", map[string]any{"table_ids": []int64{tid}}, nil))
	g = waitAffinityStable(t, c, tid, 2*time.Minute)
	t.Logf("affinity group stable: %d regions led from store %d", g.RegionCount, g.LeaderStoreID)
	local1, remote1 = lookupMetrics(t, c)
	for i := range 300 {
		var qq query
		if i%2 == 0 { // select_random_points
			ps := make([]string, 10)
			args := make([]any, 10)
			for j := range ps {
				ps[j], args[j] = "?", rng.IntN(kMax)
			}
			qq = query{q: "SELECT id, k, c, pad FROM sbtest1 WHERE k IN (" + strings.Join(ps, ", ") + ")", args: args}
		} else {
			lo := rng.IntN(kMax)
			qq = query{q: "SELECT c FROM sbtest1 WHERE k BETWEEN ? AND ?", args: []any{lo, lo + 99}}
		}
		if i%25 == 0 { // still the two-RPC path's rows
			want := joinedRows(t, off, qq.q, qq.args...)
			got := joinedRows(t, on, qq.q, qq.args...)
			slices.Sort(want)
			slices.Sort(got)
			require.Equal(t, want, got, "%s %v", qq.q, qq.args)
			continue
		}
		joinedRows(t, on, qq.q, qq.args...)
	}
	local2, remote2 := lookupMetrics(t, c)
	l, r := local2-local1, remote2-remote1
	t.Logf("affinity: lookups local %v, remote %v (%.1f%% local)", l, r, 100*l/(l+r))
	require.Positive(t, l+r)
	require.GreaterOrEqual(t, l/(l+r), 0.9, "local share of lookups with affinity")
}

// lookupMetrics reads the SQL node's index lookup row counters.
func lookupMetrics(t *testing.T, c *localcluster.Cluster) (local, remote float64) {
	t.Helper()
	local = metric(t, c.SQL[0], `strata_distsql_index_lookup_rows_total{path="local"}`)
	remote = metric(t, c.SQL[0], `strata_distsql_index_lookup_rows_total{path="remote"}`)
	return max(local, 0), max(remote, 0)
}

// joinedRows returns a query's rows, each as its columns joined by "|".
func joinedRows(t *testing.T, db *sql.DB, q string, args ...any) []string {
	t.Helper()
	rs, err := db.Query(q, args...)
	require.NoError(t, err, q)
	defer rs.Close()
	cols, err := rs.Columns()
	require.NoError(t, err)
	var out []string
	for rs.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rs.Scan(ptrs...))
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = "NULL"
			if v.Valid {
				parts[i] = v.String
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	require.NoError(t, rs.Err())
	return out
}
