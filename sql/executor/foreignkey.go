package executor

import (
	"context"
	"fmt"
	"strings"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/sql/catalog"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/table"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
)

// Foreign keys in DML (MySQL 8.0's InnoDB rules, TiDB 8.5's way of
// checking them): every row a statement writes goes through a rowWriter,
// which after buffering the change checks, inside the transaction, the
// foreign keys the row is the child of (a parent row with the new values
// must exist: 1452) and those it is the parent of (children of the old
// values are refused, 1451, deleted, updated or set to NULL, recursively
// up to maxFKDepth). NULL in a key is never checked. The rows on the
// other side are found through the index a foreign key has (or the
// integer primary key) and locked in pessimistic mode, so a child insert
// and a concurrent delete of its parent serialize on the parent row's
// key: the one that locks second sees the first's committed result (the
// index is read at the snapshot and at a fresh timestamp taken after the
// lock, and every row found is re-read at its lock). foreign_key_checks=0
// turns it all off.

// maxFKDepth is how deep cascades may go (MySQL's FK_MAX_CASCADE_DEL).
const maxFKDepth = 15

// rowWriter is a table.Writer that keeps the foreign keys of its table
// (fk nil: foreign_key_checks=0).
type rowWriter struct {
	*table.Writer
	fk *fkChecker
}

// fkChecker checks and cascades foreign keys in one statement's
// transaction; depth is the cascade depth of the writer it belongs to.
type fkChecker struct {
	e     *Executor
	tx    TxnSource
	txn   kv.Txn
	env   expr.Env
	depth int
}

// fkChecksOn reports whether env's foreign_key_checks is on.
func fkChecksOn(env expr.Env) bool {
	if env == nil {
		return true
	}
	v, _, err := env.SysVar("foreign_key_checks", false)
	if err != nil || v.IsNull() {
		return true
	}
	s := strings.ToUpper(v.String())
	return s != "0" && s != "OFF"
}

// writer returns the writer of a statement writing tbl in txn, keeping
// its foreign keys unless env's foreign_key_checks is off.
func (e *Executor) writer(tx TxnSource, txn kv.Txn, tbl *model.TableInfo, env expr.Env) *rowWriter {
	var fk *fkChecker
	if fkChecksOn(env) {
		fk = &fkChecker{e: e, tx: tx, txn: txn, env: env}
	}
	return e.writerAt(tx, txn, tbl, fk)
}

func (e *Executor) writerAt(tx TxnSource, txn kv.Txn, tbl *model.TableInfo, fk *fkChecker) *rowWriter {
	tx.NoteWrite(tbl)
	return &rowWriter{Writer: &table.Writer{Txn: txn, T: tbl, Pessimistic: tx.TxnOptions().Pessimistic, LockWaitTimeoutMs: tx.LockWaitTimeoutMs(),
		OnRows: func(added, modified int64) { tx.NoteRows(tbl, added, modified) }}, fk: fk}
}

// AddRecords is table.Writer's, then checks the new rows' parents.
func (w *rowWriter) AddRecords(ctx context.Context, handles []handle, rows [][]datum) error {
	if err := w.Writer.AddRecords(ctx, handles, rows); err != nil || w.fk == nil {
		return err
	}
	return w.fk.afterWrite(ctx, w.T, nil, rows)
}

// RemoveRecords is table.Writer's, then acts on the removed rows'
// children.
func (w *rowWriter) RemoveRecords(ctx context.Context, handles []handle, rows [][]datum) error {
	if err := w.Writer.RemoveRecords(ctx, handles, rows); err != nil || w.fk == nil {
		return err
	}
	return w.fk.afterWrite(ctx, w.T, rows, nil)
}

// UpdateRecords is table.Writer's, then checks the parents of changed
// foreign key values and acts on the children of changed referenced ones.
func (w *rowWriter) UpdateRecords(ctx context.Context, oldHandles []handle, oldRows [][]datum, newHandles []handle, newRows [][]datum) error {
	if err := w.Writer.UpdateRecords(ctx, oldHandles, oldRows, newHandles, newRows); err != nil || w.fk == nil {
		return err
	}
	return w.fk.afterWrite(ctx, w.T, oldRows, newRows)
}

