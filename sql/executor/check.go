package executor

import (
	"context"
	"regexp"
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/stratadb/strata/sql/ddl"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/model"
)

// CHECK constraints: their enforcement on the rows DML writes, and the
// ALTER TABLE clauses that add, drop and alter them (package ddl runs the
// jobs and holds the definition rules).

// EnableCheckVar is TiDB's switch for CHECK constraints. Strata enforces
// them by default, as MySQL 8.0.16+ does; OFF (GLOBAL) makes CREATE TABLE
// drop the constraints it is given and ALTER TABLE ignore its CHECK
// clauses, each with warning 1105, as TiDB does. Rows are checked
// against the constraints a table has either way.
const EnableCheckVar = "tidb_enable_check_constraint"

// checksEnabled reports whether env's tidb_enable_check_constraint is on.
func checksEnabled(env expr.Env) bool {
	v, _, err := env.SysVar(EnableCheckVar, true)
	if err != nil {
		return true
	}
	ok, _ := expr.IsTrue(v)
	return ok
}

// checksOffWarning is the warning of a CHECK clause ignored because the
// switch is off.
var checksOffWarning = Warning{Level: "Warning", Code: errno.ErrUnknown, Msg: EnableCheckVar + " is off"}

// checkViolations counts the rows DML refused or skipped for a CHECK
// constraint.
var checkViolations = promauto.NewCounter(prometheus.CounterOpts{
	Namespace: "strata", Subsystem: "sql", Name: "check_constraint_violations_total",
	Help: "Rows a CHECK constraint refused (ERROR 3819, or warning 3819 under IGNORE).",
})

// checkRow is ERROR 3819 when row (tbl's columns by offset, generated
// ones computed) makes one of tbl's enforced CHECK constraints FALSE.
func checkRow(tbl *model.TableInfo, row []datum) error {
	if !tbl.HasChecks() {
		return nil
	}
	name, err := tbl.ViolatedCheck(row)
	if err != nil {
		return err
	}
	if name != "" {
		checkViolations.Inc()
		return ddl.CheckViolated(name)
	}
	return nil
}

// checkRowIgnore is checkRow for a statement that may IGNORE errors: under
// IGNORE a violation is warning 3819 on res and the row is skipped.
func checkRowIgnore(tbl *model.TableInfo, row []datum, ignore bool, res *Result) (skip bool, err error) {
	err = checkRow(tbl, row)
	if err == nil || !ignore {
		return false, err
	}
	if e := errno.FromError(err); e.Code == ddl.ErrCheckViolated {
		res.Warn(e.Code, e.Msg)
		return true, nil
	}
	return false, err
}

// stripChecks returns x without its CHECK constraints (the switch is
// off) and whether it had any; x is not modified.
func stripChecks(x *ast.CreateTableStmt) (*ast.CreateTableStmt, bool) {
	out := *x
	out.Cols = make([]*ast.ColumnDef, len(x.Cols))
	had := false
	for i, cd := range x.Cols {
		c := *cd
		c.Options = slices.DeleteFunc(slices.Clone(cd.Options), func(o *ast.ColumnOption) bool { return o.Tp == ast.ColumnOptionCheck })
		had = had || len(c.Options) != len(cd.Options)
		out.Cols[i] = &c
	}
	out.Constraints = slices.DeleteFunc(slices.Clone(x.Constraints), func(c *ast.Constraint) bool { return c.Tp == ast.ConstraintCheck })
	return &out, had || len(out.Constraints) != len(x.Constraints)
}

// withoutCheckClauses returns x without its CHECK clauses (the switch is
// off) and whether it had any; x is not modified.
func withoutCheckClauses(x *ast.AlterTableStmt) (*ast.AlterTableStmt, bool) {
	out := *x
	out.Specs = nil
	for _, sp := range x.Specs {
		if !isCheckClause(sp) {
			out.Specs = append(out.Specs, sp)
		}
	}
	return &out, len(out.Specs) != len(x.Specs)
}

