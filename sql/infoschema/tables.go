package infoschema

import (
	"context"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pingcap/tidb/pkg/parser/mysql"

	"github.com/stratadb/strata/kv/execdetails"
	"github.com/stratadb/strata/sql/collate"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/types"
)

func (s *Schema) defs() []*memTable {
	return []*memTable{
		table("SCHEMATA", s.schemata,
			col{"CATALOG_NAME", name64}, col{"SCHEMA_NAME", name64}, col{"DEFAULT_CHARACTER_SET_NAME", name64},
			col{"DEFAULT_COLLATION_NAME", name64}, col{"SQL_PATH", text}, col{"DEFAULT_ENCRYPTION", notNull(varchar(3))}),
		table("TABLES", s.tablesRows,
			col{"TABLE_CATALOG", name64}, col{"TABLE_SCHEMA", name64}, col{"TABLE_NAME", name64}, col{"TABLE_TYPE", notNull(varchar(11))},
			col{"ENGINE", varchar(64)}, col{"VERSION", intU}, col{"ROW_FORMAT", varchar(10)}, col{"TABLE_ROWS", bigintU},
			col{"AVG_ROW_LENGTH", bigintU}, col{"DATA_LENGTH", bigintU}, col{"MAX_DATA_LENGTH", bigintU}, col{"INDEX_LENGTH", bigintU},
			col{"DATA_FREE", bigintU}, col{"AUTO_INCREMENT", bigintU}, col{"CREATE_TIME", dt}, col{"UPDATE_TIME", dt},
			col{"CHECK_TIME", dt}, col{"TABLE_COLLATION", varchar(64)}, col{"CHECKSUM", bigint}, col{"CREATE_OPTIONS", varchar(256)},
			col{"TABLE_COMMENT", text}, col{"TIDB_TABLE_ID", bigint}, col{"TIDB_ROW_ID_SHARDING_INFO", varchar(255)},
			col{"TIDB_PK_TYPE", varchar(64)}),
		table("COLUMNS", s.columns,
			col{"TABLE_CATALOG", name64}, col{"TABLE_SCHEMA", name64}, col{"TABLE_NAME", name64}, col{"COLUMN_NAME", varchar(64)},
			col{"ORDINAL_POSITION", notNull(intU)}, col{"COLUMN_DEFAULT", text}, col{"IS_NULLABLE", notNull(varchar(3))},
			col{"DATA_TYPE", ltext}, col{"CHARACTER_MAXIMUM_LENGTH", bigint}, col{"CHARACTER_OCTET_LENGTH", bigint},
			col{"NUMERIC_PRECISION", bigintU}, col{"NUMERIC_SCALE", bigintU}, col{"DATETIME_PRECISION", intU},
			col{"CHARACTER_SET_NAME", varchar(64)}, col{"COLLATION_NAME", varchar(64)}, col{"COLUMN_TYPE", notNull(text)},
			col{"COLUMN_KEY", notNull(varchar(3))}, col{"EXTRA", varchar(256)}, col{"PRIVILEGES", varchar(154)},
			col{"COLUMN_COMMENT", notNull(text)}, col{"GENERATION_EXPRESSION", notNull(ltext)}, col{"SRS_ID", intU}),
		table("STATISTICS", s.statistics,
			col{"TABLE_CATALOG", name64}, col{"TABLE_SCHEMA", name64}, col{"TABLE_NAME", name64}, col{"NON_UNIQUE", notNull(types.FieldType{Tp: mysql.TypeLong, Flen: 1, Flag: mysql.BinaryFlag})},
			col{"INDEX_SCHEMA", name64}, col{"INDEX_NAME", varchar(64)}, col{"SEQ_IN_INDEX", notNull(intU)}, col{"COLUMN_NAME", varchar(64)},
			col{"COLLATION", varchar(1)}, col{"CARDINALITY", bigint}, col{"SUB_PART", bigint}, col{"PACKED", text},
			col{"NULLABLE", notNull(varchar(3))}, col{"INDEX_TYPE", notNull(varchar(11))}, col{"COMMENT", notNull(varchar(8))},
			col{"INDEX_COMMENT", notNull(varchar(2048))}, col{"IS_VISIBLE", notNull(varchar(3))}, col{"EXPRESSION", ltext}),
		table("KEY_COLUMN_USAGE", s.keyColumnUsage,
			col{"CONSTRAINT_CATALOG", name64}, col{"CONSTRAINT_SCHEMA", name64}, col{"CONSTRAINT_NAME", varchar(64)},
			col{"TABLE_CATALOG", name64}, col{"TABLE_SCHEMA", name64}, col{"TABLE_NAME", name64}, col{"COLUMN_NAME", varchar(64)},
			col{"ORDINAL_POSITION", notNull(intU)}, col{"POSITION_IN_UNIQUE_CONSTRAINT", intU},
			col{"REFERENCED_TABLE_SCHEMA", varchar(64)}, col{"REFERENCED_TABLE_NAME", varchar(64)}, col{"REFERENCED_COLUMN_NAME", varchar(64)}),
		table("TABLE_CONSTRAINTS", s.tableConstraints,
			col{"CONSTRAINT_CATALOG", name64}, col{"CONSTRAINT_SCHEMA", name64}, col{"CONSTRAINT_NAME", varchar(64)},
			col{"TABLE_SCHEMA", name64}, col{"TABLE_NAME", name64}, col{"CONSTRAINT_TYPE", notNull(varchar(11))}, col{"ENFORCED", notNull(varchar(3))}),
		checkConstraintsTable(s), // checks.go
		table("REFERENTIAL_CONSTRAINTS", s.referentialConstraints,
			col{"CONSTRAINT_CATALOG", name64}, col{"CONSTRAINT_SCHEMA", name64}, col{"CONSTRAINT_NAME", varchar(64)},
			col{"UNIQUE_CONSTRAINT_CATALOG", name64}, col{"UNIQUE_CONSTRAINT_SCHEMA", name64}, col{"UNIQUE_CONSTRAINT_NAME", varchar(64)},
			col{"MATCH_OPTION", notNull(varchar(7))}, col{"UPDATE_RULE", notNull(varchar(11))}, col{"DELETE_RULE", notNull(varchar(11))},
			col{"TABLE_NAME", name64}, col{"REFERENCED_TABLE_NAME", name64}),
		table("ENGINES", engines,
			col{"ENGINE", name64}, col{"SUPPORT", notNull(varchar(8))}, col{"COMMENT", notNull(varchar(80))},
			col{"TRANSACTIONS", varchar(3)}, col{"XA", varchar(3)}, col{"SAVEPOINTS", varchar(3)}),
		table("FILES", noRows, filesColumns...), // files.go
		table("PARTITIONS", s.partitions, partitionsColumns...),
		table("TRIGGERS", noRows, triggersColumns...),
		table("ROUTINES", noRows, routinesColumns...),
		table("EVENTS", noRows, eventsColumns...),
		table("VIEWS", s.views, viewsColumns...),
		table("COLLATIONS", collations,
			col{"COLLATION_NAME", name64}, col{"CHARACTER_SET_NAME", name64}, col{"ID", notNull(bigintU)},
			col{"IS_DEFAULT", notNull(varchar(3))}, col{"IS_COMPILED", notNull(varchar(3))}, col{"SORTLEN", notNull(intU)},
			col{"PAD_ATTRIBUTE", notNull(varchar(9))}),
		table("COLLATION_CHARACTER_SET_APPLICABILITY", collationApplicability,
			col{"COLLATION_NAME", name64}, col{"CHARACTER_SET_NAME", name64}),
		table("CHARACTER_SETS", characterSets,
			col{"CHARACTER_SET_NAME", name64}, col{"DEFAULT_COLLATE_NAME", name64}, col{"DESCRIPTION", notNull(varchar(2048))},
			col{"MAXLEN", notNull(intU)}),
		table("PROCESSLIST", func(_ context.Context, v Viewer) ([][]datum, error) { return v.ProcessRows(), nil }, processListColumns...),
		// Every live SQL node's PROCESSLIST (TiDB's CLUSTER_PROCESSLIST).
		table("CLUSTER_PROCESSLIST", func(ctx context.Context, v Viewer) ([][]datum, error) { return v.ClusterProcessRows(ctx) },
			slices.Concat([]col{{"INSTANCE", varchar(64)}}, processListColumns)...),
		// This SQL node's slow query log (--slow-query-file), TiDB's columns
		// where they apply.
		table("SLOW_QUERY", func(_ context.Context, v Viewer) ([][]datum, error) { return v.SlowQueryRows() },
			slices.Concat([]col{
				{"Time", notNull(types.FieldType{Tp: mysql.TypeDatetime, Flen: 26, Decimal: 6, Flag: mysql.BinaryFlag})},
				{"User", varchar(64)}, {"Host", varchar(64)}, {"Conn_ID", bigintU},
				{"Query_time", types.DoubleType},
				{"DB", varchar(64)}, {"Type", varchar(32)}, {"Digest", varchar(64)},
				{"Prepared", types.FieldType{Tp: mysql.TypeTiny, Flen: 1, Flag: mysql.BinaryFlag}},
				{"Succ", types.FieldType{Tp: mysql.TypeTiny, Flen: 1, Flag: mysql.BinaryFlag}},
				{"Error_code", intU}, {"Result_rows", bigintU},
			}, stageCols(0, types.DoubleType), []col{{"Query", ltext}})...),
		gcDeleteRangeTable(s),
		stmtsSummary("STATEMENTS_SUMMARY", false),
		stmtsSummary("STATEMENTS_SUMMARY_HISTORY", true),
	}
}

