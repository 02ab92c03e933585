package executor

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/sql/ddl"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/planner"
	"github.com/stratadb/strata/sql/table"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
)

// MaxEntrySize bounds one row (key + value); see table.MaxEntrySize.
const MaxEntrySize = table.MaxEntrySize

// conv is how a statement stores a value that does not fit its column:
// strict (nil, or lenient false) fails the statement with the error
// strict mode raises; lenient stores it adjusted (types.ConvertLenient)
// and adds the error as a warning to res, as MySQL does outside strict
// mode and under IGNORE. nullDefault stores NULL given for a NOT NULL
// column as the type's implicit default (0, ”), with warning 1048, as
// MySQL does under IGNORE, in UPDATE and in multi-row INSERT outside
// strict mode. noZeroDate and noZeroInDate are sql_mode's NO_ZERO_DATE
// and NO_ZERO_IN_DATE (checkZeroDate).
type conv struct {
	lenient, nullDefault     bool
	noZeroDate, noZeroInDate bool
	allowInvalidDates        bool // sql_mode ALLOW_INVALID_DATES (invalidDate)
	res                      *Result
}

// newConv is the conversion policy of a statement: strict is sql_mode's
// STRICT_TRANS_TABLES / STRICT_ALL_TABLES, ignore the statement's IGNORE,
// multiRow whether NULL may become the implicit default outside strict
// mode (every statement but a single-row INSERT).
func newConv(env expr.Env, ignore, multiRow bool) *conv {
	mode := SQLMode(env)
	strict := mode.HasStrictMode()
	return &conv{lenient: ignore || !strict, nullDefault: ignore || (!strict && multiRow),
		noZeroDate: mode.HasNoZeroDateMode(), noZeroInDate: mode.HasNoZeroInDateMode(),
		allowInvalidDates: mode.HasAllowInvalidDatesMode(), res: &Result{}}
}

// SQLMode is env's sql_mode (expr.SQLMode).
func SQLMode(env expr.Env) mysql.SQLMode { return expr.SQLMode(env) }

// warnings returns the warnings cv collected (nil for a nil cv).
func (cv *conv) warnings() []Warning {
	if cv == nil {
		return nil
	}
	return cv.res.Warnings
}

// convertColumn converts v for column c of row rowNum (1-based), mapping
// failures to the MySQL errors strict mode raises, or, when cv is lenient,
// to warnings beside the adjusted value.
func convertColumn(tbl *model.TableInfo, c *model.ColumnInfo, v datum, rowNum int, cv *conv) (datum, error) {
	if v.IsNull() {
		if c.RefusesNull() {
			err := errno.New(errno.ErrBadNull, "Column '%s' cannot be null", c.Name)
			if cv != nil && cv.nullDefault {
				if d, ok := table.ImplicitDefault(c); ok {
					cv.res.Warn(err.Code, err.Msg)
					return d, nil
				}
			}
			return v, err
		}
		return types.NullDatum, nil
	}
	d, err := c.Type.Convert(v)
	if err != nil {
		d, err = cv.invalidDate(c, v, d, err)
	}
	if err == nil && c.Pending != nil {
		// MODIFY COLUMN narrows the column: refuse what will not fit.
		_, err = c.Pending.Convert(v)
		if err != nil {
			return v, convError(tbl, c, err, rowNum)
		}
	}
	if err == nil {
		return cv.checkZeroDate(tbl, c, d, v, rowNum)
	}
	if cv != nil && cv.lenient {
		if d, warn, ok := c.Type.ConvertLenient(v); ok {
			if c.Pending != nil {
				if _, perr := c.Pending.Convert(d); perr != nil {
					return v, convError(tbl, c, perr, rowNum)
				}
			}
			e := convError(tbl, c, warn, rowNum)
			var me *errno.Error
			if errors.As(e, &me) {
				cv.res.Warn(me.Code, me.Msg)
			}
			return d, nil
		}
	}
	return v, convError(tbl, c, err, rowNum)
}

// invalidDate is what a DATE or DATETIME column stores under sql_mode
// ALLOW_INVALID_DATES for v, which Convert refused (d, err): a date whose
// day its month does not have ('2004-02-31') as it is, as MySQL; any
// other value keeps d and err. TIMESTAMP always needs a valid date.
func (cv *conv) invalidDate(c *model.ColumnInfo, v, d datum, err error) (datum, error) {
	if cv == nil || !cv.allowInvalidDates || (c.Type.Tp != mysql.TypeDate && c.Type.Tp != mysql.TypeDatetime) {
		return d, err
	}
	if v.Kind() != types.KindBytes && v.Kind() != types.KindInt64 && v.Kind() != types.KindUint64 {
		return d, err
	}
	p, ok := types.ParseInvalidDate(string(types.AppendText(nil, v, nil)))
	if !ok {
		return d, err
	}
	return types.NewString(p.Format(c.Type.Tp, c.Type.Decimal)), nil
}

