package session

import (
	"context"
	"sort"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/catalog"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/executor"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/infoschema"
	"github.com/stratadb/strata/sql/privilege"
	"github.com/stratadb/strata/sql/types"
)

func strCol(name string, flen int) executor.ResultColumn {
	ft := types.VarcharType
	ft.Flen = flen
	return executor.ResultColumn{Name: name, OrgName: name, Type: ft}
}

func strRow(vals ...string) []types.Datum {
	row := make([]types.Datum, len(vals))
	for i, v := range vals {
		row[i] = types.NewString(v)
	}
	return row
}

func (s *Session) show(ctx context.Context, x *ast.ShowStmt) (*executor.Result, error) {
	var res *executor.Result
	switch x.Tp {
	case ast.ShowDatabases:
		dbs, err := s.cat.ListDBs(ctx)
		if err != nil {
			return nil, err
		}
		res = &executor.Result{Columns: []executor.ResultColumn{strCol("Database", 64)}}
		res.Rows = append(res.Rows, strRow(infoschema.DBName))
		for _, db := range dbs {
			if s.visibleDB(db.Name) {
				res.Rows = append(res.Rows, strRow(db.Name))
			}
		}
	case ast.ShowTables:
		if is, ok := s.exec.SystemSchema().(*infoschema.Schema); ok && (strings.EqualFold(x.DBName, infoschema.DBName) || (x.DBName == "" && s.db == infoschema.DBName)) {
			res = &executor.Result{Columns: []executor.ResultColumn{strCol("Tables_in_"+infoschema.DBName, 64)}}
			if x.Full {
				res.Columns = append(res.Columns, strCol("Table_type", 64))
			}
			for _, n := range is.TableNames() {
				if x.Full {
					res.Rows = append(res.Rows, strRow(n, "SYSTEM VIEW"))
				} else {
					res.Rows = append(res.Rows, strRow(n))
				}
			}
			break
		}
		db, err := s.dbFor(ctx, x.DBName)
		if err != nil {
			return nil, err
		}
		tables, err := s.cat.ListTables(ctx, db)
		if err != nil {
			return nil, err
		}
		res = &executor.Result{Columns: []executor.ResultColumn{strCol("Tables_in_"+db.Name, 64)}}
		if x.Full {
			res.Columns = append(res.Columns, strCol("Table_type", 64))
		}
		for _, t := range tables {
			if !s.visibleTable(db.Name, t.Name) {
				continue
			}
			if x.Full {
				res.Rows = append(res.Rows, strRow(t.Name, "BASE TABLE"))
			} else {
				res.Rows = append(res.Rows, strRow(t.Name))
			}
		}
	case ast.ShowColumns:
		t, err := s.showTable(ctx, x.Table, x.DBName)
		if err != nil {
			return nil, err
		}
		res = &executor.Result{Columns: []executor.ResultColumn{strCol("Field", 64), strCol("Type", 64), strCol("Null", 3), strCol("Key", 3), strCol("Default", 64), strCol("Extra", 64)}}
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
			row := strRow(c.Name, c.Type.SQLName(), null, key, "", extra)
			switch {
			case c.DefaultNow:
				row[4] = types.NewString("CURRENT_TIMESTAMP")
			case c.HasDefault && !c.DefaultNull:
				row[4] = types.NewString(defaultText(c))
			default:
				row[4] = types.NullDatum
			}
			res.Rows = append(res.Rows, row)
		}
	case ast.ShowIndex:
		return s.showIndex(ctx, x)
	case ast.ShowCreateTable, ast.ShowCreateView:
		t, err := s.showTable(ctx, x.Table, "")
		if err != nil {
			return nil, err
		}
		if t.IsView() {
			return showCreateView(t), nil
		}
		if x.Tp == ast.ShowCreateView {
			db := x.Table.Schema.O
			if db == "" {
				db = s.db
			}
			return nil, errno.New(1347, "'%s.%s' is not VIEW", db, t.Name)
		}
		res = &executor.Result{Columns: []executor.ResultColumn{strCol("Table", 64), strCol("Create Table", 1024)},
			Rows: [][]types.Datum{strRow(t.Name, createTableSQL(t))}}
	case ast.ShowVariables:
		res = &executor.Result{Columns: []executor.ResultColumn{strCol("Variable_name", 64), strCol("Value", 1024)}}
		names := make([]string, 0, len(defaultSysVars))
		for n := range defaultSysVars {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			d, _, _ := s.SysVar(n, x.GlobalScope)
			res.Rows = append(res.Rows, []types.Datum{types.NewString(n), types.NewString(d.String())})
		}
	case ast.ShowWarnings, ast.ShowErrors:
		if x.CountWarningsOrErrors {
			return &executor.Result{Columns: []executor.ResultColumn{{Name: "@@session.warning_count", Type: types.Int64Type}},
				Rows: [][]types.Datum{{types.NewInt(0)}}}, nil
		}
		res = &executor.Result{Columns: []executor.ResultColumn{strCol("Level", 7), strCol("Code", 4), strCol("Message", 512)}}
	case ast.ShowStatus:
		res = &executor.Result{Columns: []executor.ResultColumn{strCol("Variable_name", 64), strCol("Value", 1024)}}
		if s.statusVars != nil {
			for _, v := range s.statusVars() {
				res.Rows = append(res.Rows, strRow(v.Name, v.Value))
			}
		}
	case ast.ShowGrants:
		return s.showGrants(x) // privs.go
	case ast.ShowProcessList:
		return s.showProcessList(x.Full) // process.go
	case ast.ShowEngines:
		res = &executor.Result{Columns: []executor.ResultColumn{strCol("Engine", 64), strCol("Support", 8), strCol("Comment", 80), strCol("Transactions", 3), strCol("XA", 3), strCol("Savepoints", 3)},
			Rows: [][]types.Datum{strRow("InnoDB", "DEFAULT", "Strata distributed storage (Raft-replicated regions)", "YES", "NO", "NO")}}
	default:
		return nil, errno.NotSupported("this SHOW statement")
	}
	return filterShow(res, x, s)
}

