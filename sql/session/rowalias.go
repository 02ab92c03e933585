package session

import (
	"context"
	"strings"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/errno"
)

// MySQL 8.0.19's row alias of INSERT ... VALUES / SET, which TiDB's
// parser lacks:
//
//	INSERT INTO t (a, b, c) VALUES (1, 2, 3), (4, 5, 6) AS new
//	  ON DUPLICATE KEY UPDATE c = new.a + new.b
//	INSERT INTO t (a, b, c) VALUES (1, 2, 3) AS new(m, n, p)
//	  ON DUPLICATE KEY UPDATE c = m + n
//	INSERT INTO t SET a = 1, b = 2 AS new ON DUPLICATE KEY UPDATE b = new.b
//
// When the parser refuses a text, parseSQL looks for these clauses with a
// tokenizer (quotes, escapes, comments and parentheses respected: a string
// or comment holding " AS new " is never taken for one), blanks each
// `AS alias [(col, ...)]` out (spaces of the same length, so that offsets,
// line numbers and the parser's error positions stay those of the text),
// and parses the rest with the real parser. Each INSERT that had a clause
// keeps its original text (Text: logs, slow log, statement summary) and
// its alias, a rowAlias, which resolveRowAlias turns into the ValuesExpr
// (VALUES(col)) nodes the executor already runs, once the table's columns
// are known: when the statement runs (Execute) or is prepared, not at
// parse time, since an earlier statement of the same text may create the
// table. Names inside a subquery of ON DUPLICATE KEY UPDATE are not
// rewritten (MySQL would resolve new.col there as an outer reference).
//
// MySQL's semantics (sql_insert.cc, the alias is a derived table over the
// inserted row): the alias's columns are the INSERT's columns (its column
// list, its SET list, else every column of the table) under their own
// names or the alias's column list; in ON DUPLICATE KEY UPDATE's values
// alias.col is the inserted value (1054 for a column the alias lacks), a
// bare name of an alias column is too, unless the table also has a column
// of that name (1052, ambiguous: qualify it with the alias or the table),
// and any other name keeps meaning the existing row's column. Errors: 1066
// for an alias equal to the table's name, 1353 for a column list of
// another length than the INSERT's columns, 1060 for a name twice in it.
// INSERT ... SELECT has no row alias (an AS there names a derived table)
// and is left to the parser; REPLACE has none either.

// rowAlias is one INSERT's row alias.
type rowAlias struct {
	name string
	cols []string // the alias's column list; nil without one
}

// rowAliases are the row aliases of the statements of one parsed text.
type rowAliases map[*ast.InsertStmt]*rowAlias

// Token kinds of sqlTokens.
const (
	tokWord   = iota // an unquoted identifier, keyword or number
	tokIdent         // a quoted identifier (`x`, "x" under ANSI_QUOTES)
	tokString        // a string literal
	tokPunct         // one other character
)

// sqlToken is one token of a statement text: text is a word as written,
// a quoted identifier's name, or a punctuation character.
type sqlToken struct {
	kind       int
	start, end int // byte offsets in the text
	text       string
}

// sqlTokens splits sql into tokens, skipping white space and comments
// (#, -- and /* */, MySQL's executable /*! */ included). Backslash escapes
// in strings count unless noBackslash; ansiQuotes makes "x" an identifier.
// An unterminated quote or comment runs to the end of the text.
func sqlTokens(sql string, noBackslash, ansiQuotes bool) []sqlToken {
	var toks []sqlToken
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '#' || c == '-' && strings.HasPrefix(sql[i:], "--") && (i+2 == len(sql) || sql[i+2] <= ' '):
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			if j := strings.Index(sql[i+2:], "*/"); j >= 0 {
				i += j + 4
			} else {
				i = len(sql)
			}
		case c == '\'' || c == '"' || c == '`':
			kind := tokString
			if c == '`' || c == '"' && ansiQuotes {
				kind = tokIdent
			}
			end := quoteEnd(sql, i, noBackslash || kind == tokIdent)
			text, closed := unquote(sql[i:end], c)
			if !closed {
				kind = tokString // an unterminated name names nothing
			}
			toks = append(toks, sqlToken{kind: kind, start: i, end: end, text: text})
			i = end
		case isWordByte(c):
			j := i + 1
			for j < len(sql) && isWordByte(sql[j]) {
				j++
			}
			toks = append(toks, sqlToken{kind: tokWord, start: i, end: j, text: sql[i:j]})
			i = j
		default:
			toks = append(toks, sqlToken{kind: tokPunct, start: i, end: i + 1, text: sql[i : i+1]})
			i++
		}
	}
	return toks
}

