package ddl

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/sql/catalog"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
)

// Foreign key definitions: a FOREIGN KEY clause validated against its
// child table (and, by CheckFKParent, its parent) and turned into a
// model.FKInfo, with MySQL 8.0's errors.

// NewFKInfo validates FOREIGN KEY c of child table t against t alone and
// returns it without an id; a name not given is left empty (AddFK names
// it). db is the child's database: the parent's when REFERENCES does not
// name one.
func NewFKInfo(t *model.TableInfo, c *ast.Constraint, db string) (*model.FKInfo, error) {
	ref := c.Refer
	if ref == nil || ref.Table == nil {
		return nil, errno.New(errno.ErrParse, "FOREIGN KEY needs a REFERENCES clause")
	}
	fk := &model.FKInfo{Name: c.Name, RefSchema: ref.Table.Schema.O, RefTable: ref.Table.Name.O}
	if fk.RefSchema == "" {
		fk.RefSchema = db
	}
	if len(fk.Name) > 64 {
		return nil, errno.New(1059, "Identifier name '%s' is too long", fk.Name)
	}
	name := fk.Name
	if name == "" {
		name = "foreign key without name"
	}
	if len(c.Keys) != len(ref.IndexPartSpecifications) || len(c.Keys) == 0 {
		return nil, errno.New(errno.ErrWrongFKDef, "Incorrect foreign key definition for '%s': Key reference and table reference don't match", name)
	}
	for i, p := range c.Keys {
		rp := ref.IndexPartSpecifications[i]
		if p.Column == nil || rp.Column == nil {
			return nil, errno.NotSupported("expressions in FOREIGN KEY")
		}
		off := t.FindColumn(p.Column.Name.O)
		if off < 0 {
			return nil, errno.New(errKeyColumnNotExist, "Key column '%s' doesn't exist in table", p.Column.Name.O)
		}
		fk.Cols = append(fk.Cols, t.Columns[off].Name)
		fk.RefCols = append(fk.RefCols, rp.Column.Name.O)
	}
	var err error
	if ref.OnDelete != nil {
		if fk.OnDelete, err = fkAction(ref.OnDelete.ReferOpt); err != nil {
			return nil, err
		}
	}
	if ref.OnUpdate != nil {
		if fk.OnUpdate, err = fkAction(ref.OnUpdate.ReferOpt); err != nil {
			return nil, err
		}
	}
	if err := checkFKGenerated(t, fk); err != nil {
		return nil, err
	}
	if fk.OnDelete == model.FKSetNull || fk.OnUpdate == model.FKSetNull {
		for _, col := range fk.Cols {
			if t.Columns[t.FindColumn(col)].Type.NotNull() {
				return nil, errno.New(errno.ErrFKColumnNotNull, "Column '%s' cannot be NOT NULL: needed in a foreign key constraint '%s' SET NULL", col, fkDisplayName(t, fk))
			}
		}
	}
	return fk, nil
}

// fkDisplayName is fk's name, or the one AddFK will give it.
func fkDisplayName(t *model.TableInfo, fk *model.FKInfo) string {
	if fk.Name != "" {
		return fk.Name
	}
	return fmt.Sprintf("%s_ibfk_%d", t.Name, nextFKNumber(t))
}

func fkAction(o ast.ReferOptionType) (model.FKAction, error) {
	switch o {
	case ast.ReferOptionRestrict:
		return model.FKRestrict, nil
	case ast.ReferOptionCascade:
		return model.FKCascade, nil
	case ast.ReferOptionSetNull:
		return model.FKSetNull, nil
	case ast.ReferOptionNoAction:
		return model.FKNoAction, nil
	case ast.ReferOptionSetDefault:
		// InnoDB rejects SET DEFAULT.
		return "", errno.New(errno.ErrCannotAddForeign, "Cannot add foreign key constraint")
	}
	return model.FKDefault, nil
}