func (s *Session) showTable(ctx context.Context, tn *ast.TableName, dbName string) (*catalog.TableInfo, error) {
	schema := tn.Schema.O
	if dbName != "" {
		schema = dbName
	}
	if t, ok, err := s.systemTable(schema, tn.Name.O); ok {
		return t, err
	}
	db, err := s.dbFor(ctx, schema)
	if err != nil {
		return nil, err
	}
	if !s.visibleTable(db.Name, tn.Name.O) {
		return nil, privilege.TableDenied("SELECT", s.user, s.host, tn.Name.O)
	}
	return s.cat.GetTable(ctx, db, tn.Name.O)
}

// filterShow applies SHOW ... LIKE 'p' (on the first column) and SHOW ... WHERE.
func filterShow(res *executor.Result, x *ast.ShowStmt, env expr.Env) (*executor.Result, error) {
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
		x.Pattern.Expr = &ast.ColumnNameExpr{Name: &ast.ColumnName{Name: ast.NewCIStr(res.Columns[0].Name)}}
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
			r0 := r[0]
			r[0] = types.NewString(strings.ToLower(r0.String()))
			d, err := cond.Eval(r)
			r[0] = r0
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

func createTableSQL(t *catalog.TableInfo) string {
	var b strings.Builder
	b.WriteString("CREATE TABLE `" + t.Name + "` (\n")
	for _, c := range t.Columns {
		b.WriteString("  `" + c.Name + "` " + c.Type.SQLName())
		if c.Type.NotNull() {
			b.WriteString(" NOT NULL")
		}
		switch {
		case c.DefaultNow:
			b.WriteString(" DEFAULT CURRENT_TIMESTAMP")
		case c.HasDefault && c.DefaultNull:
			b.WriteString(" DEFAULT NULL")
		case c.HasDefault && c.Type.Tp == mysql.TypeBit:
			b.WriteString(" DEFAULT " + defaultText(c))
		case c.HasDefault:
			b.WriteString(" DEFAULT '" + strings.ReplaceAll(c.Default, "'", "''") + "'")
		case !c.Type.NotNull():
			b.WriteString(" DEFAULT NULL")
		}
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
	if len(defs) == 0 {
		s := b.String()
		b.Reset()
		b.WriteString(strings.TrimSuffix(s, ",\n") + "\n")
	} else {
		b.WriteString(strings.Join(defs, ",\n") + "\n")
	}
	b.WriteString(") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin")
	if t.Comment != "" {
		b.WriteString(" COMMENT='" + strings.ReplaceAll(t.Comment, "'", "''") + "'")
	}
	return b.String()
}

// FieldList answers COM_FIELD_LIST: the columns of a table in the current
// database.
func (s *Session) FieldList(ctx context.Context, table string) ([]executor.ResultColumn, error) {
	t, ok, err := s.systemTable("", table)
	dbName := infoschema.DBName
	if !ok {
		db, err := s.dbFor(ctx, "")
		if err != nil {
			return nil, err
		}
		if !s.visibleTable(db.Name, table) {
			return nil, privilege.TableDenied("SELECT", s.user, s.host, table)
		}
		if t, err = s.cat.GetTable(ctx, db, table); err != nil {
			return nil, err
		}
		dbName = db.Name
	} else if err != nil {
		return nil, err
	}
	cols := make([]executor.ResultColumn, len(t.Columns))
	for i, c := range t.Columns {
		cols[i] = executor.ResultColumn{DB: dbName, Table: t.Name, OrgTable: t.Name, Name: c.Name, OrgName: c.Name, Type: c.Type}
	}
	return cols, nil
}

// systemTable resolves db.name when db (the current database when empty)
// is information_schema: ok reports whether it is.
func (s *Session) systemTable(db, name string) (t *catalog.TableInfo, ok bool, err error) {
	if db == "" {
		db = s.db
	}
	sys := s.exec.SystemSchema()
	if sys == nil || !sys.IsSystemDB(db) {
		return nil, false, nil
	}
	t, _, err = sys.Table(db, name)
	return t, true, err
}

// defaultText is a column default as DESCRIBE shows it: BIT defaults as
// b'101', everything else as stored.
func defaultText(c *catalog.ColumnInfo) string {
	if c.Type.Tp == mysql.TypeBit {
		return "b'" + strconv.FormatUint(c.DefaultDatum().Uint64(), 2) + "'"
	}
	return c.Default
}