// processListColumns are PROCESSLIST's (MySQL 8.0's).
var processListColumns = []col{
	{"ID", notNull(bigintU)}, {"USER", notNull(varchar(32))}, {"HOST", notNull(varchar(261))},
	{"DB", varchar(64)}, {"COMMAND", notNull(varchar(16))}, {"TIME", notNull(types.FieldType{Tp: mysql.TypeLong, Flen: 7, Flag: mysql.BinaryFlag})},
	{"STATE", varchar(64)}, {"INFO", ltext},
}

// stmtsSummary is STATEMENTS_SUMMARY[_HISTORY]: this SQL node's statements
// by schema and digest per 30-minute window, TiDB's columns where they
// apply (latencies in nanoseconds; P99_LATENCY is the upper bound of its
// power-of-two bucket).
func stmtsSummary(name string, history bool) *memTable {
	return table(name, func(_ context.Context, v Viewer) ([][]datum, error) { return v.StatementsSummaryRows(history) },
		slices.Concat([]col{
			{"SUMMARY_BEGIN_TIME", notNull(dt)}, {"SUMMARY_END_TIME", notNull(dt)}, {"STMT_TYPE", notNull(varchar(64))},
			{"SCHEMA_NAME", varchar(64)}, {"DIGEST", varchar(64)}, {"DIGEST_TEXT", ltext},
			{"EXEC_COUNT", notNull(bigintU)}, {"SUM_ERRORS", notNull(bigintU)}, {"SUM_LATENCY", notNull(bigintU)},
			{"MAX_LATENCY", notNull(bigintU)}, {"MIN_LATENCY", notNull(bigintU)}, {"AVG_LATENCY", notNull(bigintU)},
			{"P99_LATENCY", notNull(bigintU)}, {"SUM_RESULT_ROWS", notNull(bigintU)}, {"AVG_RESULT_ROWS", notNull(bigintU)},
			{"PREPARED", notNull(types.FieldType{Tp: mysql.TypeTiny, Flen: 1, Flag: mysql.BinaryFlag})},
		}, stageCols(1, notNull(bigintU)),
			[]col{{"FIRST_SEEN", notNull(dt)}, {"LAST_SEEN", notNull(dt)}, {"QUERY_SAMPLE_TEXT", ltext}})...)
}

