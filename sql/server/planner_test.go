package server_test

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

// TestPlannerScripts runs the planner's scripts (sql/planner/testdata,
// kept next to the planner; they run here because they need a whole SQL
// node: sessions, the catalog, statistics and storage): EXPLAIN of the
// access paths (point gets, handle ranges, index readers and lookups,
// hints, pruning, TopN and Sort elimination) next to the rows the plans
// return.
func TestPlannerScripts(t *testing.T) {
	runScripts(t, "../planner/testdata")
}

// TestIndexPathsMatchFullScan compares, on random data with NULLs,
// duplicates, composite and unique indexes, every query's result through
// the plan the planner picks with the same query forced to a full table
// scan (IGNORE INDEX of every index), in autocommit and inside a
// transaction whose own uncommitted writes the index reads must merge.
func TestIndexPathsMatchFullScan(t *testing.T) {
	ts := startServer(t)
	db := ts.open(t, "test", "")
	db.SetMaxOpenConns(1) // BEGIN ... ROLLBACK on one connection
	rnd := rand.New(rand.NewPCG(8, uint64(time.Now().UnixNano())))
	seed := rnd.Uint64()
	rnd = rand.New(rand.NewPCG(8, seed))
	t.Logf("seed %d", seed)
	exec := func(q string) {
		_, err := db.Exec(q)
		if mysqlCode(err) != 1062 { // (b, a) is unique: random writes may collide
			require.NoError(t, err, q)
		}
	}
	exec("CREATE TABLE r (id INT PRIMARY KEY, a INT, b VARCHAR(8), c BIGINT UNSIGNED, u VARCHAR(8), v INT, " +
		"KEY ia (a), KEY iab (a, b), KEY ic (c), UNIQUE KEY uu (u), UNIQUE KEY uba (b, a))")
	const nrows = 150
	strs := []string{"a", "b", "ab", "b ", "c", "", "zz"}
	lit := func(col string) string {
		if rnd.IntN(8) == 0 {
			return "NULL"
		}
		switch col {
		case "a", "v":
			return strconv.Itoa(rnd.IntN(9) - 4)
		case "c":
			if rnd.IntN(10) == 0 {
				return "18446744073709551610"
			}
			return strconv.Itoa(rnd.IntN(6))
		case "id":
			return strconv.Itoa(rnd.IntN(nrows+20) - 10)
		}
		return "'" + strs[rnd.IntN(len(strs))] + "'"
	}
	for i := 1; i <= nrows; i++ {
		u := "NULL"
		if rnd.IntN(4) != 0 {
			u = fmt.Sprintf("'u%03d'", i)
		}
		q := fmt.Sprintf("INSERT INTO r VALUES (%d, %s, %s, %s, %s, %s)", i*2-nrows, lit("a"), lit("b"), lit("c"), u, lit("v"))
		exec(q)
	}
	exec("DELETE FROM r WHERE v = 0")
	exec("UPDATE r SET a = a + 1 WHERE v = 1")
	pred := func() string {
		col := []string{"id", "a", "b", "c", "u"}[rnd.IntN(5)]
		if col == "u" && rnd.IntN(2) == 0 {
			return fmt.Sprintf("u = 'u%03d'", rnd.IntN(nrows)+1)
		}
		switch rnd.IntN(9) {
		case 0, 1:
			return col + " = " + lit(col)
		case 2:
			return fmt.Sprintf("%s IN (%s, %s, %s)", col, lit(col), lit(col), lit(col))
		case 3:
			return col + []string{" < ", " <= ", " > ", " >= "}[rnd.IntN(4)] + lit(col)
		case 4:
			return fmt.Sprintf("%s BETWEEN %s AND %s", col, lit(col), lit(col))
		case 5:
			return col + " IS NULL"
		case 6:
			return col + " IS NOT NULL"
		case 7:
			return fmt.Sprintf("(%s = %s OR %s > %s)", col, lit(col), col, lit(col))
		}
		return fmt.Sprintf("%s <> %s", col, lit(col))
	}
	where := func() string {
		w := pred()
		for rnd.IntN(2) == 0 {
			w += " AND " + pred()
		}
		return w
	}
	sorted := func(rows [][]string) [][]string {
		slices.SortFunc(rows, func(x, y []string) int { return slices.Compare(x, y) })
		return rows
	}
	indexUsed := 0
	check := func(round string) {
		for range 150 {
			w := where()
			var q string
			ordered := rnd.IntN(3) == 0
			if ordered {
				col := []string{"id", "a", "b", "c"}[rnd.IntN(4)]
				dir := []string{"", " DESC"}[rnd.IntN(2)]
				q = fmt.Sprintf("SELECT %s FROM r %%s WHERE %s ORDER BY %s%s LIMIT %d", col, w, col, dir, rnd.IntN(8)+1)
			} else {
				q = fmt.Sprintf("SELECT id, a, b, c, u FROM r %%s WHERE %s", w)
			}
			got := queryStrings(t, db, fmt.Sprintf(q, ""))
			want := queryStrings(t, db, fmt.Sprintf(q, "IGNORE INDEX (ia, iab, ic, uu, uba)"))
			if !ordered {
				got, want = sorted(got), sorted(want)
			}
			require.Equal(t, want, got, "%s: %s (seed %d)", round, fmt.Sprintf(q, ""), seed)
			plan := queryStrings(t, db, "EXPLAIN "+fmt.Sprintf(q, ""))
			for _, r := range plan {
				if strings.Contains(r[3], "index:") {
					indexUsed++
					break
				}
			}
		}
	}
	check("autocommit")
	exec("BEGIN")
	exec("UPDATE r SET b = 'ab', a = 2 WHERE v = 2")
	exec("DELETE FROM r WHERE v = -1")
	exec("INSERT INTO r VALUES (1000, 1, 'q', 3, 'u999', 7), (1001, NULL, NULL, NULL, NULL, 7)")
	check("in transaction")
	exec("ROLLBACK")
	require.Greater(t, indexUsed, 60, "queries planned on an index")
	exec("ADMIN CHECK TABLE r")
}