// keyValues returns row's values at offs, or nil when one is NULL (a key
// with a NULL is never checked).
func keyValues(row []datum, offs []int) []datum {
	vals := make([]datum, len(offs))
	for i, off := range offs {
		if row[off].IsNull() {
			return nil
		}
		vals[i] = row[off]
	}
	return vals
}

// sameValues reports whether a and b (nil: a key with a NULL) are the
// same non-NULL key.
func sameValues(a, b []datum) bool {
	if a == nil || b == nil || len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameDatum(a[i], b[i]) {
			return false
		}
	}
	return true
}

// afterWrite checks the foreign keys of t's rows that changed from old to
// new (old nil: inserted; new nil: deleted).
func (c *fkChecker) afterWrite(ctx context.Context, t *model.TableInfo, old, new [][]datum) error {
	if err := c.checkParents(ctx, t, old, new); err != nil {
		return err
	}
	if old == nil {
		return nil
	}
	return c.actOnChildren(ctx, t, old, new)
}

// checkParents checks that the parents of every FK value of new (t's
// rows, before: old, nil for inserted rows) that changed exist (1452).
func (c *fkChecker) checkParents(ctx context.Context, t *model.TableInfo, old, new [][]datum) error {
	for _, fk := range t.ForeignKeys {
		offs, ok := t.ColumnOffsets(fk.Cols)
		if !ok {
			continue
		}
		for i, row := range new {
			vals := keyValues(row, offs)
			if vals == nil || (old != nil && sameValues(vals, keyValues(old[i], offs))) {
				continue
			}
			if err := c.checkParent(ctx, t, fk, vals); err != nil {
				return err
			}
		}
	}
	return nil
}

