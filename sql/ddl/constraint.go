package ddl

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/types"
)

// CHECK constraints (MySQL 8.0.16+): the definition rules with MySQL's
// error codes, and the jobs of ALTER TABLE ADD CHECK, DROP CHECK /
// CONSTRAINT and ALTER CHECK / CONSTRAINT [NOT] ENFORCED.

// MySQL error codes of CHECK constraints.
const (
	ErrNonBooleanCheck        uint16 = 3812 // An expression of non-boolean type specified to a check constraint '%s'.
	ErrColumnCheckRefersOther uint16 = 3813 // Column check constraint '%s' references other column.
	ErrCheckNamedFunction     uint16 = 3814 // An expression of a check constraint '%s' contains disallowed function: %s.
	ErrCheckFunction          uint16 = 3815 // An expression of a check constraint '%s' contains disallowed function.
	ErrCheckVariables         uint16 = 3816 // An expression of a check constraint '%s' cannot refer to a user or system variable.
	ErrCheckRefersAutoInc     uint16 = 3818 // Check constraint '%s' cannot refer to an auto-increment column.
	ErrCheckViolated          uint16 = 3819 // Check constraint '%s' is violated.
	ErrCheckUnknownColumn     uint16 = 3820 // Check constraint '%s' refers to non-existing column '%s'.
	ErrCheckNotFound          uint16 = 3821 // Check constraint '%s' is not found in the table.
	ErrCheckDupName           uint16 = 3822 // Duplicate check constraint name '%s'.
	ErrCheckFKColumn          uint16 = 3823 // Column '%s' cannot be used in a check constraint '%s': needed in a foreign key constraint '%s' referential action.
	ErrConstraintNotFound     uint16 = 3940 // Constraint '%s' does not exist.
	ErrDependentByCheck       uint16 = 3959 // Check constraint '%s' uses column '%s', hence column cannot be dropped or renamed.
)

// CheckViolated is ERROR 3819 for the constraint named name.
func CheckViolated(name string) error {
	return errno.New(ErrCheckViolated, "Check constraint '%s' is violated.", name)
}

// ErrDupCheckName is ERROR 3822 (names are unique per database).
func ErrDupCheckName(name string) error {
	return errno.New(ErrCheckDupName, "Duplicate check constraint name '%s'.", name)
}

// CheckDef is a CHECK constraint as a statement gives it.
type CheckDef struct {
	Name     string // "" when the statement names none: <table>_chk_<n>
	Expr     ast.ExprNode
	Enforced bool
	// Column is the column of a column constraint (`c INT CHECK (...)`),
	// which may read that column only; "" for a table constraint.
	Column string
}

// boolFuncs are the functions whose value is a truth value, which a
// constraint may be (3812 for any other expression type).
var boolFuncs = map[string]bool{
	"json_valid": true, "json_contains": true, "json_contains_path": true, "json_overlaps": true,
	"json_schema_valid": true, "regexp_like": true, "isnull": true, "is_ipv4": true, "is_ipv6": true,
	"is_ipv4_compat": true, "is_ipv4_mapped": true, "is_uuid": true, "like": true, "ilike": true,
	"istrue": true, "isfalse": true, "not": true, "in": true,
}

// isBoolExpr reports whether n is of MySQL's boolean type: a comparison,
// a logical operator, IS / IN / BETWEEN / LIKE / REGEXP, TRUE or FALSE,
// or a function returning a truth value.
func isBoolExpr(n ast.ExprNode) bool {
	switch x := n.(type) {
	case *ast.ParenthesesExpr:
		return isBoolExpr(x.Expr)
	case *ast.BinaryOperationExpr:
		switch x.Op {
		case opcode.LogicAnd, opcode.LogicOr, opcode.LogicXor, opcode.EQ, opcode.NE, opcode.LT, opcode.LE,
			opcode.GT, opcode.GE, opcode.NullEQ:
			return true
		}
	case *ast.UnaryOperationExpr:
		return x.Op == opcode.Not || x.Op == opcode.Not2
	case *ast.IsNullExpr, *ast.IsTruthExpr, *ast.PatternInExpr, *ast.BetweenExpr, *ast.PatternLikeOrIlikeExpr,
		*ast.PatternRegexpExpr:
		return true
	case ast.ValueExpr:
		return x.GetType().GetFlag()&mysql.IsBooleanFlag != 0
	case *ast.FuncCallExpr:
		return boolFuncs[x.FnName.L]
	}
	return false
}