// nextFKNumber is n of the next generated name <table>_ibfk_<n>: one more
// than the largest n a name of that form has (MySQL's rule).
func nextFKNumber(t *model.TableInfo) int {
	n := 0
	prefix := strings.ToLower(t.Name) + "_ibfk_"
	for _, fk := range t.ForeignKeys {
		var k int
		if l := strings.ToLower(fk.Name); strings.HasPrefix(l, prefix) {
			if _, err := fmt.Sscanf(l[len(prefix):], "%d", &k); err == nil && fmt.Sprint(k) == l[len(prefix):] {
				n = max(n, k)
			}
		}
	}
	return n + 1
}

// AddFK names fk when it has no name, gives it an id and appends it to t,
// first adding an index over its columns when no index of t starts with
// them (named after the FK, or after its first column when the FK had no
// name, as MySQL names it), in state public: the caller builds the index
// (CREATE TABLE: the table is empty). It returns the index it added, or
// nil.
func AddFK(t *model.TableInfo, fk *model.FKInfo) (*model.IndexInfo, error) {
	given := fk.Name
	if fk.Name == "" {
		fk.Name = fkDisplayName(t, fk)
	}
	if t.FindFK(fk.Name) != nil {
		return nil, errno.New(errno.ErrFKDupName, "Duplicate foreign key constraint name '%s'", fk.Name)
	}
	offs, _ := t.ColumnOffsets(fk.Cols)
	var added *model.IndexInfo
	if _, ok := t.FKIndex(offs); !ok {
		parts := make([]*ast.IndexPartSpecification, len(fk.Cols))
		for i, c := range fk.Cols {
			parts[i] = &ast.IndexPartSpecification{Column: &ast.ColumnName{Name: ast.NewCIStr(c)}}
		}
		name := given
		if name != "" && t.FindIndex(name) != nil {
			name = "" // MySQL names it after the column then
		}
		ix, err := NewIndexInfo(t, name, parts, false, nil)
		if err != nil {
			return nil, err
		}
		t.MaxIndexID++
		ix.ID = t.MaxIndexID
		t.Indices = append(t.Indices, ix)
		added = ix
	}
	t.MaxFKID++
	fk.ID = t.MaxFKID
	t.ForeignKeys = append(t.ForeignKeys, fk)
	return added, nil
}

// CheckFKParent checks fk of child against its parent table: the
// referenced columns exist and have compatible types (3780) and an index
// starts with them (1822).
func CheckFKParent(child *model.TableInfo, fk *model.FKInfo, parent *model.TableInfo) error {
	offs := make([]int, len(fk.RefCols))
	for i, rc := range fk.RefCols {
		off := parent.FindColumn(rc)
		if off < 0 {
			return errno.New(errno.ErrFKNoColumnParent, "Failed to add the foreign key constraint. Missing column '%s' for constraint '%s' in the referenced table '%s'", rc, fk.Name, parent.Name)
		}
		offs[i] = off
		cc := child.Columns[child.FindColumn(fk.Cols[i])]
		if pc := parent.Columns[off]; pc.IsVirtual() {
			return errFKVirtual(fk.Name, pc.Name)
		}
		if !FKCompatible(&cc.Type, &parent.Columns[off].Type) {
			return errno.New(errno.ErrFKIncompatibleColumns, "Referencing column '%s' and referenced column '%s' in foreign key constraint '%s' are incompatible.", cc.Name, parent.Columns[off].Name, fk.Name)
		}
	}
	if _, ok := parent.FKIndex(offs); !ok {
		return errno.New(errno.ErrFKNoIndexParent, "Failed to add the foreign key constraint. Missing index for constraint '%s' in the referenced table '%s'", fk.Name, parent.Name)
	}
	return nil
}

// FKCompatible is InnoDB's rule for the columns of a foreign key: integer
// and DECIMAL types of the same size and sign, strings of any length but
// the same kind (character or binary), any other type only with itself.
func FKCompatible(a, b *types.FieldType) bool {
	switch {
	case a.Class() == types.ClassInt && b.Class() == types.ClassInt:
		return a.Tp == b.Tp && a.Unsigned() == b.Unsigned()
	case a.Tp == mysql.TypeNewDecimal && b.Tp == mysql.TypeNewDecimal:
		return a.Flen == b.Flen && a.Decimal == b.Decimal && a.Unsigned() == b.Unsigned()
	case isFKString(a) && isFKString(b):
		return a.Binary() == b.Binary()
	}
	return a.Tp == b.Tp && a.Unsigned() == b.Unsigned()
}

