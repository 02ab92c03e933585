package executor

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/planner"
	"github.com/stratadb/strata/sql/table"
	"github.com/stratadb/strata/sql/tablecodec"
)

// valuesTable names the slots of the row being inserted that VALUES(col)
// reads in ON DUPLICATE KEY UPDATE; the names cannot clash with a column.
const valuesTable = "\x00values"

// upsert writes rows one by one for REPLACE and INSERT ... ON DUPLICATE KEY
// UPDATE, each seeing the rows written before it, with MySQL's affected
// rows: REPLACE counts the row inserted and every row it deleted; ON
// DUPLICATE counts 1 per inserted row, 2 per updated row and 0 per row set
// to its current values (1 with CLIENT_FOUND_ROWS, the FoundRows count).
// In pessimistic mode the keys a row could collide on and the rows found
// there are locked, and their latest values decide.
func (e *Executor) upsert(ctx context.Context, s *ast.InsertStmt, src *planner.Source, env expr.Env, tx TxnSource, txn kv.Txn,
	handles []handle, rows [][]datum, sel selectedRows, cv *conv) (*Result, error) {
	src = forWrite(src)
	tbl := src.Table
	ncols := tbl.PublicColumns() // rows hold the public columns
	var as []assign
	if !s.IsReplace {
		cols := slices.Clone(src.Cols)
		for _, c := range tbl.Columns[:ncols] {
			cols = append(cols, expr.SchemaColumn{Table: valuesTable, Name: valuesTable + c.Name, Type: c.Type, Hidden: true})
		}
		cols = append(cols, sel.schema(src)...)
		list := make([]*ast.Assignment, len(s.OnDuplicate))
		vr := &valuesRewriter{tbl: tbl}
		for i, a := range s.OnDuplicate {
			n, _ := a.Expr.Accept(vr)
			list[i] = &ast.Assignment{Column: a.Column, Expr: n.(ast.ExprNode)}
		}
		if vr.missing != "" { // VALUES() names the target's columns only
			return nil, errno.New(errno.ErrBadField, "Unknown column '%s' in 'field list'", vr.missing)
		}
		var err error
		if as, err = compileAssignments(list, src, &expr.Ctx{Columns: cols, Env: env, Clause: "field list"}); err != nil {
			return nil, err
		}
	}
	w := e.writer(tx, txn, tbl, env)
	res := &Result{}
	for ri, row := range rows {
		oldHs, oldRows, dupKey, err := e.conflicts(ctx, src, tx, txn, row, handles[ri])
		if err != nil {
			return nil, err
		}
		if len(oldHs) > 0 && s.IgnoreErr && !s.IsReplace && len(s.OnDuplicate) == 0 {
			// INSERT IGNORE: the row is skipped with the error as a warning.
			res.Warn(errno.ErrDupEntry, dupKeyMessage(tbl, dupKey))
			continue
		}
		if s.IgnoreErr && !s.IsReplace && len(s.OnDuplicate) == 0 && w.fk != nil {
			// INSERT IGNORE: a row without its parent is skipped with the
			// error as a warning (MySQL).
			if err := w.fk.checkParents(ctx, tbl, nil, rows[ri:ri+1]); err != nil {
				if e := errno.FromError(err); e.Code == errno.ErrNoReferencedRow2 {
					res.Warn(e.Code, e.Msg)
					continue
				}
				return nil, err
			}
		}
		if s.IsReplace || len(oldHs) == 0 {
			if len(oldHs) > 0 {
				if err := w.RemoveRecords(ctx, oldHs, oldRows); err != nil {
					return nil, err
				}
				res.AffectedRows += uint64(len(oldHs))
			}
			if err := w.AddRecords(ctx, handles[ri:ri+1], rows[ri:ri+1]); err != nil {
				return nil, err
			}
			res.AffectedRows++
			res.FoundRows++
			continue
		}
		// ON DUPLICATE KEY UPDATE the first row collided with.
		old := oldRows[0]
		evalRow := make([]datum, len(src.Cols)+ncols+len(sel.cols))
		copy(evalRow, old)
		copy(evalRow[len(src.Cols):], row[:ncols])
		if sel.rows != nil {
			copy(evalRow[len(src.Cols)+ncols:], sel.rows[ri])
		}
		if err := assignRow(as, tbl, env, evalRow, ri+1, cv); err != nil {
			return nil, err
		}
		newRow := evalRow[:len(src.Cols):len(src.Cols)]
		if err := fillGenerated(tbl, newRow, ri+1, cv); err != nil {
			return nil, err
		}
		if sameRow(old, newRow, len(tbl.Columns)) {
			res.FoundRows++
			continue
		}
		if err := touchOnUpdate(tbl, assignsColumn(as), env, newRow, ri+1, cv); err != nil {
			return nil, err
		}
		if skip, err := checkRowIgnore(tbl, newRow, s.IgnoreErr, res); err != nil {
			return nil, err
		} else if skip {
			continue
		}
		newH := movedHandle(tbl, oldHs[0], newRow)
		if err := w.UpdateRecords(ctx, oldHs[:1], oldRows[:1], []handle{newH}, [][]datum{newRow}); err != nil {
			return nil, err
		}
		res.AffectedRows += 2
		res.FoundRows += 2
	}
	return res, nil
}

