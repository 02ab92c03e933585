package session

import (
	"regexp"
	"strings"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// ChecksumTableStmt is MySQL's CHECKSUM TABLE t [, t] ... [QUICK |
// EXTENDED], which TiDB's parser does not have. parseSQL builds it when
// the parser refuses a statement of that form: the table list is parsed
// as ADMIN CHECKSUM TABLE's (the embedded AdminStmt's Tables), and the
// executor answers with MySQL's columns (executor.ChecksumTable).
type ChecksumTableStmt struct {
	ast.AdminStmt
	// Quick is CHECKSUM TABLE ... QUICK: MySQL answers NULL for a table
	// without a live checksum (InnoDB's), and so does Strata.
	Quick bool
}

var checksumTableRE = regexp.MustCompile(`(?is)^\s*checksum\s+tables?\s+(.+?)(?:\s+(quick|extended))?\s*;?\s*$`)

// parseChecksumTable recognises one CHECKSUM TABLE statement in sql.
func parseChecksumTable(p *parser.Parser, sql string) (*ChecksumTableStmt, bool) {
	m := checksumTableRE.FindStringSubmatch(sql)
	if m == nil {
		return nil, false
	}
	stmts, _, err := p.ParseSQL("ADMIN CHECKSUM TABLE " + m[1])
	if err != nil || len(stmts) != 1 {
		return nil, false
	}
	admin, ok := stmts[0].(*ast.AdminStmt)
	if !ok || admin.Tp != ast.AdminChecksumTable {
		return nil, false
	}
	st := &ChecksumTableStmt{AdminStmt: *admin, Quick: strings.EqualFold(m[2], "quick")}
	st.SetText(nil, strings.TrimSpace(sql))
	return st, true
}
