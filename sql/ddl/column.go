package ddl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/types"
)

// Column changes: the statement side validates against the table and
// builds the job (pure functions, unit-tested); the owner side runs the
// job's steps.

// MySQL error codes of column changes.
const (
	errCantRemoveAllFields uint16 = 1090 // You can't delete all columns with ALTER TABLE
	errCantDropField       uint16 = 1091 // Can't DROP '%s'; check that column/key exists
)

// ColumnPosition is where ADD / CHANGE / MODIFY COLUMN puts a column:
// last (the zero value), first, or after the named column.
type ColumnPosition struct {
	First bool   `json:"first,omitempty"`
	After string `json:"after,omitempty"`
}

// PositionOf converts a parsed column position (nil: last).
func PositionOf(p *ast.ColumnPosition) ColumnPosition { return positionOf(p) }

func positionOf(p *ast.ColumnPosition) ColumnPosition {
	if p == nil {
		return ColumnPosition{}
	}
	switch p.Tp {
	case ast.ColumnPositionFirst:
		return ColumnPosition{First: true}
	case ast.ColumnPositionAfter:
		return ColumnPosition{After: p.RelativeColumn.Name.O}
	}
	return ColumnPosition{}
}

// errUnknownColumn is MySQL's 1054 for a column an ALTER names.
func errUnknownColumn(name, table string) error {
	return errno.New(errno.ErrBadField, "Unknown column '%s' in '%s'", name, table)
}

func errDupColumn(name string) error {
	return errno.New(errno.ErrDupFieldName, "Duplicate column name '%s'", name)
}

// NewColumns validates ADD COLUMN definitions (in statement order, each
// seeing the ones before it) against t and returns the columns, with ids
// from t's next one, each with its origin default (its default, the
// statement's time for DEFAULT CURRENT_TIMESTAMP, or MySQL's implicit
// value for a NOT NULL column without one), and their positions.
func NewColumns(t *model.TableInfo, defs []*ast.ColumnDef, pos []*ast.ColumnPosition, env expr.Env) ([]*model.ColumnInfo, []ColumnPosition, error) {
	names := map[string]bool{}
	for _, c := range t.Columns {
		names[strings.ToLower(c.Name)] = true
	}
	for _, c := range t.NonPublic {
		names[strings.ToLower(c.Name)] = true
	}
	id := t.NextColumnID()
	cols := make([]*model.ColumnInfo, 0, len(defs))
	poss := make([]ColumnPosition, 0, len(defs))
	for i, cd := range defs {
		c, o, err := buildColumn(cd, t.Name, id+int64(i), TableCollation(t), env)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case o.pk:
			return nil, nil, errno.NotSupported("ADD COLUMN ... PRIMARY KEY")
		case o.unique:
			return nil, nil, errno.NotSupported("ADD COLUMN ... UNIQUE (add the column, then ADD UNIQUE INDEX)")
		case c.AutoIncrement:
			return nil, nil, errno.NotSupported("ADD COLUMN ... AUTO_INCREMENT")
		case len(o.checks) > 0:
			return nil, nil, errno.NotSupported("ADD COLUMN ... CHECK (add the column, then ADD CHECK)")
		case c.IsGenerated() && c.Generated.Stored:
			// MySQL rebuilds the table; TiDB refuses, as here.
			return nil, nil, UnsupportedOnGenerated("Adding generated stored column through ALTER TABLE")
		}
		if names[strings.ToLower(c.Name)] {
			return nil, nil, errDupColumn(c.Name)
		}
		p := positionOf(pos[i])
		if p.After != "" && !names[strings.ToLower(p.After)] {
			return nil, nil, errUnknownColumn(p.After, t.Name)
		}
		names[strings.ToLower(c.Name)] = true
		var now time.Time
		if c.DefaultNow {
			now = expr.ColumnNow(env, c.Type)
		}
		if !c.IsGenerated() {
			c.Origin = originOf(c, now) // a virtual column is computed, never stored
		}
		cols, poss = append(cols, c), append(poss, p)
	}
	return cols, poss, nil
}