// checkZeroDate applies NO_ZERO_DATE and NO_ZERO_IN_DATE to d, the
// DATE / DATETIME / TIMESTAMP value of column c converted from v, as
// MySQL does: a zero date ('0000-00-00') or one with a zero month or day
// that the mode refuses is error 1292 in strict mode; outside it or
// under IGNORE it is warning 1264, and a zero month or day stores the
// zero date. Without the modes (mysqldump's sql_mode) both are stored.
func (cv *conv) checkZeroDate(tbl *model.TableInfo, c *model.ColumnInfo, d, v datum, rowNum int) (datum, error) {
	if cv == nil || (!cv.noZeroDate && !cv.noZeroInDate) || !types.IsDateOrDatetime(c.Type) {
		return d, nil
	}
	zeroDate, zeroInDate := types.ZeroParts(d.Bytes())
	if !(zeroDate && cv.noZeroDate) && !(zeroInDate && cv.noZeroInDate) {
		return d, nil
	}
	if !cv.lenient {
		what := "datetime"
		if types.IsDate(c.Type.Tp) {
			what = "date"
		}
		return v, errno.New(errno.ErrTruncatedWrongValue, "Incorrect %s value: '%s' for column '%s' at row %d", what, v.String(), c.Name, rowNum)
	}
	cv.res.Warn(errno.ErrWarnDataOutOfRange, fmt.Sprintf("Out of range value for column '%s' at row %d", c.Name, rowNum))
	if zeroInDate {
		return types.ZeroValue(c.Type), nil
	}
	return d, nil
}

// convError is the MySQL error for a value of column c that err says
// does not fit.
func convError(tbl *model.TableInfo, c *model.ColumnInfo, err error, rowNum int) error {
	return table.ConvError(tbl, c, err, int64(rowNum))
}

// fillGenerated computes the generated columns of row (after its
// assignments, in dependency order) with the statement's conversion
// policy: a value that does not fit is an error in strict mode and a
// warning outside it, as for a value given.
func fillGenerated(tbl *model.TableInfo, row []datum, rowNum int, cv *conv) error {
	if !tbl.HasGenerated() {
		return nil
	}
	return tbl.FillGenerated(row, func(c *model.ColumnInfo, v datum) (datum, error) {
		return convertColumn(tbl, c, v, rowNum, cv)
	})
}

// errGeneratedValue is ERROR 3105: a statement gave generated column c a
// value other than DEFAULT.
func errGeneratedValue(tbl *model.TableInfo, c *model.ColumnInfo) error {
	return errno.New(ddl.ErrNonDefaultForGenerated, "The value specified for generated column '%s' in table '%s' is not allowed.", c.Name, tbl.Name)
}

// givenValue is a value an INSERT gave generated column off.
type givenValue struct {
	off int
	v   datum
}

// checkGivenGenerated refuses (3105) a value an INSERT gave a generated
// column unless it is the value the column computes for the row. MySQL 8
// refuses every value but DEFAULT; accepting the one value that changes
// nothing is what lets a dump of MariaDB's mysqldump reload, whose INSERTs
// list every column with the values it read, generated ones included
// (MariaDB ignores them with warning 1906).
func checkGivenGenerated(tbl *model.TableInfo, row []datum, gv []givenValue) error {
	for _, g := range gv {
		c := tbl.Columns[g.off]
		got := row[g.off]
		if g.v.IsNull() || got.IsNull() {
			if g.v.IsNull() != got.IsNull() {
				return errGeneratedValue(tbl, c)
			}
			continue
		}
		d, err := c.Type.Convert(g.v)
		if err != nil || expr.CompareAs(d, got, c.Type) != 0 {
			return errGeneratedValue(tbl, c)
		}
	}
	return nil
}

// hasOnUpdate reports whether tbl has ON UPDATE CURRENT_TIMESTAMP columns.
func hasOnUpdate(tbl *model.TableInfo) bool {
	for _, c := range tbl.Columns {
		if c.OnUpdateNow {
			return true
		}
	}
	return false
}

// readsColumns reports whether an INSERT value names a column, also as
// DEFAULT(col) (outside a subquery, whose names are its own tables').
func readsColumns(n ast.ExprNode) bool {
	return planner.ContainsOutsideSubqueries(n, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.ColumnNameExpr:
			return true
		case *ast.DefaultExpr:
			return x.Name != nil
		}
		return false
	})
}

// bareDefault reports whether n is DEFAULT, the assigned column's default
// (DEFAULT(col) is an expression: col's default).
func bareDefault(n ast.ExprNode) bool {
	d, ok := n.(*ast.DefaultExpr)
	return ok && d.Name == nil
}

