package executor

import (
	"time"

	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/collate"
	"github.com/stratadb/strata/sql/ddl"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/infoschema"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/privilege"
	"github.com/stratadb/strata/sql/types"
)

func StringColumn(name string, flen int) ResultColumn {
	ft := types.VarcharType
	ft.Flen = flen
	return ResultColumn{Name: name, OrgName: name, Type: ft}
}

func StringRow(vals ...string) []types.Datum {
	row := make([]types.Datum, len(vals))
	for i, v := range vals {
		row[i] = types.NewString(v)
	}
	return row
}

// Show answers the SHOW statements about the schema and the cluster
// (databases, tables, columns, indexes, CREATE TABLE / VIEW, engines,
// table regions, statistics, grants) for the session env, filtered by LIKE or
// WHERE. SHOW statements about the session itself (variables, status,
// warnings, processes) are the session's.
func (e *Executor) Show(ctx context.Context, x *ast.ShowStmt, env StmtEnv) (*Result, error) {
	var res *Result
	switch x.Tp {
	case ast.ShowRegions:
		return e.showRegions(ctx, env, x)
	case ast.ShowAffinity:
		return e.showAffinity(ctx, env, x) // affinity.go
	case ast.ShowStatsMeta, ast.ShowStatsHistograms:
		return e.showStats(ctx, env, x)
	case ast.ShowGrants:
		return e.showGrants(env, x) // grant.go
	case ast.ShowDatabases:
		dbs, err := e.dom.Catalog().ListDBs(ctx)
		if err != nil {
			return nil, err
		}
		res = &Result{Columns: []ResultColumn{StringColumn("Database", 64)}}
		res.Rows = append(res.Rows, StringRow(infoschema.DBName))
		for _, db := range dbs {
			if env.VisibleDB(db.Name) {
				res.Rows = append(res.Rows, StringRow(db.Name))
			}
		}
	case ast.ShowTables:
		if is := e.dom.InfoSchema(); strings.EqualFold(x.DBName, infoschema.DBName) || (x.DBName == "" && env.CurrentDB() == infoschema.DBName) {
			res = &Result{Columns: []ResultColumn{StringColumn("Tables_in_"+infoschema.DBName, 64)}}
			if x.Full {
				res.Columns = append(res.Columns, StringColumn("Table_type", 64))
			}
			for _, n := range is.TableNames() {
				if x.Full {
					res.Rows = append(res.Rows, StringRow(n, "SYSTEM VIEW"))
				} else {
					res.Rows = append(res.Rows, StringRow(n))
				}
			}
			break
		}
		db, err := e.dbFor(ctx, env, x.DBName)
		if err != nil {
			return nil, err
		}
		tables, err := e.dom.Catalog().ListTables(ctx, db)
		if err != nil {
			return nil, err
		}
		res = &Result{Columns: []ResultColumn{StringColumn("Tables_in_"+db.Name, 64)}}
		if x.Full {
			res.Columns = append(res.Columns, StringColumn("Table_type", 64))
		}
		for _, t := range tables {
			if !env.VisibleTable(db.Name, t.Name) {
				continue
			}
			if x.Full {
				kind := "BASE TABLE"
				if t.IsView() {
					kind = "VIEW"
				}
				res.Rows = append(res.Rows, StringRow(t.Name, kind))
			} else {
				res.Rows = append(res.Rows, StringRow(t.Name))
			}
		}
	case ast.ShowColumns:
		t, err := e.showTable(ctx, env, x.Table, x.DBName)
		if err != nil {
			return nil, err
		}
		res = &Result{Columns: []ResultColumn{StringColumn("Field", 64), StringColumn("Type", 64), StringColumn("Null", 3), StringColumn("Key", 3), StringColumn("Default", 64), StringColumn("Extra", 64)}}
		if x.Full { // MySQL's FULL columns: Collation after Type, Privileges and Comment last
			res.Columns = slices.Insert(res.Columns, 2, StringColumn("Collation", 64))
			res.Columns = append(res.Columns, StringColumn("Privileges", 80), StringColumn("Comment", 1024))
		}
		for _, c := range t.Columns {
			null, key, extra := "YES", "", ""
			if c.Type.NotNull() {
				null = "NO"
			}
			if c.IsPrimaryKey() {
				key = "PRI"
			}
			if c.AutoIncrement {
				extra = "auto_increment"
			}
			extra = strings.TrimSpace(extra + " " + c.OnUpdateExtra() + " " + c.GeneratedExtra())
			row := StringRow(c.Name, c.Type.SQLName(), null, key, "", extra)
			switch {
			case c.DefaultNow:
				row[4] = types.NewString(c.DefaultNowText())
			case c.HasDefault && !c.DefaultNull:
				row[4] = types.NewString(defaultText(c, expr.TimestampZone(env)))
			default:
				row[4] = types.NullDatum
			}
			if x.Full {
				coll := types.NullDatum
				if c.Type.Class() == types.ClassString && !c.Type.Binary() && c.Type.Tp != mysql.TypeJSON {
					coll = types.NewString(collate.Of(c.Type.Collation()).Name)
				}
				row = slices.Insert(row, 2, coll)
				row = append(row, types.NewString("select,insert,update,references"), types.NewString(""))
			}
			res.Rows = append(res.Rows, row)
		}
	case ast.ShowIndex:
		return e.showIndex(ctx, env, x)
	case ast.ShowCreateTable, ast.ShowCreateView:
		t, err := e.showTable(ctx, env, x.Table, "")
		if err != nil {
			return nil, err
		}
		if t.IsView() {
			return showCreateView(t), nil
		}
		if x.Tp == ast.ShowCreateView {
			db := x.Table.Schema.O
			if db == "" {
				db = env.CurrentDB()
			}
			return nil, errno.New(1347, "'%s.%s' is not VIEW", db, t.Name)
		}
		db := x.Table.Schema.O
		if db == "" {
			db = env.CurrentDB()
		}
		res = &Result{Columns: []ResultColumn{StringColumn("Table", 64), StringColumn("Create Table", 1024)},
			Rows: [][]types.Datum{StringRow(t.Name, createTableSQL(t, db, expr.TimestampZone(env)))}}
	case ast.ShowCollation:
		res = &Result{Columns: []ResultColumn{StringColumn("Collation", 64), StringColumn("Charset", 64), IntColumn("Id"),
			StringColumn("Default", 64), StringColumn("Compiled", 64), IntColumn("Sortlen"), StringColumn("Pad_attribute", 9)}}
		for _, c := range collate.All() {
			def := ""
			if c.Default {
				def = "Yes"
			}
			res.Rows = append(res.Rows, []types.Datum{types.NewString(c.Name), types.NewString(c.Charset), types.NewInt(int64(c.ID)),
				types.NewString(def), types.NewString("Yes"), types.NewInt(int64(c.Sortlen)), types.NewString(c.PadAttribute())})
		}
	case ast.ShowCharset:
		res = &Result{Columns: []ResultColumn{StringColumn("Charset", 64), StringColumn("Description", 2048), StringColumn("Default collation", 64), IntColumn("Maxlen")}}
		for _, c := range collate.Charsets() {
			res.Rows = append(res.Rows, []types.Datum{types.NewString(c.Name), types.NewString(c.Desc), types.NewString(c.Default.Name), types.NewInt(int64(c.Maxlen))})
		}
	case ast.ShowCreateDatabase:
		db, err := e.dbFor(ctx, env, x.DBName)
		if err != nil {
			return nil, err
		}
		if !env.VisibleDB(db.Name) {
			user, host := env.Account()
			return nil, privilege.DBDenied(user, host, db.Name)
		}
		coll := ddl.DBCollation(db)
		create := "CREATE DATABASE "
		if x.IfNotExists {
			create += "/*!32312 IF NOT EXISTS*/ "
		}
		create += "`" + db.Name + "` /*!40100 DEFAULT CHARACTER SET " + coll.Charset + " COLLATE " + coll.Name + " */"
		return &Result{Columns: []ResultColumn{StringColumn("Database", 64), StringColumn("Create Database", 1024)},
			Rows: [][]types.Datum{StringRow(db.Name, create)}}, nil
	case ast.ShowEngines:
		res = &Result{Columns: []ResultColumn{StringColumn("Engine", 64), StringColumn("Support", 8), StringColumn("Comment", 80), StringColumn("Transactions", 3), StringColumn("XA", 3), StringColumn("Savepoints", 3)},
			Rows: [][]types.Datum{StringRow("InnoDB", "DEFAULT", "Strata distributed storage (Raft-replicated regions)", "YES", "NO", "NO")}}
	case ast.ShowTriggers, ast.ShowEvents:
		// Strata has no triggers or events: the database must exist
		// (MySQL's 1046 / 1049), the answer is empty.
		if _, err := e.dbFor(ctx, env, x.DBName); err != nil {
			return nil, err
		}
		res = &Result{Columns: storedProgramColumns[x.Tp]}
	case ast.ShowProcedureStatus, ast.ShowFunctionStatus: // no stored routines
		res = &Result{Columns: storedProgramColumns[x.Tp]}
	default:
		return nil, errno.NotSupported("this SHOW statement")
	}
	return FilterShow(res, x, env)
}