// originOf is the origin default of a column being added: the value the
// table's existing rows read as.
func originOf(c *model.ColumnInfo, now time.Time) *model.OriginDefault {
	switch {
	case c.DefaultNow:
		return &model.OriginDefault{Value: types.FormatTime(now, c.Type.Tp, c.Type.Decimal)}
	case c.HasDefault && c.DefaultNull:
		return &model.OriginDefault{Null: true}
	case c.HasDefault:
		return &model.OriginDefault{Value: c.Default}
	case c.Type.NotNull():
		return &model.OriginDefault{Value: implicitDefault(c.Type)}
	}
	return &model.OriginDefault{Null: true}
}

// implicitDefault is MySQL's implicit default of a NOT NULL column without
// DEFAULT, in canonical text: 0, the empty string, the first ENUM value,
// the zero date.
func implicitDefault(ft types.FieldType) string {
	switch ft.Class() {
	case types.ClassInt, types.ClassFloat, types.ClassDecimal:
		return "0"
	case types.ClassTime:
		switch ft.Tp {
		case mysql.TypeDate:
			return "0000-00-00"
		case mysql.TypeDuration:
			return "00:00:00"
		}
		return "0000-00-00 00:00:00"
	}
	if ft.Tp == mysql.TypeEnum && len(ft.Elems) > 0 {
		return ft.Elems[0]
	}
	return ""
}

// CheckDropColumn validates DROP COLUMN name against t: 1091 when it does
// not exist, 1090 for the last column, 1235 for a column of the PRIMARY
// KEY or of an index with other columns (MySQL would shorten the index,
// which needs a rebuild). A single-column index of the column is dropped
// with it, as MySQL does.
func CheckDropColumn(t *model.TableInfo, name string) error {
	off := t.FindColumn(name)
	if off < 0 {
		return errno.New(errCantDropField, "Can't DROP '%s'; check that column/key exists", name)
	}
	if len(t.Columns) == 1 {
		return errno.New(errCantRemoveAllFields, "You can't delete all columns with ALTER TABLE; use DROP TABLE instead")
	}
	c := t.Columns[off]
	if c.IsPrimaryKey() {
		return errno.NotSupported("dropping a column of the PRIMARY KEY")
	}
	if err := checkDependents(t, c.Name); err != nil {
		return err
	}
	if err := checkDropColumnChecks(t, c.Name, true); err != nil {
		return err
	}
	for _, ix := range t.Indices {
		for _, ic := range ix.Columns {
			if ic.Offset == off && len(ix.Columns) > 1 {
				return errno.NotSupported("dropping column '" + c.Name + "' of the multi-column index '" + ix.Name + "' (drop the index first)")
			}
		}
	}
	return nil
}

// CheckColumnName reports 1166 for a name no column may have.
func CheckColumnName(name string) error {
	if name == "" || len(name) > 64 || strings.HasSuffix(name, " ") {
		return errno.New(1166, "Incorrect column name '%s'", name)
	}
	if strings.EqualFold(name, model.HandleColumnName) {
		return errno.New(errno.ErrWrongFieldSpec, "Incorrect column name '%s': the name is reserved for the hidden row handle", name)
	}
	return nil
}

// AlterDefault validates ALTER COLUMN c SET DEFAULT v / DROP DEFAULT (cd
// holds the column name and the DEFAULT option, none for DROP DEFAULT)
// and returns the column as it will be. Rows that lack the column keep
// reading its origin default.
func AlterDefault(t *model.TableInfo, cd *ast.ColumnDef, env expr.Env) (*model.ColumnInfo, error) {
	off := t.FindColumn(cd.Name.Name.O)
	if off < 0 {
		return nil, errUnknownColumn(cd.Name.Name.O, t.Name)
	}
	c := *t.Columns[off]
	if c.IsGenerated() && len(cd.Options) > 0 && cd.Options[0].Expr != nil {
		return nil, UnsupportedOnGenerated("Specified a default value")
	}
	c.HasDefault, c.DefaultNull, c.Default, c.DefaultNow = false, false, "", false
	// The parser gives SET DEFAULT's value as an option without a type
	// (TiDB reads Options[0]); DROP DEFAULT has none.
	if len(cd.Options) > 0 && cd.Options[0].Expr != nil {
		if err := setDefault(&c, cd.Options[0].Expr, env); err != nil {
			return nil, err
		}
	}
	if c.IsPrimaryKey() && c.HasDefault && c.DefaultNull {
		return nil, errno.New(errno.ErrInvalidDefault, "Invalid default value for '%s'", c.Name)
	}
	return &c, nil
}