// rowSoFar fills buf (width wide: the source's columns and handle) with
// the INSERT row as a value of it sees it: the values given so far, the
// defaults of the others (NULL for a generated column, and for a column
// without a default, as nothing set it yet).
func rowSoFar(buf []datum, tbl *model.TableInfo, row []datum, given []bool, env expr.Env, rowNum, width int) []datum {
	buf = slices.Grow(buf[:0], width)[:width]
	clear(buf)
	for i, c := range tbl.Columns {
		switch {
		case given[i]:
			buf[i] = row[i]
		case !c.IsGenerated():
			if d, err := defaultValue(c, env, rowNum); err == nil {
				buf[i] = d
			}
		}
	}
	return buf
}

func defaultValue(c *model.ColumnInfo, env expr.Env, rowNum int) (datum, error) {
	switch {
	case c.DefaultNow:
		return types.NewString(types.FormatTime(expr.ColumnNow(env, c.Type), c.Type.Tp, c.Type.Decimal)), nil
	case c.HasDefault:
		return c.DefaultDatum(), nil
	case c.AutoIncrement:
		return types.NullDatum, nil
	case c.Type.NotNull():
		return types.NullDatum, errno.New(errno.ErrNoDefaultForField, "Field '%s' doesn't have a default value", c.Name)
	}
	return types.NullDatum, nil
}

