package table

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
)

// MaxEntrySize bounds one row (key + value), like TiDB's
// txn-entry-size-limit: a single huge Raft entry stalls every other write of
// its region.
const MaxEntrySize = 6 << 20

// MaxIndexKeyLen bounds an index key, as MySQL's 3072-byte key limit.
const MaxIndexKeyLen = 3072 + 64

// Writer writes rows of one table in one transaction.
type Writer struct {
	Txn kv.Txn
	T   *model.TableInfo
	// Pessimistic: lock every written key at statement time (the
	// transaction's mode). LockWaitTimeoutMs is innodb_lock_wait_timeout.
	Pessimistic       bool
	LockWaitTimeoutMs int64
	// OnRows, when set, is told the rows each successful call added (net)
	// and modified: the modify counts of auto-analyze.
	OnRows func(added, modified int64)

	scratch []types.Datum
	vals    []types.Datum
	// shown: the values, as a duplicate-key error names them, of the
	// unique entries written of indexes over a non-binary collation,
	// whose keys hold sort keys rather than the values.
	shown map[string]string
}

// IndexEntry returns the key and value of row's entry in ix (row holds the
// table's columns by offset; handle is the row's handle) and whether the
// entry is subject to the unique check (a unique index and no NULL value).
// The key is appended to buf.
func IndexEntry(buf []byte, t *model.TableInfo, ix *model.IndexInfo, row []types.Datum, handle tablecodec.Handle) (key, value []byte, unique bool) {
	vals := make([]types.Datum, len(ix.Columns))
	return indexEntry(buf, t, ix, row, handle, vals)
}

func indexEntry(buf []byte, t *model.TableInfo, ix *model.IndexInfo, row []types.Datum, handle tablecodec.Handle, vals []types.Datum) (key, value []byte, unique bool) {
	unique = ix.Unique
	for i, c := range ix.Columns {
		vals[i] = model.IndexColumnDatum(t.Columns[c.Offset].Type, row[c.Offset], c.Length)
		if vals[i].IsNull() {
			unique = false
		}
	}
	key = tablecodec.AppendIndexKey(buf, t.ID, ix.ID, vals[:len(ix.Columns)], !unique, handle)
	return key, tablecodec.IndexValue(!unique, handle), unique
}

func (w *Writer) entry(ix *model.IndexInfo, row []types.Datum, handle tablecodec.Handle) (key, value []byte, unique bool) {
	if cap(w.vals) < len(ix.Columns) {
		w.vals = make([]types.Datum, len(ix.Columns))
	}
	// ForWrite's columns: a changing index's column is a non-public one
	// (the public ones have the same offsets in both).
	key, value, unique = indexEntry(nil, w.T.ForWrite(), ix, row, handle, w.vals[:len(ix.Columns)])
	if unique {
		w.remember(key, ix, row)
	}
	return key, value, unique
}

// remember keeps, for a duplicate-key error on key (an entry of ix, or
// the row key of a clustered PRIMARY KEY), the values of row it was
// computed from when the key holds sort keys rather than the values.
func (w *Writer) remember(key []byte, ix *model.IndexInfo, row []types.Datum) {
	if !collatedIndex(w.T, ix) {
		return
	}
	orig := make([]types.Datum, len(ix.Columns))
	for i, c := range ix.Columns {
		orig[i] = row[c.Offset]
		if c.Length > 0 && orig[i].Kind() == types.KindBytes { // MySQL names the prefix
			orig[i] = types.NewBytes(model.PrefixOf(w.T.Columns[c.Offset].Type, orig[i].Bytes(), c.Length))
		}
	}
	if w.shown == nil {
		w.shown = map[string]string{}
	}
	w.shown[string(key)] = FormatValues(orig)
}

// rowKey is the key of the row with handle h; a row of a clustered
// PRIMARY KEY remembers its values (remember).
func (w *Writer) rowKey(h tablecodec.Handle, row []types.Datum) []byte {
	k := tablecodec.AppendHandleRowKey(nil, w.T.ID, h)
	if w.T.CommonHandle {
		if pk := w.T.PrimaryIndex(); pk != nil {
			w.remember(k, pk, row)
		}
	}
	return k
}