// checkWalker walks a constraint's expression: the columns it reads and
// the first construct it may not contain.
type checkWalker struct {
	name, table string
	deps        []string
	err         error
}

func (w *checkWalker) Enter(n ast.Node) (ast.Node, bool) {
	if w.err != nil {
		return n, true
	}
	switch x := n.(type) {
	case *ast.ColumnNameExpr:
		// A qualifier may name the table itself only; the text leaves it
		// out, so RENAME TABLE keeps the expression valid.
		if q := x.Name.Table.L; q != "" && q != strings.ToLower(w.table) {
			w.err = errno.New(errno.ErrBadField, "Unknown column '%s.%s' in 'check constraint %s expression'", x.Name.Table.O, x.Name.Name.O, w.name)
			return n, true
		}
		if !slices.Contains(w.deps, x.Name.Name.L) {
			w.deps = append(w.deps, x.Name.Name.L)
		}
	case *ast.FuncCallExpr:
		if disallowedFuncs[x.FnName.L] {
			w.err = errno.New(ErrCheckNamedFunction, "An expression of a check constraint '%s' contains disallowed function: %s.", w.name, x.FnName.L)
		}
	case *ast.DefaultExpr:
		w.err = errno.New(ErrCheckNamedFunction, "An expression of a check constraint '%s' contains disallowed function: default.", w.name)
	case *ast.VariableExpr:
		w.err = errno.New(ErrCheckVariables, "An expression of a check constraint '%s' cannot refer to a user or system variable.", w.name)
	case *ast.SubqueryExpr, *ast.ExistsSubqueryExpr, *ast.WindowFuncExpr, *ast.AggregateFuncExpr:
		w.err = errno.New(ErrCheckFunction, "An expression of a check constraint '%s' contains disallowed function.", w.name)
	}
	return n, w.err != nil
}

func (w *checkWalker) Leave(n ast.Node) (ast.Node, bool) { return n, w.err == nil }

// nextCheckName is the name MySQL gives t's next unnamed constraint:
// <table>_chk_<n>, n one above the largest such name t has.
func nextCheckName(t *model.TableInfo) string {
	prefix := strings.ToLower(t.Name) + "_chk_"
	n := 0
	for _, c := range t.Checks {
		if rest, ok := strings.CutPrefix(strings.ToLower(c.Name), prefix); ok {
			if v, err := strconv.Atoi(rest); err == nil && v > n {
				n = v
			}
		}
	}
	return t.Name + "_chk_" + strconv.Itoa(n+1)
}

// NewCheck validates constraint d against t (every column of t, Init
// run) and returns it (without an id), with MySQL's errors: 1059 for a
// name over 64 characters, 3822 for a name t has, 3816 for a variable,
// 3815 for a subquery, 3814 for a function whose value is not one of the
// row's (RAND, NOW, USER, ...), 3813 for a column constraint reading
// another column, 3820 (1054 in ALTER TABLE) for an unknown column, 3818
// for the AUTO_INCREMENT column, 3812 for an expression that is not a
// truth value, 3823 for a column a FOREIGN KEY's action changes.
func NewCheck(t *model.TableInfo, d CheckDef, alter bool) (*model.CheckInfo, error) {
	name := d.Name
	if name == "" {
		name = nextCheckName(t)
	}
	if len(name) > 64 {
		return nil, errno.New(1059, "Identifier name '%s' is too long", name)
	}
	if t.FindCheck(name) != nil {
		return nil, ErrDupCheckName(name)
	}
	w := &checkWalker{name: name, table: t.Name}
	d.Expr.Accept(w)
	if w.err != nil {
		return nil, w.err
	}
	for _, dep := range w.deps {
		if d.Column != "" && !strings.EqualFold(dep, d.Column) {
			return nil, errno.New(ErrColumnCheckRefersOther, "Column check constraint '%s' references other column.", name)
		}
		off := t.FindColumn(dep)
		if off < 0 {
			if alter {
				return nil, errno.New(errno.ErrBadField, "Unknown column '%s' in 'check constraint %s expression'", dep, name)
			}
			return nil, errno.New(ErrCheckUnknownColumn, "Check constraint '%s' refers to non-existing column '%s'.", name, dep)
		}
		if t.Columns[off].AutoIncrement {
			return nil, errno.New(ErrCheckRefersAutoInc, "Check constraint '%s' cannot refer to an auto-increment column.", name)
		}
	}
	if !isBoolExpr(d.Expr) {
		return nil, errno.New(ErrNonBooleanCheck, "An expression of non-boolean type specified to a check constraint '%s'.", name)
	}
	text, err := model.GeneratedText(d.Expr)
	if err != nil {
		return nil, errno.New(ErrCheckFunction, "An expression of a check constraint '%s' contains disallowed function.", name)
	}
	c := &model.CheckInfo{Name: name, Expr: text, Enforced: d.Enforced, Deps: w.deps}
	if err := checkFKActionColumns(t.ForeignKeys, c); err != nil {
		return nil, err
	}
	if _, err := model.CompileCheck(t.Columns, c); err != nil {
		return nil, err
	}
	return c, nil
}