// Insert runs INSERT ... VALUES / INSERT ... SET in tx's transaction. Rows
// are buffered with Txn.Insert; a duplicate primary key fails with ERROR
// 1062 when the keys are locked (pessimistic) or at commit (optimistic).
func (e *Executor) Insert(ctx context.Context, s *ast.InsertStmt, env expr.Env, tx TxnSource) (*Result, error) {
	// INSERT IGNORE takes the upsert path too: each row sees the rows
	// before it, and one that collides is skipped with a warning.
	upsert := s.IsReplace || len(s.OnDuplicate) > 0 || s.IgnoreErr
	src, err := e.resolveTable(ctx, s.Table, env, "INSERT")
	if err != nil {
		return nil, err
	}
	tbl := src.Table
	// Map value positions to column offsets.
	var offs []int
	switch {
	case len(s.Columns) == 0 && s.Select == nil && len(s.Lists) > 0 && len(s.Lists[0]) == 0:
		// INSERT INTO t VALUES (): a row of defaults, as MySQL inserts it
		// (every row must then be empty).
	case len(s.Columns) == 0:
		for i := range tbl.Columns {
			offs = append(offs, i)
		}
	default:
		seen := make(map[int]bool, len(s.Columns))
		for _, cn := range s.Columns {
			off := tbl.FindColumn(cn.Name.O)
			if off < 0 {
				return nil, errno.New(errno.ErrBadField, "Unknown column '%s' in 'field list'", cn.Name.O)
			}
			if seen[off] {
				return nil, errno.New(1110, "Column '%s' specified twice", cn.Name.O)
			}
			seen[off] = true
			offs = append(offs, off)
		}
	}
	// The rows' values: VALUES lists (expressions, DEFAULT) or the rows of
	// INSERT ... SELECT, read in the statement's transaction before any
	// is written (as MySQL does when the target is also a source).
	nrows := len(s.Lists)
	var selected [][]datum
	var selCols []ResultColumn
	if s.Select != nil {
		res, err := e.Query(ctx, s.Select, env, tx)
		if err != nil {
			return nil, err
		}
		if len(res.Columns) != len(offs) {
			return nil, errno.New(errno.ErrWrongValueCount, "Column count doesn't match value count at row 1")
		}
		selected, selCols, nrows = res.Rows, res.Columns, len(res.Rows)
		if nrows == 0 {
			return &Result{}, nil
		}
		if loc := expr.TimestampZone(env); loc != nil {
			for vi, rc := range res.Columns {
				for _, r := range selected {
					r[vi] = expr.WriteDatum(r[vi], rc.Type, tbl.Columns[offs[vi]].Type, loc)
				}
			}
		}
	}
	cv := newConv(env, s.IgnoreErr, nrows > 1)
	cvDefault := *cv
	cvDefault.noZeroDate, cvDefault.noZeroInDate = false, false
	ncols := len(tbl.Columns)
	slab := make([]datum, nrows*ncols)
	given := make([]bool, ncols)
	handles := make([]handle, nrows)
	var autoIDs []int64 // rows needing an AUTO_INCREMENT value, by index
	var autoRows []int
	var explicitMax int64 // the largest value given for the AUTO_INCREMENT column
	needRowID := !tbl.PKIsHandle && !tbl.CommonHandle
	constCtx := &expr.Ctx{Env: env, Clause: "field list"}
	// A value may read the row's columns (VALUES (1, a * 2), SET b = a):
	// those set earlier in the list, the others' defaults, as MySQL.
	rowCtx := &expr.Ctx{Columns: src.Cols, Env: env, Clause: "field list"}
	var soFar []datum
	var genGiven []givenValue      // the row's values for generated columns
	skipped := make([]bool, nrows) // rows INSERT IGNORE skips (a CHECK constraint)
	// Under NO_AUTO_VALUE_ON_ZERO (mysqldump sets it) only NULL asks for
	// the next AUTO_INCREMENT value; 0 is stored as given.
	zeroIsValue := SQLMode(env)&mysql.ModeNoAutoValueOnZero != 0
	for ri := range nrows {
		rowNum := ri + 1
		row := slab[ri*ncols : (ri+1)*ncols : (ri+1)*ncols]
		clear(given)
		genGiven = genGiven[:0]
		if selected != nil {
			for vi, v := range selected[ri] {
				if tbl.Columns[offs[vi]].IsGenerated() {
					genGiven = append(genGiven, givenValue{offs[vi], v})
					continue
				}
				row[offs[vi]] = v
				given[offs[vi]] = true
			}
		}
		var list []ast.ExprNode
		if selected == nil {
			list = s.Lists[ri]
			if len(list) != len(offs) {
				return nil, errno.New(errno.ErrWrongValueCount, "Column count doesn't match value count at row %d", rowNum)
			}
		}
		for vi, n := range list {
			c := tbl.Columns[offs[vi]]
			var v datum
			isDef := bareDefault(n)
			if c.IsGenerated() && isDef {
				continue // computed below
			}
			if isDef {
				if v, err = defaultValue(c, env, rowNum); err != nil {
					return nil, err
				}
			} else if readsColumns(n) {
				ve, err := expr.Compile(n, rowCtx)
				if err != nil {
					return nil, err
				}
				soFar = rowSoFar(soFar, tbl, row, given, env, rowNum, len(src.Cols))
				if v, err = expr.WriteValue(ve, c.Type, env).Eval(soFar); err != nil {
					return nil, err
				}
			} else {
				ve, err := expr.Compile(n, constCtx)
				if err != nil {
					return nil, err
				}
				if v, err = expr.WriteValue(ve, c.Type, env).Eval(nil); err != nil {
					return nil, err
				}
			}
			if c.IsGenerated() {
				genGiven = append(genGiven, givenValue{offs[vi], v})
				continue
			}
			row[offs[vi]] = v
			given[offs[vi]] = true
		}
		for i, c := range tbl.Columns {
			if c.IsGenerated() {
				continue // computed below
			}
			if !given[i] {
				if row[i], err = defaultValue(c, env, rowNum); err != nil {
					return nil, err
				}
			}
			if c.AutoIncrement && (row[i].IsNull() || (!zeroIsValue && isZero(row[i]))) {
				autoRows = append(autoRows, ri)
				row[i] = types.NullDatum
				continue
			}
			cvc := cv
			if !given[i] {
				cvc = &cvDefault // a zero default is stored whatever sql_mode says, as MySQL
			}
			if row[i], err = convertColumn(tbl, c, row[i], rowNum, cvc); err != nil {
				return nil, err
			}
			if c.AutoIncrement {
				explicitMax = max(explicitMax, autoIncValue(row[i]))
			}
		}
		// No generated column reads the AUTO_INCREMENT column (3109),
		// which gets its values below.
		if err := fillGenerated(tbl, row, rowNum, cv); err != nil {
			return nil, err
		}
		if err := checkGivenGenerated(tbl, row, genGiven); err != nil {
			return nil, err
		}
		// CHECK constraints read no AUTO_INCREMENT column (3818).
		if skip, err := checkRowIgnore(tbl, row, s.IgnoreErr, cv.res); err != nil {
			return nil, err
		} else if skip {
			skipped[ri] = true
		}
	}
	if explicitMax > 0 {
		if err := e.dom.AutoInc().Rebase(ctx, tbl.ID, explicitMax); err != nil {
			return nil, err
		}
	}
	if len(autoRows) > 0 {
		autoIDs = make([]int64, len(autoRows))
		if err := e.dom.AutoInc().Alloc(ctx, tbl.ID, autoIDs); err != nil {
			return nil, err
		}
		ac := tbl.Columns[tbl.AutoIncOffset]
		for i, ri := range autoRows {
			d, err := convertColumn(tbl, ac, types.NewInt(autoIDs[i]), ri+1, nil)
			if err != nil {
				return nil, fmt.Errorf("%w (AUTO_INCREMENT ran out of values for the column type)", err)
			}
			slab[ri*ncols+tbl.AutoIncOffset] = d
		}
	}
	switch {
	case needRowID:
		ids := make([]int64, nrows)
		if err := e.dom.IDs().Alloc(ctx, ids); err != nil {
			return nil, err
		}
		for ri, id := range ids {
			handles[ri] = tablecodec.IntHandle(id)
		}
	case tbl.CommonHandle:
		// Two rows of the statement with one key: the writer's 1062.
		for ri := range nrows {
			handles[ri] = tbl.HandleOf(slab[ri*ncols : (ri+1)*ncols])
		}
	default:
		seen := make(map[int64]struct{}, nrows)
		for ri := range nrows {
			if skipped[ri] {
				continue
			}
			h := slab[ri*ncols+tbl.HandleOffset].Int64()
			if _, dup := seen[h]; dup && !upsert { // REPLACE / ON DUPLICATE: a later row meets the earlier one
				return nil, dupEntry(src, h)
			}
			seen[h] = struct{}{}
			handles[ri] = tablecodec.IntHandle(h)
		}
	}
	txn, err := tx.Txn(ctx, false)
	if err != nil {
		return nil, err
	}
	tx.NoteWrite(tbl)
	rows := make([][]datum, 0, nrows)
	kept := handles[:0]
	var sel [][]datum // INSERT ... SELECT: the kept rows' selected values
	for ri := range nrows {
		if !skipped[ri] {
			rows = append(rows, slab[ri*ncols:(ri+1)*ncols:(ri+1)*ncols])
			kept = append(kept, handles[ri])
			if selected != nil {
				sel = append(sel, selected[ri])
			}
		}
	}
	handles = kept
	var res *Result
	if upsert {
		if res, err = e.upsert(ctx, s, src, env, tx, txn, handles, rows, selectedRows{selCols, sel}, cv); err != nil {
			return nil, err
		}
	} else {
		if err := e.writer(tx, txn, tbl, env).AddRecords(ctx, handles, rows); err != nil {
			return nil, err
		}
		res = &Result{AffectedRows: uint64(len(rows))}
	}
	dups := len(res.Warnings) // INSERT IGNORE's skipped rows (upsert)
	res.Warnings = append(cv.warnings(), res.Warnings...)
	if nrows > 1 && (s.IgnoreErr || len(res.Warnings) > 0) && len(s.OnDuplicate) == 0 && !s.IsReplace {
		res.Info = fmt.Sprintf("Records: %d  Duplicates: %d  Warnings: %d", nrows, dups, len(res.Warnings))
	}
	if len(autoIDs) > 0 {
		res.LastInsertID = uint64(autoIDs[0])
	}
	return res, nil
}