// splitColumnChecks returns x with the CHECK options of the columns its
// ADD / CHANGE / MODIFY COLUMN clauses define as ADD CHECK clauses of
// their own (column constraints: they may read their column only), right
// after the clause: the column change is a job, then the constraint is
// added (and the rows checked) by its own, as splitColumnKeys does for
// keys. x is not modified.
func splitColumnChecks(x *ast.AlterTableStmt) *ast.AlterTableStmt {
	var out []*ast.AlterTableSpec
	split := false
	for _, sp := range x.Specs {
		switch sp.Tp {
		case ast.AlterTableAddColumns, ast.AlterTableChangeColumn, ast.AlterTableModifyColumn:
		default:
			out = append(out, sp)
			continue
		}
		ns := *sp
		ns.NewColumns = make([]*ast.ColumnDef, len(sp.NewColumns))
		var checks []*ast.AlterTableSpec
		for i, cd := range sp.NewColumns {
			c := *cd
			c.Options = nil
			for _, o := range cd.Options {
				if o.Tp != ast.ColumnOptionCheck {
					c.Options = append(c.Options, o)
					continue
				}
				checks = append(checks, &ast.AlterTableSpec{Tp: ast.AlterTableAddConstraint, Constraint: &ast.Constraint{
					Tp: ast.ConstraintCheck, Name: o.ConstraintName, Expr: o.Expr, Enforced: o.Enforced,
					InColumn: true, InColumnName: cd.Name.Name.O}})
			}
			ns.NewColumns[i] = &c
		}
		if len(checks) == 0 {
			out = append(out, sp)
			continue
		}
		split = true
		out = append(append(out, &ns), checks...)
	}
	if !split {
		return x
	}
	nx := *x
	nx.Specs = out
	return &nx
}

// checkDef is the constraint an ALTER TABLE ADD [CONSTRAINT] CHECK clause
// (or a column's CHECK, splitColumnChecks) defines.
func checkDef(c *ast.Constraint) ddl.CheckDef {
	d := ddl.CheckDef{Name: c.Name, Expr: c.Expr, Enforced: c.Enforced}
	if c.InColumn {
		d.Column = c.InColumnName
	}
	return d
}

// checkSchemaNames is ERROR 3822 when another table of db has a CHECK
// constraint named as one of t's: MySQL's names are unique per database.
func (e *Executor) checkSchemaNames(ctx context.Context, db *model.DBInfo, t *model.TableInfo, names []string) error {
	if len(names) == 0 {
		return nil
	}
	tables, err := e.dom.Catalog().ListTables(ctx, db)
	if err != nil {
		return err
	}
	for _, other := range tables {
		if strings.EqualFold(other.Name, t.Name) {
			continue
		}
		for _, n := range names {
			if other.FindCheck(n) != nil {
				return ddl.ErrDupCheckName(n)
			}
		}
	}
	return nil
}

func checkNames(cs []*model.CheckInfo) []string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return names
}

// checkClauseKeyword tells, for a DROP / ALTER clause naming name in an
// ALTER TABLE's text, whether it said CHECK (true) or CONSTRAINT: the
// parser gives both the same clause, MySQL's errors differ.
func checkClauseKeyword(text, name string) bool {
	re, err := regexp.Compile("(?is)\\b(?:DROP|ALTER)\\s+(CHECK|CONSTRAINT)\\s+`?" + regexp.QuoteMeta(name) + "`?(?:[\\s,;]|$)")
	if err != nil {
		return false
	}
	m := re.FindStringSubmatch(text)
	return m != nil && strings.EqualFold(m[1], "CHECK")
}

// errCheckClauseNotFound is the error of a DROP / ALTER clause naming no
// constraint of t: 3821 after CHECK, 3940 after CONSTRAINT.
func errCheckClauseNotFound(text, name string) error {
	if checkClauseKeyword(text, name) {
		return errno.New(ddl.ErrCheckNotFound, "Check constraint '%s' is not found in the table.", name)
	}
	return errno.New(ddl.ErrConstraintNotFound, "Constraint '%s' does not exist.", name)
}