// removeColumn removes public column off, its single-column indexes and
// the CHECK constraints that read it alone from t (not re-initialised)
// and returns it.
func removeColumn(t *model.TableInfo, off int) *model.ColumnInfo {
	c := t.Columns[off]
	var kept []*model.IndexInfo
	for _, ix := range t.Indices {
		if !(len(ix.Columns) == 1 && ix.Columns[0].Offset == off) {
			kept = append(kept, ix)
		}
	}
	t.Indices = kept
	dropColumnChecks(t, c.Name) // the ones reading it alone (CheckDropColumn)
	t.Columns = append(t.Columns[:off:off], t.Columns[off+1:]...)
	return c
}

// SimulateAddColumns applies validated ADD COLUMN results to t (a Clone)
// as if they were public: to check the clauses of an ALTER that follow.
func SimulateAddColumns(t *model.TableInfo, cols []*model.ColumnInfo, pos []ColumnPosition) {
	applyAddColumns(t, &Job{Columns: cols, Positions: pos}, model.StatePublic)
}

// SimulateDropColumn removes a validated DROP COLUMN's column and its
// single-column indexes from t (a Clone).
func SimulateDropColumn(t *model.TableInfo, name string) {
	removeColumn(t, t.FindColumn(name))
	relayout(t)
}

// SimulateModifyColumn replaces column old of t (a Clone) by nc at pos.
func SimulateModifyColumn(t *model.TableInfo, old string, nc *model.ColumnInfo, pos ColumnPosition) error {
	return replaceColumn(t, old, nc, pos)
}

// columnIndexes returns the indexes of t that are over column off alone.
func columnIndexes(t *model.TableInfo, off int) []*model.IndexInfo {
	var out []*model.IndexInfo
	for _, ix := range t.Indices {
		if len(ix.Columns) == 1 && ix.Columns[0].Offset == off {
			out = append(out, ix)
		}
	}
	return out
}

// ModifyColumn validates CHANGE / MODIFY COLUMN (from the column named
// old to the definition nc) and ALTER COLUMN, and returns the column as it
// will be. Changes that need no row rewrite are one step: a rename,
// the default, NULL allowed, a wider VARCHAR/VARBINARY, a CHAR made longer
// or a VARCHAR, or a wider integer of the same signedness; a narrower
// integer, VARCHAR or CHAR and NOT NULL on a nullable column have the job
// check every row (NeedsCheck); other type changes rewrite every row
// (NeedsRewrite, reorgcolumn.go), refused for a PRIMARY KEY column
// (8200, as TiDB) and to or from JSON (1235).
func ModifyColumn(t *model.TableInfo, old string, cd *ast.ColumnDef, env expr.Env) (*model.ColumnInfo, error) {
	off := t.FindColumn(old)
	if off < 0 {
		return nil, errUnknownColumn(old, t.Name)
	}
	oc := t.Columns[off]
	nc, o, err := buildColumn(cd, t.Name, oc.ID, TableCollation(t), env)
	if err != nil {
		return nil, err
	}
	if o.pk || o.unique {
		return nil, errno.NotSupported("CHANGE / MODIFY COLUMN ... PRIMARY KEY / UNIQUE")
	}
	if len(o.checks) > 0 {
		return nil, errno.NotSupported("CHANGE / MODIFY COLUMN ... CHECK (use ADD CHECK)")
	}
	if !strings.EqualFold(nc.Name, oc.Name) && t.FindColumn(nc.Name) >= 0 {
		return nil, errDupColumn(nc.Name)
	}
	if nc.AutoIncrement != oc.AutoIncrement {
		return nil, errno.NotSupported("changing AUTO_INCREMENT with CHANGE / MODIFY COLUMN")
	}
	if err := CheckGeneratedChange(t, oc, nc); err != nil {
		return nil, err
	}
	for _, ix := range t.Indices {
		for _, ic := range ix.Columns {
			if ic.Offset == off {
				if _, err := refitKeyPart(nc, ic.Length); err != nil {
					return nil, err
				}
			}
		}
	}
	// The key flags stay: the column keeps its place in keys.
	keep := oc.Type.Flag & (mysql.PriKeyFlag | mysql.AutoIncrementFlag)
	nc.Type.Flag |= keep
	if oc.IsPrimaryKey() {
		nc.Type.Flag |= mysql.NotNullFlag
	}
	if NeedsRewrite(t, oc, nc) {
		// The job rewrites every row (reorgcolumn.go).
		if err := checkRewrite(t, oc, nc); err != nil {
			return nil, err
		}
	}
	nc.Origin = oc.Origin
	return nc, nil
}