// storedProgramColumns are MySQL 8.0's columns of SHOW TRIGGERS, SHOW
// EVENTS and SHOW PROCEDURE / FUNCTION STATUS, which answer no rows here
// (mysqldump --triggers --events --routines sends them).
var storedProgramColumns = map[ast.ShowStmtType][]ResultColumn{
	ast.ShowTriggers: {StringColumn("Trigger", 64), StringColumn("Event", 6), StringColumn("Table", 64),
		StringColumn("Statement", 1024), StringColumn("Timing", 6), StringColumn("Created", 26), StringColumn("sql_mode", 520),
		StringColumn("Definer", 288), StringColumn("character_set_client", 64), StringColumn("collation_connection", 64),
		StringColumn("Database Collation", 64)},
	ast.ShowEvents: {StringColumn("Db", 64), StringColumn("Name", 64), StringColumn("Definer", 288), StringColumn("Time zone", 64),
		StringColumn("Type", 9), StringColumn("Execute at", 19), StringColumn("Interval value", 256), StringColumn("Interval field", 18),
		StringColumn("Starts", 19), StringColumn("Ends", 19), StringColumn("Status", 21), IntColumn("Originator"),
		StringColumn("character_set_client", 64), StringColumn("collation_connection", 64), StringColumn("Database Collation", 64)},
	ast.ShowProcedureStatus: routineStatusColumns,
	ast.ShowFunctionStatus:  routineStatusColumns,
}