// AddCheck appends c to t under a new id, keeping t's constraints ordered
// by name (t is re-initialised by the caller).
func AddCheck(t *model.TableInfo, c *model.CheckInfo) {
	t.MaxCheckID++
	c.ID = t.MaxCheckID
	t.Checks = append(t.Checks, c)
	t.SortChecks()
}

// modifiesColumn reports whether a FOREIGN KEY's action writes its
// columns (ON UPDATE CASCADE / SET NULL, ON DELETE SET NULL).
func modifiesColumn(fk *model.FKInfo) bool {
	return fk.OnUpdate == model.FKCascade || fk.OnUpdate == model.FKSetNull || fk.OnDelete == model.FKSetNull
}

// checkFKActionColumns is ERROR 3823 when constraint c reads a column a
// FOREIGN KEY's referential action writes (MySQL refuses both orders:
// the check after the key and the key after the check).
func checkFKActionColumns(fks []*model.FKInfo, c *model.CheckInfo) error {
	for _, fk := range fks {
		if !modifiesColumn(fk) {
			continue
		}
		for _, col := range fk.Cols {
			if c.Reads(col) {
				return errno.New(ErrCheckFKColumn, "Column '%s' cannot be used in a check constraint '%s': needed in a foreign key constraint '%s' referential action.", col, c.Name, fk.Name)
			}
		}
	}
	return nil
}

// CheckFKActions applies checkFKActionColumns to every constraint of t
// (after a FOREIGN KEY was added to it).
func CheckFKActions(t *model.TableInfo) error {
	for _, c := range t.Checks {
		if err := checkFKActionColumns(t.ForeignKeys, c); err != nil {
			return err
		}
	}
	return nil
}

// checkDropColumnChecks is MySQL 8.0.19's rule for DROP COLUMN (rename
// too: ok false): a constraint that reads the column and another one
// refuses it (3959); one that reads only it is dropped with it
// (dropped, for DROP COLUMN) or refuses a rename.
func checkDropColumnChecks(t *model.TableInfo, col string, drop bool) error {
	for _, c := range t.Checks {
		if c.Reads(col) && (!drop || len(c.Deps) > 1) {
			return errno.New(ErrDependentByCheck, "Check constraint '%s' uses column '%s', hence column cannot be dropped or renamed.", c.Name, col)
		}
	}
	return nil
}

// CheckRenameColumn refuses to rename column col of t while a CHECK
// constraint reads it (3959), as MySQL does.
func CheckRenameColumn(t *model.TableInfo, col string) error {
	return checkDropColumnChecks(t, col, false)
}

// dropColumnChecks removes the constraints of t that read column col
// alone (DROP COLUMN drops them with it).
func dropColumnChecks(t *model.TableInfo, col string) {
	t.Checks = slices.DeleteFunc(t.Checks, func(c *model.CheckInfo) bool { return c.Reads(col) })
}

// Check jobs.
//
// ADD CHECK of an enforced constraint: none -> write only (the
// constraint is in the table and every node's DML enforces it once it
// loaded the version) -> write reorganization (a version of its own) ->
// the rows are checked at a fresh snapshot -> public, or the constraint
// removed again (rollback done) with 3819.
// ALTER CHECK ... ENFORCED goes the same way, NOT ENFORCED again on a
// violation. A NOT ENFORCED ADD, ALTER ... NOT ENFORCED and DROP are one
// step.