func isZero(d datum) bool {
	switch d.Kind() {
	case types.KindInt64, types.KindUint64:
		return d.Uint64() == 0
	}
	return false
}

// autoIncValue is an explicit AUTO_INCREMENT column value as a rebase bound
// (0 for values that do not move the counter).
func autoIncValue(d datum) int64 {
	switch d.Kind() {
	case types.KindInt64:
		return max(d.Int64(), 0)
	case types.KindUint64:
		return int64(min(d.Uint64(), math.MaxInt64))
	}
	return 0
}

func dupEntry(src *planner.Source, handle int64) error {
	return table.DupKeyError(src.Table, tablecodec.RowKey(src.Table.ID, handle))
}

// DupEntryError is ERROR 1062 for a duplicate key (a row or unique index
// key) found only at commit, naming the table and index when tbl (the
// table the key belongs to) is known.
func DupEntryError(tbl *model.TableInfo, key []byte) error {
	return table.DupKeyError(tbl, key)
}

// readForWrite returns the rows an UPDATE or DELETE changes, as the
// transaction must change them. The candidate rows are read through the
// plan sql/planner chooses for WHERE (a point get, handle ranges or an
// index) from the transaction's snapshot. In pessimistic mode they are
// locked (for a point WHERE on the handle, the key itself) and re-read at
// the lock's for_update_ts, the latest committed values, and WHERE is
// evaluated on those: the statement never writes over a value it did not
// see, and it waits for, instead of conflicting with, a concurrent writer.
// In optimistic mode the snapshot rows are used and conflicts are found at
// commit. The read is planned through pc when the statement, stmt, is
// prepared (pc not nil: planScan); reason is why its plan was not cached.
func (e *Executor) readForWrite(ctx context.Context, pc *PlanCache, stmt ast.StmtNode, src *planner.Source, where ast.ExprNode,
	order *ast.OrderByClause, limit *ast.Limit, env expr.Env, tx TxnSource, txn kv.Txn) (rows [][]datum, reason string, err error) {
	sp, reason, err := e.planScan(ctx, pc, stmt, src, where, order, limit, env)
	if err != nil {
		return nil, "", err
	}
	rows, err = e.readRows(ctx, sp, src, tx, txn)
	return rows, reason, err
}