// compatibleType checks that rows of column oc decode unchanged as nc
// (NULL allowed or not and narrowing aside: NeedsCheck).
func compatibleType(oc, nc *model.ColumnInfo) error {
	of, nf := oc.Type, nc.Type
	if of.Tp == nf.Tp && of.Unsigned() == nf.Unsigned() && of.Flen == nf.Flen && of.Decimal == nf.Decimal &&
		of.Binary() == nf.Binary() && strings.Join(of.Elems, ",") == strings.Join(nf.Elems, ",") {
		return nil
	}
	ocl, ncl := of.Class(), nf.Class()
	switch {
	case ocl == types.ClassInt && ncl == types.ClassInt && of.Tp != mysql.TypeBit && nf.Tp != mysql.TypeBit &&
		of.Tp != mysql.TypeYear && nf.Tp != mysql.TypeYear:
		if of.Unsigned() != nf.Unsigned() {
			return errno.NotSupported("changing the signedness of an integer column")
		}
		return nil // narrowing: the job checks the rows (NeedsCheck)
	case isVarString(of.Tp) && isVarString(nf.Tp) && of.Binary() == nf.Binary():
		return nil
	case of.Tp == mysql.TypeString && !of.Binary() && !nf.Binary() && (nf.Tp == mysql.TypeString || isVarString(nf.Tp)):
		// CHAR values are stored without their trailing spaces (sql/types),
		// which is what a longer CHAR or a VARCHAR holds of them too.
		return nil
	}
	return errno.NotSupported("changing column '" + oc.Name + "' from " + of.SQLName() + " to " + nf.SQLName() + " (it would rewrite every row)")
}

// NeedsCheck reports whether changing column oc to nc (compatibleType
// allowed it) makes it NOT NULL or narrower: the job must check that
// every row fits (Job.CheckRows).
func NeedsCheck(oc, nc *model.ColumnInfo) bool {
	of, nf := oc.Type, nc.Type
	switch {
	case nf.NotNull() && !of.NotNull():
		return true
	case of.Class() == types.ClassInt && nf.Class() == types.ClassInt:
		return intRank(nf.Tp) < intRank(of.Tp)
	case (isVarString(of.Tp) || of.Tp == mysql.TypeString) && (isVarString(nf.Tp) || nf.Tp == mysql.TypeString):
		return nf.Flen < of.Flen
	}
	return false
}

func intRank(tp byte) int {
	switch tp {
	case mysql.TypeTiny:
		return 1
	case mysql.TypeShort:
		return 2
	case mysql.TypeInt24:
		return 3
	case mysql.TypeLong:
		return 4
	}
	return 5 // BIGINT
}

// isVarString: a string type whose values are stored as given (VARCHAR,
// VARBINARY; CHAR and BINARY are padded on read, so only CHAR→CHAR).
func isVarString(tp byte) bool { return tp == mysql.TypeVarchar || tp == mysql.TypeVarString }