var routineStatusColumns = []ResultColumn{StringColumn("Db", 64), StringColumn("Name", 64), StringColumn("Type", 9),
	StringColumn("Definer", 288), StringColumn("Modified", 19), StringColumn("Created", 19), StringColumn("Security_type", 7),
	StringColumn("Comment", 1024), StringColumn("character_set_client", 64), StringColumn("collation_connection", 64),
	StringColumn("Database Collation", 64)}

func (e *Executor) showTable(ctx context.Context, env StmtEnv, tn *ast.TableName, dbName string) (*model.TableInfo, error) {
	schema := tn.Schema.O
	if dbName != "" {
		schema = dbName
	}
	if t, ok, err := e.systemTable(env, schema, tn.Name.O); ok {
		return t, err
	}
	db, err := e.dbFor(ctx, env, schema)
	if err != nil {
		return nil, err
	}
	if !env.VisibleTable(db.Name, tn.Name.O) {
		user, host := env.Account()
		return nil, privilege.TableDenied("SELECT", user, host, tn.Name.O)
	}
	return e.dom.Catalog().GetTable(ctx, db, tn.Name.O)
}

// eachTable calls fn for every table of every database env may see.
func (e *Executor) eachTable(ctx context.Context, env StmtEnv, fn func(db string, t *model.TableInfo)) error {
	dbs, err := e.dom.Catalog().ListDBs(ctx)
	if err != nil {
		return err
	}
	for _, db := range dbs {
		if !env.VisibleDB(db.Name) {
			continue
		}
		ts, err := e.dom.Catalog().ListTables(ctx, db)
		if err != nil {
			return err
		}
		for _, t := range ts {
			fn(db.Name, t)
		}
	}
	return nil
}

// FilterShow applies SHOW ... LIKE 'p' (on the first column) and SHOW ... WHERE.
func FilterShow(res *Result, x *ast.ShowStmt, env expr.Env) (*Result, error) {
	return filterShowOn(res, x, env, 0)
}

