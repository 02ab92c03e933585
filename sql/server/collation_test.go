package server_test

import (
	"database/sql"
	"errors"
	"flag"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
)

// TestCollationScripts runs testdata/collation: collations of columns,
// tables and databases (utf8mb4_general_ci, utf8mb4_unicode_ci,
// utf8mb4_0900_ai_ci and the binary ones) in comparisons, ORDER BY,
// GROUP BY, DISTINCT, unique and secondary indexes, COLLATE and the
// coercibility rules, SHOW and information_schema.
func TestCollationScripts(t *testing.T) { runScripts(t, "testdata/collation") }

// collationReference, when set, is the DSN of a MariaDB server:
// TestCollationDifferential then runs its script there and rewrites the
// expected output (testdata/collation-mariadb/regen.sh sets it).
var collationReference = flag.String("collation-reference", "", "DSN of the MariaDB server whose answers testdata/collation-mariadb/expected.txt records")

const (
	diffScript   = "testdata/collation-mariadb/script.sql"
	diffExpected = "testdata/collation-mariadb/expected.txt"
)

// TestCollationDifferential runs testdata/collation-mariadb/script.sql on
// Strata and compares every statement's answer with MariaDB 10.11's,
// recorded in expected.txt by regen.sh: equality, ORDER BY, GROUP BY,
// DISTINCT, unique violations, LIKE and MIN / MAX under utf8mb4_bin,
// utf8mb4_general_ci and utf8mb4_unicode_ci, on accents, case, trailing
// spaces, ß, German and Scandinavian letters and emoji.
func TestCollationDifferential(t *testing.T) {
	script, err := os.ReadFile(diffScript)
	require.NoError(t, err)
	stmts := splitScript(string(script))
	if *collationReference != "" {
		db, err := sql.Open("mysql", *collationReference)
		require.NoError(t, err)
		defer db.Close()
		db.SetMaxOpenConns(1)
		out := runDiffScript(t, db, stmts)
		require.NoError(t, os.WriteFile(diffExpected, []byte(out), 0o644))
		return
	}
	want, err := os.ReadFile(diffExpected)
	require.NoError(t, err)
	ts := startServer(t)
	db := ts.open(t, "", "")
	db.SetMaxOpenConns(1)
	got := runDiffScript(t, db, stmts)
	wantBlocks, gotBlocks := strings.Split(string(want), "\n\n"), strings.Split(got, "\n\n")
	require.Equal(t, len(wantBlocks), len(gotBlocks), "statements answered")
	for i := range wantBlocks {
		if wantBlocks[i] != gotBlocks[i] {
			t.Errorf("statement %d: MariaDB answered\n%s\nStrata answered\n%s", i+1, wantBlocks[i], gotBlocks[i])
		}
	}
}

// splitScript splits a script into statements: one per line, comment
// lines (--) and blank lines dropped.
func splitScript(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "--") {
			continue
		}
		out = append(out, strings.TrimSuffix(l, ";"))
	}
	return out
}

// runDiffScript runs stmts on db and renders each answer as a block: the
// statement, then its rows (values quoted, joined by '|', NULL as NULL),
// or "ok", or "ERROR <code>" (messages differ between servers; codes do
// not), blocks separated by a blank line.
func runDiffScript(t *testing.T, db *sql.DB, stmts []string) string {
	var b strings.Builder
	for i, q := range stmts {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString("> " + q + "\n")
		rows, err := db.Query(q)
		if err != nil {
			var me *mysql.MySQLError
			require.True(t, errors.As(err, &me), "%s: %v", q, err)
			b.WriteString("ERROR " + strconv.Itoa(int(me.Number)) + "\n")
			continue
		}
		const null = "\x00NULL" // not a value the script has
		out, ncols := scanStrings(t, rows, null)
		for _, row := range out {
			for j, v := range row {
				if v == null {
					row[j] = "NULL"
				} else {
					row[j] = "'" + v + "'"
				}
			}
			b.WriteString(strings.Join(row, "|") + "\n")
		}
		if ncols == 0 && len(out) == 0 {
			b.WriteString("ok\n")
		}
	}
	return b.String()
}