// placeColumn inserts c into cols at p (after the named column, first, or
// last).
func placeColumn(cols []*model.ColumnInfo, c *model.ColumnInfo, p ColumnPosition) []*model.ColumnInfo {
	at := len(cols)
	switch {
	case p.First:
		at = 0
	case p.After != "":
		for i, x := range cols {
			if strings.EqualFold(x.Name, p.After) {
				at = i + 1
				break
			}
		}
	}
	cols = append(cols, nil)
	copy(cols[at+1:], cols[at:])
	cols[at] = c
	return cols
}

// relayout recomputes the offsets t keeps by column (the handle, the
// AUTO_INCREMENT column) after its columns moved; index offsets follow
// their columns' names in Init.
func relayout(t *model.TableInfo) {
	t.HandleOffset, t.AutoIncOffset = -1, -1
	for i, c := range t.Columns {
		if t.PKIsHandle && c.IsPrimaryKey() {
			t.HandleOffset = i
		}
		if c.AutoIncrement {
			t.AutoIncOffset = i
		}
	}
	t.Init()
}

// applyAddColumns adds j's columns to t in state st: in NonPublic while
// they are not public, in Columns at their positions once they are.
func applyAddColumns(t *model.TableInfo, j *Job, st model.SchemaState) {
	ids := map[int64]bool{}
	for _, c := range j.Columns {
		ids[c.ID] = true
		t.MaxColumnID = max(t.MaxColumnID, c.ID)
	}
	np := t.NonPublic[:0:0]
	for _, c := range t.NonPublic {
		if !ids[c.ID] {
			np = append(np, c)
		}
	}
	t.NonPublic = np
	for i, c := range j.Columns {
		cc := *c
		cc.State = st
		if st == model.StatePublic {
			t.Columns = placeColumn(t.Columns, &cc, j.Positions[i])
		} else {
			t.NonPublic = append(t.NonPublic, &cc)
		}
	}
	if len(t.NonPublic) == 0 {
		t.NonPublic = nil
	}
	relayout(t)
}

// removeNonPublic removes the non-public columns with the given ids.
func removeNonPublic(t *model.TableInfo, ids ...int64) {
	var np []*model.ColumnInfo
	for _, c := range t.NonPublic {
		keep := true
		for _, id := range ids {
			keep = keep && c.ID != id
		}
		if keep {
			np = append(np, c)
		}
	}
	t.NonPublic = np
	t.Init()
}

// columnStep publishes a change of the job's table, built by change on a
// clone, with the job updated by update, as one compatible schema version.
func (d *DDL) columnStep(ctx context.Context, j *Job, change func(t *model.TableInfo) error, update func()) error {
	return d.columnStepAs(ctx, j, true, change, update)
}

// columnStepAs is columnStep, publishing an incompatible version when
// compatible is false (catalog.ReplaceTable).
func (d *DDL) columnStepAs(ctx context.Context, j *Job, compatible bool, change func(t *model.TableInfo) error, update func()) error {
	t, db, err := d.table(ctx, j)
	if err != nil {
		return err
	}
	nt := t.Clone()
	if err := change(nt); err != nil {
		return err
	}
	j.TableID = t.ID
	saved := *j
	update()
	publish := d.cat.UpdateTable
	if !compatible {
		publish = d.cat.ReplaceTable
	}
	if err := publish(ctx, db, nt, d.jobStep(ctx, j)); err != nil {
		*j = saved
		return err
	}
	d.log.Info(string(j.Type)+": "+j.SchemaState, "job", j.ID, "table", j.TableName, "column", j.columnNames(), "state", j.State, "version", j.Version)
	return nil
}

func (j *Job) columnNames() string {
	if j.ColumnName != "" {
		return j.ColumnName
	}
	names := make([]string, len(j.Columns))
	for i, c := range j.Columns {
		names[i] = c.Name
	}
	return strings.Join(names, ",")
}