// collatedIndex reports whether an index has a column of a non-binary
// collation.
func collatedIndex(t *model.TableInfo, ix *model.IndexInfo) bool {
	for _, c := range ix.Columns {
		if t.Columns[c.Offset].Type.Coll != 0 && expr.Collation(t.Columns[c.Offset].Type) != nil {
			return true
		}
	}
	return false
}

// dupKeyError is DupKeyError naming the values this Writer wrote for key
// when its index holds sort keys.
func (w *Writer) dupKeyError(key []byte) error {
	if v, ok := w.shown[string(key)]; ok {
		if !tablecodec.IsIndexKey(key) {
			return errno.New(errno.ErrDupEntry, "Duplicate entry '%s' for key '%s.PRIMARY'", v, w.T.Name)
		}
		if ix := w.T.IndexByID(tablecodec.IndexIDOf(key)); ix != nil {
			return errno.New(errno.ErrDupEntry, "Duplicate entry '%s' for key '%s.%s'", v, w.T.Name, shownName(w.T, ix))
		}
	}
	return DupKeyError(w.T, key)
}

// encodeRow encodes row for writing and returns it in ForWrite's layout
// (full), which index entries are computed from. The table's non-public
// columns (ForWrite) are written as their state says: a write-only one
// carries the value in row when the Writer's table is the ForWrite one and
// row holds it (an UPDATE, which read the row through it), else gets its
// FillDatum (an INSERT, whose rows hold the public columns); a delete-only
// one is not written (EncodeRow skips it). A changing column (a MODIFY
// COLUMN that rewrites rows) always gets its source column's value
// converted: a value it refuses fails the write (MySQL's error, as the
// ALTER would give for it).
func (w *Writer) encodeRow(row []types.Datum) (v []byte, full []types.Datum, err error) {
	fw := w.T.ForWrite()
	n, npub := len(fw.Columns), fw.PublicColumns()
	if cap(w.scratch) < 2*n {
		w.scratch = make([]types.Datum, 2*n)
	}
	var vals []types.Datum
	holds := w.T == fw && len(row) >= n
	switch {
	case n == npub || (holds && !fw.HasChanging()):
		vals = row[:n:n]
	case holds:
		vals = w.scratch[n : 2*n]
		copy(vals, row[:n])
	default:
		vals = w.scratch[n : 2*n]
		copy(vals, row[:npub])
		for i := npub; i < n; i++ {
			vals[i] = fw.Columns[i].FillDatum()
		}
	}
	if err := w.fillChanging(vals, true); err != nil {
		return nil, nil, err
	}
	v = fw.EncodeRow(nil, vals, w.scratch[:n])
	if len(v)+tablecodec.RowKeyLen > MaxEntrySize {
		return nil, nil, errno.New(errno.ErrEntryTooLarge, "entry too large, the max entry size is %d, the size of data is %d; store large values outside the database or split them", MaxEntrySize, len(v)+tablecodec.RowKeyLen)
	}
	return v, vals, nil
}

// fillChanging computes the changing columns of full (ForWrite's
// layout). put: the row is being written, and a value a write-only
// changing column refuses is an error; otherwise (a row being deleted, or
// a delete-only column) the value is only used to find entries to delete,
// and none was ever written for a value refused.
func (w *Writer) fillChanging(full []types.Datum, put bool) error {
	if !w.T.HasChanging() {
		return nil
	}
	return w.T.FillChanging(full, func(c *model.ColumnInfo, v types.Datum) (types.Datum, error) {
		d, _, err := ConvertChanging(w.T, c, v, 1)
		if err != nil && (!put || c.State != model.StateWriteOnly) {
			return types.NullDatum, nil
		}
		return d, err
	})
}