// checkConstraintStep runs the job's next step (Job.Check: the constraint to add,
// or its name and the wanted enforcement for an alter; CheckRows: the
// rows are validated).
func (d *DDL) checkConstraintStep(ctx context.Context, j *Job) error {
	if j.SchemaState == SchemaNone {
		next, state := SchemaWriteOnly, model.StateWriteOnly
		if !j.CheckRows {
			next, state = SchemaPublic, model.StatePublic
		}
		return d.columnStep(ctx, j, func(t *model.TableInfo) error {
			switch j.Type {
			case ActionAddCheck:
				if t.FindCheck(j.Check.Name) != nil {
					return ErrDupCheckName(j.Check.Name)
				}
				for _, dep := range j.Check.Deps {
					if t.FindColumn(dep) < 0 {
						return errno.New(errno.ErrBadField, "Unknown column '%s' in 'check constraint %s expression'", dep, j.Check.Name)
					}
				}
				c := *j.Check
				c.State = state
				AddCheck(t, &c)
			case ActionAlterCheck:
				c := t.FindCheck(j.Check.Name)
				if c == nil {
					return errConstraintNotFound(j.Check.Name)
				}
				c.Enforced, c.State = j.Check.Enforced, state
			case ActionDropCheck:
				n := len(t.Checks)
				t.Checks = slices.DeleteFunc(t.Checks, func(c *model.CheckInfo) bool { return strings.EqualFold(c.Name, j.Check.Name) })
				if len(t.Checks) == n {
					return errConstraintNotFound(j.Check.Name)
				}
			}
			t.Init()
			return nil
		}, func() {
			j.State, j.SchemaState = StateRunning, next
			if next == SchemaPublic {
				j.State = StateDone
			}
		})
	}
	if j.SchemaState == SchemaWriteOnly {
		// A version of its own, as MODIFY COLUMN's checkStep: once every
		// node loaded it, no transaction that began before DML enforced
		// the constraint can commit (catalog.CheckCommit), so the rows
		// read next are all the rows it must check.
		return d.columnStep(ctx, j, func(t *model.TableInfo) error {
			if t.FindCheck(j.Check.Name) == nil {
				return errConstraintNotFound(j.Check.Name)
			}
			return nil
		}, func() { j.SchemaState = SchemaReorg })
	}
	bad, err := d.checkConstraintRows(ctx, j)
	if err != nil {
		return err
	}
	if bad != nil {
		d.log.Info(string(j.Type)+": a row violates the constraint", "job", j.ID, "table", j.TableName, "check", j.Check.Name)
		j.setErr(bad)
		return d.columnStep(ctx, j, func(t *model.TableInfo) error {
			if j.Type == ActionAddCheck {
				t.Checks = slices.DeleteFunc(t.Checks, func(c *model.CheckInfo) bool { return strings.EqualFold(c.Name, j.Check.Name) })
			} else if c := t.FindCheck(j.Check.Name); c != nil {
				c.Enforced, c.State = false, model.StatePublic
			}
			t.Init()
			return nil
		}, func() { j.State, j.SchemaState = StateRollbackDone, SchemaNone })
	}
	return d.columnStep(ctx, j, func(t *model.TableInfo) error {
		if c := t.FindCheck(j.Check.Name); c != nil {
			c.State = model.StatePublic
		}
		t.Init()
		return nil
	}, func() { j.State, j.SchemaState = StateDone, SchemaPublic })
}

func errConstraintNotFound(name string) error {
	return errno.New(ErrConstraintNotFound, "Constraint '%s' does not exist.", name)
}

// checkConstraintRows reads the rows of the job's table at a fresh
// snapshot and returns 3819 when one makes the job's constraint FALSE.
func (d *DDL) checkConstraintRows(ctx context.Context, j *Job) (bad error, err error) {
	t, _, err := d.table(ctx, j)
	if err != nil {
		return nil, err
	}
	c := t.FindCheck(j.Check.Name)
	if c == nil {
		return nil, errConstraintNotFound(j.Check.Name)
	}
	e, err := model.CompileCheck(t.Columns, c)
	if err != nil {
		return nil, err
	}
	txn, done, err := d.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	j.RowCount = 0
	err = scanRows(ctx, txn, t, func(row []types.Datum) error {
		j.RowCount++
		v, err := e.Eval(row)
		if err != nil {
			return err
		}
		if model.CheckFails(v) {
			bad = CheckViolated(c.Name)
			return errStopScan
		}
		return nil
	})
	if errors.Is(err, errStopScan) {
		err = nil
	}
	var coded errno.Coded
	if errors.As(err, &coded) { // the expression's own error on a row fails the ALTER
		return errno.FromError(err), nil
	}
	if err != nil {
		return nil, fmt.Errorf("%v: check rows: %w", j, err)
	}
	return bad, nil
}