// addColumnStep moves an ADD COLUMN job's columns to the next state:
// none -> delete only -> write only -> public.
func (d *DDL) addColumnStep(ctx context.Context, j *Job) error {
	var st model.SchemaState
	var next string
	switch j.SchemaState {
	case SchemaNone:
		st, next = model.StateDeleteOnly, SchemaDeleteOnly
	case SchemaDeleteOnly:
		st, next = model.StateWriteOnly, SchemaWriteOnly
	default:
		st, next = model.StatePublic, SchemaPublic
	}
	return d.columnStep(ctx, j, func(t *model.TableInfo) error {
		if j.SchemaState == SchemaNone {
			// Checked again: the statement validated an older version.
			for _, c := range j.Columns {
				if t.FindColumn(c.Name) >= 0 {
					return errDupColumn(c.Name)
				}
			}
			for i, p := range j.Positions {
				if p.After != "" && t.FindColumn(p.After) < 0 && !addedBefore(j, i, p.After) {
					return errUnknownColumn(p.After, t.Name)
				}
			}
			if next := t.NextColumnID(); j.Columns[0].ID < next {
				for i, c := range j.Columns {
					c.ID = next + int64(i)
				}
			}
		}
		applyAddColumns(t, j, st)
		return nil
	}, func() {
		j.SchemaState = next
		j.State = StateRunning
		if st == model.StatePublic {
			j.State = StateDone
		}
	})
}

func addedBefore(j *Job, i int, name string) bool {
	for _, c := range j.Columns[:i] {
		if strings.EqualFold(c.Name, name) {
			return true
		}
	}
	return false
}

// dropColumnStep moves a DROP COLUMN job on: public (its single-column
// indexes go write only, when it has any) -> write only (the indexes are
// removed, the column leaves Columns; a NOT NULL column without a default
// gets an origin default, the value rows written from now on without it
// read as on nodes still a version behind) -> delete only -> gone. An
// index never refers to a non-public column.
func (d *DDL) dropColumnStep(ctx context.Context, j *Job) error {
	switch j.SchemaState {
	case SchemaNone, SchemaPublic:
		next := SchemaWriteOnly
		return d.columnStep(ctx, j, func(t *model.TableInfo) error {
			off := t.FindColumn(j.ColumnName)
			if off < 0 {
				return errno.New(errCantDropField, "Can't DROP '%s'; check that column/key exists", j.ColumnName)
			}
			if j.SchemaState == SchemaNone {
				if err := CheckDropColumn(t, j.ColumnName); err != nil {
					return err
				}
				if ixs := columnIndexes(t, off); len(ixs) > 0 {
					for _, ix := range ixs {
						ix.State = model.StateWriteOnly
					}
					next = SchemaPublic
					return nil
				}
			}
			c := removeColumn(t, off)
			if c.Origin == nil {
				c.Origin = originOf(c, time.Now())
			}
			c.State = model.StateWriteOnly
			t.NonPublic = append(t.NonPublic, c)
			t.MaxColumnID = max(t.MaxColumnID, t.NextColumnID()-1)
			relayout(t)
			return nil
		}, func() { j.State, j.SchemaState = StateRunning, next })
	case SchemaWriteOnly:
		return d.columnStep(ctx, j, func(t *model.TableInfo) error {
			for _, c := range t.NonPublic {
				if strings.EqualFold(c.Name, j.ColumnName) {
					c.State = model.StateDeleteOnly
				}
			}
			t.Init()
			return nil
		}, func() { j.SchemaState = SchemaDeleteOnly })
	default:
		return d.columnStep(ctx, j, func(t *model.TableInfo) error {
			for _, c := range t.NonPublic {
				if strings.EqualFold(c.Name, j.ColumnName) {
					removeNonPublic(t, c.ID)
					break
				}
			}
			return nil
		}, func() { j.State, j.SchemaState = StateDone, SchemaNone })
	}
}

// rollbackAddColumn removes the columns of a cancelled ADD COLUMN.
func (d *DDL) rollbackAddColumn(ctx context.Context, j *Job) error {
	return d.columnStep(ctx, j, func(t *model.TableInfo) error {
		ids := make([]int64, len(j.Columns))
		for i, c := range j.Columns {
			ids[i] = c.ID
		}
		removeNonPublic(t, ids...)
		return nil
	}, func() { j.State, j.SchemaState = StateRollbackDone, SchemaNone })
}