// oldFull is row (as read: the public columns, or ForWrite's when the
// Writer's table is that one) in ForWrite's layout with its changing
// columns computed, for the entries to delete; row itself when the table
// has no changing column.
func (w *Writer) oldFull(row []types.Datum) []types.Datum {
	if !w.T.HasChanging() {
		return row
	}
	fw := w.T.ForWrite()
	n, npub := len(fw.Columns), fw.PublicColumns()
	full := make([]types.Datum, n)
	if w.T == fw && len(row) >= n {
		copy(full, row[:n])
	} else {
		copy(full, row[:npub])
		for i := npub; i < n; i++ {
			full[i] = fw.Columns[i].FillDatum()
		}
	}
	_ = w.fillChanging(full, false)
	return full
}

// errNotForWrite: an UPDATE through a table whose non-public columns it
// did not read would drop their values from the rows it rewrites.
var errNotForWrite = errors.New("table: rows updated through a table info with non-public columns must be read through its ForWrite table")

// put is one buffered write; check: the key must have no live value
// (a row key or a unique entry being inserted).
type put struct {
	key, value []byte
	check      bool
}

// AddRecords inserts rows (each holding at least the table's public
// columns by offset; non-public ones get their FillDatum unless w.T is the
// ForWrite table and the row holds them) with the given handles, and their index entries. Errors: ERROR
// 1062 for an existing row handle or unique value (at once in pessimistic
// mode; from Commit, see DupKeyError, in optimistic mode), lock errors.
func (w *Writer) AddRecords(ctx context.Context, handles []tablecodec.Handle, rows [][]types.Datum) error {
	puts := make([]put, 0, len(rows)*(1+len(w.T.Indices)))
	for i, row := range rows {
		v, full, err := w.encodeRow(row)
		if err != nil {
			return err
		}
		puts = append(puts, put{key: w.rowKey(handles[i], full), value: v, check: true})
		for _, ix := range w.T.Indices {
			if ix.Writable() && w.T.HasEntries(ix) {
				k, v, u := w.entry(ix, full, handles[i])
				puts = append(puts, put{key: k, value: v, check: u})
			}
		}
	}
	return w.counted(w.apply(ctx, nil, puts), int64(len(rows)), int64(len(rows)))
}

// counted reports a successful call's rows to OnRows.
func (w *Writer) counted(err error, added, modified int64) error {
	if err == nil && w.OnRows != nil {
		w.OnRows(added, modified)
	}
	return err
}

// RemoveRecords deletes rows (with their handles) and their index entries.
// The caller has read rows as the transaction must delete them (in
// pessimistic mode, locked at for_update_ts).
func (w *Writer) RemoveRecords(ctx context.Context, handles []tablecodec.Handle, rows [][]types.Datum) error {
	dels := make([][]byte, 0, len(rows)*(1+len(w.T.Indices)))
	for i, row := range rows {
		dels = append(dels, tablecodec.AppendHandleRowKey(nil, w.T.ID, handles[i]))
		full := w.oldFull(row)
		for _, ix := range w.T.Indices {
			if ix.Deletable() && w.T.HasEntries(ix) {
				k, _, _ := w.entry(ix, full, handles[i])
				dels = append(dels, k)
			}
		}
	}
	return w.counted(w.apply(ctx, dels, nil), -int64(len(rows)), int64(len(rows)))
}