func isFKString(t *types.FieldType) bool {
	return t.Tp == mysql.TypeString || t.Tp == mysql.TypeVarchar || t.Tp == mysql.TypeVarString
}

// addFKStep runs ALTER TABLE ADD FOREIGN KEY: the FK is added to the
// child (state write only: every node's DML keeps it once it loaded the
// version), then, a version later, the existing rows are checked at a
// fresh snapshot when the job says so: a child row without its parent
// removes the FK again and ends the job with 1452. The child's index on
// the FK's columns exists already (the executor submits an ADD INDEX job
// first when it does not).
func (d *DDL) addFKStep(ctx context.Context, j *Job) error {
	if j.SchemaState == SchemaNone {
		return d.columnStep(ctx, j, func(t *model.TableInfo) error {
			if t.FindFK(j.FK.Name) != nil {
				return errno.New(errno.ErrFKDupName, "Duplicate foreign key constraint name '%s'", j.FK.Name)
			}
			offs, ok := t.ColumnOffsets(j.FK.Cols)
			if !ok {
				return errno.New(errKeyColumnNotExist, "Key column '%s' doesn't exist in table", strings.Join(j.FK.Cols, ","))
			}
			if _, ok := t.FKIndex(offs); !ok {
				return errno.New(errno.ErrDropIndexFK, "Cannot add foreign key '%s': its index on the child columns was dropped", j.FK.Name)
			}
			fk := *j.FK
			t.MaxFKID++
			fk.ID = t.MaxFKID
			t.ForeignKeys = append(t.ForeignKeys, &fk)
			return nil
		}, func() { j.State, j.SchemaState = StateRunning, SchemaWriteOnly })
	}
	var bad error
	if j.CheckRows {
		var err error
		if bad, err = d.checkFKRows(ctx, j); err != nil && !isJobError(err) {
			return err
		} else if err != nil {
			bad = err
		}
	}
	if bad != nil {
		d.log.Info("add foreign key: a row has no parent", "job", j.ID, "table", j.TableName, "fk", j.FK.Name, "err", bad)
		j.setErr(bad)
		return d.columnStep(ctx, j, func(t *model.TableInfo) error {
			t.ForeignKeys = slices.DeleteFunc(t.ForeignKeys, func(fk *model.FKInfo) bool { return strings.EqualFold(fk.Name, j.FK.Name) })
			return nil
		}, func() { j.State, j.SchemaState = StateRollbackDone, SchemaNone })
	}
	j.State, j.SchemaState = StateDone, SchemaPublic
	return d.finish(ctx, j)
}

