// Command tidbtests runs TiDB integration test pairs (t/N.test, r/N.result
// from ../shared/suites/integrationtest) against a MySQL-protocol server and
// reports, per file, how many statements produced exactly the output the
// .result file holds (TiDB's format: the statement, then its column names
// and rows tab-separated, or "Error NNNN (SSSSS): message") and the first
// mismatches. A whole file passes only when every statement does.
// -failures FILE writes every mismatch with its reason (reason.go) as
// Markdown: per reason, the count in each file, then every failing
// statement with what TiDB's result holds and what the server gave.
//
//	go run ./bench/tidbtests -dsn 'root:@tcp(127.0.0.1:4000)/' executor/cte executor/window
package main

import (
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/stratadb/strata/sql/types"
)

func main() {
	dsn := flag.String("dsn", "root:@tcp(127.0.0.1:4000)/", "server DSN (no database)")
	dir := flag.String("dir", "../shared/suites/integrationtest", "suite directory holding t/ and r/")
	show := flag.Int("show", 5, "mismatches to print per file")
	flag.DurationVar(&stmtTimeout, "stmt-timeout", time.Minute, "a statement running longer is stopped with KILL QUERY (its output is then the kill's error)")
	failures := flag.String("failures", "", "write every mismatch with its reason to this Markdown file")
	flag.Parse()
	var all []fileFailures
	for _, name := range flag.Args() {
		ok, total, fails, err := runFile(*dsn, *dir, name)
		if err != nil {
			fmt.Printf("%s: error: %v\n", name, err)
			continue
		}
		fmt.Printf("%s: %d/%d statements match\n", name, ok, total)
		for i, f := range fails {
			if i >= *show {
				break
			}
			fmt.Printf("  %s\n", f)
		}
		all = append(all, fileFailures{name: name, ok: ok, total: total, fails: fails})
	}
	if *failures != "" {
		if err := os.WriteFile(*failures, []byte(failureReport(all)), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

type directives struct {
	sorted       bool
	errs         bool
	replaceCol   map[int]string
	replaceRegex [][2]string
	noResult     bool
	noQuery      bool
	info         bool
}

// statement is one statement of a .test file with the directives that
// precede it.
type statement struct {
	echo string // as the .result file echoes it
	d    directives
}

// parseTest splits a .test file into its statements.
func parseTest(test string) []statement {
	var out []statement
	var d directives
	var stmt []string
	for _, line := range strings.Split(test, "\n") {
		t := strings.TrimSpace(line)
		if len(stmt) > 0 && (strings.HasPrefix(t, "#") || strings.HasPrefix(t, "--")) {
			// A comment or directive ends a statement written without
			// its ';' (TiDB's mysql-tester runs it alone, as the .result
			// echoes it).
			out = append(out, statement{echo: strings.Join(stmt, "\n"), d: d})
			stmt, d = nil, directives{}
		}
		if len(stmt) == 0 {
			switch {
			case t == "" || strings.HasPrefix(t, "#"):
				continue
			case strings.HasPrefix(t, "--"):
				d.apply(strings.TrimSpace(strings.TrimPrefix(t, "--")))
				continue
			}
		}
		if t != "" {
			stmt = append(stmt, t)
		}
		if !strings.HasSuffix(t, ";") {
			continue
		}
		out = append(out, statement{echo: strings.Join(stmt, "\n"), d: d})
		stmt, d = nil, directives{}
	}
	return out
}

func runFile(dsn, dir, name string) (ok, total int, fails []failure, err error) {
	test, err := os.ReadFile(filepath.Join(dir, "t", name+".test"))
	if err != nil {
		return 0, 0, nil, err
	}
	want, err := os.ReadFile(filepath.Join(dir, "r", name+".result"))
	if err != nil {
		return 0, 0, nil, err
	}
	dbName := strings.ReplaceAll(name, "/", "__")
	admin, err := sql.Open("mysql", dsn)
	if err != nil {
		return 0, 0, nil, err
	}
	defer admin.Close()
	if _, err := admin.Exec("DROP DATABASE IF EXISTS `" + dbName + "`"); err != nil {
		return 0, 0, nil, err
	}
	if _, err := admin.Exec("CREATE DATABASE `" + dbName + "`"); err != nil {
		return 0, 0, nil, err
	}
	db, err := sql.Open("mysql", dsn+dbName+"?multiStatements=false")
	if err != nil {
		return 0, 0, nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var connID int64
	if err := db.QueryRow("SELECT CONNECTION_ID()").Scan(&connID); err != nil {
		return 0, 0, nil, err
	}
	killer := func() { _, _ = admin.Exec(fmt.Sprintf("KILL QUERY %d", connID)) }
	expected := string(want)
	cursor := 0
	stmts := parseTest(string(test))
	for i, st := range stmts {
		echo := st.echo
		q := strings.TrimSuffix(echo, ";")
		stop := time.AfterFunc(stmtTimeout, killer)
		out := run(db, q, echo, &st.d)
		stop.Stop()
		total++
		if j := strings.Index(expected[cursor:], echo+"\n"); j > 0 && !st.d.noQuery {
			cursor += j // the previous statement's expected output
		}
		if strings.HasPrefix(expected[cursor:], out) {
			ok++
			cursor += len(out)
			continue
		}
		f := failure{stmt: q, got: out, echoed: !st.d.noQuery}
		// Resynchronise: past this statement's echo; the next statement
		// finds its own echo from there.
		if j := strings.Index(expected[cursor:], echo+"\n"); j >= 0 {
			cursor += j + len(echo) + 1
			f.want, f.wantKnown = expected[cursor:], true
			// Up to the next statement the .result echoes.
			for _, next := range stmts[i+1:] {
				if next.d.noQuery {
					continue
				}
				if k := strings.Index(f.want, next.echo+"\n"); k >= 0 {
					f.want = f.want[:k]
				}
				break
			}
		}
		if f.echoed {
			f.got = strings.TrimPrefix(f.got, echo+"\n")
		}
		fails = append(fails, f)
	}
	return ok, total, fails, nil
}

func (d *directives) apply(dir string) {
	f := strings.Fields(dir)
	if len(f) == 0 {
		return
	}
	switch f[0] {
	case "sorted_result":
		d.sorted = true
	case "error":
		d.errs = true
	case "disable_result_log":
		d.noResult = true
	case "disable_query_log":
		d.noQuery = true
	case "enable_info":
		d.info = true
	case "replace_column":
		if d.replaceCol == nil {
			d.replaceCol = map[int]string{}
		}
		for i := 1; i+1 < len(f); i += 2 {
			var n int
			fmt.Sscan(f[i], &n)
			d.replaceCol[n] = f[i+1]
		}
	case "replace_regex":
		rest := strings.TrimSpace(strings.TrimPrefix(dir, "replace_regex"))
		for len(rest) > 2 && rest[0] == '/' {
			parts := strings.SplitN(rest[1:], "/", 3)
			if len(parts) < 3 {
				break
			}
			d.replaceRegex = append(d.replaceRegex, [2]string{parts[0], parts[1]})
			rest = strings.TrimSpace(parts[2])
		}
	}
}

// floatScales gives, per column, the decimals a FLOAT or DOUBLE column
// declares (-1: none, so shortest form, as the server writes a float
// with 0 or 31 decimals; other columns: unused).
func floatScales(rows *sql.Rows) []int {
	cts, _ := rows.ColumnTypes()
	out := make([]int, len(cts))
	for i, ct := range cts {
		if _, scale, ok := ct.DecimalSize(); ok && scale > 0 && scale < 31 {
			out[i] = int(scale)
		} else {
			out[i] = -1
		}
	}
	return out
}

// cellText renders a value as the server sent it. go-sql-driver parses
// the text of FLOAT and DOUBLE columns into float32 / float64 (and integer
// columns into int64 / uint64), and database/sql would format those back
// with Go's 'g' (2.5843386666666665e+06 for the server's
// 2584338.6666666665, 1.5 for a DOUBLE(5,2)'s 1.50). The server's text is
// the shortest form of the same float in MySQL's notation, or the column's
// decimals, so formatting the float that way again gives it back.
func cellText(v any, scale int) string {
	switch x := v.(type) {
	case []byte:
		return string(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case float32:
		if scale >= 0 {
			return strconv.FormatFloat(float64(x), 'f', scale, 32)
		}
		return string(types.AppendFloat(nil, float64(x), 32))
	case float64:
		if scale >= 0 {
			return strconv.FormatFloat(x, 'f', scale, 64)
		}
		return string(types.AppendFloat(nil, x, 64))
	}
	return fmt.Sprint(v)
}

// stmtTimeout bounds each statement (a test may run one that never ends
// here, e.g. a cross join TiDB stops by its memory quota).
var stmtTimeout time.Duration

// run executes q and renders it as the .result format does.
func run(db *sql.DB, q, echo string, d *directives) string {
	var sb strings.Builder
	if !d.noQuery {
		sb.WriteString(echo + "\n")
	}
	rows, err := db.Query(q)
	if err != nil {
		var me *mysql.MySQLError
		if errors.As(err, &me) {
			fmt.Fprintf(&sb, "Error %d (%s): %s\n", me.Number, string(me.SQLState[:]), me.Message)
		} else {
			fmt.Fprintf(&sb, "Error: %v\n", err)
		}
		return sb.String()
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	if len(cols) == 0 || d.noResult {
		for rows.Next() {
		}
		return sb.String()
	}
	sb.WriteString(strings.Join(cols, "\t") + "\n")
	var lines []string
	scales := floatScales(rows)
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			break
		}
		cells := make([]string, len(cols))
		for i, v := range vals {
			switch {
			case d.replaceCol[i+1] != "":
				cells[i] = d.replaceCol[i+1]
			case v == nil:
				cells[i] = "NULL"
			default:
				cells[i] = cellText(v, scales[i])
			}
		}
		line := strings.Join(cells, "\t")
		for _, r := range d.replaceRegex {
			if re, err := regexp.Compile(r[0]); err == nil {
				line = re.ReplaceAllString(line, r[1])
			}
		}
		lines = append(lines, line)
	}
	if err := rows.Err(); err != nil {
		var me *mysql.MySQLError
		if errors.As(err, &me) {
			fmt.Fprintf(&sb, "Error %d (%s): %s\n", me.Number, string(me.SQLState[:]), me.Message)
			return sb.String()
		}
	}
	if d.sorted {
		sort.Strings(lines)
	}
	for _, l := range lines {
		sb.WriteString(l + "\n")
	}
	return sb.String()
}