// filterShowOn is FilterShow with LIKE on column like.
func filterShowOn(res *Result, x *ast.ShowStmt, env expr.Env, like int) (*Result, error) {
	if x.Pattern == nil && x.Where == nil {
		return res, nil
	}
	cols := make([]expr.SchemaColumn, len(res.Columns))
	for i, c := range res.Columns {
		cols[i] = expr.SchemaColumn{Name: c.Name, Type: c.Type}
	}
	var cond expr.Expr
	var err error
	if x.Pattern != nil {
		x.Pattern.Expr = &ast.ColumnNameExpr{Name: &ast.ColumnName{Name: ast.NewCIStr(res.Columns[like].Name)}}
		// The names are lowered below; lower the pattern too ('Ssl%').
		x.Pattern.Pattern = &ast.FuncCallExpr{FnName: ast.NewCIStr("lower"), Args: []ast.ExprNode{x.Pattern.Pattern}}
		cond, err = expr.Compile(x.Pattern, &expr.Ctx{Columns: cols, Env: env, Clause: "where clause"})
	} else {
		cond, err = expr.Compile(x.Where, &expr.Ctx{Columns: cols, Env: env, Clause: "where clause"})
	}
	if err != nil {
		return nil, err
	}
	kept := res.Rows[:0]
	for _, r := range res.Rows {
		if x.Pattern != nil {
			// Names match case-insensitively, like MySQL's SHOW ... LIKE.
			r0 := r[like]
			r[like] = types.NewString(strings.ToLower(r0.String()))
			d, err := cond.Eval(r)
			r[like] = r0
			if err != nil {
				return nil, err
			}
			if ok, null := expr.IsTrue(d); ok && !null {
				kept = append(kept, r)
			}
			continue
		}
		d, err := cond.Eval(r)
		if err != nil {
			return nil, err
		}
		if ok, null := expr.IsTrue(d); ok && !null {
			kept = append(kept, r)
		}
	}
	res.Rows = kept
	return res, nil
}

// columnNullDefault is the NULL / NOT NULL and DEFAULT part of a column's
// definition in SHOW CREATE TABLE, as MySQL 8.0 prints it: a nullable
// TIMESTAMP says NULL (explicit_defaults_for_timestamp), a TEXT or BLOB
// has no DEFAULT NULL (it cannot have a default), CURRENT_TIMESTAMP
// carries the column's fractional seconds precision.
func columnNullDefault(c *model.ColumnInfo, loc *time.Location) string {
	var b strings.Builder
	if c.IsGenerated() {
		// MySQL 8: the generation clause, then NOT NULL; no default.
		kind := " VIRTUAL"
		if c.Generated.Stored {
			kind = " STORED"
		}
		b.WriteString(" GENERATED ALWAYS AS (" + c.Generated.Expr + ")" + kind)
		if c.Type.NotNull() {
			b.WriteString(" NOT NULL")
		}
		return b.String()
	}
	switch {
	case c.Type.NotNull():
		b.WriteString(" NOT NULL")
	case c.Type.Tp == mysql.TypeTimestamp:
		b.WriteString(" NULL")
	}
	switch {
	case c.DefaultNow:
		b.WriteString(" DEFAULT " + c.DefaultNowText())
	case c.HasDefault && c.DefaultNull:
		b.WriteString(" DEFAULT NULL")
	case c.HasDefault && c.Type.Tp == mysql.TypeBit:
		b.WriteString(" DEFAULT " + defaultText(c, loc))
	case c.HasDefault:
		b.WriteString(" DEFAULT '" + strings.ReplaceAll(defaultText(c, loc), "'", "''") + "'")
	case !c.Type.NotNull() && !isBlobType(c.Type.Tp):
		b.WriteString(" DEFAULT NULL")
	}
	if c.OnUpdateNow {
		b.WriteString(" ON UPDATE " + c.DefaultNowText())
	}
	return b.String()
}

// isBlobType reports whether tp is a TEXT or BLOB type (JSON is not).
func isBlobType(tp byte) bool {
	switch tp {
	case mysql.TypeTinyBlob, mysql.TypeBlob, mysql.TypeMediumBlob, mysql.TypeLongBlob:
		return true
	}
	return false
}

