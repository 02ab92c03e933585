package executor

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/catalog"
	"github.com/stratadb/strata/sql/collate"
	"github.com/stratadb/strata/sql/ddl"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/privilege"
)

// errCantDropKey is MySQL's "Can't DROP '%s'; check that column/key exists".
const errCantDropKey uint16 = 1091

// ExecuteDDL runs a schema change (CREATE / DROP DATABASE, CREATE / DROP /
// TRUNCATE TABLE, CREATE / DROP VIEW, CREATE / DROP INDEX, ALTER TABLE)
// for the session env: validated here against the catalog, then submitted
// as a job to the cluster's DDL queue (package ddl) and waited for. The
// session commits its open transaction first.
func (e *Executor) ExecuteDDL(ctx context.Context, stmt ast.StmtNode, env StmtEnv) (*Result, error) {
	switch x := stmt.(type) {
	case *ast.CreateDatabaseStmt:
		return e.createDatabase(ctx, env, x)
	case *ast.DropDatabaseStmt:
		return e.dropDatabase(ctx, env, x)
	case *ast.AlterDatabaseStmt:
		return e.alterDatabase(ctx, env, x) // alterdb.go
	case *ast.CreateTableStmt:
		return e.createTable(ctx, env, x)
	case *ast.DropTableStmt:
		return e.dropTable(ctx, env, x)
	case *ast.CreateViewStmt:
		return e.createView(ctx, env, x)
	case *ast.TruncateTableStmt:
		return e.truncateTable(ctx, env, x)
	case *ast.CreateIndexStmt:
		return e.createIndex(ctx, env, x)
	case *ast.DropIndexStmt:
		return e.dropIndexStmt(ctx, env, x)
	case *ast.AlterTableStmt:
		return e.alterTable(ctx, env, x)
	case *ast.RenameTableStmt:
		return e.renameTables(ctx, env, x)
	}
	return nil, errno.NotSupported(fmt.Sprintf("%T as DDL", stmt))
}

// unsupportedTable is the error for a CREATE TABLE of a kind not
// supported yet, or nil.
func unsupportedTable(x *ast.CreateTableStmt) error {
	switch {
	case x.Partition != nil:
		return errno.NotSupported("partitioned tables")
	case x.TemporaryKeyword != ast.TemporaryNone:
		return errno.NotSupported("temporary tables")
	}
	return nil
}

