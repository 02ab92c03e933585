package server_test

import (
	"database/sql"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// literal renders a parameter as the SQL literal a text statement would
// hold: the same type (a float as a DOUBLE literal, 1.5e+00, not a
// DECIMAL one).
func literal(a any) string {
	switch v := a.(type) {
	case nil:
		return "NULL"
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case uint64:
		return strconv.FormatUint(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'e', -1, 64)
	case string:
		return "'" + strings.ReplaceAll(v, "'", "''") + "'"
	}
	panic(fmt.Sprintf("literal of %T", a))
}

// inline replaces the statement's markers by the literals of args.
func inline(q string, args []any) string {
	var sb strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			sb.WriteString(literal(args[n]))
			n++
			continue
		}
		sb.WriteRune(r)
	}
	return sb.String()
}

// planCacheConn is one session: prepared statements and the text
// statements they are compared with run on the same connection.
type planCacheConn struct {
	t  *testing.T
	db *sql.DB
}

// rows runs q (prepared st when not nil) and returns its rows, sorted
// unless q orders them, or the MySQL error code.
func (c planCacheConn) rows(st *sql.Stmt, q string, args []any) ([][]string, uint16) {
	c.t.Helper()
	var rs *sql.Rows
	var err error
	if st != nil {
		rs, err = st.Query(args...)
	} else {
		rs, err = c.db.Query(q)
	}
	if err != nil {
		code := mysqlCode(err)
		require.NotZero(c.t, code, "%s: %v", q, err)
		return nil, code
	}
	out, _ := scanStrings(c.t, rs, "NULL")
	if !strings.Contains(q, "ORDER BY") {
		slices.SortFunc(out, func(a, b []string) int { return slices.Compare(a, b) })
	}
	return out, 0
}

func (c planCacheConn) fromCache() int {
	c.t.Helper()
	var v int
	require.NoError(c.t, c.db.QueryRow("SELECT @@last_plan_from_cache").Scan(&v))
	return v
}

// check runs st with args and the same statement as text, and requires
// the same rows (or error) from both and the plan cache outcome cached.
func (c planCacheConn) check(st *sql.Stmt, q string, args []any, cached int, what string) {
	c.t.Helper()
	got, gotErr := c.rows(st, q, args)
	hit := c.fromCache()
	text := inline(q, args)
	want, wantErr := c.rows(nil, text, nil)
	require.Equal(c.t, wantErr, gotErr, "%s: %s", what, text)
	require.Equal(c.t, want, got, "%s: %s", what, text)
	if cached >= 0 {
		require.Equal(c.t, cached, hit, "%s: %s: from the plan cache", what, text)
	}
}

