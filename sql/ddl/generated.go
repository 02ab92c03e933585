package ddl

import (
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/model"
)

// Generated columns: the definition checks of MySQL 8 (the errors it
// raises, with their codes), on CREATE TABLE and ALTER TABLE ADD COLUMN.

// MySQL error codes of generated column definitions.
const (
	ErrGeneratedFunctionNotAllowed uint16 = 3102 // Expression of generated column '%s' contains a disallowed function.
	ErrPrimaryKeyOnVirtual         uint16 = 3103 // Defining a virtual generated column as primary key is not supported.
	ErrNonDefaultForGenerated      uint16 = 3105 // The value specified for generated column '%s' in table '%s' is not allowed.
	ErrUnsupportedOnGenerated      uint16 = 3106 // '%s' is not supported for generated columns.
	ErrGeneratedNonPrior           uint16 = 3107 // Generated column can refer only to generated columns defined prior to it.
	ErrDependentByGenerated        uint16 = 3108 // Column '%s' has a generated column dependency.
	ErrGeneratedRefAutoInc         uint16 = 3109 // Generated column '%s' cannot refer to auto-increment column.
	ErrGeneratedNamedFunction      uint16 = 3763 // Expression of generated column '%s' contains a disallowed function: %s.
	ErrWrongFKOptionForGenerated   uint16 = 3104 // Cannot define foreign key with %s clause on a generated column.
	ErrFKCannotUseVirtualColumn    uint16 = 3733 // Foreign key '%s' uses virtual column '%s' which is not supported.
)

// UnsupportedOnGenerated is ERROR 3106 for what.
func UnsupportedOnGenerated(what string) error {
	return errno.New(ErrUnsupportedOnGenerated, "'%s' is not supported for generated columns.", what)
}

// disallowedFuncs are the functions a generated column may not call:
// their value is not a function of the row (MySQL's non-deterministic and
// session functions).
var disallowedFuncs = map[string]bool{
	"rand": true, "uuid": true, "uuid_short": true, "now": true, "current_timestamp": true,
	"localtime": true, "localtimestamp": true, "sysdate": true, "curdate": true, "current_date": true,
	"curtime": true, "current_time": true, "utc_date": true, "utc_time": true, "utc_timestamp": true,
	"unix_timestamp": true, "connection_id": true, "current_user": true, "session_user": true,
	"system_user": true, "user": true, "current_role": true, "database": true, "schema": true,
	"last_insert_id": true, "found_rows": true, "row_count": true, "version": true, "sleep": true,
	"get_lock": true, "release_lock": true, "release_all_locks": true, "is_free_lock": true,
	"is_used_lock": true, "benchmark": true, "load_file": true, "values": true, "nextval": true,
	"lastval": true, "setval": true, "master_pos_wait": true, "source_pos_wait": true,
}

// genChecker walks a generated column's expression: the columns it reads
// and the first construct it may not contain.
type genChecker struct {
	col, table string
	deps       []string
	err        error
}

func (g *genChecker) Enter(n ast.Node) (ast.Node, bool) {
	if g.err != nil {
		return n, true
	}
	switch x := n.(type) {
	case *ast.ColumnNameExpr:
		// A qualifier may name the table itself only; the text leaves it
		// out (GeneratedText), so RENAME TABLE keeps the expression valid.
		if q := x.Name.Table.L; q != "" && q != strings.ToLower(g.table) {
			g.err = errno.New(errno.ErrBadField, "Unknown column '%s.%s' in 'generated column function'", x.Name.Table.O, x.Name.Name.O)
			return n, true
		}
		name := x.Name.Name.L
		if !slices.Contains(g.deps, name) {
			g.deps = append(g.deps, name)
		}
	case *ast.FuncCallExpr:
		if disallowedFuncs[x.FnName.L] {
			g.err = errno.New(ErrGeneratedNamedFunction, "Expression of generated column '%s' contains a disallowed function: %s.", g.col, x.FnName.L)
		}
	case *ast.SubqueryExpr, *ast.ExistsSubqueryExpr, *ast.VariableExpr, *ast.WindowFuncExpr, *ast.DefaultExpr:
		g.err = errno.New(ErrGeneratedFunctionNotAllowed, "Expression of generated column '%s' contains a disallowed function.", g.col)
	case *ast.AggregateFuncExpr:
		g.err = errno.New(1111, "Invalid use of group function")
	}
	return n, g.err != nil
}

func (g *genChecker) Leave(n ast.Node) (ast.Node, bool) { return n, g.err == nil }

// buildGenerated checks the expression of column name of table and
// returns its GeneratedInfo (the restored text and the columns it reads).
func buildGenerated(name, table string, n ast.ExprNode, stored bool) (*model.GeneratedInfo, error) {
	g := &genChecker{col: name, table: table}
	n.Accept(g)
	if g.err != nil {
		return nil, g.err
	}
	text, err := model.GeneratedText(n)
	if err != nil {
		return nil, errno.New(ErrGeneratedFunctionNotAllowed, "Expression of generated column '%s' contains a disallowed function.", name)
	}
	return &model.GeneratedInfo{Expr: text, Stored: stored, Deps: g.deps}, nil
}