// readRows reads (and in pessimistic mode locks) the rows sp, the read
// plan of an UPDATE or DELETE of src, finds.
func (e *Executor) readRows(ctx context.Context, sp *planner.ScanPlan, src *planner.Source, tx TxnSource, txn kv.Txn) ([][]datum, error) {
	rc := newRunCtx(e, tx, txn)
	defer rc.observeRPCs()
	if sp.PointRow != nil && tx.TxnOptions().Pessimistic && pointOnly(sp.Root) {
		// The lock returns the key's latest value, which decides: a read of
		// the snapshot first would be one more request for nothing (as
		// TiDB's point get with lock).
		return rc.lockRows(ctx, src, sp.Where, sp.PointRow.Key(), false, nil)
	}
	op, err := rc.build(sp.Root, nil)
	if err != nil {
		return nil, err
	}
	rows, err := drain(ctx, op, rc.mem)
	if err != nil || !tx.TxnOptions().Pessimistic {
		return rows, err
	}
	return rc.lockRows(ctx, src, sp.Where, pointKey(sp.PointRow), false, rows)
}

// pointOnly reports whether p reads one handle's row and at most filters
// it: no Limit, Sort or TopN that the lock's latest row would bypass.
func pointOnly(p planner.Plan) bool {
	if sel, ok := p.(*planner.Selection); ok && len(sel.Children) == 1 {
		p = sel.Children[0]
	}
	_, ok := p.(*planner.PointGet)
	return ok
}

// forWrite returns src reading its table's ForWrite table: the rows an
// UPDATE reads then hold the values of the columns an ADD or DROP COLUMN
// is moving through its states, which the rewritten rows must keep.
func forWrite(src *planner.Source) *planner.Source {
	w := src.Table.ForWrite()
	if w == src.Table {
		return src
	}
	s := *src
	s.Table, s.Cols = w, w.BuildSchema(src.Alias)
	return &s
}

func checkSingleTableDML(with *ast.WithClause) error {
	if with != nil {
		return errno.NotSupported("WITH")
	}
	return nil
}

// Delete runs a DELETE in tx's transaction.
func (e *Executor) Delete(ctx context.Context, s *ast.DeleteStmt, env expr.Env, tx TxnSource) (*Result, error) {
	return e.DeletePrepared(ctx, s, nil, env, tx)
}

// DeletePrepared runs a DELETE, prepared when pc is not nil: a
// single-table one's read plan comes from pc (PlanCache), a multi-table
// one is planned at each execution.
func (e *Executor) DeletePrepared(ctx context.Context, s *ast.DeleteStmt, pc *PlanCache, env expr.Env, tx TxnSource) (*Result, error) {
	if s.IsMultiTable {
		res, err := e.multiDelete(ctx, s, env, tx)
		return pc.multiTable(res, err, "multi-table DELETE")
	}
	if err := checkSingleTableDML(s.With); err != nil {
		return nil, err
	}
	src, err := e.resolveTable(ctx, s.TableRefs, env, "DELETE")
	if err != nil {
		return nil, err
	}
	txn, err := tx.Txn(ctx, false)
	if err != nil {
		return nil, err
	}
	rows, reason, err := e.readForWrite(ctx, pc, s, src, s.Where, s.Order, s.Limit, env, tx, txn)
	if err != nil {
		return nil, err
	}
	res, err := e.deleteRows(ctx, s, src, rows, env, tx, txn)
	return skipWarning(res, err, reason)
}

// deleteRows removes rows, which a single-table DELETE of src read.
func (e *Executor) deleteRows(ctx context.Context, s *ast.DeleteStmt, src *planner.Source, rows [][]datum, env expr.Env, tx TxnSource, txn kv.Txn) (*Result, error) {
	if len(rows) == 0 {
		return &Result{}, nil
	}
	tx.NoteWrite(src.Table)
	hOff := len(src.Table.Columns)
	handles := make([]handle, len(rows))
	for i, r := range rows {
		handles[i] = tablecodec.HandleOfDatum(r[hOff])
	}
	w := e.writer(tx, txn, src.Table, env)
	if s.IgnoreErr && w.fk != nil {
		// DELETE IGNORE: a row a foreign key keeps (1451) stays, with the
		// error as a warning (MySQL).
		res := &Result{}
		for i := range rows {
			skipped, err := ignoreFKError(txn, res, func() error { return w.RemoveRecords(ctx, handles[i:i+1], rows[i:i+1]) })
			if err != nil {
				return nil, err
			}
			if !skipped {
				res.AffectedRows++
			}
		}
		return res, nil
	}
	if err := w.RemoveRecords(ctx, handles, rows); err != nil {
		return nil, err
	}
	return &Result{AffectedRows: uint64(len(rows))}, nil
}

// ignoreRowSavepoint marks the writes of one row of an IGNORE statement.
const ignoreRowSavepoint = "\x00strata-ignore-row"

