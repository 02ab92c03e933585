package session

import (
	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/executor"
)

// maxExtraWarnings bounds the warnings one statement keeps from row-wise
// evaluation (MySQL's max_error_count default): a scan dividing by zero on
// every row does not grow the session without bound.
const maxExtraWarnings = 1024

// divZeroErrors reports whether division by zero fails stmt rather than
// warning (sql_mode ERROR_FOR_DIVISION_BY_ZERO with a strict mode, in an
// INSERT, REPLACE or UPDATE without IGNORE, as MySQL).
func (s *Session) divZeroErrors(stmt ast.StmtNode) bool {
	m := s.SQLMode()
	return m.HasErrorForDivisionByZeroMode() && m.HasStrictMode() && strictWrite(stmt, false)
}

// truncationErrors reports whether a value truncated in evaluation
// (warning 1292: '12abc' read as a number, an invalid date) fails stmt:
// in a strict mode, an INSERT, REPLACE, UPDATE or DELETE without IGNORE,
// as MySQL's strict mode makes those warnings errors.
func (s *Session) truncationErrors(stmt ast.StmtNode) bool {
	return s.SQLMode().HasStrictMode() && strictWrite(stmt, true)
}

// strictWrite reports whether stmt is a write without IGNORE that strict
// mode turns warnings into errors for: INSERT, REPLACE, UPDATE, and
// DELETE when del.
func strictWrite(stmt ast.StmtNode, del bool) bool {
	switch x := stmt.(type) {
	case *ast.InsertStmt:
		return !x.IgnoreErr
	case *ast.UpdateStmt:
		return !x.IgnoreErr
	case *ast.DeleteStmt:
		return del && !x.IgnoreErr
	}
	return false
}

// decideWarnings fixes, for the statement about to run, which of the
// conditions Warn receives fail it.
func (s *Session) decideWarnings(stmt ast.StmtNode) {
	s.divZeroErr.Store(s.divZeroErrors(stmt))
	s.truncErr.Store(s.truncationErrors(stmt))
}

// Warn implements expr.Warner for the running statement. Division by zero
// (1365): with ERROR_FOR_DIVISION_BY_ZERO, ERROR 1365 in a strict write
// (divZeroErrors), else warning 1365; without the mode the result is
// NULL and nothing is said, as in MySQL 8. Any other condition (1292
// truncations): an error in a strict write (truncationErrors), else a
// warning. Safe for the executor's parallel workers.
func (s *Session) Warn(code uint16, msg string) error {
	fails := s.truncErr.Load()
	if code == errno.ErrDivisionByZero {
		if !s.SQLMode().HasErrorForDivisionByZeroMode() {
			return nil
		}
		fails = s.divZeroErr.Load()
	}
	if fails {
		return errno.New(code, "%s", msg)
	}
	s.warnMu.Lock()
	if len(s.extraWarnings) < maxExtraWarnings {
		s.extraWarnings = append(s.extraWarnings, executor.Warning{Level: "Warning", Code: code, Msg: msg})
	}
	s.warnMu.Unlock()
	return nil
}