// TestPreparedPlanCache: a prepared select is planned at its first
// execution only (@@last_plan_from_cache, as in TiDB), by handle, by a
// unique index or by a range of an index, and is planned again when the
// table's definition or the current database changes, or a parameter
// comes with another kind (a string or NULL after integers: the cache
// keys plans by the parameters' kinds, as TiDB by their types).
// plancache_test.go has the rest.
func TestPreparedPlanCache(t *testing.T) {
	ts := startServer(t)
	db := ts.open(t, "test", "")
	db.SetMaxOpenConns(1) // one session
	for _, q := range []string{
		"CREATE TABLE p (id INT PRIMARY KEY, k INT, u VARCHAR(10), UNIQUE KEY uu (u), KEY kk (k))",
		"INSERT INTO p VALUES (1, 10, 'a'), (2, 20, 'b'), (3, 20, NULL)",
		"CREATE DATABASE other",
		"CREATE TABLE other.p (id INT PRIMARY KEY, k INT, u VARCHAR(10))",
		"INSERT INTO other.p VALUES (1, 99, 'z')",
	} {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	fromCache := func() int {
		var v int
		require.NoError(t, db.QueryRow("SELECT @@last_plan_from_cache").Scan(&v))
		return v
	}
	query := func(st *sql.Stmt, arg any) []string {
		rows, err := st.Query(arg)
		require.NoError(t, err)
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s sql.NullString
			require.NoError(t, rows.Scan(&s))
			out = append(out, s.String)
		}
		require.NoError(t, rows.Err())
		return out
	}
	byID, err := db.Prepare("SELECT k FROM p WHERE id = ?")
	require.NoError(t, err)
	defer byID.Close()
	byU, err := db.Prepare("SELECT id FROM p WHERE u = ?")
	require.NoError(t, err)
	defer byU.Close()
	byK, err := db.Prepare("SELECT id FROM p WHERE k = ?")
	require.NoError(t, err)
	defer byK.Close()

	steps := []struct {
		st     *sql.Stmt
		arg    any
		want   []string
		cached int
	}{
		{byID, 1, []string{"10"}, 0},
		{byID, 2, []string{"20"}, 1},
		{byID, 9, nil, 1},
		{byID, "2", []string{"20"}, 0}, // a string: another key
		{byID, "1", []string{"10"}, 1},
		{byID, nil, nil, 0},
		{byU, "b", []string{"2"}, 0},
		{byU, "a", []string{"1"}, 1},
		{byU, nil, nil, 0}, // NULL matches no unique key
		{byK, 20, []string{"2", "3"}, 0},
		{byK, 10, []string{"1"}, 1}, // an index range
	}
	for i, s := range steps {
		require.Equal(t, s.want, query(s.st, s.arg), "step %d", i)
		require.Equal(t, s.cached, fromCache(), "step %d", i)
	}
	// A new definition of the table: planned again, then cached.
	_, err = db.Exec("ALTER TABLE p ADD INDEX kk2 (k)")
	require.NoError(t, err)
	require.Equal(t, []string{"10"}, query(byID, 1))
	require.Equal(t, 0, fromCache())
	require.Equal(t, []string{"10"}, query(byID, 1))
	require.Equal(t, 1, fromCache())
	// Another current database: p is another table.
	_, err = db.Exec("USE other")
	require.NoError(t, err)
	require.Equal(t, []string{"99"}, query(byID, 1))
	require.Equal(t, 0, fromCache())
}