// CheckGenerated checks the generated columns of t (its columns in their
// final order, Init run) against the table: each reads existing columns
// only (1054), a generated column only if defined before it (3107), no
// AUTO_INCREMENT column (3109), and compiles (its functions exist and
// take its arguments).
func CheckGenerated(t *model.TableInfo) error {
	for i, c := range t.Columns {
		if !c.IsGenerated() {
			continue
		}
		for _, d := range c.Generated.Deps {
			off := t.FindColumn(d)
			if off < 0 {
				return errno.New(errno.ErrBadField, "Unknown column '%s' in 'generated column function'", d)
			}
			dc := t.Columns[off]
			if dc.IsGenerated() && off >= i {
				return errno.New(ErrGeneratedNonPrior, "Generated column can refer only to generated columns defined prior to it.")
			}
			if dc.AutoIncrement {
				return errno.New(ErrGeneratedRefAutoInc, "Generated column '%s' cannot refer to auto-increment column.", c.Name)
			}
		}
		if _, err := model.CompileGenerated(t.Columns, c); err != nil {
			return err
		}
	}
	return nil
}

// checkDependents refuses to drop or rename column name of t while a
// generated column other than itself reads it (3108).
func checkDependents(t *model.TableInfo, name string) error {
	for _, g := range t.DependentGenerated(name) {
		if !strings.EqualFold(g.Name, name) {
			return errno.New(ErrDependentByGenerated, "Column '%s' has a generated column dependency.", name)
		}
	}
	return nil
}

// CheckGeneratedChange validates CHANGE / MODIFY / RENAME COLUMN from oc
// to nc (TiDB's rules): a column generated columns read keeps its name
// (3108) and its type (their values would go stale); a stored column (an
// ordinary or a STORED one) stays stored ("Changing the STORED status"):
// a STORED column may become an ordinary one, whose values the rows hold;
// a stored expression cannot change, nor can an ordinary column become
// STORED ("modifying a stored column"), nor the expression of an indexed
// VIRTUAL one ("modifying an indexed column"); the type of a STORED or
// indexed generated column changes only where no row is rewritten.
func CheckGeneratedChange(t *model.TableInfo, oc, nc *model.ColumnInfo) error {
	if !strings.EqualFold(oc.Name, nc.Name) {
		if err := checkDependents(t, oc.Name); err != nil {
			return err
		}
		if err := CheckRenameColumn(t, oc.Name); err != nil {
			return err
		}
	}
	if len(t.DependentGenerated(oc.Name)) > 0 && !oc.IsGenerated() && !sameType(oc, nc) {
		return UnsupportedOnGenerated("Changing the type of a column a generated column reads")
	}
	og, ng := oc.Generated, nc.Generated
	if og == nil && ng == nil {
		return nil
	}
	if oc.IsVirtual() != nc.IsVirtual() {
		return UnsupportedOnGenerated("Changing the STORED status")
	}
	var oexpr, nexpr string
	if og != nil {
		oexpr = og.Expr
	}
	if ng != nil {
		nexpr = ng.Expr
	}
	switch {
	case oexpr == nexpr:
		if !sameType(oc, nc) && (!oc.IsVirtual() || t.ColumnIndexed(oc.Offset)) && compatibleType(oc, nc) != nil {
			return UnsupportedOnGenerated("Changing the type of a stored or indexed generated column")
		}
	case ng == nil:
		// A STORED column made ordinary: the rows hold its values.
		if !sameType(oc, nc) && compatibleType(oc, nc) != nil {
			return UnsupportedOnGenerated("Changing the type of a stored or indexed generated column")
		}
	case !nc.IsVirtual():
		return UnsupportedOnGenerated("modifying a stored column")
	case t.ColumnIndexed(oc.Offset):
		return UnsupportedOnGenerated("modifying an indexed column")
	}
	return nil
}

// sameType reports whether oc and nc have the same type (flags aside).
func sameType(oc, nc *model.ColumnInfo) bool {
	a, b := oc.Type, nc.Type
	return a.Tp == b.Tp && a.Flen == b.Flen && a.Decimal == b.Decimal && a.Unsigned() == b.Unsigned() && a.Collation() == b.Collation()
}

// checkFKGenerated applies MySQL's rules to a FOREIGN KEY of t over
// generated columns: none may be VIRTUAL (3733), and a STORED one cannot
// be set by the key's actions (3104: ON UPDATE CASCADE, SET NULL).
func checkFKGenerated(t *model.TableInfo, fk *model.FKInfo) error {
	for _, col := range fk.Cols {
		c := t.Columns[t.FindColumn(col)]
		switch {
		case c.IsVirtual():
			return errFKVirtual(fkDisplayName(t, fk), c.Name)
		case !c.IsGenerated():
		case fk.OnUpdate == model.FKCascade:
			return errno.New(ErrWrongFKOptionForGenerated, "Cannot define foreign key with ON UPDATE CASCADE clause on a generated column.")
		case fk.OnUpdate == model.FKSetNull:
			return errno.New(ErrWrongFKOptionForGenerated, "Cannot define foreign key with ON UPDATE SET NULL clause on a generated column.")
		case fk.OnDelete == model.FKSetNull:
			return errno.New(ErrWrongFKOptionForGenerated, "Cannot define foreign key with ON DELETE SET NULL clause on a generated column.")
		}
	}
	return nil
}

func errFKVirtual(fk, col string) error {
	return errno.New(ErrFKCannotUseVirtualColumn, "Foreign key '%s' uses virtual column '%s' which is not supported.", fk, col)
}