// constraintWords start a table element that is not a column definition.
var constraintWords = map[string]bool{
	"CONSTRAINT": true, "CHECK": true, "PRIMARY": true, "UNIQUE": true, "KEY": true, "INDEX": true,
	"FOREIGN": true, "FULLTEXT": true, "SPATIAL": true, "VECTOR": true, "COLUMNAR": true,
}

// elementKinds returns, for the table elements of CREATE TABLE text in
// their order, whether each is a column definition (true) or a table
// constraint: the parser keeps the two apart, and MySQL numbers unnamed
// CHECK constraints in the order they appear across both. nil when the
// text cannot be read so.
func elementKinds(text string) []bool {
	var kinds []bool
	depth := 0
	start := -1 // the current element's start (depth 1)
	for i := 0; i < len(text); i++ {
		switch c := text[i]; c {
		case '\'', '"', '`':
			for i++; i < len(text) && text[i] != c; i++ {
				if text[i] == '\\' && c != '`' {
					i++
				}
			}
		case '#':
			for i < len(text) && text[i] != '\n' {
				i++
			}
		case '-':
			if strings.HasPrefix(text[i:], "-- ") {
				for i < len(text) && text[i] != '\n' {
					i++
				}
			}
		case '/':
			if strings.HasPrefix(text[i:], "/*") {
				if end := strings.Index(text[i+2:], "*/"); end >= 0 {
					i += end + 3
				} else {
					return nil
				}
			}
		case '(':
			depth++
			if depth == 1 {
				start = i + 1
			}
		case ')', ',':
			if depth == 1 {
				kinds = append(kinds, !constraintWords[strings.ToUpper(firstWord(text[start:i]))])
				start = i + 1
			}
			if c == ')' {
				if depth--; depth == 0 {
					return kinds
				}
			}
		}
	}
	return nil
}

// firstWord is the first run of letters, digits and _ of s after
// spaces and comments (a quoted name gives "").
func firstWord(s string) string {
	for {
		s = strings.TrimLeft(s, " \t\r\n")
		switch {
		case strings.HasPrefix(s, "#"), strings.HasPrefix(s, "-- "):
			if nl := strings.IndexByte(s, '\n'); nl >= 0 {
				s = s[nl+1:]
				continue
			}
			return ""
		case strings.HasPrefix(s, "/*"):
			if end := strings.Index(s, "*/"); end >= 0 {
				s = s[end+2:]
				continue
			}
			return ""
		}
		break
	}
	end := 0
	for end < len(s) && (s[end] == '_' || s[end] >= 'a' && s[end] <= 'z' || s[end] >= 'A' && s[end] <= 'Z' || s[end] >= '0' && s[end] <= '9') {
		end++
	}
	return s[:end]
}

// createChecks returns the CHECK constraints of a CREATE TABLE, in the
// order they appear (colChecks[i] are column i's).
func createChecks(x *ast.CreateTableStmt, colChecks [][]CheckDef) []CheckDef {
	var table []CheckDef
	for _, con := range x.Constraints {
		if con.Tp == ast.ConstraintCheck {
			table = append(table, CheckDef{Name: con.Name, Expr: con.Expr, Enforced: con.Enforced})
		}
	}
	var out []CheckDef
	kinds := elementKinds(x.Text())
	if nc := countTrue(kinds); kinds == nil || nc != len(x.Cols) || len(kinds)-nc != len(x.Constraints) {
		kinds = nil // columns first
		for range x.Cols {
			kinds = append(kinds, true)
		}
		for range x.Constraints {
			kinds = append(kinds, false)
		}
	}
	ci, ki := 0, 0
	for _, isCol := range kinds {
		if isCol {
			out = append(out, colChecks[ci]...)
			ci++
			continue
		}
		if x.Constraints[ki].Tp == ast.ConstraintCheck {
			out = append(out, table[0])
			table = table[1:]
		}
		ki++
	}
	return out
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// snapshot begins a read-only transaction at a fresh timestamp; done
// ends it.
func (d *DDL) snapshot(ctx context.Context) (txn kv.Txn, done func(), err error) {
	ts, err := d.store.GetTS(ctx)
	if err != nil {
		return nil, nil, err
	}
	if txn, err = d.store.Begin(ctx, kv.TxnOptions{ReadOnly: true, StartTS: ts}); err != nil {
		return nil, nil, err
	}
	return txn, func() { _ = txn.Rollback(context.WithoutCancel(ctx)) }, nil
}