// stageColumns names, in execdetails stage order, the columns of
// SLOW_QUERY (seconds) and STATEMENTS_SUMMARY[_HISTORY] (averages, in
// nanoseconds) that hold a statement's time per stage (TiDB's names
// where it has the stage: Process_time and Wait_time are the store's
// processing and queueing summed over the statement's RPCs, as TiDB's
// coprocessor ones; the raft stages are named after TiKV's WriteDetail).
var stageColumns = [execdetails.NumStages][2]string{
	execdetails.Parse:       {"Parse_time", "AVG_PARSE_LATENCY"},
	execdetails.Compile:     {"Compile_time", "AVG_COMPILE_LATENCY"},
	execdetails.TSOWait:     {"Wait_TS", "AVG_WAIT_TS"},
	execdetails.KVRead:      {"KV_read_time", "AVG_KV_READ_TIME"},
	execdetails.LockKeys:    {"LockKeys_time", "AVG_LOCK_KEYS_TIME"},
	execdetails.Commit:      {"Commit_time", "AVG_COMMIT_TIME"},
	execdetails.Backoff:     {"Backoff_time", "AVG_BACKOFF_TIME"},
	execdetails.ResolveLock: {"Resolve_lock_time", "AVG_RESOLVE_LOCK_TIME"},

	execdetails.StoreWait:      {"Wait_time", "AVG_WAIT_TIME"},
	execdetails.StoreProcess:   {"Process_time", "AVG_PROCESS_TIME"},
	execdetails.StoreReadIndex: {"Read_index_time", "AVG_READ_INDEX_TIME"},
	execdetails.StoreCMWait:    {"CM_wait_time", "AVG_CM_WAIT_TIME"},
	execdetails.StoreKVRead:    {"KV_read_wall_time", "AVG_KV_READ_WALL_TIME"},
	execdetails.StoreLatchWait: {"Latch_wait_time", "AVG_LATCH_WAIT_TIME"},
	execdetails.RaftPropose:    {"Propose_send_wait_time", "AVG_PROPOSE_SEND_WAIT_TIME"},
	execdetails.RaftPersistLog: {"Persist_log_time", "AVG_PERSIST_LOG_TIME"},
	execdetails.RaftCommitLog:  {"Commit_log_time", "AVG_COMMIT_LOG_TIME"},
	execdetails.RaftApply:      {"Apply_log_time", "AVG_APPLY_LOG_TIME"},
}