// TestExplainAnalyze: EXPLAIN ANALYZE runs the statement and reports, per
// operator, the rows it produced and its loops and time, in TiDB's columns.
func TestExplainAnalyze(t *testing.T) {
	ts := startServer(t)
	db := ts.open(t, "test", "")
	for _, q := range []string{
		"CREATE TABLE a (id INT PRIMARY KEY, k INT, KEY kk (k))",
		"INSERT INTO a VALUES (1, 1), (2, 2), (3, 2), (4, 2), (5, 3)",
	} {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	rows, err := db.Query("EXPLAIN ANALYZE SELECT id FROM a WHERE k = 2 LIMIT 2")
	require.NoError(t, err)
	cols, err := rows.Columns()
	require.NoError(t, err)
	require.NoError(t, rows.Close())
	require.Equal(t, []string{"id", "estRows", "actRows", "task", "access object", "execution info", "operator info", "memory", "disk"}, cols)
	got := queryStrings(t, db, "EXPLAIN ANALYZE SELECT id FROM a WHERE k = 2 LIMIT 2")
	want := []struct{ id, act string }{
		{"Projection_", "2"}, {"└─Limit_", "2"}, {"  └─IndexReader_", "2"}, {"    └─IndexRangeScan_", "2"}, // the first page, the limit's two entries, is handed over
	}
	require.Len(t, got, len(want), "%v", got)
	for i, w := range want {
		require.True(t, strings.HasPrefix(got[i][0], w.id), "%v", got[i])
		require.Equal(t, w.act, got[i][2], "%v", got[i])
		if got[i][3] == "root" {
			require.Contains(t, got[i][5], "loops:", "%v", got[i])
		}
	}
	// A statement that fails to plan fails EXPLAIN ANALYZE the same way.
	_, err = db.Query("EXPLAIN ANALYZE SELECT nosuch FROM a")
	require.Equal(t, uint16(1054), mysqlCode(err))
}

// TestUnionAndDerivedThroughDriver: a prepared UNION (binary protocol) and
// a derived table's column metadata (the alias as written is the table
// name, as go-sql-driver's columnsWithAlias shows it).
func TestUnionAndDerivedThroughDriver(t *testing.T) {
	ts := startServer(t)
	db := ts.open(t, "test", "columnsWithAlias=true")
	stmt, err := db.Prepare("SELECT 1 UNION SELECT 0")
	require.NoError(t, err)
	defer stmt.Close()
	for range 2 {
		rows, err := stmt.Query()
		require.NoError(t, err)
		var got []bool
		for rows.Next() {
			var b bool
			require.NoError(t, rows.Scan(&b))
			got = append(got, b)
		}
		require.NoError(t, rows.Err())
		require.Equal(t, []bool{true, false}, got)
	}
	rows, err := db.Query("SELECT * FROM (SELECT 1 AS one) AS A")
	require.NoError(t, err)
	cols, err := rows.Columns()
	require.NoError(t, err)
	require.NoError(t, rows.Close())
	require.Equal(t, []string{"A.one"}, cols)
}

// TestFieldListInformationSchema: the mysql CLI's tab completion sends
// COM_FIELD_LIST for every table of the current database, information_schema
// included.
func TestFieldListInformationSchema(t *testing.T) {
	ts := startServer(t)
	r := dialRaw(t, ts.addr)
	r.login()
	r.write(0, append([]byte{0x02}, "information_schema"...)) // COM_INIT_DB
	require.Equal(t, byte(0), r.read()[0])
	r.write(0, append([]byte{0x04}, "ENGINES\x00"...)) // COM_FIELD_LIST
	n := 0
	for p := r.read(); p[0] != 0xfe; p = r.read() {
		n++
	}
	require.Equal(t, 6, n)
}
