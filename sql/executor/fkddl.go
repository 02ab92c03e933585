package executor

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/stratadb/strata/sql/catalog"
	"github.com/stratadb/strata/sql/ddl"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/model"
)

// Foreign keys in ALTER TABLE, DROP INDEX and the column changes that
// would break one.

// addForeignKey runs ALTER TABLE ADD FOREIGN KEY: an ADD INDEX job first
// when no index of the table starts with the FK's columns (named as
// MySQL names the index it adds), then the ADD FOREIGN KEY job, which
// checks the existing rows when foreign_key_checks is on (package ddl).
func (e *Executor) addForeignKey(ctx context.Context, env StmtEnv, stmt *ast.AlterTableStmt, c *ast.Constraint) error {
	db, t, err := e.alterTarget(ctx, env, stmt.Table)
	if err != nil {
		return err
	}
	if c.IfNotExists && c.Name != "" && t.FindFK(c.Name) != nil {
		return nil
	}
	fk, err := ddl.NewFKInfo(t, c, db.Name)
	if err != nil {
		return err
	}
	sim := t.Clone()
	ix, err := ddl.AddFK(sim, fk)
	if err != nil {
		return err
	}
	if err := e.checkFKParent(ctx, env, db, sim, fk); err != nil {
		return err
	}
	if ix != nil {
		ix.ID = 0
		err := e.submitDDL(ctx, stmt, &ddl.Job{Type: ddl.ActionAddIndex, SchemaID: db.ID, SchemaName: db.Name,
			TableID: t.ID, TableName: t.Name, Index: ix})
		if err != nil {
			return err
		}
	}
	fk.ID = 0
	err = e.submitDDL(ctx, stmt, &ddl.Job{Type: ddl.ActionAddFK, SchemaID: db.ID, SchemaName: db.Name,
		TableID: t.ID, TableName: t.Name, FK: fk, CheckRows: fkChecksOn(env)})
	if err != nil && ix != nil {
		// The FK failed (a row without its parent): the index made for it
		// goes again, as MySQL's ALTER leaves the table as it was.
		if derr := e.submitDDL(ctx, stmt, &ddl.Job{Type: ddl.ActionDropIndex, SchemaID: db.ID, SchemaName: db.Name,
			TableID: t.ID, TableName: t.Name, IndexName: ix.Name, IfExists: true}); derr != nil {
			return fmt.Errorf("%w (dropping its index %s again failed too: %v)", err, ix.Name, derr)
		}
	}
	return err
}

// dropForeignKey runs ALTER TABLE DROP FOREIGN KEY (the index stays).
func (e *Executor) dropForeignKey(ctx context.Context, env StmtEnv, stmt *ast.AlterTableStmt, name string) error {
	db, t, err := e.alterTarget(ctx, env, stmt.Table)
	if err != nil {
		return err
	}
	if t.FindFK(name) == nil {
		return errno.New(errCantDropKey, "Can't DROP '%s'; check that column/key exists", name)
	}
	return e.submitDDL(ctx, stmt, &ddl.Job{Type: ddl.ActionDropFK, SchemaID: db.ID, SchemaName: db.Name,
		TableID: t.ID, TableName: t.Name, FK: &model.FKInfo{Name: name}})
}