// stageCols are the stage columns of SLOW_QUERY (which 0) or of the
// summaries (which 1).
func stageCols(which int, ft types.FieldType) []col {
	out := make([]col, 0, len(stageColumns))
	for _, names := range stageColumns {
		out = append(out, col{names[which], ft})
	}
	return out
}

// visible lists the databases the viewer may see (information_schema
// first, as MySQL lists it), and calls fn for each table of the others.
func (s *Schema) eachTable(ctx context.Context, v Viewer, fn func(db string, t *model.TableInfo) error) error {
	dbs, err := s.cat.ListDBs(ctx)
	if err != nil {
		return err
	}
	sort.Slice(dbs, func(i, j int) bool { return dbs[i].Name < dbs[j].Name })
	for _, db := range dbs {
		if !v.VisibleDB(db.Name) {
			continue
		}
		tbls, err := s.cat.ListTables(ctx, db)
		if err != nil {
			return err
		}
		for _, t := range tbls {
			if !v.VisibleTable(db.Name, t.Name) {
				continue
			}
			if err := fn(db.Name, t); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Schema) schemata(ctx context.Context, v Viewer) ([][]datum, error) {
	rows := [][]datum{{str("def"), str(DBName), str("utf8mb3"), str("utf8mb3_general_ci"), null, str("NO")}}
	dbs, err := s.cat.ListDBs(ctx)
	if err != nil {
		return nil, err
	}
	for _, db := range dbs {
		if v.VisibleDB(db.Name) {
			coll := collationNamed(db.CollationName())
			rows = append(rows, []datum{str("def"), str(db.Name), str(coll.Charset), str(coll.Name), null, str("NO")})
		}
	}
	return rows, nil
}

func (s *Schema) tablesRows(ctx context.Context, v Viewer) ([][]datum, error) {
	var rows [][]datum
	for _, n := range s.names {
		rows = append(rows, []datum{str("def"), str(DBName), str(n), str("SYSTEM VIEW"), null, num(10), null, null,
			null, null, null, null, null, null, null, null, null, str("utf8mb3_general_ci"), null, str(""), str(""), null, null, null})
	}
	err := s.eachTable(ctx, v, func(db string, t *model.TableInfo) error {
		if t.IsView() { // MySQL: a view has no engine, sizes or collation
			rows = append(rows, []datum{str("def"), str(db), str(t.Name), str("VIEW"), null, null, null, null,
				null, null, null, null, null, null, null, null, null, null, null, null, str("VIEW"), num(t.ID), null, null})
			return nil
		}
		auto := null
		if t.AutoIncOffset >= 0 && s.peek != nil {
			n, err := s.peek(ctx, t.ID)
			if err != nil {
				return err
			}
			auto = unum(uint64(n))
		}
		// TiDB's TIDB_ROW_ID_SHARDING_INFO (no SHARD_ROW_ID_BITS here)
		// and TIDB_PK_TYPE: whether the PRIMARY KEY is the row handle.
		sharding, pkType := "NOT_SHARDED", "NONCLUSTERED"
		switch {
		case t.PKIsHandle:
			sharding, pkType = "NOT_SHARDED(PK_IS_HANDLE)", "CLUSTERED"
		case t.CommonHandle:
			pkType = "CLUSTERED"
		}
		rows = append(rows, []datum{str("def"), str(db), str(t.Name), str("BASE TABLE"), str("InnoDB"), num(10), str("Dynamic"),
			unum(0), unum(0), unum(0), unum(0), unum(0), unum(0), auto, null, null, null, str(t.CollationName()), null, str(""), str(t.Comment), num(t.ID),
			str(sharding), str(pkType)})
		return nil
	})
	return rows, err
}

// keyOf is COLUMNS.COLUMN_KEY of column off: PRI, UNI (first column of a
// single-column unique index), MUL (first column of another index).
func keyOf(t *model.TableInfo, off int) string {
	if t.PKIsHandle && t.HandleOffset == off {
		return "PRI"
	}
	if pk := t.PrimaryIndex(); pk != nil && pk.Public() {
		for _, c := range pk.Columns {
			if c.Offset == off {
				return "PRI"
			}
		}
	}
	key := ""
	for _, ix := range t.Indices {
		if !ix.Public() || ix.Columns[0].Offset != off {
			continue
		}
		if ix.Unique && len(ix.Columns) == 1 {
			return "UNI"
		}
		key = "MUL"
	}
	return key
}

func (s *Schema) columns(ctx context.Context, v Viewer) ([][]datum, error) {
	var rows [][]datum
	var zone *time.Location // COLUMN_DEFAULT of a TIMESTAMP in the session zone
	if env, ok := v.(expr.Env); ok {
		zone = expr.TimestampZone(env)
	}
	err := s.eachTable(ctx, v, func(db string, t *model.TableInfo) error {
		for i, c := range t.Columns {
			ft := c.Type
			def := null
			switch {
			case c.DefaultNow:
				def = str(c.DefaultNowText())
			case c.HasDefault && !c.DefaultNull && c.Type.Tp == mysql.TypeTimestamp:
				def = expr.TimestampToLocal(str(c.Default), zone, c.Type.Decimal) // stored as UTC
			case c.HasDefault && !c.DefaultNull:
				def = str(c.Default)
			}
			nullable := "YES"
			if ft.NotNull() {
				nullable = "NO"
			}
			extra := ""
			if c.AutoIncrement {
				extra = "auto_increment"
			} else if c.DefaultNow {
				extra = "DEFAULT_GENERATED"
			}
			extra = strings.TrimSpace(extra + " " + c.OnUpdateExtra() + " " + c.GeneratedExtra())
			genExpr := ""
			if c.IsGenerated() {
				genExpr = c.Generated.Expr
			}
			charLen, octLen, prec, scale, dtPrec, cs, coll := typeFacts(ft)
			rows = append(rows, []datum{str("def"), str(db), str(t.Name), str(c.Name), unum(uint64(i + 1)), def, str(nullable),
				str(dataType(ft)), charLen, octLen, prec, scale, dtPrec, cs, coll, str(ft.SQLName()),
				str(keyOf(t, i)), str(extra), str("select,insert,update,references"), str(""), str(genExpr), null})
		}
		return nil
	})
	return rows, err
}

// dataType is COLUMNS.DATA_TYPE: the type name without width or flags.
func dataType(ft types.FieldType) string {
	n := ft.SQLName()
	if i := strings.IndexAny(n, "( "); i >= 0 {
		n = n[:i]
	}
	return n
}

// typeFacts are COLUMNS' length, precision and charset columns.
func typeFacts(ft types.FieldType) (charLen, octLen, prec, scale, dtPrec, cs, coll datum) {
	charLen, octLen, prec, scale, dtPrec, cs, coll = null, null, null, null, null, null, null
	if ft.Tp == mysql.TypeJSON {
		return // MySQL gives a JSON column no length and no charset
	}
	switch ft.Class() {
	case types.ClassString:
		n := int64(ft.Flen)
		charLen, octLen = num(n), num(n)
		if !ft.Binary() {
			c := collate.Of(ft.Collation())
			switch ft.Tp {
			case mysql.TypeBlob, mysql.TypeTinyBlob, mysql.TypeMediumBlob, mysql.TypeLongBlob:
			default:
				octLen = num(int64(collate.CharsetByName(c.Charset).Maxlen) * n) // bytes of n characters
			}
			cs, coll = str(c.Charset), str(c.Name)
		}
	case types.ClassInt:
		p := map[byte]uint64{mysql.TypeTiny: 3, mysql.TypeShort: 5, mysql.TypeInt24: 7, mysql.TypeLong: 10, mysql.TypeLonglong: 19}[ft.Tp]
		if ft.Tp == mysql.TypeLonglong && ft.Unsigned() {
			p = 20
		}
		switch ft.Tp {
		case mysql.TypeBit:
			prec = unum(uint64(ft.Flen))
		case mysql.TypeYear:
		default:
			prec, scale = unum(p), unum(0)
		}
	case types.ClassDecimal:
		prec, scale = unum(uint64(ft.Flen)), unum(uint64(max(ft.Decimal, 0)))
	case types.ClassFloat:
		prec = unum(12)
		if ft.Tp == mysql.TypeDouble {
			prec = unum(22)
		}
		if ft.Decimal > 0 {
			scale = unum(uint64(ft.Decimal))
		}
	case types.ClassTime:
		if ft.Tp != mysql.TypeDate {
			dtPrec = unum(uint64(max(ft.Decimal, 0)))
		}
	}
	return
}

// indexColumns calls fn for every column of the table's keys: the integer
// primary key (PRIMARY) and every public index, in order.
func indexColumns(t *model.TableInfo, fn func(name string, unique, primary bool, seq int, c *model.ColumnInfo)) {
	if t.PKIsHandle {
		fn("PRIMARY", true, true, 1, t.Columns[t.HandleOffset])
	}
	for _, ix := range t.Indices {
		if !ix.Public() {
			continue
		}
		for i, ic := range ix.Columns {
			fn(ix.Name, ix.Unique, ix.Primary, i+1, t.Columns[ic.Offset])
		}
	}
}

func (s *Schema) statistics(ctx context.Context, v Viewer) ([][]datum, error) {
	var rows [][]datum
	err := s.eachTable(ctx, v, func(db string, t *model.TableInfo) error {
		indexColumns(t, func(name string, unique, _ bool, seq int, c *model.ColumnInfo) {
			nonUnique, nullable := int64(1), "YES"
			if unique {
				nonUnique = 0
			}
			if c.Type.NotNull() {
				nullable = ""
			}
			subPart := null // a prefix key part's length
			if ix := t.FindIndex(name); ix != nil && seq <= len(ix.Columns) && ix.Columns[seq-1].Length > 0 {
				subPart = num(int64(ix.Columns[seq-1].Length))
			}
			rows = append(rows, []datum{str("def"), str(db), str(t.Name), num(nonUnique), str(db), str(name), unum(uint64(seq)),
				str(c.Name), str("A"), num(0), subPart, null, str(nullable), str("BTREE"), str(""), str(""), str("YES"), null})
		})
		return nil
	})
	return rows, err
}

func (s *Schema) keyColumnUsage(ctx context.Context, v Viewer) ([][]datum, error) {
	var rows [][]datum
	err := s.eachTable(ctx, v, func(db string, t *model.TableInfo) error {
		indexColumns(t, func(name string, unique, _ bool, seq int, c *model.ColumnInfo) {
			if unique {
				rows = append(rows, []datum{str("def"), str(db), str(name), str("def"), str(db), str(t.Name), str(c.Name),
					unum(uint64(seq)), null, null, null, null})
			}
		})
		for _, fk := range t.ForeignKeys {
			for i, c := range fk.Cols {
				rows = append(rows, []datum{str("def"), str(db), str(fk.Name), str("def"), str(db), str(t.Name), str(c),
					unum(uint64(i + 1)), unum(uint64(i + 1)), str(fk.RefSchema), str(fk.RefTable), str(fk.RefCols[i])})
			}
		}
		return nil
	})
	return rows, err
}

// referentialConstraints is a row per foreign key; UNIQUE_CONSTRAINT_NAME
// is the parent's unique key over exactly the referenced columns (NULL
// when the parent has none or does not exist).
func (s *Schema) referentialConstraints(ctx context.Context, v Viewer) ([][]datum, error) {
	var rows [][]datum
	err := s.eachTable(ctx, v, func(db string, t *model.TableInfo) error {
		for _, fk := range t.ForeignKeys {
			uniq, err := s.uniqueKeyOf(ctx, fk)
			if err != nil {
				return err
			}
			rows = append(rows, []datum{str("def"), str(db), str(fk.Name), str("def"), str(fk.RefSchema), uniq,
				str("NONE"), str(fk.OnUpdate.String()), str(fk.OnDelete.String()), str(t.Name), str(fk.RefTable)})
		}
		return nil
	})
	return rows, err
}

func (s *Schema) uniqueKeyOf(ctx context.Context, fk *model.FKInfo) (datum, error) {
	pdb, err := s.cat.GetDB(ctx, fk.RefSchema)
	var p *model.TableInfo
	if err == nil {
		p, err = s.cat.GetTable(ctx, pdb, fk.RefTable)
	}
	if err != nil {
		if c := errno.FromError(err).Code; c == errno.ErrBadDB || c == errno.ErrNoSuchTable {
			return null, nil
		}
		return null, err
	}
	offs, ok := p.ColumnOffsets(fk.RefCols)
	if !ok {
		return null, nil
	}
	if len(offs) == 1 && p.PKIsHandle && offs[0] == p.HandleOffset {
		return str("PRIMARY"), nil
	}
	for _, ix := range p.Indices {
		if !ix.Unique || !ix.Public() || len(ix.Columns) != len(offs) {
			continue
		}
		match := true
		for i, c := range ix.Columns {
			match = match && c.Offset == offs[i]
		}
		if match {
			return str(ix.Name), nil
		}
	}
	return null, nil
}

func (s *Schema) tableConstraints(ctx context.Context, v Viewer) ([][]datum, error) {
	var rows [][]datum
	err := s.eachTable(ctx, v, func(db string, t *model.TableInfo) error {
		indexColumns(t, func(name string, unique, primary bool, seq int, _ *model.ColumnInfo) {
			if !unique || seq != 1 {
				return
			}
			tp := "UNIQUE"
			if primary {
				tp = "PRIMARY KEY"
			}
			rows = append(rows, []datum{str("def"), str(db), str(name), str(db), str(t.Name), str(tp), str("YES")})
		})
		for _, fk := range t.ForeignKeys {
			rows = append(rows, []datum{str("def"), str(db), str(fk.Name), str(db), str(t.Name), str("FOREIGN KEY"), str("YES")})
		}
		rows = append(rows, checkConstraintRows(db, t)...) // checks.go
		return nil
	})
	return rows, err
}

func engines(context.Context, Viewer) ([][]datum, error) {
	return [][]datum{{str("InnoDB"), str("DEFAULT"), str("Strata distributed storage (Raft-replicated regions)"), str("YES"), str("NO"), str("NO")}}, nil
}

func collations(context.Context, Viewer) ([][]datum, error) {
	var rows [][]datum
	for _, c := range collate.All() {
		def := ""
		if c.Default {
			def = "Yes"
		}
		rows = append(rows, []datum{str(c.Name), str(c.Charset), unum(uint64(c.ID)), str(def), str("Yes"), unum(uint64(c.Sortlen)), str(c.PadAttribute())})
	}
	return rows, nil
}

func collationApplicability(context.Context, Viewer) ([][]datum, error) {
	var rows [][]datum
	for _, c := range collate.All() {
		rows = append(rows, []datum{str(c.Name), str(c.Charset)})
	}
	return rows, nil
}

// collationNamed is the named collation, utf8mb4_bin for a name this
// node does not know (written by a newer one).
func collationNamed(name string) *collate.Collation {
	if c := collate.ByName(name); c != nil {
		return c
	}
	return collate.Default
}

func characterSets(context.Context, Viewer) ([][]datum, error) {
	var rows [][]datum
	for _, c := range collate.Charsets() {
		rows = append(rows, []datum{str(c.Name), str(c.Default.Name), str(c.Desc), unum(uint64(c.Maxlen))})
	}
	return rows, nil
}
