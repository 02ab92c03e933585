package tests

import (
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
)

// TestQueriesUnderMemoryQuota: a hash join, a sort and a GROUP BY under a
// 64 KB tidb_mem_quota_query spill to disk and return exactly the rows
// they return without a quota; with tidb_enable_tmp_storage_on_oom=OFF
// they fail with ERROR 8175. The operators run on the SQL node
// (strata_allow_pushdown=0): a GROUP BY pushed to the stores is merged by
// an operator the quota does not track yet.
func TestQueriesUnderMemoryQuota(t *testing.T) {
	c := startCluster(t, clusterOpts{})
	mustExec(t, openDB(t, c, 0, ""), "CREATE DATABASE mq")
	free := openDB(t, c, 0, "mq")
	quota, err := sql.Open("mysql", c.DSN(0, "mq")+"&strata_allow_pushdown=0&tidb_mem_quota_query=65536")
	require.NoError(t, err)
	t.Cleanup(func() { quota.Close() })
	noSpill, err := sql.Open("mysql", c.DSN(0, "mq")+"&strata_allow_pushdown=0&tidb_mem_quota_query=65536&tidb_enable_tmp_storage_on_oom=0")
	require.NoError(t, err)
	t.Cleanup(func() { noSpill.Close() })

	// No index on k: the join is a HashJoin.
	mustExec(t, free, "CREATE TABLE a (id INT PRIMARY KEY, k INT, pad VARCHAR(64))")
	mustExec(t, free, "CREATE TABLE b (id INT PRIMARY KEY, k INT, pad VARCHAR(64))")
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 12))
	const rows = 3000
	for _, tbl := range []string{"a", "b"} {
		for lo := 0; lo < rows; lo += 500 {
			var sb strings.Builder
			sb.WriteString("INSERT INTO " + tbl + " VALUES ")
			for i := lo; i < lo+500; i++ {
				if i > lo {
					sb.WriteString(", ")
				}
				k := "NULL"
				if rng.IntN(10) > 0 {
					k = fmt.Sprint(rng.IntN(rows / 2))
				}
				fmt.Fprintf(&sb, "(%d, %s, '%s')", i, k, strings.Repeat(string(rune('a'+rng.IntN(26))), 1+rng.IntN(60)))
			}
			mustExec(t, free, sb.String())
		}
	}
	for _, tc := range []struct {
		q       string
		ordered bool // ORDER BY over every column: compare in order
	}{
		{"SELECT a.id, b.id, a.pad, b.pad FROM a JOIN b ON a.k = b.k", false},
		{"SELECT a.id, b.id, b.pad FROM a LEFT JOIN b ON a.k = b.k AND a.id < b.id", false},
		{"SELECT id, k, pad FROM a ORDER BY pad, k DESC, id", true},
		{"SELECT k, COUNT(*), MAX(pad), SUM(id) FROM a GROUP BY k", false},
		{"SELECT b.k, COUNT(*), MIN(a.pad) FROM a JOIN b ON a.k = b.k GROUP BY b.k ORDER BY COUNT(*) DESC, b.k LIMIT 5000", true},
	} {
		want := queryRows(t, free, tc.q)
		got := queryRows(t, quota, tc.q)
		if !tc.ordered {
			sortRows(want)
			sortRows(got)
		}
		require.Equal(t, want, got, tc.q)
		_, err := noSpill.Query(tc.q)
		var me *mysql.MySQLError
		require.True(t, errors.As(err, &me), "%s: %v", tc.q, err)
		require.Equal(t, uint16(8175), me.Number, tc.q)
		require.Contains(t, me.Message, "tidb_mem_quota_query")
	}
}