// UpdateRecords replaces oldRows[i] (handle oldHandles[i]) by newRows[i]
// (handle newHandles[i]; a changed handle moves the row). Index entries
// whose key or value changes are deleted and rewritten; unchanged ones are
// left alone.
//
// When the table has non-public columns, w.T must be its ForWrite table
// and the rows read through it, so their values are carried over.
func (w *Writer) UpdateRecords(ctx context.Context, oldHandles []tablecodec.Handle, oldRows [][]types.Datum, newHandles []tablecodec.Handle, newRows [][]types.Datum) error {
	if w.T.ForWrite() != w.T {
		return errNotForWrite
	}
	var dels [][]byte
	puts := make([]put, 0, len(newRows))
	for i, nr := range newRows {
		oh, nh := oldHandles[i], newHandles[i]
		v, full, err := w.encodeRow(nr)
		if err != nil {
			return err
		}
		old := w.oldFull(oldRows[i])
		moved := !oh.Equal(nh)
		rk := w.rowKey(nh, full)
		if moved {
			dels = append(dels, tablecodec.AppendHandleRowKey(nil, w.T.ID, oh))
		}
		puts = append(puts, put{key: rk, value: v, check: moved})
		for _, ix := range w.T.Indices {
			if !w.T.HasEntries(ix) {
				continue
			}
			ok, ov, _ := w.entry(ix, old, oh)
			if !ix.Writable() {
				dels = append(dels, ok)
				continue
			}
			nk, nv, u := w.entry(ix, full, nh)
			if string(ok) == string(nk) && string(ov) == string(nv) {
				continue
			}
			dels = append(dels, ok)
			puts = append(puts, put{key: nk, value: nv, check: u})
		}
	}
	return w.counted(w.apply(ctx, dels, puts), 0, int64(len(newRows)))
}