// ignoreFKError runs write, one row's writes of an UPDATE or DELETE IGNORE,
// and turns a foreign key error (1451, 1452) into a warning on res with
// the row's writes undone (skipped true), as MySQL's IGNORE does.
func ignoreFKError(txn kv.Txn, res *Result, write func() error) (skipped bool, err error) {
	txn.Savepoint(ignoreRowSavepoint)
	defer func() {
		if rerr := txn.ReleaseSavepoint(ignoreRowSavepoint); err == nil {
			err = rerr
		}
	}()
	err = write()
	if err == nil {
		return false, nil
	}
	e := errno.FromError(err)
	if e.Code != errno.ErrRowIsReferenced2 && e.Code != errno.ErrNoReferencedRow2 {
		return false, err
	}
	if rerr := txn.RollbackToSavepoint(ignoreRowSavepoint); rerr != nil {
		return false, rerr
	}
	res.Warn(e.Code, e.Msg)
	return true, nil
}

// Update runs an UPDATE in tx's transaction. Changing the integer
// primary key moves the row (delete + insert, failing with 1062 if the
// new key exists).
func (e *Executor) Update(ctx context.Context, s *ast.UpdateStmt, env expr.Env, tx TxnSource) (*Result, error) {
	return e.UpdatePrepared(ctx, s, nil, env, tx)
}

// UpdatePrepared runs an UPDATE, prepared when pc is not nil: a
// single-table one's read plan comes from pc (PlanCache), a multi-table
// one is planned at each execution.
func (e *Executor) UpdatePrepared(ctx context.Context, s *ast.UpdateStmt, pc *PlanCache, env expr.Env, tx TxnSource) (*Result, error) {
	if IsMultiTableUpdate(s) {
		res, err := e.multiUpdate(ctx, s, env, tx)
		return pc.multiTable(res, err, "multi-table UPDATE")
	}
	if err := checkSingleTableDML(s.With); err != nil {
		return nil, err
	}
	src, err := e.resolveTable(ctx, s.TableRefs, env, "UPDATE")
	if err != nil {
		return nil, err
	}
	src = forWrite(src)
	as, err := compileAssignments(s.List, src, &expr.Ctx{Columns: src.Cols, Env: env, Clause: "field list"})
	if err != nil {
		return nil, err
	}
	txn, err := tx.Txn(ctx, false)
	if err != nil {
		return nil, err
	}
	rows, reason, err := e.readForWrite(ctx, pc, s, src, s.Where, s.Order, s.Limit, env, tx, txn)
	if err != nil {
		return nil, err
	}
	res, err := e.updateRows(ctx, s, src, as, rows, env, tx, txn)
	return skipWarning(res, err, reason)
}

// updateRows applies as to rows, which a single-table UPDATE of src read.
func (e *Executor) updateRows(ctx context.Context, s *ast.UpdateStmt, src *planner.Source, as []assign, rows [][]datum, env expr.Env, tx TxnSource, txn kv.Txn) (*Result, error) {
	tbl := src.Table
	tx.NoteWrite(tbl)
	cv := newConv(env, s.IgnoreErr, true)
	ncols := len(tbl.Columns)
	hOff := ncols
	var oldHs, newHs []handle
	var oldRows, newRows [][]datum
	w := tbl.RowWidth()
	slab := make([]datum, len(rows)*w)
	for ri, r := range rows {
		newRow := slab[ri*w : (ri+1)*w : (ri+1)*w]
		copy(newRow, r)
		if err := assignRow(as, tbl, env, newRow, ri+1, cv); err != nil {
			return nil, err
		}
		if err := fillGenerated(tbl, newRow, ri+1, cv); err != nil {
			return nil, err
		}
		if sameRow(r, newRow, ncols) {
			continue
		}
		if err := touchOnUpdate(tbl, assignsColumn(as), env, newRow, ri+1, cv); err != nil {
			return nil, err
		}
		if skip, err := checkRowIgnore(tbl, newRow, s.IgnoreErr, cv.res); err != nil {
			return nil, err
		} else if skip {
			continue
		}
		oldH := tablecodec.HandleOfDatum(r[hOff])
		oldHs, newHs = append(oldHs, oldH), append(newHs, movedHandle(tbl, oldH, newRow))
		oldRows, newRows = append(oldRows, r), append(newRows, newRow)
	}
	changed := len(newRows)
	switch {
	case s.IgnoreErr && changed > 0:
		// UPDATE IGNORE: row by row, each seeing the ones before it; a row
		// whose new values another row holds (a unique key, or the primary
		// key it moves to) is left as it is, with warning 1062.
		w := e.writer(tx, txn, tbl, env)
		changed = 0
		for i := range newRows {
			key, err := e.updateConflict(ctx, src, tx, txn, newRows[i], oldHs[i], newHs[i])
			if err != nil {
				return nil, err
			}
			if key != nil {
				cv.res.Warn(errno.ErrDupEntry, dupKeyMessage(tbl, key))
				continue
			}
			skipped, err := ignoreFKError(txn, cv.res, func() error {
				return w.UpdateRecords(ctx, oldHs[i:i+1], oldRows[i:i+1], newHs[i:i+1], newRows[i:i+1])
			})
			if err != nil {
				return nil, err
			}
			if !skipped {
				changed++
			}
		}
	case changed > 0:
		if err := e.writer(tx, txn, tbl, env).UpdateRecords(ctx, oldHs, oldRows, newHs, newRows); err != nil {
			return nil, err
		}
	}
	return &Result{AffectedRows: uint64(changed), FoundRows: uint64(len(rows)), Warnings: cv.warnings(),
		Info: fmt.Sprintf("Rows matched: %d  Changed: %d  Warnings: %d", len(rows), changed, len(cv.warnings()))}, nil
}