// checkFKRows returns 1452 when a row of the job's table has FK values
// (none NULL) that no row of the parent holds, reading both at one fresh
// snapshot. It holds the parent's keys in memory.
func (d *DDL) checkFKRows(ctx context.Context, j *Job) (bad error, err error) {
	child, _, err := d.table(ctx, j)
	if err != nil {
		return nil, err
	}
	parent := child
	if !j.FK.References(j.SchemaName, j.TableName) {
		pdb, err := d.cat.GetDB(ctx, j.FK.RefSchema)
		if err != nil {
			return nil, err
		}
		if parent, err = d.cat.GetTable(ctx, pdb, j.FK.RefTable); err != nil {
			return nil, err
		}
	}
	coffs, ok1 := child.ColumnOffsets(j.FK.Cols)
	poffs, ok2 := parent.ColumnOffsets(j.FK.RefCols)
	if !ok1 || !ok2 {
		return nil, errno.New(errno.ErrUnknown, "the columns of foreign key %s changed during %v", j.FK.Name, j)
	}
	txn, done, err := d.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	keys := map[string]bool{}
	err = scanRows(ctx, txn, parent, func(row []types.Datum) error {
		if k, ok := fkKey(row, poffs, nil); ok {
			keys[string(k)] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = scanRows(ctx, txn, child, func(row []types.Datum) error {
		k, ok := fkKey(row, coffs, func(i int, v types.Datum) (types.Datum, error) { return parent.Columns[poffs[i]].Type.Convert(v) })
		if ok && !keys[string(k)] {
			j.RowCount++
			return errno.New(errno.ErrNoReferencedRow2, "Cannot add or update a child row: a foreign key constraint fails (`%s`.`%s`, %s)", j.SchemaName, child.Name, j.FK.Clause(j.SchemaName))
		}
		j.RowCount++
		return nil
	})
	if e := (*errno.Error)(nil); errors.As(err, &e) && e.Code == errno.ErrNoReferencedRow2 {
		return err, nil
	}
	return nil, err
}

// scanRows calls fn with each row of t in txn, reading checkBatch rows
// at a time (the row is reused).
func scanRows(ctx context.Context, txn kv.Txn, t *model.TableInfo, fn func(row []types.Datum) error) error {
	start, end := tablecodec.RecordRange(t.ID)
	row := make([]types.Datum, t.RowWidth())
	return kv.ScanPages(ctx, txn, start, end, checkBatch, func(p kv.KvPair) error {
		if err := t.DecodeRow(p.Key, p.Value, row); err != nil {
			return fmt.Errorf("decode row of %s: %w", t.Name, err)
		}
		return fn(row)
	})
}

// fkKey is the memcomparable key of row's values at offs (each through
// conv when set); ok is false when one is NULL or does not convert.
func fkKey(row []types.Datum, offs []int, conv func(i int, v types.Datum) (types.Datum, error)) (key []byte, ok bool) {
	for i, off := range offs {
		v := row[off]
		if v.IsNull() {
			return nil, false
		}
		if conv != nil {
			var err error
			if v, err = conv(i, v); err != nil {
				return nil, false
			}
		}
		key = tablecodec.AppendMemComparable(key, v)
	}
	return key, true
}

// dropFK runs ALTER TABLE DROP FOREIGN KEY: one step that removes the FK
// (its index stays, as in MySQL); 1091 when the table has no such FK.
func (d *DDL) dropFK(ctx context.Context, j *Job) error {
	return d.columnStep(ctx, j, func(t *model.TableInfo) error {
		n := len(t.ForeignKeys)
		t.ForeignKeys = slices.DeleteFunc(t.ForeignKeys, func(fk *model.FKInfo) bool { return strings.EqualFold(fk.Name, j.FK.Name) })
		if len(t.ForeignKeys) == n {
			return errno.New(1091, "Can't DROP '%s'; check that column/key exists", j.FK.Name)
		}
		return nil
	}, func() { j.State, j.SchemaState = StateDone, SchemaNone })
}

// renamedParent returns the tables whose foreign keys reference t (of db)
// with those FKs naming newDB.newName instead, as RENAME TABLE must leave
// them (MySQL follows a rename); t's own self-references are among them
// (the catalog renames t itself with them).
func (d *DDL) renamedParent(ctx context.Context, db *model.DBInfo, t *model.TableInfo, newDB *model.DBInfo, newName string) ([]catalog.TableUpdate, error) {
	refs, err := d.cat.Referrers(ctx, t)
	if err != nil {
		return nil, err
	}
	byID := map[int64]*catalog.TableUpdate{}
	var out []catalog.TableUpdate
	for _, ref := range refs {
		u := byID[ref.Child.ID]
		if u == nil {
			cdb, err := d.cat.GetDB(ctx, ref.ChildDB)
			if err != nil {
				return nil, err
			}
			d.cat.Reload(cdb, ref.Child.Name) // the stored definition, not a cached one
			child, err := d.cat.GetTable(ctx, cdb, ref.Child.Name)
			if err != nil {
				return nil, err
			}
			if child.ID != ref.Child.ID {
				return nil, errno.New(errno.ErrUnknown, "table %s.%s changed during %s", ref.ChildDB, ref.Child.Name, "RENAME TABLE")
			}
			out = append(out, catalog.TableUpdate{DB: cdb, Table: child.Clone()})
			u = &out[len(out)-1]
			byID[ref.Child.ID] = u
		}
		for _, fk := range u.Table.ForeignKeys {
			if fk.References(db.Name, t.Name) {
				fk.RefSchema, fk.RefTable = newDB.Name, newName
			}
		}
	}
	return out, nil
}