// apply buffers dels, then (after locking every key in pessimistic mode
// and checking the uniqueness of checked puts) puts.
func (w *Writer) apply(ctx context.Context, dels [][]byte, puts []put) error {
	txn := w.Txn
	for _, k := range dels {
		if err := txn.Delete(k); err != nil {
			return err
		}
	}
	seen := make(map[string]struct{}, len(puts))
	for _, p := range puts {
		if !p.check {
			continue
		}
		if _, dup := seen[string(p.key)]; dup {
			return w.dupKeyError(p.key)
		}
		seen[string(p.key)] = struct{}{}
	}
	if w.Pessimistic {
		// Row keys deleted or overwritten were locked when the statement
		// read them (readForWrite); everything else is locked here.
		keys := make([][]byte, 0, len(dels)+len(puts))
		for _, k := range dels {
			if tablecodec.IsIndexKey(k) {
				keys = append(keys, k)
			}
		}
		checkAt := make([]int, 0, len(puts))
		for _, p := range puts {
			if p.check || tablecodec.IsIndexKey(p.key) {
				if p.check {
					checkAt = append(checkAt, len(keys))
				}
				keys = append(keys, p.key)
			}
		}
		latest, err := w.lock(ctx, keys)
		if err != nil {
			return err
		}
		for _, i := range checkAt {
			if latest[i] != nil {
				return w.dupKeyError(keys[i])
			}
		}
	}
	for _, p := range puts {
		if err := w.write(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// write buffers p: a checked put is an Insert (the store asserts the key
// has no live value) unless this transaction deleted the key itself, which
// the store cannot see.
func (w *Writer) write(ctx context.Context, p put) error {
	if !p.check {
		return w.Txn.Set(p.key, p.value)
	}
	if w.Txn.Dirty(p.key, keyEnd(p.key)) {
		_, found, err := w.Txn.Get(ctx, p.key)
		if err != nil {
			return err
		}
		if found {
			return w.dupKeyError(p.key)
		}
		return w.Txn.Set(p.key, p.value)
	}
	if err := w.Txn.Insert(p.key, p.value); err != nil {
		var ke *kv.KeyExistsError
		if errors.As(err, &ke) {
			return w.dupKeyError(p.key)
		}
		return err
	}
	return nil
}

// lock takes pessimistic locks on keys and returns each key's latest value
// (nil when absent): the transaction's own write when it has one, else the
// newest committed value.
func (w *Writer) lock(ctx context.Context, keys [][]byte) ([][]byte, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	opts := kv.LockOptions{WaitTimeoutMs: w.LockWaitTimeoutMs, ReturnValues: true}
	vals, err := w.Txn.LockKeys(ctx, opts, keys...)
	if err != nil {
		return nil, err
	}
	if len(vals) != len(keys) {
		return nil, fmt.Errorf("table: LockKeys returned %d values for %d keys", len(vals), len(keys))
	}
	for i, k := range keys {
		if w.Txn.Dirty(k, keyEnd(k)) {
			v, found, err := w.Txn.Get(ctx, k)
			if err != nil {
				return nil, err
			}
			if !found {
				v = nil
			}
			vals[i] = v
		}
	}
	return vals, nil
}

func keyEnd(key []byte) []byte {
	return append(append(make([]byte, 0, len(key)+1), key...), 0)
}

// DupKeyError is ERROR 1062 for key, a row key or a unique index key of
// t (nil when unknown), naming the values and the key as MySQL does:
// Duplicate entry '<vals>' for key '<table>.<index>'. Any other key gives
// a *kv.KeyExistsError.
func DupKeyError(t *model.TableInfo, key []byte) error {
	if t != nil && t.CommonHandle && !tablecodec.IsIndexKey(key) {
		if tid, h, err := tablecodec.DecodeHandleRowKey(key, true); err == nil && tid == t.ID {
			if vals, err := tablecodec.DecodeCommonHandle(h.Encoded()); err == nil {
				pk := t.PrimaryIndex()
				for i, c := range pk.Columns {
					// A DECIMAL comes back as its shortest text: shown in
					// the column's scale, as MySQL shows it (1.50).
					if ft := t.Columns[c.Offset].Type; i < len(vals) && ft.Tp == mysql.TypeNewDecimal {
						if d, err := ft.Convert(vals[i]); err == nil {
							vals[i] = d
						}
					}
				}
				return errno.New(errno.ErrDupEntry, "Duplicate entry '%s' for key '%s.PRIMARY'", FormatValues(shownValues(t, pk, vals)), t.Name)
			}
		}
	}
	if tid, h, err := tablecodec.DecodeRowKey(key); err == nil {
		if t == nil || t.ID != tid {
			return errno.New(errno.ErrDupEntry, "Duplicate entry '%d' for key 'PRIMARY'", h)
		}
		v := strconv.FormatInt(h, 10)
		if t.PKIsHandle && t.Columns[t.HandleOffset].Type.Flag&mysql.UnsignedFlag != 0 {
			v = strconv.FormatUint(uint64(h), 10)
		}
		return errno.New(errno.ErrDupEntry, "Duplicate entry '%s' for key '%s.PRIMARY'", v, t.Name)
	}
	if t != nil && tablecodec.IsIndexKey(key) {
		if ix := t.IndexByID(tablecodec.IndexIDOf(key)); ix != nil {
			if tid, _, vals, _, _, err := tablecodec.DecodeIndexKey(key, len(ix.Columns), t.CommonHandle); err == nil && tid == t.ID {
				return errno.New(errno.ErrDupEntry, "Duplicate entry '%s' for key '%s.%s'", FormatValues(shownValues(t, ix, vals)), t.Name, shownName(t, ix))
			}
		}
	}
	return &kv.KeyExistsError{Key: key}
}

// shownValues are the values of ix's key vals as an error shows them: a
// sort key (of a column of a non-binary collation) as well as it can be.
func shownValues(t *model.TableInfo, ix *model.IndexInfo, vals []types.Datum) []types.Datum {
	fw := t.ForWrite() // a changing copy's column is a non-public one
	for i, c := range ix.Columns {
		if i >= len(vals) {
			break
		}
		if coll := expr.Collation(fw.Columns[c.Offset].Type); coll != nil && vals[i].Kind() == types.KindBytes {
			vals[i] = types.NewString(coll.KeyText(vals[i].Bytes()))
		}
	}
	return vals
}

// shownName is the name errors give index ix of t: a MODIFY COLUMN's
// changing copy is named after the index it replaces.
func shownName(t *model.TableInfo, ix *model.IndexInfo) string {
	if o := t.IndexByID(ix.ChangingOf); ix.ChangingOf != 0 && o != nil {
		return o.Name
	}
	return ix.Name
}

// FormatValues renders index values as MySQL's duplicate-key message does:
// joined by '-'.
func FormatValues(vals []types.Datum) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = v.String()
	}
	return strings.Join(parts, "-")
}