// createTableSQL is SHOW CREATE TABLE's statement for table t of database
// db (its foreign keys name a parent in another database with it), with
// TIMESTAMP defaults in zone loc (nil: as stored, UTC).
func createTableSQL(t *model.TableInfo, db string, loc *time.Location) string {
	var b strings.Builder
	b.WriteString("CREATE TABLE `" + t.Name + "` (\n")
	tcoll := ddl.TableCollation(t)
	for _, c := range t.Columns {
		b.WriteString("  `" + c.Name + "` " + c.Type.SQLName())
		b.WriteString(columnCollation(c.Type, tcoll))
		b.WriteString(columnNullDefault(c, loc))
		if c.AutoIncrement {
			b.WriteString(" AUTO_INCREMENT")
		}
		b.WriteString(",\n")
	}
	var defs []string
	if t.PKIsHandle {
		defs = append(defs, "  PRIMARY KEY (`"+t.Columns[t.HandleOffset].Name+"`) /*T![clustered_index] CLUSTERED */")
	}
	defs = append(defs, indexDefs(t)...)
	for _, fk := range t.ForeignKeys {
		defs = append(defs, "  "+fk.Clause(db))
	}
	for _, c := range t.Checks {
		defs = append(defs, "  "+c.Clause())
	}
	if len(defs) == 0 {
		s := b.String()
		b.Reset()
		b.WriteString(strings.TrimSuffix(s, ",\n") + "\n")
	} else {
		b.WriteString(strings.Join(defs, ",\n") + "\n")
	}
	b.WriteString(") ENGINE=InnoDB DEFAULT CHARSET=" + tcoll.Charset + " COLLATE=" + tcoll.Name)
	if t.Comment != "" {
		b.WriteString(" COMMENT='" + strings.ReplaceAll(t.Comment, "'", "''") + "'")
	}
	if t.Affinity != "" {
		b.WriteString(" /*T![affinity] AFFINITY='" + t.Affinity + "' */")
	}
	return b.String()
}

// FieldList answers COM_FIELD_LIST: the columns of a table in env's current
// database.
func (e *Executor) FieldList(ctx context.Context, table string, env StmtEnv) ([]ResultColumn, error) {
	t, ok, err := e.systemTable(env, "", table)
	dbName := infoschema.DBName
	if !ok {
		db, err := e.dbFor(ctx, env, "")
		if err != nil {
			return nil, err
		}
		if !env.VisibleTable(db.Name, table) {
			user, host := env.Account()
			return nil, privilege.TableDenied("SELECT", user, host, table)
		}
		if t, err = e.dom.Catalog().GetTable(ctx, db, table); err != nil {
			return nil, err
		}
		dbName = db.Name
	} else if err != nil {
		return nil, err
	}
	cols := make([]ResultColumn, len(t.Columns))
	for i, c := range t.Columns {
		cols[i] = ResultColumn{DB: dbName, Table: t.Name, OrgTable: t.Name, Name: c.Name, OrgName: c.Name, Type: c.Type}
	}
	return cols, nil
}

// systemTable resolves db.name when db (the current database when empty)
// is information_schema: ok reports whether it is.
func (e *Executor) systemTable(env StmtEnv, db, name string) (t *model.TableInfo, ok bool, err error) {
	if db == "" {
		db = env.CurrentDB()
	}
	sys := e.dom.InfoSchema()
	if !sys.IsSystemDB(db) {
		return nil, false, nil
	}
	t, _, err = sys.Table(db, name)
	return t, true, err
}

// defaultText is a column default as DESCRIBE shows it: BIT defaults as
// b'101', a TIMESTAMP's (stored as UTC) in zone loc (nil: UTC), everything
// else as stored.
func defaultText(c *model.ColumnInfo, loc *time.Location) string {
	switch c.Type.Tp {
	case mysql.TypeBit:
		return "b'" + strconv.FormatUint(c.DefaultDatum().Uint64(), 2) + "'"
	case mysql.TypeTimestamp:
		return string(expr.TimestampToLocal(types.NewString(c.Default), loc, c.Type.Decimal).Bytes())
	}
	return c.Default
}

func IntColumn(name string) ResultColumn {
	return ResultColumn{Name: name, OrgName: name, Type: types.Int64Type}
}