func (e *Executor) createTable(ctx context.Context, env StmtEnv, x *ast.CreateTableStmt) (*Result, error) {
	if x.Select != nil { // the session runs CreateTableSelect
		return nil, errno.NotSupported("CREATE TABLE ... SELECT here")
	}
	if err := unsupportedTable(x); err != nil {
		return nil, err
	}
	db, err := e.dbFor(ctx, env, x.Table.Schema.O)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	var t *model.TableInfo
	if x.ReferTable != nil {
		t, err = e.tableLike(ctx, env, x)
	} else {
		if !checksEnabled(env) {
			var had bool
			if x, had = stripChecks(x); had {
				res.Warnings = append(res.Warnings, checksOffWarning)
			}
		}
		t, err = ddl.BuildTableInfo(x, db.Name, ddl.DBCollation(db), env)
		if err == nil {
			if w := ddl.ClusteredWarning(x, t); w != nil {
				e := errno.FromError(w)
				res.Warnings = append(res.Warnings, Warning{Level: "Warning", Code: e.Code, Msg: e.Msg})
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if _, err := e.dom.Catalog().GetTable(ctx, db, t.Name); err == nil {
		if x.IfNotExists {
			return tableExistsNote(t.Name), nil
		}
		return nil, errno.New(errno.ErrTableExists, "Table '%s' already exists", t.Name)
	}
	if err := e.checkSchemaNames(ctx, db, t, checkNames(t.Checks)); err != nil {
		return nil, err
	}
	for _, fk := range t.ForeignKeys {
		if err := e.checkFKParent(ctx, env, db, t, fk); err != nil {
			return nil, err
		}
	}
	id, err := e.dom.Store().AllocID(ctx, 1)
	if err != nil {
		return nil, err
	}
	t.ID, t.DBID = int64(id), db.ID
	err = e.submitDDL(ctx, x, &ddl.Job{Type: ddl.ActionCreateTable, SchemaID: db.ID, SchemaName: db.Name,
		TableID: t.ID, TableName: t.Name, Table: t, IfNotExists: x.IfNotExists})
	if err != nil {
		return nil, err
	}
	if err := e.rebaseAutoInc(ctx, t, x.Options); err != nil {
		return nil, err
	}
	return res, nil
}

// tableLike is the definition CREATE TABLE ... LIKE copies, as MySQL
// does: the source's columns, indexes, CHECK constraints (renamed
// <table>_chk_<n>, as TiDB does: names are unique per database) and table
// options, without its FOREIGN KEYs, rows or AUTO_INCREMENT position, and
// without what a DDL job is still adding or changing. The source must be
// a base table the session may read.
func (e *Executor) tableLike(ctx context.Context, env StmtEnv, x *ast.CreateTableStmt) (*model.TableInfo, error) {
	srcDB, err := e.dbFor(ctx, env, x.ReferTable.Schema.O)
	if err != nil {
		return nil, err
	}
	if !env.VisibleTable(srcDB.Name, x.ReferTable.Name.O) {
		user, host := env.Account()
		return nil, privilege.TableDenied("SELECT", user, host, x.ReferTable.Name.O)
	}
	src, err := e.dom.Catalog().GetTable(ctx, srcDB, x.ReferTable.Name.O)
	if err != nil {
		return nil, err
	}
	if src.IsView() {
		return nil, errno.New(1347, "'%s.%s' is not BASE TABLE", srcDB.Name, src.Name)
	}
	if len(x.Table.Name.O) > 64 {
		return nil, errno.New(1103, "Incorrect table name '%s'", x.Table.Name.O)
	}
	t := src.Clone()
	t.ID, t.Name = 0, x.Table.Name.O
	t.NonPublic, t.ForeignKeys = nil, nil // columns and index copies of a running DDL are not public
	for _, c := range t.Columns {
		c.Pending = nil // a narrowing MODIFY COLUMN still checking the source's rows
	}
	t.Indices = slices.DeleteFunc(t.Indices, func(ix *model.IndexInfo) bool { return !ix.Public() || ix.ChangingOf != 0 })
	t.Checks = slices.DeleteFunc(t.Checks, func(c *model.CheckInfo) bool { return c.State != model.StatePublic })
	for i, c := range t.Checks {
		c.Name = fmt.Sprintf("%s_chk_%d", t.Name, i+1)
	}
	t.SortChecks()
	t.Init()
	return t, nil
}

// submitDDL runs job through the cluster's DDL job queue (package ddl) and
// waits for it to end.
func (e *Executor) submitDDL(ctx context.Context, stmt ast.StmtNode, job *ddl.Job) error {
	job.Query = stmt.Text()
	return e.dom.DDL().Submit(ctx, job)
}

func (e *Executor) createDatabase(ctx context.Context, env StmtEnv, x *ast.CreateDatabaseStmt) (*Result, error) {
	if err := catalog.CheckDBName(x.Name.O); err != nil {
		return nil, err
	}
	if _, err := e.dom.Catalog().GetDB(ctx, x.Name.O); err == nil {
		if x.IfNotExists {
			return &Result{AffectedRows: 1}, nil
		}
		return nil, errno.New(errno.ErrDBCreateExists, "Can't create database '%s'; database exists", x.Name.O)
	}
	coll, err := ddl.DatabaseCollation(x.Options)
	if err != nil {
		return nil, err
	}
	info := &model.DBInfo{Name: x.Name.O}
	if coll != collate.Default {
		info.Collate = coll.Name
	}
	id, err := e.dom.Store().AllocID(ctx, 1)
	if err != nil {
		return nil, err
	}
	info.ID = int64(id)
	err = e.submitDDL(ctx, x, &ddl.Job{Type: ddl.ActionCreateSchema, SchemaID: int64(id), SchemaName: x.Name.O,
		DB: info, IfNotExists: x.IfNotExists})
	if err != nil {
		return nil, err
	}
	return &Result{AffectedRows: 1}, nil
}

func (e *Executor) dropDatabase(ctx context.Context, env StmtEnv, x *ast.DropDatabaseStmt) (*Result, error) {
	db, err := e.dom.Catalog().GetDB(ctx, x.Name.O)
	if err != nil {
		if errno.FromError(err).Code == errno.ErrBadDB {
			if x.IfExists {
				return &Result{}, nil
			}
			return nil, errno.New(errno.ErrDBDropExists, "Can't drop database '%s'; database doesn't exist", x.Name.O)
		}
		return nil, err
	}
	if fkChecksOn(env) {
		// A table referenced from another database cannot go (3730).
		tables, err := e.dom.Catalog().ListTables(ctx, db)
		if err != nil {
			return nil, err
		}
		for _, t := range tables {
			refs, err := e.dom.Catalog().Referrers(ctx, t)
			if err != nil {
				return nil, err
			}
			for _, ref := range refs {
				if !strings.EqualFold(ref.ChildDB, db.Name) {
					return nil, errDropParent(t, ref)
				}
			}
		}
	}
	err = e.submitDDL(ctx, x, &ddl.Job{Type: ddl.ActionDropSchema, SchemaID: db.ID, SchemaName: db.Name, IfExists: x.IfExists})
	if err != nil {
		return nil, err
	}
	if strings.EqualFold(env.CurrentDB(), x.Name.O) {
		env.ClearCurrentDB()
	}
	return &Result{}, nil
}

// dropTable drops each table in its own job; it returns once no SQL node
// writes under the dropped ids any more.
func (e *Executor) dropTable(ctx context.Context, env StmtEnv, x *ast.DropTableStmt) (*Result, error) {
	if x.IsView {
		return e.dropViews(ctx, env, x)
	}
	for _, tn := range x.Tables {
		db, err := e.dbFor(ctx, env, tn.Schema.O)
		if err != nil {
			if x.IfExists && errno.FromError(err).Code == errno.ErrBadDB {
				continue
			}
			return nil, err
		}
		t, err := e.dom.Catalog().GetTable(ctx, db, tn.Name.O)
		if err != nil {
			if errno.FromError(err).Code == errno.ErrNoSuchTable {
				if x.IfExists {
					continue
				}
				return nil, errno.New(errno.ErrBadTable, "Unknown table '%s.%s'", db.Name, tn.Name.O)
			}
			return nil, err
		}
		if t.IsView() { // DROP TABLE does not drop views (MySQL)
			if x.IfExists {
				continue
			}
			return nil, errno.New(errno.ErrBadTable, "Unknown table '%s.%s'", db.Name, tn.Name.O)
		}
		if err := e.checkDropParent(ctx, env, db, t, x.Tables); err != nil {
			return nil, err
		}
		err = e.submitDDL(ctx, x, &ddl.Job{Type: ddl.ActionDropTable, SchemaID: db.ID, SchemaName: db.Name,
			TableID: t.ID, TableName: t.Name, IfExists: x.IfExists})
		if err != nil {
			return nil, err
		}
	}
	return &Result{}, nil
}

// truncateTable gives the table a new id: the old rows become unreachable
// at once, whatever their number.
func (e *Executor) truncateTable(ctx context.Context, env StmtEnv, x *ast.TruncateTableStmt) (*Result, error) {
	db, err := e.dbFor(ctx, env, x.Table.Schema.O)
	if err != nil {
		return nil, err
	}
	t, err := e.dom.Catalog().GetTable(ctx, db, x.Table.Name.O)
	if err != nil {
		return nil, err
	}
	if t.IsView() {
		return nil, errno.New(errno.ErrNoSuchTable, "Table '%s.%s' doesn't exist", db.Name, t.Name)
	}
	if fkChecksOn(env) {
		refs, err := e.dom.Catalog().Referrers(ctx, t)
		if err != nil {
			return nil, err
		}
		for _, ref := range refs {
			if ref.Child.ID != t.ID {
				return nil, errno.New(errno.ErrTruncateIllegalFK, "Cannot truncate a table referenced in a foreign key constraint (`%s`.`%s`, %s)", ref.ChildDB, ref.Child.Name, ref.FK.Clause(ref.ChildDB))
			}
		}
	}
	id, err := e.dom.Store().AllocID(ctx, 1)
	if err != nil {
		return nil, err
	}
	return &Result{}, e.submitDDL(ctx, x, &ddl.Job{Type: ddl.ActionTruncateTable, SchemaID: db.ID, SchemaName: db.Name,
		TableID: t.ID, TableName: t.Name, NewTableID: int64(id)})
}

func (e *Executor) createIndex(ctx context.Context, env StmtEnv, x *ast.CreateIndexStmt) (*Result, error) {
	switch x.KeyType {
	case ast.IndexKeyTypeNone, ast.IndexKeyTypeUnique:
	default:
		return nil, errno.NotSupported("FULLTEXT / SPATIAL / VECTOR indexes")
	}
	spec := &ast.Constraint{Name: x.IndexName, Keys: x.IndexPartSpecifications, Option: x.IndexOption, IfNotExists: x.IfNotExists}
	return &Result{}, e.addIndex(ctx, env, x, x.Table, spec, x.KeyType == ast.IndexKeyTypeUnique)
}

func (e *Executor) dropIndexStmt(ctx context.Context, env StmtEnv, x *ast.DropIndexStmt) (*Result, error) {
	return &Result{}, e.dropIndex(ctx, env, x, x.Table, x.IndexName, x.IfExists)
}

// alterTable runs each clause of an ALTER TABLE as its own job, in order
// (consecutive ADD COLUMN clauses are one job, so they become public
// together; RENAME TO last, as MySQL applies it). The clauses are first
// checked together against the table as the earlier ones leave it, so a
// statement with an invalid clause changes nothing; a clause that fails
// on the data (a duplicate in a new UNIQUE index, a NULL for NOT NULL)
// leaves the clauses before it done, which MySQL's single rebuild would
// not.
func (e *Executor) alterTable(ctx context.Context, env StmtEnv, x *ast.AlterTableStmt) (*Result, error) {
	x = splitColumnChecks(splitColumnKeys(x))
	res := &Result{}
	if !checksEnabled(env) {
		var had bool
		if x, had = withoutCheckClauses(x); had {
			res.Warnings = append(res.Warnings, checksOffWarning)
		}
	}
	if err := e.checkAlter(ctx, env, x); err != nil {
		return nil, err
	}
	var rename *ast.AlterTableSpec
	for i := 0; i < len(x.Specs); i++ {
		sp := x.Specs[i]
		var err error
		if isCheckClause(sp) {
			if err := e.runCheckClause(ctx, env, x, sp); err != nil {
				return nil, err
			}
			continue
		}
		switch sp.Tp {
		case ast.AlterTableAddConstraint:
			if sp.Constraint.Tp == ast.ConstraintForeignKey {
				err = e.addForeignKey(ctx, env, x, sp.Constraint)
			} else {
				err = e.addIndex(ctx, env, x, x.Table, sp.Constraint, isUniqueConstraint(sp.Constraint))
			}
		case ast.AlterTableDropIndex:
			err = e.dropIndex(ctx, env, x, x.Table, sp.Name, sp.IfExists)
		case ast.AlterTableDropForeignKey:
			err = e.dropForeignKey(ctx, env, x, sp.Name)
		case ast.AlterTableAddColumns:
			n := i + 1
			for n < len(x.Specs) && x.Specs[n].Tp == ast.AlterTableAddColumns {
				n++
			}
			err = e.addColumns(ctx, env, x, x.Specs[i:n])
			i = n - 1
		case ast.AlterTableDropColumn:
			err = e.dropColumn(ctx, env, x, sp)
		case ast.AlterTableRenameColumn, ast.AlterTableAlterColumn, ast.AlterTableChangeColumn, ast.AlterTableModifyColumn:
			err = e.modifyColumn(ctx, env, x, sp, res)
		case ast.AlterTableRenameTable:
			rename = sp
		case ast.AlterTableOption:
			if convertTo(sp) != nil {
				err = e.convertCharset(ctx, env, x, sp, res) // charset.go
			} else {
				err = e.alterTableOptions(ctx, env, x, sp) // affinity.go
			}
		case ast.AlterTableEnableKeys, ast.AlterTableDisableKeys:
			res.Warnings = append(res.Warnings, Warning{Level: "Note", Code: errIllegalHaCreateOption,
				Msg: fmt.Sprintf("Table storage engine for '%s' doesn't have this option", x.Table.Name.O)})
		}
		if err != nil {
			return nil, err
		}
	}
	if rename != nil {
		if err := e.renameTable(ctx, env, x, x.Table, rename.NewTable); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// errIllegalHaCreateOption is MySQL's ER_ILLEGAL_HA: the note InnoDB gives
// for ALTER TABLE ... DISABLE KEYS / ENABLE KEYS.
const errIllegalHaCreateOption uint16 = 1031

// splitColumnKeys returns x with the keys its ADD COLUMN clauses declare
// (a column's UNIQUE [KEY] option, the constraints of ADD COLUMN (...))
// as ADD INDEX clauses of their own, right after the ADD COLUMN clauses
// they follow: MySQL adds them in the same statement, here the columns
// become public first and each index is then built online (an unnamed
// one named after its first column, as MySQL does). x is not modified.
func splitColumnKeys(x *ast.AlterTableStmt) *ast.AlterTableStmt {
	split := false
	for _, sp := range x.Specs {
		if sp.Tp == ast.AlterTableAddColumns && (len(sp.NewConstraints) > 0 || slices.ContainsFunc(sp.NewColumns, hasUniqueOption)) {
			split = true
		}
	}
	if !split {
		return x
	}
	out := *x
	out.Specs = nil
	var pending []*ast.AlterTableSpec
	flush := func() {
		out.Specs = append(out.Specs, pending...)
		pending = nil
	}
	for _, sp := range x.Specs {
		if sp.Tp != ast.AlterTableAddColumns {
			flush()
			out.Specs = append(out.Specs, sp)
			continue
		}
		ns := *sp
		ns.NewColumns = make([]*ast.ColumnDef, len(sp.NewColumns))
		for i, cd := range sp.NewColumns {
			if !hasUniqueOption(cd) {
				ns.NewColumns[i] = cd
				continue
			}
			c := *cd
			c.Options = slices.DeleteFunc(slices.Clone(cd.Options), func(o *ast.ColumnOption) bool { return o.Tp == ast.ColumnOptionUniqKey })
			ns.NewColumns[i] = &c
			pending = append(pending, &ast.AlterTableSpec{Tp: ast.AlterTableAddConstraint, Constraint: &ast.Constraint{
				Tp: ast.ConstraintUniq, Keys: []*ast.IndexPartSpecification{{Column: &ast.ColumnName{Name: cd.Name.Name}, Length: -1}}}})
		}
		for _, con := range sp.NewConstraints {
			pending = append(pending, &ast.AlterTableSpec{Tp: ast.AlterTableAddConstraint, Constraint: con})
		}
		ns.NewConstraints = nil
		out.Specs = append(out.Specs, &ns)
	}
	flush()
	return &out
}

func hasUniqueOption(cd *ast.ColumnDef) bool {
	return slices.ContainsFunc(cd.Options, func(o *ast.ColumnOption) bool { return o.Tp == ast.ColumnOptionUniqKey })
}

func isUniqueConstraint(c *ast.Constraint) bool {
	return c.Tp == ast.ConstraintUniq || c.Tp == ast.ConstraintUniqKey || c.Tp == ast.ConstraintUniqIndex
}

// checkAlter validates every clause of x against the table as the clauses
// before it leave it (a copy changed in memory), with the errors the jobs
// would end with.
func (e *Executor) checkAlter(ctx context.Context, env StmtEnv, x *ast.AlterTableStmt) error {
	db, t, err := e.alterTarget(ctx, env, x.Table)
	if err != nil {
		return err
	}
	sim := t.Clone()
	refs, err := e.dom.Catalog().Referrers(ctx, t)
	if err != nil {
		return err
	}
	renames := 0
	for _, sp := range x.Specs {
		if err := checkAlterFK(sim, refs, sp); err != nil {
			return err
		}
		if handled, err := e.simulateCheckClause(ctx, db, sim, x, sp); handled {
			if err != nil {
				return err
			}
			continue
		}
		switch sp.Tp {
		case ast.AlterTableAddConstraint:
			c := sp.Constraint
			switch c.Tp {
			case ast.ConstraintIndex, ast.ConstraintKey, ast.ConstraintUniq, ast.ConstraintUniqKey, ast.ConstraintUniqIndex:
			case ast.ConstraintForeignKey:
				fk, err := ddl.NewFKInfo(sim, c, db.Name)
				if err != nil {
					return err
				}
				if _, err := ddl.AddFK(sim, fk); err != nil {
					return err
				}
				if err := ddl.CheckFKActions(sim); err != nil {
					return err
				}
				if err := e.checkFKParent(ctx, env, db, sim, fk); err != nil {
					return err
				}
				continue
			case ast.ConstraintPrimaryKey:
				if err := ddl.CheckAddPrimary(c); err != nil {
					return err
				}
				return errno.NotSupported("ALTER TABLE ADD PRIMARY KEY")
			default:
				return errno.NotSupported("ALTER TABLE ADD of this constraint")
			}
			if c.IfNotExists && c.Name != "" && sim.FindIndex(c.Name) != nil {
				continue
			}
			ix, err := ddl.NewIndexInfo(sim, c.Name, c.Keys, isUniqueConstraint(c), c.Option)
			if err != nil {
				return err
			}
			sim.Indices = append(sim.Indices, ix)
		case ast.AlterTableDropPrimaryKey:
			if err := ddl.CheckDropPrimary(sim); err != nil {
				return err
			}
			return errno.NotSupported("dropping a PRIMARY KEY")
		case ast.AlterTableDropIndex:
			ix := sim.FindIndex(sp.Name)
			switch {
			case ix == nil && strings.EqualFold(sp.Name, "PRIMARY") && sim.PKIsHandle:
				return ddl.CheckDropPrimary(sim)
			case ix == nil && sp.IfExists:
				continue
			case ix == nil:
				return errno.New(errCantDropKey, "Can't DROP '%s'; check that column/key exists", sp.Name)
			case ix.Primary:
				if err := ddl.CheckDropPrimary(sim); err != nil {
					return err
				}
				return errno.NotSupported("dropping a PRIMARY KEY")
			}
			sim.Indices = slices.DeleteFunc(sim.Indices, func(x *model.IndexInfo) bool { return x == ix })
		case ast.AlterTableDropForeignKey:
			if sim.FindFK(sp.Name) == nil {
				return errno.New(errCantDropKey, "Can't DROP '%s'; check that column/key exists", sp.Name)
			}
			sim.ForeignKeys = slices.DeleteFunc(sim.ForeignKeys, func(fk *model.FKInfo) bool { return strings.EqualFold(fk.Name, sp.Name) })
		case ast.AlterTableAddColumns:
			if len(sp.NewConstraints) > 0 {
				return errno.NotSupported("constraints in ADD COLUMN (...)")
			}
			defs, pos := newColumnDefs(sim, sp)
			cols, poss, err := ddl.NewColumns(sim, defs, pos, env)
			if err != nil {
				return err
			}
			ddl.SimulateAddColumns(sim, cols, poss)
		case ast.AlterTableDropColumn:
			name := sp.OldColumnName.Name.O
			if sp.IfExists && sim.FindColumn(name) < 0 {
				continue
			}
			if err := ddl.CheckDropColumn(sim, name); err != nil {
				return err
			}
			ddl.SimulateDropColumn(sim, name)
		case ast.AlterTableRenameColumn, ast.AlterTableAlterColumn, ast.AlterTableChangeColumn, ast.AlterTableModifyColumn:
			old, nc, pos, err := columnChange(sim, sp, env)
			if err != nil {
				return err
			}
			if err := e.checkFKColumnType(ctx, db, sim, refs, old, nc); err != nil {
				return err
			}
			if err := ddl.SimulateModifyColumn(sim, old, nc, ddl.PositionOf(pos)); err != nil {
				return err
			}
		case ast.AlterTableRenameTable:
			if renames++; renames > 1 {
				return errno.NotSupported("several RENAME TO clauses in one ALTER TABLE")
			}
		case ast.AlterTableOption:
			if convertTo(sp) != nil {
				changes, _, err := convertedColumns(db, sim, sp)
				if err != nil {
					return err
				}
				for _, nc := range changes {
					if err := ddl.SimulateModifyColumn(sim, nc.Name, nc, ddl.ColumnPosition{}); err != nil {
						return err
					}
				}
				continue
			}
			if _, err := tableOptions(sp); err != nil {
				return err
			}
		case ast.AlterTableLock, ast.AlterTableAlgorithm:
			// Accepted: index and column changes are always online here.
		case ast.AlterTableEnableKeys, ast.AlterTableDisableKeys:
			// Accepted with a note (alterTable), as InnoDB does: indexes
			// are always maintained. mysqldump wraps every table's rows
			// in DISABLE KEYS / ENABLE KEYS.
		default:
			return errno.NotSupported("this ALTER TABLE clause")
		}
	}
	if sim.HasGenerated() || hasGeneratedDef(x) {
		sim.Init()
		return ddl.CheckGenerated(sim)
	}
	return nil
}

// hasGeneratedDef reports whether an ALTER TABLE defines a generated
// column.
func hasGeneratedDef(x *ast.AlterTableStmt) bool {
	for _, sp := range x.Specs {
		for _, cd := range sp.NewColumns {
			for _, o := range cd.Options {
				if o.Tp == ast.ColumnOptionGenerated {
					return true
				}
			}
		}
	}
	return false
}

// addColumns runs ADD COLUMN clauses as one ADD COLUMN job (package ddl:
// delete only, write only, public; instant: existing rows are not
// rewritten, they read the new columns as their origin defaults).
func (e *Executor) addColumns(ctx context.Context, env StmtEnv, stmt *ast.AlterTableStmt, specs []*ast.AlterTableSpec) error {
	db, t, err := e.alterTarget(ctx, env, stmt.Table)
	if err != nil {
		return err
	}
	var defs []*ast.ColumnDef
	var pos []*ast.ColumnPosition
	for _, sp := range specs {
		d, p := newColumnDefs(t, sp)
		defs, pos = append(defs, d...), append(pos, p...)
	}
	if len(defs) == 0 {
		return nil
	}
	cols, poss, err := ddl.NewColumns(t, defs, pos, env)
	if err != nil {
		return err
	}
	return e.submitDDL(ctx, stmt, &ddl.Job{Type: ddl.ActionAddColumn, SchemaID: db.ID, SchemaName: db.Name,
		TableID: t.ID, TableName: t.Name, Columns: cols, Positions: poss})
}

// dropColumn runs a DROP COLUMN job: write only, delete only, gone (its
// single-column indexes are dropped with it, first); the values stay in
// the rows under a column id never reused.
func (e *Executor) dropColumn(ctx context.Context, env StmtEnv, stmt *ast.AlterTableStmt, sp *ast.AlterTableSpec) error {
	db, t, err := e.alterTarget(ctx, env, stmt.Table)
	if err != nil {
		return err
	}
	name := sp.OldColumnName.Name.O
	if sp.IfExists && t.FindColumn(name) < 0 {
		return nil
	}
	if err := ddl.CheckDropColumn(t, name); err != nil {
		return err
	}
	return e.submitDDL(ctx, stmt, &ddl.Job{Type: ddl.ActionDropColumn, SchemaID: db.ID, SchemaName: db.Name,
		TableID: t.ID, TableName: t.Name, ColumnName: t.Columns[t.FindColumn(name)].Name})
}

// modifyColumn runs RENAME COLUMN, ALTER COLUMN ... SET / DROP DEFAULT and
// CHANGE / MODIFY COLUMN as one-step jobs when the stored rows decode
// unchanged under the change (ddl.ModifyColumn). Making a column NOT NULL
// or narrower is three steps: DML refuses what will not fit, then the
// rows are checked (MySQL's error for the first that does not). Any other
// type change rewrites every row online (ddl.NeedsRewrite; a value that
// does not fit is MySQL's error in strict mode, a warning outside it).
func (e *Executor) modifyColumn(ctx context.Context, env StmtEnv, stmt *ast.AlterTableStmt, sp *ast.AlterTableSpec, res *Result) error {
	db, t, err := e.alterTarget(ctx, env, stmt.Table)
	if err != nil {
		return err
	}
	old, nc, pos, err := columnChange(t, sp, env)
	if err != nil {
		return err
	}
	typ := ddl.ActionModifyColumn
	if sp.Tp == ast.AlterTableAlterColumn {
		typ = ddl.ActionSetDefault
	}
	return e.submitColumnChange(ctx, env, stmt, res, typ, db, t, t.Columns[t.FindColumn(old)], nc, pos)
}

// submitColumnChange runs the job that makes column oc of t nc (moved to
// pos; nil: where it is): a modify column (a rewrite of every row when
// the stored values or index keys change, else a check of the rows when
// the type narrows) or a set default value. The rewrite's warnings (not
// strict: adjusted values) go to res.
func (e *Executor) submitColumnChange(ctx context.Context, env StmtEnv, stmt ast.StmtNode, res *Result, typ ddl.ActionType,
	db *model.DBInfo, t *model.TableInfo, oc, nc *model.ColumnInfo, pos *ast.ColumnPosition) error {
	job := &ddl.Job{Type: typ, SchemaID: db.ID, SchemaName: db.Name,
		TableID: t.ID, TableName: t.Name, ColumnName: oc.Name, Columns: []*model.ColumnInfo{nc},
		Positions: []ddl.ColumnPosition{ddl.PositionOf(pos)}}
	if typ == ddl.ActionModifyColumn && ddl.NeedsRewrite(t, oc, nc) {
		// Every row is rewritten, each value converted as INSERT would
		// under the statement's sql_mode.
		job.Rewrite, job.Lenient = true, !SQLMode(env).HasStrictMode()
		if (oc.Type.Tp == mysql.TypeTimestamp) != (nc.Type.Tp == mysql.TypeTimestamp) && expr.TimestampZone(env) != nil {
			if tz, _, err := env.SysVar("time_zone", false); err == nil {
				job.TimeZone = tz.String() // values convert in the ALTER's zone, as MySQL's
			}
		}
	} else {
		job.CheckRows = ddl.NeedsCheck(oc, nc)
	}
	err := e.submitDDL(ctx, stmt, job)
	for _, w := range job.Warnings {
		res.Warn(w.Code, w.Msg)
	}
	return err
}

// newColumnDefs returns the columns an ADD COLUMN clause adds to t (IF NOT
// EXISTS skips existing ones, as MySQL and TiDB do) and their positions.
func newColumnDefs(t *model.TableInfo, sp *ast.AlterTableSpec) ([]*ast.ColumnDef, []*ast.ColumnPosition) {
	var defs []*ast.ColumnDef
	var pos []*ast.ColumnPosition
	for _, cd := range sp.NewColumns {
		if sp.IfNotExists && t.FindColumn(cd.Name.Name.O) >= 0 {
			continue
		}
		defs, pos = append(defs, cd), append(pos, sp.Position)
	}
	return defs, pos
}

// columnChange validates a RENAME / ALTER / CHANGE / MODIFY COLUMN clause
// against t and returns the column it changes (its current name), the
// column as it will be and where it goes (nil: where it is).
func columnChange(t *model.TableInfo, sp *ast.AlterTableSpec, env StmtEnv) (string, *model.ColumnInfo, *ast.ColumnPosition, error) {
	switch sp.Tp {
	case ast.AlterTableRenameColumn:
		old := sp.OldColumnName.Name.O
		off := t.FindColumn(old)
		if off < 0 {
			return "", nil, nil, errno.New(errno.ErrBadField, "Unknown column '%s' in '%s'", old, t.Name)
		}
		c := *t.Columns[off]
		c.Name = sp.NewColumnName.Name.O
		if !strings.EqualFold(c.Name, old) && t.FindColumn(c.Name) >= 0 {
			return "", nil, nil, errno.New(errno.ErrDupFieldName, "Duplicate column name '%s'", c.Name)
		}
		if err := ddl.CheckColumnName(c.Name); err != nil {
			return "", nil, nil, err
		}
		if err := ddl.CheckGeneratedChange(t, t.Columns[off], &c); err != nil {
			return "", nil, nil, err
		}
		return t.Columns[off].Name, &c, nil, nil
	case ast.AlterTableAlterColumn:
		nc, err := ddl.AlterDefault(t, sp.NewColumns[0], env)
		if err != nil {
			return "", nil, nil, err
		}
		return nc.Name, nc, nil, nil
	}
	old := sp.NewColumns[0].Name.Name.O // MODIFY
	if sp.Tp == ast.AlterTableChangeColumn {
		old = sp.OldColumnName.Name.O
	}
	nc, err := ddl.ModifyColumn(t, old, sp.NewColumns[0], env)
	if err != nil {
		return "", nil, nil, err
	}
	if len(sp.NewConstraints) > 0 {
		return "", nil, nil, errno.NotSupported("constraints in CHANGE / MODIFY COLUMN")
	}
	return t.Columns[t.FindColumn(old)].Name, nc, sp.Position, nil
}

// alterTarget resolves the table of an ALTER (fresh from the KV layer); a
// view is 1347 as in MySQL.
func (e *Executor) alterTarget(ctx context.Context, env StmtEnv, tn *ast.TableName) (*model.DBInfo, *model.TableInfo, error) {
	db, err := e.dbFor(ctx, env, tn.Schema.O)
	if err != nil {
		return nil, nil, err
	}
	t, err := e.freshTable(ctx, db, tn.Name.O)
	if err != nil {
		return nil, nil, err
	}
	if t.IsView() {
		return nil, nil, errno.New(1347, "'%s.%s' is not BASE TABLE", db.Name, t.Name)
	}
	return db, t, nil
}

// renameTables runs RENAME TABLE a TO b, c TO d: one job per pair, in
// order.
func (e *Executor) renameTables(ctx context.Context, env StmtEnv, x *ast.RenameTableStmt) (*Result, error) {
	for _, tt := range x.TableToTables {
		if err := e.renameTable(ctx, env, x, tt.OldTable, tt.NewTable); err != nil {
			return nil, err
		}
	}
	return &Result{}, nil
}

// renameTable moves a table (or, for RENAME TABLE, a view) to another
// name or database: one schema version, its id (rows, indexes) unchanged.
func (e *Executor) renameTable(ctx context.Context, env StmtEnv, stmt ast.StmtNode, from, to *ast.TableName) error {
	db, err := e.dbFor(ctx, env, from.Schema.O)
	if err != nil {
		return err
	}
	t, err := e.freshTable(ctx, db, from.Name.O)
	if err != nil {
		return err
	}
	if _, isAlter := stmt.(*ast.AlterTableStmt); isAlter && t.IsView() {
		return errno.New(1347, "'%s.%s' is not BASE TABLE", db.Name, t.Name)
	}
	ndb, err := e.dbFor(ctx, env, to.Schema.O)
	if err != nil {
		return err
	}
	name := to.Name.O
	if len(name) > 64 || name == "" {
		return errno.New(1103, "Incorrect table name '%s'", name)
	}
	if ndb.ID == db.ID && name == t.Name {
		return nil
	}
	if !(ndb.ID == db.ID && strings.EqualFold(name, t.Name)) {
		if _, err := e.freshTable(ctx, ndb, name); err == nil {
			return errno.New(errno.ErrTableExists, "Table '%s' already exists", name)
		}
	}
	return e.submitDDL(ctx, stmt, &ddl.Job{Type: ddl.ActionRenameTable, SchemaID: db.ID, SchemaName: db.Name,
		TableID: t.ID, TableName: t.Name, NewSchemaID: ndb.ID, NewSchemaName: ndb.Name, NewTableName: name})
}

// freshTable reads the table definition from the KV layer, not the cache.
func (e *Executor) freshTable(ctx context.Context, db *model.DBInfo, name string) (*model.TableInfo, error) {
	e.dom.Catalog().Reload(db, name)
	return e.dom.Catalog().GetTable(ctx, db, name)
}

// addIndex validates the index against the table's definition and runs it
// as an ADD INDEX job (package ddl: delete only, write only, backfill,
// public; a failed backfill, e.g. a duplicate in a UNIQUE index, removes
// the index again).
func (e *Executor) addIndex(ctx context.Context, env StmtEnv, stmt ast.StmtNode, tn *ast.TableName, c *ast.Constraint, unique bool) error {
	db, err := e.dbFor(ctx, env, tn.Schema.O)
	if err != nil {
		return err
	}
	t, err := e.freshTable(ctx, db, tn.Name.O)
	if err != nil {
		return err
	}
	if c.IfNotExists && c.Name != "" && t.FindIndex(c.Name) != nil {
		return nil
	}
	ix, err := ddl.NewIndexInfo(t, c.Name, c.Keys, unique, c.Option)
	if err != nil {
		return err
	}
	return e.submitDDL(ctx, stmt, &ddl.Job{Type: ddl.ActionAddIndex, SchemaID: db.ID, SchemaName: db.Name,
		TableID: t.ID, TableName: t.Name, Index: ix, IfNotExists: c.IfNotExists})
}

// dropIndex runs a DROP INDEX job: write only (queries stop reading it),
// then absent. Its entries stay under an id never reused.
func (e *Executor) dropIndex(ctx context.Context, env StmtEnv, stmt ast.StmtNode, tn *ast.TableName, name string, ifExists bool) error {
	db, err := e.dbFor(ctx, env, tn.Schema.O)
	if err != nil {
		return err
	}
	t, err := e.freshTable(ctx, db, tn.Name.O)
	if err != nil {
		return err
	}
	ix := t.FindIndex(name)
	if ix == nil && strings.EqualFold(name, "PRIMARY") && t.PKIsHandle {
		return ddl.CheckDropPrimary(t)
	}
	if ix == nil {
		if ifExists {
			return nil
		}
		return errno.New(errCantDropKey, "Can't DROP '%s'; check that column/key exists", name)
	}
	if ix.Primary {
		if err := ddl.CheckDropPrimary(t); err != nil {
			return err
		}
		return errno.NotSupported("dropping a PRIMARY KEY")
	}
	refs, err := e.dom.Catalog().Referrers(ctx, t)
	if err != nil {
		return err
	}
	if err := checkDropFKIndex(t, refs, ix); err != nil {
		return err
	}
	return e.submitDDL(ctx, stmt, &ddl.Job{Type: ddl.ActionDropIndex, SchemaID: db.ID, SchemaName: db.Name,
		TableID: t.ID, TableName: t.Name, IndexName: name, IfExists: ifExists})
}

// checkFKParent checks a new foreign key fk of table t (in db) against its
// parent: the parent must exist (1824, unless foreign_key_checks=0; the
// FK then waits for a parent of that name) and have compatible, indexed
// columns (ddl.CheckFKParent). A self-referencing FK is checked against t.
func (e *Executor) checkFKParent(ctx context.Context, env StmtEnv, db *model.DBInfo, t *model.TableInfo, fk *model.FKInfo) error {
	if fk.References(db.Name, t.Name) {
		return ddl.CheckFKParent(t, fk, t)
	}
	pdb, err := e.dom.Catalog().GetDB(ctx, fk.RefSchema)
	var parent *model.TableInfo
	if err == nil {
		parent, err = e.freshTable(ctx, pdb, fk.RefTable)
	}
	if err != nil {
		code := errno.FromError(err).Code
		if code != errno.ErrBadDB && code != errno.ErrNoSuchTable {
			return err
		}
		if !fkChecksOn(env) {
			return nil
		}
		return errno.New(errno.ErrFKCannotOpenParent, "Failed to open the referenced table '%s'", fk.RefTable)
	}
	if parent.IsView() {
		return errno.New(errno.ErrFKCannotOpenParent, "Failed to open the referenced table '%s'", fk.RefTable)
	}
	return ddl.CheckFKParent(t, fk, parent)
}

// checkDropParent refuses (3730) to drop t while a table outside the
// statement's list references it, unless foreign_key_checks=0.
func (e *Executor) checkDropParent(ctx context.Context, env StmtEnv, db *model.DBInfo, t *model.TableInfo, dropped []*ast.TableName) error {
	if !fkChecksOn(env) {
		return nil
	}
	refs, err := e.dom.Catalog().Referrers(ctx, t)
	if err != nil {
		return err
	}
	for _, ref := range refs {
		if ref.Child.ID == t.ID || slices.ContainsFunc(dropped, func(tn *ast.TableName) bool {
			s := tn.Schema.O
			if s == "" {
				s = env.CurrentDB()
			}
			return strings.EqualFold(s, ref.ChildDB) && strings.EqualFold(tn.Name.O, ref.Child.Name)
		}) {
			continue
		}
		return errDropParent(t, ref)
	}
	return nil
}

// errDropParent is MySQL's 3730 for dropping parent t while ref
// references it.
func errDropParent(t *model.TableInfo, ref catalog.FKRef) error {
	return errno.New(errno.ErrFKCannotDropParent, "Cannot drop table '%s' referenced by a foreign key constraint '%s' on table '%s'.", t.Name, ref.FK.Name, ref.Child.Name)
}