// TestPlanCacheMatchesText: every sysbench and go-tpc statement shape,
// prepared and executed through the binary protocol with parameters that
// keep, move, empty or change the shape of its access path (duplicates
// and NULLs in IN lists, strings and decimals against integer keys,
// out-of-range values), returns what the same statement sent as text
// returns; a statement is served from the plan cache from its second
// execution on, as long as its parameters keep their kinds and the
// plan's shape, and never when its plan would depend on their values.
func TestPlanCacheMatchesText(t *testing.T) {
	ts := startServer(t)
	db := ts.open(t, "test", "")
	db.SetMaxOpenConns(1) // one session
	stmts := []string{
		"CREATE TABLE sb (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(20) NOT NULL, pad CHAR(10) NOT NULL, KEY k_1 (k))",
		"CREATE TABLE dist (w INT, d INT, name VARCHAR(10), ytd DECIMAL(10,2), nxt INT, PRIMARY KEY (w, d))",
		"CREATE TABLE ol (w INT, d INT, o INT, n INT, i INT, qty INT, PRIMARY KEY (w, d, o, n), KEY wdi (w, d, i))",
		"CREATE TABLE cust (w INT, id INT, last VARCHAR(16), first VARCHAR(16), bal DECIMAL(12,2), PRIMARY KEY (w, id), KEY wl (w, last, first), UNIQUE KEY uf (first))",
		"CREATE TABLE ub (id BIGINT UNSIGNED PRIMARY KEY, v INT)",
		"INSERT INTO ub VALUES (1, 1), (9223372036854775808, 2), (18446744073709551615, 3)",
	}
	for i := 1; i <= 30; i++ {
		stmts = append(stmts, fmt.Sprintf("INSERT INTO sb VALUES (%d, %d, 'c%02d', 'p%d')", i, i%7, (i*7)%31, i%3))
	}
	for w := 1; w <= 2; w++ {
		for d := 1; d <= 3; d++ {
			stmts = append(stmts, fmt.Sprintf("INSERT INTO dist VALUES (%d, %d, 'd%d', %d.25, %d)", w, d, d, w*100+d, 10+d))
			for o := 1; o <= 4; o++ {
				for n := 1; n <= 2; n++ {
					stmts = append(stmts, fmt.Sprintf("INSERT INTO ol VALUES (%d, %d, %d, %d, %d, %d)", w, d, o, n, (o*n+d)%5, (o+n)%4))
				}
			}
			stmts = append(stmts, fmt.Sprintf("INSERT INTO cust VALUES (%d, %d, 'L%d', 'F%d%d', %d.50)", w, d, d%2, w, d, d*10))
		}
	}
	for _, q := range stmts {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	c := planCacheConn{t: t, db: db}
	const maxInt = int64(math.MaxInt64)
	cases := []struct {
		q string
		// cacheable: the statement's plan is cached (the second of two
		// executions with the same arguments is served from the cache).
		cacheable bool
		args      [][]any
	}{
		{"SELECT c FROM sb WHERE id = ?", true, [][]any{{1}, {99}, {"3"}, {nil}, {1.0}, {"1.5"}, {-1}, {maxInt}, {"abc"}}},
		{"SELECT c FROM sb WHERE id BETWEEN ? AND ?", true, [][]any{{1, 5}, {3, 3}, {10, 4}, {nil, 5}, {"2", "6"}, {"1.5", 4}, {1.5, 4.5}, {-5, 2}, {maxInt, 1}, {"abc", 3}, {28, maxInt}}},
		{"SELECT SUM(k) FROM sb WHERE id BETWEEN ? AND ?", true, [][]any{{1, 10}, {5, 5}, {7, 3}, {nil, nil}, {"4", 9}}},
		{"SELECT c FROM sb WHERE id BETWEEN ? AND ? ORDER BY c", true, [][]any{{1, 10}, {20, 30}, {4, 4}, {9, 1}, {2.5, "8"}}},
		{"SELECT DISTINCT c FROM sb WHERE id BETWEEN ? AND ? ORDER BY c", true, [][]any{{1, 10}, {11, 12}, {3, 3}, {0, -1}}},
		{"SELECT id, k, c, pad FROM sb WHERE k IN (?, ?, ?, ?)", true, [][]any{{1, 2, 3, 4}, {1, 1, 1, 1}, {nil, 2, nil, 3}, {"2", "x", 3.0, 5}, {9, 10, 11, 12}, {nil, nil, nil, nil}}},
		{"SELECT count(k) FROM sb WHERE k BETWEEN ? AND ? OR k BETWEEN ? AND ?", true, [][]any{{1, 2, 4, 5}, {1, 3, 2, 4}, {5, 1, 2, 2}, {nil, 1, 0, 0}}},
		{"SELECT id FROM sb WHERE id IN (?, ?, ?)", true, [][]any{{1, 2, 3}, {4, 5, 6}, {1, 1, 1}, {4, nil, 5}, {1, 2, 2}, {"7", 8, 9}, {-1, 100, 3}}},
		{"SELECT c FROM sb WHERE id > ? AND k = ?", true, [][]any{{10, 3}, {25, 3}, {0, 9}, {nil, 1}, {5, "3"}}},
		{"SELECT id, c FROM sb WHERE k = ? ORDER BY id DESC LIMIT 2", true, [][]any{{3}, {4}, {99}, {nil}}},
		{"SELECT c, ? FROM sb WHERE id = ?", true, [][]any{{7, 1}, {8, 2}, {"x", 3}, {nil, 4}}},
		{"SELECT id FROM sb WHERE c = ?", true, [][]any{{"c07"}, {"c14"}, {"C07 "}, {7}, {nil}}},
		{"SELECT v FROM ub WHERE id = ?", true, [][]any{{1}, {-1}, {uint64(1) << 63}, {uint64(math.MaxUint64)}, {"1"}}},
		{"SELECT v FROM ub WHERE id > ?", true, [][]any{{0}, {uint64(1) << 63}, {-5}}},
		// go-tpc: composite primary keys, FOR UPDATE, index prefixes
		// with ORDER BY ... LIMIT 1, a join counting distinct items.
		{"SELECT name, ytd, nxt FROM dist WHERE w = ? AND d = ? FOR UPDATE", true, [][]any{{1, 2}, {2, 3}, {3, 1}, {nil, 1}, {"1", "1"}}},
		{"SELECT bal FROM cust WHERE w = ? AND id = ?", true, [][]any{{1, 1}, {2, 3}, {9, 9}}},
		{"SELECT id, first FROM cust WHERE w = ? AND last = ? ORDER BY first LIMIT 1", true, [][]any{{1, "L1"}, {2, "L0"}, {1, "nope"}, {nil, "L1"}}},
		{"SELECT w FROM cust WHERE first = ?", true, [][]any{{"F11"}, {"F23"}, {"none"}, {nil}}},
		{"SELECT o, n FROM ol WHERE w = ? AND d = ? AND o < ? AND o >= ? ORDER BY o, n", true, [][]any{{1, 1, 3, 1}, {2, 3, 5, 2}, {1, 1, 1, 3}, {1, 1, 2, 2}}},
		{"SELECT COUNT(DISTINCT i) FROM ol WHERE w = ? AND d = ? AND o < ? AND o >= ?", true, [][]any{{1, 1, 4, 1}, {2, 2, 3, 2}, {1, 1, 1, 1}}},
		{"SELECT COUNT(DISTINCT ol.i) FROM ol, dist WHERE ol.w = ? AND ol.d = ? AND dist.w = ol.w AND dist.d = ol.d AND ol.qty < ?", true, [][]any{{1, 1, 2}, {2, 3, 4}, {1, 2, 0}}},
		// LIMIT ? and OFFSET ?: a plan holds for the values it was
		// planned with (TiDB keys it by them); other values plan again.
		{"SELECT id FROM sb WHERE id < ? ORDER BY id LIMIT ?", true, [][]any{{5, 2}, {10, 1}, {10, 0}, {3, maxInt}}},
		{"SELECT id, c FROM sb WHERE k = ? ORDER BY id LIMIT ?, ?", true, [][]any{{3, 1, 2}, {3, 0, 1}, {4, 1, 2}, {2, 5, 5}}},
		{"SELECT c FROM sb ORDER BY c LIMIT ?", true, [][]any{{3}, {1}, {0}}},
		// A join whose inner side an index join could look up by a
		// parameter (go-tpc's new order: customer by warehouse), and one
		// that does (go-tpc's stock level: IndexJoin, dist looked up by
		// (w = ?, d = ol.d)): the lookup constant is evaluated again.
		{"SELECT c.bal, d.name FROM dist d, cust c WHERE d.w = ? AND c.w = d.w AND d.d = ? AND c.id = ?", true, [][]any{{1, 2, 2}, {2, 3, 3}, {1, 1, 9}, {nil, 1, 1}, {1, 1, nil}, {"2", 2, "2"}}},
		{"SELECT /*+ TIDB_INLJ(ol) */ dist.d, dist.name, ol.o, ol.n FROM dist, ol WHERE dist.w = ? AND ol.w = ? AND ol.d = dist.d AND ol.qty < ?", true, [][]any{{1, 2, 3}, {2, 1, 2}, {2, 2, 4}, {3, 1, 4}, {nil, 1, 4}, {"1", 1, 4}, {1.0, 2, 4}}},
		// Plans that would depend on the values: planned every time.
		{"SELECT id FROM sb WHERE ? = 1 AND id < 4", false, [][]any{{1}, {2}, {nil}}},
		{"SELECT id FROM sb WHERE id = ? AND c = @@version", false, [][]any{{1}}},
		{"SELECT id FROM sb WHERE id IN (SELECT k FROM sb WHERE id = ?)", false, [][]any{{3}, {10}}},
	}
	for _, tc := range cases {
		st, err := db.Prepare(tc.q)
		require.NoError(t, err, tc.q)
		for i, args := range tc.args {
			want := -1 // the first execution of new kinds may or may not hit
			if i == 0 || !tc.cacheable {
				want = 0
			}
			c.check(st, tc.q, args, want, "first")
			hit := 0
			if tc.cacheable {
				hit = 1 // a repeat is served from the cache: a plan the values reshaped was planned again for them
			}
			c.check(st, tc.q, args, hit, "again")
		}
		if tc.cacheable { // the first arguments once more: their plan's shape is the first one's
			c.check(st, tc.q, tc.args[0], -1, "first args")
			c.check(st, tc.q, tc.args[0], 1, "first args again")
		}
		require.NoError(t, st.Close())
	}
}

// TestPlanCacheInvalidation: a cached plan is not used once the schema
// version of its tables moved (DDL here or from another connection, DROP
// and CREATE), nor under another current database, sql_mode or
// connection collation; the statement is planned again, returns what its
// text returns, and is cached again.
func TestPlanCacheInvalidation(t *testing.T) {
	ts := startServer(t)
	db := ts.open(t, "test", "")
	db.SetMaxOpenConns(1)
	other := ts.open(t, "test", "")
	exec := func(d *sql.DB, qs ...string) {
		for _, q := range qs {
			_, err := d.Exec(q)
			require.NoError(t, err, q)
		}
	}
	exec(db, "CREATE TABLE t (id INT PRIMARY KEY, k INT, c VARCHAR(10), KEY kk (k))",
		"INSERT INTO t VALUES (1, 10, 'a'), (2, 20, 'b'), (3, 20, 'c'), (4, 40, 'd')",
		"CREATE DATABASE o", "CREATE TABLE o.t (id INT PRIMARY KEY, k INT, c VARCHAR(10))",
		"INSERT INTO o.t VALUES (1, 20, 'o1'), (2, 20, 'o2')")
	c := planCacheConn{t: t, db: db}
	byRange, err := db.Prepare("SELECT c FROM t WHERE id BETWEEN ? AND ?")
	require.NoError(t, err)
	defer byRange.Close()
	byK, err := db.Prepare("SELECT id, c FROM t WHERE k = ?")
	require.NoError(t, err)
	defer byK.Close()
	run := func(what string) {
		t.Helper()
		c.check(byRange, "SELECT c FROM t WHERE id BETWEEN ? AND ?", []any{1, 3}, 0, what)
		c.check(byRange, "SELECT c FROM t WHERE id BETWEEN ? AND ?", []any{2, 4}, 1, what+", again")
		c.check(byK, "SELECT id, c FROM t WHERE k = ?", []any{20}, 0, what)
		c.check(byK, "SELECT id, c FROM t WHERE k = ?", []any{10}, 1, what+", again")
	}
	before := labeledCounters(t, "strata_sql_plan_cache_total")
	run("first")
	limited, err := db.Prepare("SELECT id FROM t WHERE id < ? ORDER BY id LIMIT ?")
	require.NoError(t, err)
	c.check(limited, "SELECT id FROM t WHERE id < ? ORDER BY id LIMIT ?", []any{4, 2}, 0, "LIMIT ?")
	c.check(limited, "SELECT id FROM t WHERE id < ? ORDER BY id LIMIT ?", []any{3, 2}, 1, "LIMIT ?, again")
	require.NoError(t, limited.Close())
	variable, err := db.Prepare("SELECT id FROM t WHERE id < ? AND c <> @@version")
	require.NoError(t, err)
	for range 2 {
		c.check(variable, "SELECT id FROM t WHERE id < ? AND c <> @@version", []any{4}, 0, "a variable")
	}
	require.NoError(t, variable.Close())
	after := labeledCounters(t, "strata_sql_plan_cache_total")
	for result, n := range map[string]float64{"hit": 3, "miss": 3, "uncacheable": 2} {
		require.Equal(t, n, after[result]-before[result], "strata_sql_plan_cache_total{result=%q}", result)
	}
	steps := []struct {
		what string
		d    *sql.DB
		qs   []string
	}{
		{"ADD COLUMN", db, []string{"ALTER TABLE t ADD COLUMN x INT DEFAULT 5"}},
		{"ADD INDEX from another connection", other, []string{"ALTER TABLE t ADD INDEX kc (k, c)"}},
		{"DROP INDEX", db, []string{"ALTER TABLE t DROP INDEX kk"}},
		{"MODIFY COLUMN", other, []string{"ALTER TABLE t MODIFY COLUMN c VARCHAR(20)"}},
		{"sql_mode", db, []string{"SET sql_mode = 'ANSI_QUOTES'"}},
		{"collation_connection", db, []string{"SET NAMES utf8mb4 COLLATE utf8mb4_bin"}},
		{"USE", db, []string{"USE o"}},
		{"USE back", db, []string{"USE test"}},
		{"DROP and CREATE", other, []string{"DROP TABLE t", "CREATE TABLE t (id INT PRIMARY KEY, k INT, c VARCHAR(10), KEY kk (k))",
			"INSERT INTO t VALUES (1, 20, 'new1'), (2, 10, 'new2'), (3, 20, 'new3')"}},
	}
	for _, s := range steps {
		exec(s.d, s.qs...)
		run(s.what)
	}
	// A dropped table is ERROR 1146 for its prepared statement too.
	exec(other, "DROP TABLE t")
	_, err = byRange.Query(1, 2)
	require.Equal(t, uint16(1146), mysqlCode(err))
	require.Equal(t, 0, c.fromCache())
}