// assign is one `col = expr` of UPDATE or ON DUPLICATE KEY UPDATE.
type assign struct {
	off int
	e   expr.Expr
	def bool // col = DEFAULT
}

func compileAssignments(list []*ast.Assignment, src *planner.Source, ectx *expr.Ctx) ([]assign, error) {
	var as []assign
	for _, a := range list {
		if a.Column.Table.L != "" && a.Column.Table.L != src.Alias {
			return nil, errno.New(errno.ErrBadField, "Unknown column '%s.%s' in 'field list'", a.Column.Table.O, a.Column.Name.O)
		}
		off := src.Table.FindColumn(a.Column.Name.O)
		if off < 0 {
			return nil, errno.New(errno.ErrBadField, "Unknown column '%s' in 'field list'", a.Column.Name.O)
		}
		isDef := bareDefault(a.Expr)
		if c := src.Table.Columns[off]; c.IsGenerated() {
			if !isDef {
				return nil, errGeneratedValue(src.Table, c)
			}
			continue // recomputed from the row (fillGenerated)
		}
		if isDef {
			as = append(as, assign{off: off, def: true})
			continue
		}
		ae, err := expr.Compile(a.Expr, ectx)
		if err != nil {
			return nil, err
		}
		as = append(as, assign{off: off, e: expr.WriteValue(ae, src.Table.Columns[off].Type, ectx.Env)})
	}
	return as, nil
}

// assignRow applies as to row (which starts as the old row) left to right,
// each assignment seeing the earlier ones, as MySQL evaluates them; cv
// says how a value that does not fit is stored.
func assignRow(as []assign, tbl *model.TableInfo, env expr.Env, row []datum, rowNum int, cv *conv) error {
	for _, a := range as {
		var v datum
		var err error
		if a.def {
			if v, err = defaultValue(tbl.Columns[a.off], env, rowNum); err != nil {
				return err
			}
		} else if v, err = a.e.Eval(row); err != nil {
			return err
		}
		if row[a.off], err = convertColumn(tbl, tbl.Columns[a.off], v, rowNum, cv); err != nil {
			return err
		}
	}
	return nil
}

// touchOnUpdate sets the ON UPDATE CURRENT_TIMESTAMP columns of row, which
// an UPDATE (or ON DUPLICATE KEY UPDATE) changes, to the statement's time,
// but those the statement assigns: as in MySQL, an explicit value wins,
// and a row the statement leaves unchanged keeps its time.
func touchOnUpdate(tbl *model.TableInfo, assigned func(off int) bool, env expr.Env, row []datum, rowNum int, cv *conv) error {
	for i, c := range tbl.Columns {
		if !c.OnUpdateNow || assigned(i) {
			continue
		}
		v, err := convertColumn(tbl, c, types.NewString(types.FormatTime(expr.ColumnNow(env, c.Type), c.Type.Tp, c.Type.Decimal)), rowNum, cv)
		if err != nil {
			return err
		}
		row[i] = v
	}
	if hasOnUpdate(tbl) {
		// Generated columns may read the time just set.
		return fillGenerated(tbl, row, rowNum, cv)
	}
	return nil
}

// assignsColumn reports whether as assigns column off.
func assignsColumn(as []assign) func(off int) bool {
	return func(off int) bool {
		for _, a := range as {
			if a.off == off {
				return true
			}
		}
		return false
	}
}

func sameRow(a, b []datum, ncols int) bool {
	for i := 0; i < ncols; i++ {
		if !sameDatum(a[i], b[i]) {
			return false
		}
	}
	return true
}

func sameDatum(a, b datum) bool {
	if a.IsNull() || b.IsNull() {
		return a.IsNull() == b.IsNull()
	}
	if a.Kind() != b.Kind() {
		return false
	}
	if a.HasBytes() {
		return string(a.Bytes()) == string(b.Bytes())
	}
	return a.Uint64() == b.Uint64()
}
