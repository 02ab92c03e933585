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
	if !m.HasErrorForDivisionByZeroMode() || !m.HasStrictMode() {
		return false
	}
	switch x := stmt.(type) {
	case *ast.InsertStmt:
		return !x.IgnoreErr
	case *ast.UpdateStmt:
		return !x.IgnoreErr
	}
	return false
}

// DivisionByZero implements expr.DivisionByZero for the running
// statement: with ERROR_FOR_DIVISION_BY_ZERO, ERROR 1365 in a strict
// write (divZeroErrors), else warning 1365; without the mode the result
// is NULL and nothing is said, as in MySQL 8. Safe for the executor's
// parallel workers.
func (s *Session) DivisionByZero() error {
	if !s.SQLMode().HasErrorForDivisionByZeroMode() {
		return nil
	}
	if s.divZeroErr.Load() {
		return errno.New(errno.ErrDivisionByZero, "Division by 0")
	}
	s.warnMu.Lock()
	if len(s.extraWarnings) < maxExtraWarnings {
		s.extraWarnings = append(s.extraWarnings, executor.Warning{Level: "Warning", Code: errno.ErrDivisionByZero, Msg: "Division by 0"})
	}
	s.warnMu.Unlock()
	return nil
}