// simulateCheckClause applies an ADD CHECK / DROP / ALTER CHECK clause to
// sim (checkAlter's copy of the table), with the errors its job would
// end with. handled is false for other clauses.
func (e *Executor) simulateCheckClause(ctx context.Context, db *model.DBInfo, sim *model.TableInfo, x *ast.AlterTableStmt, sp *ast.AlterTableSpec) (handled bool, err error) {
	switch {
	case sp.Tp == ast.AlterTableAddConstraint && sp.Constraint.Tp == ast.ConstraintCheck:
		c, err := ddl.NewCheck(sim, checkDef(sp.Constraint), true)
		if err != nil {
			return true, err
		}
		if err := e.checkSchemaNames(ctx, db, sim, []string{c.Name}); err != nil {
			return true, err
		}
		ddl.AddCheck(sim, c)
		sim.Init()
		sp.Constraint.Name = c.Name // the job adds it under this name
		return true, nil
	case sp.Tp == ast.AlterTableDropCheck:
		name := sp.Constraint.Name
		if sim.FindCheck(name) != nil {
			sim.Checks = slices.DeleteFunc(sim.Checks, func(c *model.CheckInfo) bool { return strings.EqualFold(c.Name, name) })
			sim.Init()
			return true, nil
		}
		if !checkClauseKeyword(x.Text(), name) { // DROP CONSTRAINT of a key
			if sim.FindFK(name) != nil {
				sim.ForeignKeys = slices.DeleteFunc(sim.ForeignKeys, func(fk *model.FKInfo) bool { return strings.EqualFold(fk.Name, name) })
				return true, nil
			}
			if ix := sim.FindIndex(name); ix != nil && ix.Unique && !ix.Primary {
				sim.Indices = slices.DeleteFunc(sim.Indices, func(x *model.IndexInfo) bool { return x == ix })
				return true, nil
			}
		}
		return true, errCheckClauseNotFound(x.Text(), name)
	case sp.Tp == ast.AlterTableAlterCheck:
		c := sim.FindCheck(sp.Constraint.Name)
		if c == nil {
			return true, errCheckClauseNotFound(x.Text(), sp.Constraint.Name)
		}
		c.Enforced = sp.Constraint.Enforced
		sim.Init()
		return true, nil
	}
	return false, nil
}

// runCheckClause submits the job of an ADD CHECK / DROP / ALTER CHECK
// clause (checkAlter validated it). A DROP CONSTRAINT naming a FOREIGN
// KEY or UNIQUE index drops that, as MySQL does.
func (e *Executor) runCheckClause(ctx context.Context, env StmtEnv, x *ast.AlterTableStmt, sp *ast.AlterTableSpec) error {
	db, t, err := e.alterTarget(ctx, env, x.Table)
	if err != nil {
		return err
	}
	job := &ddl.Job{SchemaID: db.ID, SchemaName: db.Name, TableID: t.ID, TableName: t.Name}
	switch sp.Tp {
	case ast.AlterTableAddConstraint:
		c, err := ddl.NewCheck(t, checkDef(sp.Constraint), true)
		if err != nil {
			return err
		}
		job.Type, job.Check, job.CheckRows = ddl.ActionAddCheck, c, c.Enforced
	case ast.AlterTableDropCheck:
		name := sp.Constraint.Name
		if t.FindCheck(name) == nil {
			if t.FindFK(name) != nil {
				return e.dropForeignKey(ctx, env, x, name)
			}
			if ix := t.FindIndex(name); ix != nil && ix.Unique && !ix.Primary {
				return e.dropIndex(ctx, env, x, x.Table, ix.Name, false)
			}
			return errCheckClauseNotFound(x.Text(), name)
		}
		job.Type, job.Check = ddl.ActionDropCheck, &model.CheckInfo{Name: t.FindCheck(name).Name}
	case ast.AlterTableAlterCheck:
		c := t.FindCheck(sp.Constraint.Name)
		if c == nil {
			return errCheckClauseNotFound(x.Text(), sp.Constraint.Name)
		}
		if c.Enforced == sp.Constraint.Enforced {
			return nil // nothing changes
		}
		job.Type, job.Check = ddl.ActionAlterCheck, &model.CheckInfo{Name: c.Name, Enforced: sp.Constraint.Enforced}
		job.CheckRows = sp.Constraint.Enforced
	}
	return e.submitDDL(ctx, x, job)
}

// isCheckClause reports whether sp adds, drops or alters a CHECK
// constraint.
func isCheckClause(sp *ast.AlterTableSpec) bool {
	switch sp.Tp {
	case ast.AlterTableAddConstraint:
		return sp.Constraint.Tp == ast.ConstraintCheck
	case ast.AlterTableDropCheck, ast.AlterTableAlterCheck:
		return true
	}
	return false
}