// checkAlterFK refuses an ALTER TABLE clause that would break a foreign
// key of t (its child side) or of refs (the FKs referencing t): dropping
// an FK column (1828, 1829) or the index an FK needs (1553), renaming a
// referenced column (1235: the children's FKs name it and do not follow
// yet; an FK's own columns and a renamed parent table are followed).
func checkAlterFK(t *model.TableInfo, refs []catalog.FKRef, sp *ast.AlterTableSpec) error {
	switch sp.Tp {
	case ast.AlterTableDropColumn:
		name := sp.OldColumnName.Name.O
		for _, fk := range t.ForeignKeys {
			if containsFold(fk.Cols, name) {
				return errno.New(errno.ErrFKColumnCannotDrop, "Cannot drop column '%s': needed in a foreign key constraint '%s'", name, fk.Name)
			}
		}
		for _, ref := range refs {
			if containsFold(ref.FK.RefCols, name) {
				return errno.New(errno.ErrFKColumnCannotDropChild, "Cannot drop column '%s': needed in a foreign key constraint '%s' of table '%s'", name, ref.FK.Name, ref.Child.Name)
			}
		}
	case ast.AlterTableDropIndex:
		if ix := t.FindIndex(sp.Name); ix != nil {
			return checkDropFKIndex(t, refs, ix)
		}
	case ast.AlterTableRenameColumn, ast.AlterTableChangeColumn:
		old := sp.OldColumnName
		if sp.Tp == ast.AlterTableChangeColumn && len(sp.NewColumns) == 1 && sp.NewColumns[0].Name.Name.L == old.Name.L {
			return nil
		}
		for _, ref := range refs {
			if containsFold(ref.FK.RefCols, old.Name.O) {
				return errno.NotSupported("renaming a column a FOREIGN KEY references")
			}
		}
	}
	return nil
}

// checkDropFKIndex is 1553 when dropping ix would leave a foreign key of
// t, or one referencing t (refs), without an index starting with its
// columns.
func checkDropFKIndex(t *model.TableInfo, refs []catalog.FKRef, ix *model.IndexInfo) error {
	rest := *t
	rest.Indices = slices.DeleteFunc(slices.Clone(t.Indices), func(x *model.IndexInfo) bool { return x == ix })
	needs := func(cols []string) bool {
		offs, ok := t.ColumnOffsets(cols)
		if !ok {
			return false
		}
		_, had := t.FKIndex(offs)
		_, has := rest.FKIndex(offs)
		return had && !has
	}
	for _, fk := range t.ForeignKeys {
		if needs(fk.Cols) {
			return errno.New(errno.ErrDropIndexFK, "Cannot drop index '%s': needed in a foreign key constraint", ix.Name)
		}
	}
	for _, ref := range refs {
		if needs(ref.FK.RefCols) {
			return errno.New(errno.ErrDropIndexFK, "Cannot drop index '%s': needed in a foreign key constraint", ix.Name)
		}
	}
	return nil
}

func containsFold(names []string, name string) bool {
	return slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(n, name) })
}

// checkFKColumnType is 3780 when column old of t (in db), changed to nc,
// no longer matches the column on the other side of a foreign key: its
// parent's column (t's FKs) or its children's (refs, the FKs referencing
// t), by ddl.FKCompatible.
func (e *Executor) checkFKColumnType(ctx context.Context, db *model.DBInfo, t *model.TableInfo, refs []catalog.FKRef, old string, nc *model.ColumnInfo) error {
	incompatible := func(child, parent string, fk *model.FKInfo) error {
		return errno.New(errno.ErrFKIncompatibleColumns, "Referencing column '%s' and referenced column '%s' in foreign key constraint '%s' are incompatible.", child, parent, fk.Name)
	}
	for _, fk := range t.ForeignKeys {
		for i, c := range fk.Cols {
			if !strings.EqualFold(c, old) {
				continue
			}
			parent := t
			if !fk.References(db.Name, t.Name) {
				pdb, err := e.dom.Catalog().GetDB(ctx, fk.RefSchema)
				if err == nil {
					parent, err = e.dom.Catalog().GetTable(ctx, pdb, fk.RefTable)
				}
				if err != nil {
					continue // no parent (foreign_key_checks=0): nothing to match
				}
			}
			if off := parent.FindColumn(fk.RefCols[i]); off >= 0 && !ddl.FKCompatible(&nc.Type, &parent.Columns[off].Type) {
				return incompatible(nc.Name, fk.RefCols[i], fk)
			}
		}
	}
	for _, ref := range refs {
		for i, c := range ref.FK.RefCols {
			if !strings.EqualFold(c, old) || ref.Child.ID == t.ID {
				continue
			}
			if off := ref.Child.FindColumn(ref.FK.Cols[i]); off >= 0 && !ddl.FKCompatible(&ref.Child.Columns[off].Type, &nc.Type) {
				return incompatible(ref.FK.Cols[i], nc.Name, ref.FK)
			}
		}
	}
	return nil
}