// modifyColumn replaces column ColumnName by j.Columns[0] (CHANGE / MODIFY
// / RENAME / ALTER COLUMN ... SET / DROP DEFAULT): one compatible step,
// as the rows need no rewrite.
func (d *DDL) modifyColumn(ctx context.Context, j *Job) error {
	return d.columnStep(ctx, j, func(t *model.TableInfo) error {
		off := t.FindColumn(j.ColumnName)
		if off < 0 {
			return errUnknownColumn(j.ColumnName, t.Name)
		}
		nc := *j.Columns[0]
		if nc.ID != t.Columns[off].ID {
			return errno.New(errno.ErrUnknown, "column %s of %s.%s changed during %v", j.ColumnName, j.SchemaName, j.TableName, j)
		}
		var pos ColumnPosition
		if len(j.Positions) == 1 {
			pos = j.Positions[0]
		}
		return replaceColumn(t, j.ColumnName, &nc, pos)
	}, func() { j.State, j.SchemaState = StateDone, SchemaPublic })
}

// replaceColumn replaces column old of t by nc (same id), moved to pos
// when that is FIRST or AFTER; index columns follow a rename.
func replaceColumn(t *model.TableInfo, old string, nc *model.ColumnInfo, pos ColumnPosition) error {
	off := t.FindColumn(old)
	if off < 0 {
		return errUnknownColumn(old, t.Name)
	}
	oc := t.Columns[off]
	if !strings.EqualFold(nc.Name, oc.Name) && t.FindColumn(nc.Name) >= 0 {
		return errDupColumn(nc.Name)
	}
	if pos.First || pos.After != "" {
		if pos.After != "" && (t.FindColumn(pos.After) < 0 || strings.EqualFold(pos.After, oc.Name)) {
			return errUnknownColumn(pos.After, t.Name)
		}
		t.Columns = append(t.Columns[:off:off], t.Columns[off+1:]...)
		t.Columns = placeColumn(t.Columns, nc, pos)
	} else {
		t.Columns[off] = nc
	}
	for _, ix := range t.Indices {
		for _, ic := range ix.Columns {
			if strings.EqualFold(ic.Name, oc.Name) {
				ic.Name = nc.Name
				ic.Length, _ = refitKeyPart(nc, ic.Length) // ModifyColumn checked it
			}
		}
	}
	for _, fk := range t.ForeignKeys { // the child side (the executor refuses a referenced column)
		for i, c := range fk.Cols {
			if strings.EqualFold(c, oc.Name) {
				fk.Cols[i] = nc.Name
			}
		}
	}
	relayout(t)
	return nil
}

// checkStep runs a MODIFY COLUMN that makes a column NOT NULL or
// narrower (Job.CheckRows): none -> write only (DML refuses values the new
// type refuses: ColumnInfo.Pending) -> write reorganization (a version of
// its own, as ADD INDEX's reorg: once every node loaded it, no
// transaction that began before DML refused them can commit,
// catalog.CheckCommit) -> the rows are read at a fresh snapshot; every
// one fits: the column is changed (public, done); one does not: Pending
// is cleared again and the job ends with MySQL's error for the row (1138
// Invalid use of NULL value, 1264 out of range, 1265 data truncated).
func (d *DDL) checkStep(ctx context.Context, j *Job) error {
	pending := func(ft *types.FieldType) func(t *model.TableInfo) error {
		return func(t *model.TableInfo) error {
			off := t.FindColumn(j.ColumnName)
			if off < 0 {
				return errUnknownColumn(j.ColumnName, t.Name)
			}
			t.Columns[off].Pending = ft
			return nil
		}
	}
	nt := j.Columns[0].Type
	switch j.SchemaState {
	case SchemaNone:
		return d.columnStep(ctx, j, pending(&nt), func() { j.State, j.SchemaState = StateRunning, SchemaWriteOnly })
	case SchemaWriteOnly:
		return d.columnStep(ctx, j, pending(&nt), func() { j.SchemaState = SchemaReorg })
	}
	t, _, err := d.table(ctx, j)
	if err != nil {
		return err
	}
	off := t.FindColumn(j.ColumnName)
	if off < 0 {
		return errUnknownColumn(j.ColumnName, t.Name)
	}
	bad, rows, err := d.checkRows(ctx, t, off, j.Columns[0])
	if err != nil {
		return err
	}
	j.RowCount = rows
	if bad != nil {
		d.log.Info("modify column: a row does not fit", "job", j.ID, "table", j.TableName, "column", j.ColumnName, "err", bad)
		j.setErr(bad)
		return d.columnStep(ctx, j, pending(nil), func() { j.State, j.SchemaState = StateRollbackDone, SchemaNone })
	}
	return d.modifyColumn(ctx, j)
}