// showIndex answers SHOW INDEX / KEYS FROM t in MySQL's column layout.
func (e *Executor) showIndex(ctx context.Context, env StmtEnv, x *ast.ShowStmt) (*Result, error) {
	t, err := e.showTable(ctx, env, x.Table, x.DBName)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: []ResultColumn{
		StringColumn("Table", 64), IntColumn("Non_unique"), StringColumn("Key_name", 64), IntColumn("Seq_in_index"), StringColumn("Column_name", 64),
		StringColumn("Collation", 1), IntColumn("Cardinality"), IntColumn("Sub_part"), StringColumn("Packed", 10), StringColumn("Null", 3),
		StringColumn("Index_type", 16), StringColumn("Comment", 16), StringColumn("Index_comment", 1024), StringColumn("Visible", 3), StringColumn("Expression", 64), StringColumn("Clustered", 3),
	}}
	add := func(key string, unique bool, seq int, c *model.ColumnInfo, subPart int, comment string, clustered bool) {
		nonUnique, null, cl := int64(1), "YES", "NO"
		if unique {
			nonUnique = 0
		}
		if c.Type.NotNull() {
			null = ""
		}
		if clustered {
			cl = "YES"
		}
		sub := types.NullDatum
		if subPart > 0 {
			sub = types.NewInt(int64(subPart))
		}
		res.Rows = append(res.Rows, []types.Datum{
			types.NewString(t.Name), types.NewInt(nonUnique), types.NewString(key), types.NewInt(int64(seq)), types.NewString(c.Name),
			types.NewString("A"), types.NewInt(0), sub, types.NullDatum, types.NewString(null),
			types.NewString("BTREE"), types.NewString(""), types.NewString(comment), types.NewString("YES"), types.NullDatum, types.NewString(cl),
		})
	}
	if t.PKIsHandle {
		add("PRIMARY", true, 1, t.Columns[t.HandleOffset], 0, "", true)
	}
	for _, ix := range t.Indices {
		if !ix.Public() {
			continue
		}
		for i, c := range ix.Columns {
			add(ix.Name, ix.Unique, i+1, t.Columns[c.Offset], c.Length, ix.Comment, false)
		}
	}
	return FilterShow(res, x, env)
}

// indexDefs renders the public indexes of t as SHOW CREATE TABLE lines.
func indexDefs(t *model.TableInfo) []string {
	var out []string
	for _, ix := range t.Indices {
		if !ix.Public() {
			continue
		}
		cols := make([]string, len(ix.Columns))
		for i, c := range ix.Columns {
			cols[i] = "`" + t.Columns[c.Offset].Name + "`"
			if c.Length > 0 {
				cols[i] += "(" + strconv.Itoa(c.Length) + ")"
			}
		}
		var line string
		switch {
		case ix.Primary:
			layout := "NONCLUSTERED"
			if t.Clustered(ix) {
				layout = "CLUSTERED"
			}
			line = "  PRIMARY KEY (" + strings.Join(cols, ",") + ") /*T![clustered_index] " + layout + " */"
		case ix.Unique:
			line = "  UNIQUE KEY `" + ix.Name + "` (" + strings.Join(cols, ",") + ")"
		default:
			line = "  KEY `" + ix.Name + "` (" + strings.Join(cols, ",") + ")"
		}
		if ix.Comment != "" {
			line += " COMMENT '" + strings.ReplaceAll(ix.Comment, "'", "''") + "'"
		}
		out = append(out, line)
	}
	return out
}

// columnCollation is what SHOW CREATE TABLE adds after a text column's
// type when its collation is not the table's (as MySQL 8.0 shows it):
// " COLLATE name", with "CHARACTER SET cs" first when the character set
// differs too.
func columnCollation(ft types.FieldType, tcoll *collate.Collation) string {
	if ft.Class() != types.ClassString || ft.Binary() || ft.Tp == mysql.TypeJSON || ft.Tp == mysql.TypeEnum || ft.Tp == mysql.TypeSet {
		return ""
	}
	c := collate.ByID(ft.Collation())
	switch {
	case c == nil || c == tcoll:
		return ""
	case c.Charset != tcoll.Charset:
		return " CHARACTER SET " + c.Charset + " COLLATE " + c.Name
	}
	return " COLLATE " + c.Name
}
