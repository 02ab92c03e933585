package model

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/types"
)

// CheckInfo is a CHECK constraint (MySQL 8.0.16+): `[CONSTRAINT [name]]
// CHECK (expr) [[NOT] ENFORCED]`, of a column or of the table (both are
// the table's: a column's may read that column only, which DDL checks).
//
// A row that makes an enforced constraint FALSE is refused (ERROR 3819);
// NULL passes. DML evaluates it on the row it writes, after its
// assignments and generated columns (TableInfo.ViolatedCheck).
type CheckInfo struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	// Expr is the expression in GeneratedText's canonical form, the text
	// SHOW CREATE TABLE prints inside CHECK (...) and information_schema's
	// CHECK_CLAUSE shows.
	Expr     string `json:"expr"`
	Enforced bool   `json:"enforced,omitempty"`
	// Deps are the lower-case names of the columns the expression reads.
	Deps []string `json:"deps,omitempty"`
	// State is write only while ALTER TABLE ADD CHECK or ALTER CHECK ...
	// ENFORCED checks the existing rows: DML enforces it already, but it
	// is not yet the table's (it is removed, or made NOT ENFORCED again,
	// when a row violates it).
	State SchemaState `json:"state,omitempty"`
}

// Reads reports whether c reads the named column.
func (c *CheckInfo) Reads(col string) bool { return slices.Contains(c.Deps, strings.ToLower(col)) }

// compiledCheck is an enforced CHECK compiled against the table's row
// layout.
type compiledCheck struct {
	name string
	e    expr.Expr
}

// FindCheck returns t's CHECK constraint of that name (names compare
// case-insensitively, accents count, as MySQL's), or nil.
func (t *TableInfo) FindCheck(name string) *CheckInfo {
	for _, c := range t.Checks {
		if strings.EqualFold(c.Name, name) {
			return c
		}
	}
	return nil
}

// SortChecks orders t's constraints by name, as MySQL's data dictionary
// keeps them (SHOW CREATE TABLE, information_schema and evaluation use
// that order).
func (t *TableInfo) SortChecks() {
	slices.SortStableFunc(t.Checks, func(a, b *CheckInfo) int {
		return strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name))
	})
}

// CompileCheck compiles c's expression against the row layout of cols
// (every column by offset, by name whatever its state).
func CompileCheck(cols []*ColumnInfo, c *CheckInfo) (expr.Expr, error) {
	n, err := ParseGeneratedExpr(c.Expr)
	if err != nil {
		return nil, err
	}
	schema := make([]expr.SchemaColumn, 0, len(cols))
	for _, col := range cols {
		schema = append(schema, expr.SchemaColumn{Name: col.Name, Type: col.Type})
	}
	return expr.Compile(n, &expr.Ctx{Columns: schema, Clause: "check constraint " + c.Name + " expression"})
}

// initChecks compiles the enforced constraints. A failure (which DDL
// validation prevents) is kept and reported by every write.
func (t *TableInfo) initChecks() {
	t.checks, t.checkErr = nil, nil
	for _, c := range t.Checks {
		if !c.Enforced {
			continue
		}
		e, err := CompileCheck(t.Columns, c)
		if err != nil {
			t.checkErr = fmt.Errorf("model: check constraint %s of %s: %w", c.Name, t.Name, err)
			return
		}
		t.checks = append(t.checks, compiledCheck{name: c.Name, e: e})
	}
}

// HasChecks reports whether DML must evaluate CHECK constraints on the
// rows it writes to t.
func (t *TableInfo) HasChecks() bool { return len(t.checks) > 0 || t.checkErr != nil }

// ViolatedCheck evaluates t's enforced CHECK constraints on row (the
// table's columns by offset, generated ones computed) and returns the
// name of the first one it makes FALSE ("" when none: TRUE and NULL
// pass). err is an evaluation error (the expression's own, such as a
// conversion in strict mode), which fails the write as MySQL's does.
func (t *TableInfo) ViolatedCheck(row []types.Datum) (name string, err error) {
	if t.checkErr != nil {
		return "", t.checkErr
	}
	for _, c := range t.checks {
		v, err := c.e.Eval(row)
		if err != nil {
			return "", err
		}
		if CheckFails(v) {
			return c.name, nil
		}
	}
	return "", nil
}

// CheckFails reports whether v, the value of a CHECK constraint's
// expression, is FALSE (NULL, UNKNOWN, passes).
func CheckFails(v types.Datum) bool {
	if v.IsNull() {
		return false
	}
	f, _ := types.ToFloat(v) // a string without a number is 0, as MySQL's
	return f == 0
}

// Clause is the constraint as SHOW CREATE TABLE prints it (MySQL 8's
// form: "CONSTRAINT `name` CHECK (expr)", NOT ENFORCED in a versioned
// comment).
func (c *CheckInfo) Clause() string {
	s := "CONSTRAINT " + quoteIdent(c.Name) + " CHECK (" + c.Expr + ")"
	if !c.Enforced {
		s += " /*!80016 NOT ENFORCED */"
	}
	return s
}
