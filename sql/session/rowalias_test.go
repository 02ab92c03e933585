package session

import (
	"strings"
	"testing"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/errno"
)

// TestFindRowAliasClauses: the tokenizer finds the row alias clause of
// each INSERT ... VALUES / SET and nothing inside strings, identifiers or
// comments, nor in INSERT ... SELECT or REPLACE.
func TestFindRowAliasClauses(t *testing.T) {
	cases := []struct {
		sql   string
		mode  mysql.SQLMode
		want  []string // each clause's text
		alias []string // alias(cols...)
	}{
		{sql: "INSERT INTO t VALUES (1) AS new ON DUPLICATE KEY UPDATE a = new.a", want: []string{"AS new"}, alias: []string{"new"}},
		{sql: "insert low_priority ignore t (a, b) value (1, (2)), (3, 4) as n(x, `y``z`) on duplicate key update a = x",
			want: []string{"as n(x, `y``z`)"}, alias: []string{"n(x,y`z)"}},
		{sql: "INSERT INTO db.t PARTITION (p0) SET a = CAST(1 AS CHAR), b = (SELECT 1 AS x) AS r ON DUPLICATE KEY UPDATE b = r.b",
			want: []string{"AS r"}, alias: []string{"r"}},
		{sql: "INSERT INTO t VALUES (1) AS new", want: []string{"AS new"}, alias: []string{"new"}},
		{sql: "INSERT INTO t VALUES (1) AS /* c */ new -- x\n( -- y\n m ) ON DUPLICATE KEY UPDATE a = m",
			want: []string{"AS /* c */ new -- x\n( -- y\n m )"}, alias: []string{"new(m)"}},
		// Strings, comments and quoted names that read like the clause.
		{sql: `INSERT INTO t VALUES ('x'' AS a ON DUPLICATE', "\" AS b", ' \\'' AS c ') AS d ON DUPLICATE KEY UPDATE v = ' AS e '`,
			want: []string{"AS d"}, alias: []string{"d"}},
		{sql: "INSERT INTO t VALUES (1) /* AS a ON DUPLICATE KEY UPDATE */ # AS b\n", want: nil},
		{sql: "INSERT INTO `AS x` VALUES (1)", want: nil},
		// NO_BACKSLASH_ESCAPES: 'a\' is a whole string.
		{sql: `INSERT INTO t VALUES ('a\') AS n ON DUPLICATE KEY UPDATE v = n.v`, mode: mysql.ModeNoBackslashEscapes,
			want: []string{"AS n"}, alias: []string{"n"}},
		{sql: `INSERT INTO t VALUES ('a\') AS n ON DUPLICATE KEY UPDATE v = n.v`, want: nil},
		// ANSI_QUOTES: "n" is a name, where a backslash escapes nothing.
		{sql: `INSERT INTO t VALUES (1) AS "n" ON DUPLICATE KEY UPDATE v = "n".v`, mode: mysql.ModeANSIQuotes,
			want: []string{`AS "n"`}, alias: []string{"n"}},
		{sql: `INSERT INTO t VALUES (1) AS "n\" ON DUPLICATE KEY UPDATE v = 1`, mode: mysql.ModeANSIQuotes,
			want: []string{`AS "n\"`}, alias: []string{`n\`}},
		{sql: `INSERT INTO t VALUES (1) AS "n" ON DUPLICATE KEY UPDATE v = 1`, want: nil},
		// Several statements.
		{sql: "SELECT ';'; INSERT INTO t VALUES (1) AS a; INSERT INTO t SET v = 1 AS b(c) ON DUPLICATE KEY UPDATE v = c",
			want: []string{"AS a", "AS b(c)"}, alias: []string{"a", "b(c)"}},
	}
	p := parser.New()
	isIdent := func(w string) bool {
		_, _, err := p.ParseSQL("SELECT 1 AS " + w)
		return err == nil
	}
	for _, tc := range cases {
		var got, aliases []string
		for _, c := range findRowAliasClauses(tc.sql, tc.mode, isIdent) {
			got = append(got, tc.sql[c.start:c.end])
			a := c.alias.name
			if c.alias.cols != nil {
				a += "(" + strings.Join(c.alias.cols, ",") + ")"
			}
			aliases = append(aliases, a)
		}
		require.Equal(t, tc.want, got, tc.sql)
		require.Equal(t, tc.alias, aliases, tc.sql)
	}
	// Not row aliases: INSERT ... SELECT, REPLACE, a reserved word, a
	// broken list, what cannot follow the clause, an unterminated quote.
	for _, sql := range []string{
		"INSERT INTO t SELECT * FROM (SELECT 1) AS d ON DUPLICATE KEY UPDATE v = d.v",
		"INSERT INTO t (a) SELECT 1 FROM DUAL AS new",
		"INSERT INTO t (SELECT 1) AS new",
		"REPLACE INTO t VALUES (1) AS new",
		"INSERT INTO t VALUES (1) AS select ON DUPLICATE KEY UPDATE v = 1",
		"INSERT INTO t VALUES (1) AS n(a,) ON DUPLICATE KEY UPDATE v = 1",
		"INSERT INTO t VALUES (1) AS n WHERE 1",
		"INSERT INTO t SET a = 1 ON DUPLICATE KEY UPDATE a = 2",
		"INSERT INTO t VALUES (1) AS",
		"INSERT INTO t VALUES ('unterminated AS n",
		"INSERT INTO t VALUES (1) AS `unterminated",
		"INSERT INTO t VALUES (1) AS ``",
		"INSERT INTO t SET a = 1 ON DUPLICATE KEY UPDATE a = 2 AS n",
	} {
		require.Empty(t, findRowAliasClauses(sql, 0, isIdent), sql)
	}
}

// TestParseRowAlias: parseSQL parses a text with row aliases, keeps each
// statement's text as sent, and rewrite turns the alias's columns into
// VALUES(col) with MySQL's errors.
func TestParseRowAlias(t *testing.T) {
	tableCols := []string{"a", "b", "c"}
	cases := []struct {
		sql  string
		want string // the ON DUPLICATE KEY UPDATE list after rewrite
		code uint16
	}{
		{sql: "INSERT INTO t (a, b, c) VALUES (1, 2, 3), (4, 5, 6) AS new ON DUPLICATE KEY UPDATE c = new.a + new.b",
			want: "`c`=VALUES(`a`)+VALUES(`b`)"},
		{sql: "INSERT INTO t (a, b, c) VALUES (1, 2, 3) AS new(m, n, p) ON DUPLICATE KEY UPDATE c = m + n, b = NEW.P + t.b + c",
			want: "`c`=VALUES(`a`)+VALUES(`b`), `b`=VALUES(`c`)+`t`.`b`+`c`"},
		{sql: "INSERT INTO t SET a = 1, b = 2 AS new ON DUPLICATE KEY UPDATE b = new.b, c = VALUES(c)",
			want: "`b`=VALUES(`b`), `c`=VALUES(`c`)"},
		{sql: "INSERT INTO t VALUES (?, ?, ?) AS r(x, y, z) ON DUPLICATE KEY UPDATE b = z + (SELECT z FROM u)",
			want: "`b`=VALUES(`c`)+(SELECT `z` FROM `u`)"},
		{sql: "INSERT INTO t (b, a) VALUES (1, 2) AS n ON DUPLICATE KEY UPDATE c = n.a * 2", want: "`c`=VALUES(`a`)*2"},
		{sql: "INSERT INTO t VALUES (1, 2, 3) AS t ON DUPLICATE KEY UPDATE c = 1", code: 1066},
		{sql: "INSERT INTO t (a, b) VALUES (1, 2) AS n(x) ON DUPLICATE KEY UPDATE c = x", code: 1353},
		{sql: "INSERT INTO t VALUES (1, 2, 3) AS n(x, y) ON DUPLICATE KEY UPDATE c = x", code: 1353},
		{sql: "INSERT INTO t (a, b) VALUES (1, 2) AS n(x, X) ON DUPLICATE KEY UPDATE c = x", code: errno.ErrDupFieldName},
		{sql: "INSERT INTO t (a, b) VALUES (1, 2) AS n ON DUPLICATE KEY UPDATE c = n.c", code: errno.ErrBadField},
		{sql: "INSERT INTO t (a, b) VALUES (1, 2) AS n ON DUPLICATE KEY UPDATE c = a", code: errno.ErrNonUniq},
		{sql: "INSERT INTO t (a, b) VALUES (1, 2) AS n(c, d) ON DUPLICATE KEY UPDATE b = c", code: errno.ErrNonUniq},
	}
	p := parser.New()
	for _, tc := range cases {
		stmts, aliases, err := parseSQL(p, tc.sql, 0)
		require.NoError(t, err, tc.sql)
		require.Len(t, stmts, 1, tc.sql)
		ins := stmts[0].(*ast.InsertStmt)
		require.Equal(t, tc.sql, ins.Text())
		require.NotNil(t, aliases[ins], tc.sql)
		_, err = aliases[ins].target(ins)
		if err == nil {
			err = aliases[ins].rewrite(ins, tableCols)
		}
		if tc.code != 0 {
			require.Equal(t, tc.code, errno.FromError(err).Code, tc.sql)
			continue
		}
		require.NoError(t, err, tc.sql)
		var parts []string
		for _, a := range ins.OnDuplicate {
			var sb strings.Builder
			require.NoError(t, a.Restore(format.NewRestoreCtx(format.DefaultRestoreFlags, &sb)))
			parts = append(parts, sb.String())
		}
		require.Equal(t, tc.want, strings.Join(parts, ", "), tc.sql)
	}

	// Several statements: each keeps its own text, the others are
	// untouched, and a syntax error elsewhere is reported at its place.
	text := "SET @x = ' AS n';\nINSERT INTO t VALUES (1, 2, 3) AS n ON DUPLICATE KEY UPDATE c = n.c; SELECT 1"
	stmts, aliases, err := parseSQL(p, text, 0)
	require.NoError(t, err)
	require.Len(t, stmts, 3)
	require.Len(t, aliases, 1)
	require.Equal(t, "INSERT INTO t VALUES (1, 2, 3) AS n ON DUPLICATE KEY UPDATE c = n.c;", stmts[1].Text())
	require.NotNil(t, aliases[stmts[1].(*ast.InsertStmt)])
	_, _, err = parseSQL(p, "INSERT INTO t VALUES (1) AS n ON DUPLICATE KEY UPDATE c = n.c;\nSELEC 1", 0)
	require.Equal(t, errno.ErrParse, errno.FromError(err).Code)
	require.Contains(t, err.Error(), `line 2 column 6 near "SELEC 1"`)
	// Without a row alias the parser's error stands.
	_, _, err = parseSQL(p, "INSERT INTO t VALUES (1) AS n WHERE 1", 0)
	require.Contains(t, err.Error(), `near "AS n WHERE 1"`)
}