// checkBatch is how many rows one read of a MODIFY COLUMN check scans.
const checkBatch = 1024

// checkRows reads the rows of t at a fresh snapshot and returns MySQL's
// error for the first whose column off does not fit nc (nil: all fit) and
// how many rows it read.
func (d *DDL) checkRows(ctx context.Context, t *model.TableInfo, off int, nc *model.ColumnInfo) (bad error, n int64, err error) {
	ts, err := d.store.GetTS(ctx)
	if err != nil {
		return nil, 0, err
	}
	txn, err := d.store.Begin(ctx, kv.TxnOptions{ReadOnly: true, StartTS: ts})
	if err != nil {
		return nil, 0, err
	}
	defer func() { _ = txn.Rollback(context.WithoutCancel(ctx)) }()
	err = scanRows(ctx, txn, t, func(row []types.Datum) error {
		n++
		if bad = fits(nc, row[off], n); bad != nil {
			return errStopScan
		}
		return nil
	})
	if errors.Is(err, errStopScan) {
		err = nil
	}
	if err != nil {
		err = fmt.Errorf("modify column: %w", err)
	}
	return bad, n, err
}

// errStopScan ends a scanRows early.
var errStopScan = errors.New("ddl: scan stopped")

// fits returns MySQL's error when v, the value of row n, does not fit
// column nc (ALTER in strict mode).
func fits(nc *model.ColumnInfo, v types.Datum, n int64) error {
	if v.IsNull() {
		if nc.Type.NotNull() {
			return errno.New(errno.ErrInvalidUseOfNull, "Invalid use of NULL value")
		}
		return nil
	}
	_, err := nc.Type.Convert(v)
	var ce *types.ConvError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce) && ce.Kind == types.ConvOutOfRange:
		return errno.New(errno.ErrWarnDataOutOfRange, "Out of range value for column '%s' at row %d", nc.Name, n)
	}
	return errno.New(errno.ErrDataTruncated, "Data truncated for column '%s' at row %d", nc.Name, n)
}

// renameTable runs RENAME TABLE: one schema version that moves the
// table's catalog entry (its id, rows and indexes stay).
func (d *DDL) renameTable(ctx context.Context, j *Job) error {
	t, db, err := d.table(ctx, j)
	if err != nil {
		return err
	}
	newDB, err := d.cat.GetDB(ctx, j.NewSchemaName)
	if err != nil {
		return err
	}
	if j.NewSchemaID != 0 && newDB.ID != j.NewSchemaID {
		return errno.New(errno.ErrBadDB, "Unknown database '%s' (it was dropped and created again after the DDL was issued)", j.NewSchemaName)
	}
	children, err := d.renamedParent(ctx, db, t, newDB, j.NewTableName)
	if err != nil {
		return err
	}
	if err := d.cat.RenameTable(ctx, db, t, newDB, j.NewTableName, children, d.jobStep(ctx, j)); err != nil {
		return err
	}
	d.log.Info("rename table", "job", j.ID, "from", j.SchemaName+"."+j.TableName, "to", j.NewSchemaName+"."+j.NewTableName, "version", j.Version)
	return nil
}