// actOnChildren applies the FKs referencing t to the children of t's
// rows old, deleted (new nil) or changed to new.
func (c *fkChecker) actOnChildren(ctx context.Context, t *model.TableInfo, old, new [][]datum) error {
	refs, err := c.e.dom.Catalog().Referrers(ctx, t)
	if err != nil {
		return err
	}
	for _, ref := range refs {
		offs, ok := t.ColumnOffsets(ref.FK.RefCols)
		if !ok {
			continue
		}
		for i, row := range old {
			ovals := keyValues(row, offs)
			if ovals == nil {
				continue
			}
			var nvals []datum
			action := ref.FK.OnDelete
			if new != nil {
				nvals = make([]datum, len(offs))
				for j, off := range offs {
					nvals[j] = new[i][off]
				}
				if sameValues(ovals, nvals) {
					continue
				}
				action = ref.FK.OnUpdate
			}
			if err := c.onParentChange(ctx, ref, ovals, nvals, action); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkParent returns 1452 unless the parent of child's fk has a row with
// vals, which it locks (pessimistic mode) or marks for the commit's
// conflict check (optimistic).
func (c *fkChecker) checkParent(ctx context.Context, child *model.TableInfo, fk *model.FKInfo, vals []datum) error {
	cat := c.e.dom.Catalog()
	fail := func() error {
		return errno.New(errno.ErrNoReferencedRow2, "Cannot add or update a child row: a foreign key constraint fails (%s)", c.fkWhere(ctx, child.DBID, "", child, fk))
	}
	db, err := cat.GetDB(ctx, fk.RefSchema)
	if err != nil {
		if errno.FromError(err).Code == errno.ErrBadDB {
			return fail()
		}
		return err
	}
	parent, err := cat.GetTable(ctx, db, fk.RefTable)
	if err != nil {
		if errno.FromError(err).Code == errno.ErrNoSuchTable {
			return fail()
		}
		return err
	}
	offs, ok := parent.ColumnOffsets(fk.RefCols)
	if !ok {
		return fail()
	}
	pvals, ok := convertKey(parent, offs, vals)
	if !ok {
		return fail()
	}
	rows, err := c.findRows(ctx, parent, offs, pvals)
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return fail()
	}
	return nil
}

// convertKey converts vals to the types of t's columns at offs; ok is
// false for a value no row of t can hold.
func convertKey(t *model.TableInfo, offs []int, vals []datum) ([]datum, bool) {
	out := make([]datum, len(vals))
	for i, v := range vals {
		d, err := t.Columns[offs[i]].Type.Convert(v)
		if err != nil || d.IsNull() {
			return nil, false
		}
		out[i] = d
	}
	return out, true
}

// onParentChange acts on the children of ref.FK whose key is ovals, a
// parent key deleted (nvals nil) or changed to nvals, as action says.
func (c *fkChecker) onParentChange(ctx context.Context, ref catalog.FKRef, ovals, nvals []datum, action model.FKAction) error {
	child := ref.Child
	offs, ok := child.ColumnOffsets(ref.FK.Cols)
	if !ok {
		return nil
	}
	cvals, ok := convertKey(child, offs, ovals)
	if !ok {
		return nil
	}
	rows, err := c.findRows(ctx, child, offs, cvals)
	if err != nil || len(rows) == 0 {
		return err
	}
	switch action {
	case model.FKCascade, model.FKSetNull:
	default:
		return errno.New(errno.ErrRowIsReferenced2, "Cannot delete or update a parent row: a foreign key constraint fails (%s)", c.fkWhere(ctx, 0, ref.ChildDB, child, ref.FK))
	}
	if c.depth+1 > maxFKDepth {
		return errno.New(errno.ErrFKDepthExceeded, "Foreign key cascade delete/update exceeds max depth of %d.", maxFKDepth)
	}
	tw := child.ForWrite()
	w := c.e.writerAt(c.tx, c.txn, tw, &fkChecker{e: c.e, tx: c.tx, txn: c.txn, env: c.env, depth: c.depth + 1})
	handles := make([]handle, len(rows))
	for i, r := range rows {
		handles[i] = tablecodec.HandleOfDatum(r[len(tw.Columns)])
	}
	if action == model.FKCascade && nvals == nil {
		return w.RemoveRecords(ctx, handles, rows)
	}
	newRows := make([][]datum, len(rows))
	for i, r := range rows {
		nr := append([]datum(nil), r...)
		for j, off := range offs {
			if action == model.FKSetNull {
				nr[off] = types.NullDatum
			} else {
				nr[off] = nvals[j]
			}
		}
		newRows[i] = nr
	}
	if action == model.FKCascade {
		// The new parent values in the child's types (they are compatible).
		for i := range newRows {
			for _, off := range offs {
				d, err := tw.Columns[off].Type.Convert(newRows[i][off])
				if err != nil {
					return err
				}
				newRows[i][off] = d
			}
		}
	}
	for i := range newRows {
		// Generated columns reading the key follow it (strictly: a value
		// that does not fit fails the parent's statement).
		if err := fillGenerated(tw, newRows[i], i+1, nil); err != nil {
			return err
		}
		// No constraint reads a column an action writes (3823), but one
		// may read a generated column that follows it.
		if err := checkRow(tw, newRows[i]); err != nil {
			return err
		}
	}
	newHandles := make([]handle, len(newRows)) // a key column the action writes moves the row
	for i, nr := range newRows {
		newHandles[i] = movedHandle(tw, handles[i], nr)
	}
	return w.UpdateRecords(ctx, handles, rows, newHandles, newRows)
}

// fkWhere is the part of a 1451 / 1452 message in parentheses: the
// child table, qualified by its database (childDB, or looked up by id
// when empty), and the constraint's clause.
func (c *fkChecker) fkWhere(ctx context.Context, dbID int64, childDB string, child *model.TableInfo, fk *model.FKInfo) string {
	if childDB == "" {
		childDB = c.e.dbName(ctx, dbID)
	}
	return fmt.Sprintf("`%s`.`%s`, %s", childDB, child.Name, fk.Clause(childDB))
}

// dbName is the name of database id ("" when it cannot be read): for
// error messages only.
func (e *Executor) dbName(ctx context.Context, id int64) string {
	dbs, err := e.dom.Catalog().ListDBs(ctx)
	if err != nil {
		return ""
	}
	for _, db := range dbs {
		if db.ID == id {
			return db.Name
		}
	}
	return ""
}

// findRows returns the rows of t (decoded through t.ForWrite(), handle
// last) whose columns at offs hold vals (already in those columns'
// types), as the transaction must see them: candidates are found through
// the index the foreign key uses (the handle itself for an integer
// primary key, a table scan when there is no index), read at the
// transaction's snapshot and, in pessimistic mode, also at a fresh
// timestamp (rows committed since it began); each candidate row is then
// locked (pessimistic) and its latest value decides.
func (c *fkChecker) findRows(ctx context.Context, t *model.TableInfo, offs []int, vals []datum) ([][]datum, error) {
	pess := c.tx.TxnOptions().Pessimistic
	var handles []handle
	seen := map[string]bool{}
	add := func(h handle) {
		if k := string(h.Encoded()); !seen[k] {
			seen[k] = true
			handles = append(handles, h.Clone())
		}
	}
	ix, ok := t.FKIndex(offs)
	if ok && ix == nil {
		add(tablecodec.IntHandle(vals[0].Int64()))
	} else {
		var start, end []byte
		switch {
		case ix != nil && t.Clustered(ix): // rows whose key begins with vals
			start = t.CommonHandleKey(tablecodec.AppendRecordPrefix(nil, t.ID), indexDatums(t, offs, vals))
			end = tablecodec.PrefixNext(start)
			ix = nil
		case ix != nil:
			start = tablecodec.AppendIndexKey(nil, t.ID, ix.ID, indexDatums(t, offs, vals), false, tablecodec.Handle{})
			end = tablecodec.PrefixNext(start)
		default:
			start, end = tablecodec.RecordRange(t.ID)
		}
		pairs, err := c.txn.Scan(ctx, start, end, 0, false)
		if err != nil {
			return nil, err
		}
		if pess {
			ts, err := c.e.dom.Store().GetTS(ctx)
			if err != nil {
				return nil, err
			}
			latest, err := kv.ScanAt(ctx, c.e.dom.Store(), start, end, ts, 0)
			if err != nil {
				return nil, err
			}
			pairs = append(pairs, latest...)
		}
		for _, p := range pairs {
			if ix == nil {
				_, h, err := tablecodec.DecodeHandleRowKey(p.Key, t.CommonHandle)
				if err != nil {
					return nil, err
				}
				add(h)
				continue
			}
			_, _, _, kh, hasHandle, err := tablecodec.DecodeIndexKey(p.Key, len(ix.Columns), t.CommonHandle)
			if err != nil {
				return nil, err
			}
			h, err := tablecodec.DecodeIndexHandle(kh, hasHandle, p.Value, t.CommonHandle)
			if err != nil {
				return nil, err
			}
			add(h)
		}
	}
	if len(handles) == 0 {
		return nil, nil
	}
	keys := make([][]byte, len(handles))
	for i, h := range handles {
		keys[i] = tablecodec.AppendHandleRowKey(nil, t.ID, h)
	}
	values, _, err := c.e.lockKeys(ctx, c.tx, c.txn, false, keys)
	if err != nil {
		return nil, err
	}
	if !pess {
		got, err := c.txn.BatchGet(ctx, keys)
		if err != nil {
			return nil, err
		}
		values = make([][]byte, len(keys))
		for i, k := range keys {
			values[i] = got[string(k)]
		}
	}
	tw := t.ForWrite()
	want := encodeKey(indexDatums(t, offs, vals))
	var rows [][]datum
	for i, v := range values {
		if v == nil {
			continue
		}
		row := make([]datum, tw.RowWidth())
		if err := tw.DecodeRow(keys[i], v, row); err != nil {
			return nil, err
		}
		if have := keyValues(row, offs); have == nil || string(encodeKey(indexDatums(t, offs, have))) != string(want) {
			continue
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// indexDatums is vals (of t's columns at offs) as an index holds them:
// strings of a non-binary collation as its sort key, so that values equal
// under the collation ('ann', 'ANN') match, as in MySQL.
func indexDatums(t *model.TableInfo, offs []int, vals []datum) []datum {
	out := make([]datum, len(vals))
	for i, v := range vals {
		out[i] = model.IndexDatum(t.Columns[offs[i]].Type, v)
	}
	return out
}

// encodeKey is vals in the memcomparable form index keys hold them in:
// equal keys are equal bytes.
func encodeKey(vals []datum) []byte {
	var b []byte
	for _, v := range vals {
		b = tablecodec.AppendMemComparable(b, v)
	}
	return b
}