// selectedRows are the rows an INSERT ... SELECT selected (nil for VALUES)
// and their columns, which its ON DUPLICATE KEY UPDATE may read (MySQL:
// `UPDATE b = t2.b2`, `val = tmp.c`; a name both the target and the
// SELECT have must be qualified, else 1052).
type selectedRows struct {
	cols []ResultColumn
	rows [][]datum
}

// schema is the SELECT's columns as the assignments resolve them, by
// their table alias and name, after the target's: a column of the target
// table itself (INSERT INTO t SELECT ... FROM t) is left to the target's.
func (s selectedRows) schema(src *planner.Source) []expr.SchemaColumn {
	out := make([]expr.SchemaColumn, len(s.cols))
	for i, c := range s.cols {
		out[i] = expr.SchemaColumn{Table: strings.ToLower(c.Table), Name: c.Name, Type: c.Type}
		if strings.EqualFold(c.Table, src.Alias) || c.Table == "" {
			out[i].Hidden, out[i].Name = true, "" // not resolvable
		}
	}
	return out
}

// valuesRewriter turns VALUES(col) into a reference to the inserted row's
// slot of col; missing is the first col tbl lacks.
type valuesRewriter struct {
	tbl     *model.TableInfo
	missing string
}

func (*valuesRewriter) Enter(n ast.Node) (ast.Node, bool) { return n, false }

func (r *valuesRewriter) Leave(n ast.Node) (ast.Node, bool) {
	if v, ok := n.(*ast.ValuesExpr); ok && v.Column != nil {
		if r.tbl.FindColumn(v.Column.Name.Name.O) < 0 && r.missing == "" {
			r.missing = v.Column.Name.Name.O
		}
		return &ast.ColumnNameExpr{Name: &ast.ColumnName{Table: ast.NewCIStr(valuesTable), Name: ast.NewCIStr(valuesTable + v.Column.Name.Name.O)}}, true
	}
	return n, true
}

// dupKeyMessage is ERROR 1062's message for key of tbl.
func dupKeyMessage(tbl *model.TableInfo, key []byte) string {
	var e *errno.Error
	if err := table.DupKeyError(tbl, key); errors.As(err, &e) {
		return e.Msg
	}
	return "Duplicate entry for key"
}

// conflicts returns the handles and rows (their latest values, locked, in
// pessimistic mode) of the existing rows row (with handle h) collides with:
// on the primary key, then on each writable unique index without a NULL,
// distinct, in that order; and the first key that collided.
func (e *Executor) conflicts(ctx context.Context, src *planner.Source, tx TxnSource, txn kv.Txn, row []datum, h handle) ([]handle, [][]datum, []byte, error) {
	tbl := src.Table
	held, err := e.keyHolders(ctx, src, tx, txn, row, h, keyedByPK(tbl))
	if err != nil {
		return nil, nil, nil, err
	}
	if len(held) == 0 {
		return nil, nil, nil, nil
	}
	var hs []handle
	for _, k := range held {
		if !slices.ContainsFunc(hs, k.h.Equal) {
			hs = append(hs, k.h)
		}
	}
	rowKeys := make([][]byte, len(hs))
	for i, oh := range hs {
		rowKeys[i] = tablecodec.AppendHandleRowKey(nil, tbl.ID, oh)
	}
	rvals, err := e.latest(ctx, tx, txn, rowKeys)
	if err != nil {
		return nil, nil, nil, err
	}
	out := make([][]datum, 0, len(hs))
	kept := hs[:0]
	for i, v := range rvals {
		if v == nil {
			continue // an index entry without its row: nothing to replace
		}
		r := make([]datum, tbl.RowWidth())
		if err := decodeRowInto(src, rowKeys[i], v, r); err != nil {
			return nil, nil, nil, err
		}
		kept = append(kept, hs[i])
		out = append(out, r)
	}
	return kept, out, held[0].key, nil
}