// quoteEnd is the offset just past the quoted token opening at i: a
// doubled quote stands for one, and so does a backslash escape unless
// noBackslash.
func quoteEnd(sql string, i int, noBackslash bool) int {
	q := sql[i]
	for j := i + 1; j < len(sql); j++ {
		switch {
		case sql[j] == '\\' && !noBackslash:
			j++
		case sql[j] == q:
			if j+1 < len(sql) && sql[j+1] == q {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(sql)
}

// unquote is a quoted identifier's name (doubled quotes undone; string
// literals get the same, which nothing reads), and whether the quote is
// closed.
func unquote(tok string, q byte) (string, bool) {
	if len(tok) < 2 || tok[len(tok)-1] != q {
		return tok, false
	}
	return strings.ReplaceAll(tok[1:len(tok)-1], string([]byte{q, q}), string(q)), true
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$' || c >= 0x80
}

// rowAliasClause is one row alias found in a text.
type rowAliasClause struct {
	start, end int // the `AS alias [(col, ...)]` to blank out
	alias      rowAlias
}

// rowAliasScanner finds the row aliases of a text's statements.
type rowAliasScanner struct {
	toks []sqlToken
	// isIdent reports whether an unquoted word may name an alias (not a
	// reserved word).
	isIdent func(word string) bool
}

// findRowAliasClauses returns the row alias clause of every INSERT of sql
// that has one, in text order.
func findRowAliasClauses(sql string, mode mysql.SQLMode, isIdent func(string) bool) []rowAliasClause {
	toks := sqlTokens(sql, mode.HasNoBackslashEscapesMode(), mode.HasANSIQuotesMode())
	var out []rowAliasClause
	for start := 0; start < len(toks); {
		end := start
		for end < len(toks) && !(toks[end].kind == tokPunct && toks[end].text == ";") {
			end++
		}
		sc := rowAliasScanner{toks: toks[start:end], isIdent: isIdent}
		if c, ok := sc.clause(); ok {
			out = append(out, c)
		}
		start = end + 1
	}
	return out
}

// clause recognises the statement's tokens as
//
//	INSERT [LOW_PRIORITY | DELAYED | HIGH_PRIORITY] [IGNORE] [INTO] tbl
//	  [PARTITION (...)] [(col, ...)] {VALUES | VALUE} (...) [, (...)] ...
//	  AS alias [(col, ...)] [ON DUPLICATE KEY UPDATE ...]
//
// or the same with SET col = expr, ... in place of the column and VALUES
// lists. Anything else (INSERT ... SELECT, REPLACE) is not one.
func (sc *rowAliasScanner) clause() (rowAliasClause, bool) {
	i := 0
	if !sc.word(i, "INSERT") {
		return rowAliasClause{}, false
	}
	i++
	for sc.word(i, "LOW_PRIORITY") || sc.word(i, "DELAYED") || sc.word(i, "HIGH_PRIORITY") || sc.word(i, "IGNORE") {
		i++
	}
	if sc.word(i, "INTO") {
		i++
	}
	if _, ok := sc.name(i); !ok {
		return rowAliasClause{}, false
	}
	i++
	if sc.punct(i, ".") {
		if _, ok := sc.name(i + 1); !ok {
			return rowAliasClause{}, false
		}
		i += 2
	}
	if sc.word(i, "PARTITION") {
		i++
		if !sc.punct(i, "(") {
			return rowAliasClause{}, false
		}
		i = sc.skipGroup(i)
	}
	if sc.punct(i, "(") {
		i = sc.skipGroup(i)
	}
	switch {
	case sc.word(i, "VALUES") || sc.word(i, "VALUE"):
		i++
		for sc.punct(i, "(") {
			i = sc.skipGroup(i)
			if !sc.punct(i, ",") {
				break
			}
			i++
		}
	case sc.word(i, "SET"):
		// The assignments' expressions have no AS outside parentheses
		// (CAST(x AS t) and subqueries are inside).
		for depth := 0; i < len(sc.toks) && (depth > 0 || !sc.word(i, "AS")); i++ {
			switch {
			case sc.punct(i, "("):
				depth++
			case sc.punct(i, ")"):
				depth--
			case depth == 0 && sc.word(i, "ON") && sc.word(i+1, "DUPLICATE"):
				return rowAliasClause{}, false
			}
		}
	default:
		return rowAliasClause{}, false
	}
	if !sc.word(i, "AS") {
		return rowAliasClause{}, false
	}
	c := rowAliasClause{start: sc.toks[i].start}
	i++
	name, ok := sc.name(i)
	if !ok {
		return rowAliasClause{}, false
	}
	c.alias.name = name
	i++
	if sc.punct(i, "(") {
		for i++; ; i++ {
			col, ok := sc.name(i)
			if !ok {
				return rowAliasClause{}, false
			}
			c.alias.cols = append(c.alias.cols, col)
			i++
			if sc.punct(i, ")") {
				break
			}
			if !sc.punct(i, ",") {
				return rowAliasClause{}, false
			}
		}
		i++
	}
	c.end = sc.toks[i-1].end
	if i < len(sc.toks) && !(sc.word(i, "ON") && sc.word(i+1, "DUPLICATE")) {
		return rowAliasClause{}, false
	}
	return c, true
}

// word reports whether token i is the keyword kw.
func (sc *rowAliasScanner) word(i int, kw string) bool {
	return i < len(sc.toks) && sc.toks[i].kind == tokWord && strings.EqualFold(sc.toks[i].text, kw)
}

func (sc *rowAliasScanner) punct(i int, p string) bool {
	return i < len(sc.toks) && sc.toks[i].kind == tokPunct && sc.toks[i].text == p
}

// name is token i as an identifier: quoted, or a word that is not
// reserved.
func (sc *rowAliasScanner) name(i int) (string, bool) {
	if i >= len(sc.toks) {
		return "", false
	}
	switch t := sc.toks[i]; t.kind {
	case tokIdent:
		return t.text, t.text != "" // MySQL refuses an empty name
	case tokWord:
		return t.text, sc.isIdent(t.text)
	}
	return "", false
}

// skipGroup returns the index past the parenthesised group opening at i
// (the end when it is not closed).
func (sc *rowAliasScanner) skipGroup(i int) int {
	depth := 0
	for ; i < len(sc.toks); i++ {
		switch {
		case sc.punct(i, "("):
			depth++
		case sc.punct(i, ")"):
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return i
}

// parseRowAliases parses sql, which p refused, with its row alias
// clauses blanked out (mode: the sql_mode sql was parsed under). It
// reports ok = false when sql has none, or when a statement with one is
// not the INSERT the parser then finds there; err is the parser's error
// for the rest of the text.
func parseRowAliases(p *parser.Parser, sql string, mode mysql.SQLMode) (stmts []ast.StmtNode, aliases rowAliases, ok bool, err error) {
	// Reserved words are refused by the parser as a column alias; probe
	// before the real parse, whose statements the next ParseSQL of p
	// would overwrite.
	isIdent := func(w string) bool {
		_, _, err := p.ParseSQL("SELECT 1 AS " + w)
		return err == nil
	}
	clauses := findRowAliasClauses(sql, mode, isIdent)
	if len(clauses) == 0 {
		return nil, nil, false, nil
	}
	cut := []byte(sql)
	for _, c := range clauses {
		for i := c.start; i < c.end; i++ {
			if cut[i] != '\n' && cut[i] != '\r' {
				cut[i] = ' '
			}
		}
	}
	text := string(cut)
	stmts, _, err = p.ParseSQL(text)
	if err != nil {
		return nil, nil, true, err
	}
	aliases = make(rowAliases, len(clauses))
	pos, ci := 0, 0
	for _, st := range stmts {
		t := st.OriginalText()
		off := strings.Index(text[pos:], t)
		if off < 0 {
			return nil, nil, false, nil
		}
		begin, end := pos+off, pos+off+len(t)
		pos = end
		if ci == len(clauses) || clauses[ci].start >= end {
			continue
		}
		ins, isInsert := st.(*ast.InsertStmt)
		if !isInsert || ins.IsReplace || ins.Select != nil || clauses[ci].start < begin || clauses[ci].end > end {
			return nil, nil, false, nil
		}
		ins.SetText(nil, sql[begin:end])
		aliases[ins] = &clauses[ci].alias
		ci++
	}
	if ci != len(clauses) {
		return nil, nil, false, nil
	}
	rowAliasStatements.Add(float64(len(clauses)))
	return stmts, aliases, true, nil
}

// resolveRowAlias rewrites ins's ON DUPLICATE KEY UPDATE values for its
// row alias ra: alias.col, and a bare name of an alias column, become
// VALUES(col) of the INSERT's column; the table's columns come from the
// catalog. It runs before the privilege check, which then sees the
// columns the statement really reads; its errors but 1066 (MySQL's
// parser raises that one) yield to the privilege check of the INSERT
// without its unresolved ON DUPLICATE KEY UPDATE, as MySQL's come after
// it: an account without access learns nothing of the table.
func (s *Session) resolveRowAlias(ctx context.Context, ins *ast.InsertStmt, ra *rowAlias) error {
	err := s.rewriteRowAlias(ctx, ins, ra)
	if err != nil && s.privs.mgr != nil && errno.FromError(err).Code != 1066 {
		odku := ins.OnDuplicate
		ins.OnDuplicate = nil
		perr := s.checkPrivileges(ctx, ins)
		ins.OnDuplicate = odku
		if perr != nil {
			return perr
		}
	}
	return err
}

// rewriteRowAlias is resolveRowAlias without the privilege check.
func (s *Session) rewriteRowAlias(ctx context.Context, ins *ast.InsertStmt, ra *rowAlias) error {
	tn, err := ra.target(ins)
	if err != nil {
		return err
	}
	dbName := tn.Schema.O
	if dbName == "" {
		dbName = s.db
	}
	if dbName == "" {
		return errno.New(errno.ErrNoDB, "No database selected")
	}
	db, err := s.dom.Catalog().GetDB(ctx, dbName)
	if err != nil {
		return err
	}
	tbl, err := s.dom.Catalog().GetTable(ctx, db, tn.Name.O)
	if err != nil {
		return err
	}
	tableCols := make([]string, 0, tbl.PublicColumns())
	for _, c := range tbl.Columns[:tbl.PublicColumns()] {
		tableCols = append(tableCols, c.Name)
	}
	return ra.rewrite(ins, tableCols)
}

// target is the table ins inserts into: 1066 when the alias has its name
// (as in MySQL's parser, before the table is looked up).
func (ra *rowAlias) target(ins *ast.InsertStmt) (*ast.TableName, error) {
	var tn *ast.TableName
	if ts, ok := ins.Table.TableRefs.Left.(*ast.TableSource); ok && ins.Table.TableRefs.Right == nil {
		tn, _ = ts.Source.(*ast.TableName)
	}
	if tn == nil { // the grammar has one table name; kept from a panic
		return nil, errno.New(errno.ErrParse, "You have an error in your SQL syntax; a row alias needs one table")
	}
	if strings.EqualFold(ra.name, tn.Name.O) {
		return nil, errno.New(1066, "Not unique table/alias: '%s'", ra.name)
	}
	return tn, nil
}

// rewrite is resolveRowAlias once the table's columns are known.
func (ra *rowAlias) rewrite(ins *ast.InsertStmt, tableCols []string) error {
	insertCols := tableCols
	if len(ins.Columns) > 0 {
		insertCols = make([]string, len(ins.Columns))
		for i, c := range ins.Columns {
			insertCols[i] = c.Name.O
		}
	}
	names := insertCols
	if ra.cols != nil {
		if len(ra.cols) != len(insertCols) {
			return errno.New(1353, "In definition of view, derived table or common table expression, SELECT list and column names list have different column counts")
		}
		for i, c := range ra.cols {
			if indexFold(ra.cols[:i], c) >= 0 {
				return errno.New(errno.ErrDupFieldName, "Duplicate column name '%s'", c)
			}
		}
		names = ra.cols
	}
	rw := &rowAliasRewriter{alias: ra.name, names: names, insertCols: insertCols, tableCols: tableCols}
	for _, a := range ins.OnDuplicate {
		n, _ := a.Expr.Accept(rw)
		if rw.err != nil {
			return rw.err
		}
		a.Expr = n.(ast.ExprNode)
	}
	return nil
}

// rowAliasRewriter turns the row alias's columns into VALUES(col) in one
// ON DUPLICATE KEY UPDATE value; err is the first name it could not
// resolve. Subqueries are left alone: their names are theirs.
type rowAliasRewriter struct {
	alias      string
	names      []string // the alias's columns
	insertCols []string // the INSERT's column of each
	tableCols  []string
	err        error
}

func (rw *rowAliasRewriter) Enter(n ast.Node) (ast.Node, bool) {
	switch n.(type) {
	case *ast.ValuesExpr, *ast.SubqueryExpr:
		return n, true
	}
	return n, rw.err != nil
}

func (rw *rowAliasRewriter) Leave(n ast.Node) (ast.Node, bool) {
	cn, ok := n.(*ast.ColumnNameExpr)
	if !ok || rw.err != nil || cn.Name.Schema.L != "" {
		return n, true
	}
	name := cn.Name
	switch {
	case strings.EqualFold(name.Table.O, rw.alias):
		i := indexFold(rw.names, name.Name.O)
		if i < 0 {
			rw.err = errno.New(errno.ErrBadField, "Unknown column '%s.%s' in 'field list'", name.Table.O, name.Name.O)
			return n, false
		}
		return rw.values(i), true
	case name.Table.L == "":
		i := indexFold(rw.names, name.Name.O)
		if i < 0 {
			return n, true // the existing row's column
		}
		if indexFold(rw.tableCols, name.Name.O) >= 0 {
			rw.err = errno.New(errno.ErrNonUniq, "Column '%s' in field list is ambiguous", name.Name.O)
			return n, false
		}
		return rw.values(i), true
	}
	return n, true
}

// values is VALUES(col) of the alias's column i.
func (rw *rowAliasRewriter) values(i int) ast.ExprNode {
	return &ast.ValuesExpr{Column: &ast.ColumnNameExpr{Name: &ast.ColumnName{Name: ast.NewCIStr(rw.insertCols[i])}}}
}

// indexFold is the index of the first of names equal to name, ignoring
// case (column names are case-insensitive), or -1.
func indexFold(names []string, name string) int {
	for i, n := range names {
		if strings.EqualFold(n, name) {
			return i
		}
	}
	return -1
}