// updateConflict returns the first key another row holds among those of
// row, the new values of the row whose handle was oldH and is now h: the
// row key when the handle changes, then each writable unique index entry
// without a NULL. nil: none. In pessimistic mode the keys are locked
// (latest).
func (e *Executor) updateConflict(ctx context.Context, src *planner.Source, tx TxnSource, txn kv.Txn, row []datum, oldH, h handle) ([]byte, error) {
	held, err := e.keyHolders(ctx, src, tx, txn, row, h, keyedByPK(src.Table) && !h.Equal(oldH))
	if err != nil {
		return nil, err
	}
	for _, k := range held {
		if !k.h.Equal(oldH) {
			return k.key, nil
		}
	}
	return nil, nil
}

// heldKey is a key of a row being written that a row holds: h.
type heldKey struct {
	key []byte
	h   handle
}

// keyedByPK reports whether t's rows are keyed by their PRIMARY KEY (an
// int or a common handle), so a row key can collide.
func keyedByPK(t *model.TableInfo) bool { return t.PKIsHandle || t.CommonHandle }

// movedHandle is the handle of a row rewritten to row whose handle was
// old: its key's when t is keyed by its PRIMARY KEY (new key values move
// the row), else old (a _tidb_rowid never changes).
func movedHandle(t *model.TableInfo, old handle, row []datum) handle {
	if keyedByPK(t) {
		return t.HandleOf(row)
	}
	return old
}

// keyHolders reads the keys that row (with handle h) takes and another row
// may hold — its row key when rowKey, then each writable unique index
// entry without a NULL — as the statement must see them (latest: locked in
// pessimistic mode), and returns those that are held, in that order, each
// with the handle of the row holding it.
func (e *Executor) keyHolders(ctx context.Context, src *planner.Source, tx TxnSource, txn kv.Txn, row []datum, h handle, rowKey bool) ([]heldKey, error) {
	tbl := src.Table
	var keys [][]byte
	if rowKey {
		keys = append(keys, tablecodec.AppendHandleRowKey(nil, tbl.ID, h))
	}
	for _, ix := range tbl.Indices {
		// A changing index (MODIFY COLUMN) holds converted values of a
		// unique index that is checked here; its own duplicates are 1062.
		if !ix.Unique || !ix.Writable() || ix.ChangingOf != 0 || !tbl.HasEntries(ix) {
			continue
		}
		if k, _, unique := table.IndexEntry(nil, tbl, ix, row, h); unique {
			keys = append(keys, k)
		}
	}
	vals, err := e.latest(ctx, tx, txn, keys)
	if err != nil {
		return nil, err
	}
	var held []heldKey
	for i, v := range vals {
		if v == nil {
			continue
		}
		oh := h
		if tablecodec.IsIndexKey(keys[i]) {
			if oh, err = tablecodec.DecodeIndexHandle(tablecodec.Handle{}, false, v, tbl.CommonHandle); err != nil {
				return nil, err
			}
			oh = oh.Clone()
		}
		held = append(held, heldKey{key: keys[i], h: oh})
	}
	return held, nil
}

// latest returns each key's value as the statement must see it (nil:
// absent): locked at for_update_ts in pessimistic mode, else the
// transaction's snapshot and own writes.
func (e *Executor) latest(ctx context.Context, tx TxnSource, txn kv.Txn, keys [][]byte) ([][]byte, error) {
	if tx.TxnOptions().Pessimistic {
		vals, _, err := e.lockKeys(ctx, tx, txn, false, keys)
		return vals, err
	}
	vals := make([][]byte, len(keys))
	for i, k := range keys {
		v, found, err := txn.Get(ctx, k)
		if err != nil {
			return nil, err
		}
		if found {
			vals[i] = v
		}
	}
	return vals, nil
}
