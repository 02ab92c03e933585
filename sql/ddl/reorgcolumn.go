package ddl

import (
	"context"
	"fmt"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/collate"
	"github.com/stratadb/strata/sql/deleterange"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/table"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
)

// MODIFY COLUMN with a row rewrite (Job.Rewrite), TiDB's "modify column
// with reorg": a type change the stored values do not decode unchanged
// under (INT -> VARCHAR, a DECIMAL precision, DATETIME <-> VARCHAR, a
// signedness, a collation of an indexed column, ...).
//
//	none -> delete only   a hidden changing column of the new type
//	                      (model.ChangeInfo: converts the old column) and a
//	                      changing copy of every index over the old column
//	delete only -> write only
//	                      every write also stores the converted value and
//	                      the copies' entries (table.Writer)
//	write only -> write reorganization
//	                      a version of its own: the backfill starts once no
//	                      transaction that began in delete only can commit
//	backfill              every row rewritten with the converted value and
//	                      the copies' entries, in batches (reorgRows)
//	-> public             one incompatible version (catalog.ReplaceTable):
//	                      the changing column takes the old one's name and
//	                      place (or the new name and position), the copies
//	                      the old indexes' names; the old column's values
//	                      stay in the rows under its id, the old indexes'
//	                      ranges go to the GC leader (deleterange)
//
// A value the new type refuses (strict mode) ends the job with MySQL's
// error for its row; the rollback removes the changing column and copies
// in one version (their entries' ranges queued for deletion), leaving the
// table as it was.

// changingPrefix and changingIndexPrefix name the hidden objects, as
// TiDB's _Col$_ and _Idx$_.
const (
	// errUnsupportedDDL is TiDB's ErrUnsupportedDDLOperation (8200).
	errUnsupportedDDL uint16 = 8200

	changingPrefix      = "_Col$_"
	changingIndexPrefix = "_Idx$_"
)

// NeedsRewrite reports whether changing column oc to nc (of table t)
// rewrites every row: the stored values do not decode unchanged under the
// new type (compatibleType refuses it), or the column is indexed and its
// collation changes (the entries hold the old collation's sort keys).
func NeedsRewrite(t *model.TableInfo, oc, nc *model.ColumnInfo) bool {
	if oc.IsVirtual() && nc.IsVirtual() && !t.ColumnIndexed(oc.Offset) {
		return false // no row or entry holds its values
	}
	if compatibleType(oc, nc) != nil {
		return true
	}
	return nc.Type.Collation() != oc.Type.Collation() && t.ColumnIndexed(oc.Offset)
}

// checkRewrite refuses a rewrite TiDB refuses too: a column of the
// PRIMARY KEY (8200; its values are the row handle or the key of
// the PRIMARY index), binary strings made text (8200), and JSON on
// either side (1235).
func checkRewrite(t *model.TableInfo, oc, nc *model.ColumnInfo) error {
	if oc.IsPrimaryKey() {
		return errno.New(errUnsupportedDDL, "Unsupported modify column: this column has primary key flag")
	}
	if pk := t.PrimaryIndex(); pk != nil {
		for _, c := range pk.Columns {
			if c.Offset == oc.Offset {
				return errno.New(errUnsupportedDDL, "Unsupported modify column: this column has primary key flag")
			}
		}
	}
	if oc.Type.Class() == types.ClassString && nc.Type.Class() == types.ClassString && oc.Type.Binary() && !nc.Type.Binary() {
		// TiDB refuses reinterpreting bytes as text (MySQL checks them).
		return errno.New(errUnsupportedDDL, "Unsupported modify charset from binary to %s", collate.Of(nc.Type.Collation()).Charset)
	}
	if oc.Type.Tp == nc.Type.Tp {
		return nil
	}
	if oc.Type.Tp == mysql.TypeJSON || nc.Type.Tp == mysql.TypeJSON {
		return errno.NotSupported("changing column '" + oc.Name + "' from " + oc.Type.SQLName() + " to " + nc.Type.SQLName())
	}
	return nil
}

// rewriteColumnStep takes the next step of a MODIFY COLUMN with rewrite.
func (d *DDL) rewriteColumnStep(ctx context.Context, j *Job) error {
	switch j.SchemaState {
	case SchemaNone:
		return d.columnStep(ctx, j, func(t *model.TableInfo) error { return addChanging(t, j) },
			func() { j.State, j.SchemaState = StateRunning, SchemaDeleteOnly })
	case SchemaDeleteOnly:
		return d.columnStep(ctx, j, func(t *model.TableInfo) error { return setChangingState(t, j, model.StateWriteOnly) },
			func() { j.SchemaState = SchemaWriteOnly })
	case SchemaWriteOnly:
		start, _ := tablecodec.RecordRange(j.TableID)
		return d.columnStep(ctx, j, func(t *model.TableInfo) error { return setChangingState(t, j, model.StateWriteOnly) },
			func() { j.SchemaState, j.ReorgKey = SchemaReorg, start })
	}
	if err := d.rewriteRows(ctx, j); err != nil {
		return err
	}
	var dropped []deleterange.Range
	return d.columnStepAs(ctx, j, false, func(t *model.TableInfo) error {
		var err error
		dropped, err = swapChanging(t, j)
		return err
	}, func() {
		j.State, j.SchemaState = StateDone, SchemaPublic
		j.dropped = dropped
	})
}

// rollbackRewriteColumn removes the changing column and index copies of
// a failed or cancelled MODIFY COLUMN in one version; the copies' entries
// go to the GC leader. The values the column got stay in the rows under
// its id, which is never reused.
func (d *DDL) rollbackRewriteColumn(ctx context.Context, j *Job) error {
	var dropped []deleterange.Range
	return d.columnStep(ctx, j, func(t *model.TableInfo) error {
		if cc := t.ChangingColumn(j.Columns[0].ID); cc != nil {
			removeNonPublic(t, cc.ID)
		}
		var kept []*model.IndexInfo
		for _, ix := range t.Indices {
			if ix.ChangingOf != 0 {
				dropped = append(dropped, deleterange.Index(j.ID, t.ID, ix.ID))
				continue
			}
			kept = append(kept, ix)
		}
		t.Indices = kept
		return nil
	}, func() {
		j.State, j.SchemaState = StateRollbackDone, SchemaNone
		j.dropped = dropped
	})
}

// addChanging adds, in delete only, the changing column of j's change
// and a changing copy of each index over the column.
func addChanging(t *model.TableInfo, j *Job) error {
	off := t.FindColumn(j.ColumnName)
	if off < 0 {
		return errUnknownColumn(j.ColumnName, t.Name)
	}
	oc := t.Columns[off]
	if oc.ID != j.Columns[0].ID {
		return errno.New(errno.ErrUnknown, "column %s of %s.%s changed during %v", j.ColumnName, j.SchemaName, j.TableName, j)
	}
	nc := j.Columns[0]
	if nc.Name != oc.Name && t.FindColumn(nc.Name) >= 0 {
		return errDupColumn(nc.Name)
	}
	if len(j.Positions) == 1 && j.Positions[0].After != "" {
		if a := j.Positions[0].After; t.FindColumn(a) < 0 || strings.EqualFold(a, oc.Name) {
			return errUnknownColumn(a, t.Name)
		}
	}
	if err := checkRewrite(t, oc, nc); err != nil {
		return err
	}
	cc := *nc
	cc.ID = t.NextColumnID()
	cc.Name = hiddenName(changingPrefix+oc.Name, func(n string) bool { return t.FindColumn(n) >= 0 || nonPublicNamed(t, n) })
	cc.State = model.StateDeleteOnly
	cc.Origin = nil // every row gets a value before it is public
	cc.Pending = nil
	cc.Changing = &model.ChangeInfo{From: oc.ID, Name: nc.Name, Lenient: j.Lenient, TimeZone: j.TimeZone}
	t.NonPublic = append(t.NonPublic, &cc)
	t.MaxColumnID = max(t.MaxColumnID, cc.ID)
	for _, ix := range slicesClone(t.Indices) {
		over := false
		for _, ic := range ix.Columns {
			over = over || ic.Offset == off
		}
		if !over {
			continue
		}
		t.MaxIndexID++
		cp := *ix
		cp.ID, cp.State, cp.ChangingOf = t.MaxIndexID, model.StateDeleteOnly, ix.ID
		cp.Name = hiddenName(changingIndexPrefix+ix.Name, func(n string) bool { return t.FindIndex(n) != nil })
		cp.Columns = make([]*model.IndexColumn, len(ix.Columns))
		for i, ic := range ix.Columns {
			c := *ic
			if ic.Offset == off {
				c.Name = cc.Name
				c.Length, _ = refitKeyPart(&cc, ic.Length) // ModifyColumn checked it
			}
			cp.Columns[i] = &c
		}
		t.Indices = append(t.Indices, &cp)
	}
	j.TableID = t.ID
	return nil
}

func slicesClone(ixs []*model.IndexInfo) []*model.IndexInfo {
	return append([]*model.IndexInfo(nil), ixs...)
}

func nonPublicNamed(t *model.TableInfo, name string) bool {
	for _, c := range t.NonPublic {
		if strings.EqualFold(c.Name, name) {
			return true
		}
	}
	return false
}

// hiddenName is base_0, or base_1, ... when taken says it is in use.
func hiddenName(base string, taken func(string) bool) string {
	for i := 0; ; i++ {
		if n := fmt.Sprintf("%s_%d", base, i); !taken(n) {
			return n
		}
	}
}

// setChangingState moves the changing column and index copies of j's
// change to st.
func setChangingState(t *model.TableInfo, j *Job, st model.SchemaState) error {
	cc := t.ChangingColumn(j.Columns[0].ID)
	if cc == nil {
		return fmt.Errorf("ddl: %v: its changing column is missing", j)
	}
	cc.State = st
	for _, ix := range t.Indices {
		if ix.ChangingOf != 0 {
			ix.State = st
		}
	}
	return nil
}

// rewriteRows is the backfill of write reorganization: every row gets
// its changing column's value, converted from the old column's as the
// ALTER's sql_mode says (table.ConvertChanging: MySQL's error for the
// first row that does not fit ends the job; outside strict mode the
// adjusted value and a warning), and its entries in the index copies.
func (d *DDL) rewriteRows(ctx context.Context, j *Job) error {
	t, _, err := d.table(ctx, j)
	if err != nil {
		return err
	}
	cc := t.ChangingColumn(j.Columns[0].ID)
	src := t.FindColumn(j.ColumnName)
	if cc == nil || cc.State != model.StateWriteOnly || src < 0 {
		return fmt.Errorf("ddl: %v: the changing column is not write only before its backfill", j)
	}
	fw := t.ForWrite()
	off := -1
	for i, c := range fw.Columns {
		if c.ID == cc.ID {
			off = i
		}
	}
	var copies []*model.IndexInfo
	for _, ix := range fw.Indices {
		if ix.ChangingOf != 0 {
			copies = append(copies, ix)
		}
	}
	n := len(fw.Columns)
	scratch := make([]types.Datum, n)
	rewrite := func(key []byte, row []types.Datum, num int64) ([]reorgEntry, error, error) {
		v, warn, err := table.ConvertChanging(fw, fw.Columns[off], row[src], num)
		if err != nil {
			return nil, nil, err
		}
		row[off] = v
		es := make([]reorgEntry, 0, 1+len(copies))
		es = append(es, reorgEntry{key: key, val: fw.EncodeRow(nil, row[:n], scratch)})
		for _, ix := range copies {
			k, v, u := table.IndexEntry(nil, fw, ix, row, tablecodec.HandleOfDatum(row[n]))
			es = append(es, reorgEntry{k, v, u})
		}
		return es, warn, nil
	}
	return d.reorgRows(ctx, j, fw, cc.Changing.Name, rewrite)
}

// swapChanging makes the change public: the changing column replaces the
// old one (its name and offset, or the statement's name and position),
// each index copy replaces the index it copies (its name and place), and
// returns the ranges of the old indexes' entries.
func swapChanging(t *model.TableInfo, j *Job) ([]deleterange.Range, error) {
	off := t.FindColumn(j.ColumnName)
	if off < 0 {
		return nil, errUnknownColumn(j.ColumnName, t.Name)
	}
	oc := t.Columns[off]
	cc := t.ChangingColumn(oc.ID)
	if cc == nil {
		return nil, fmt.Errorf("ddl: %v: its changing column is missing", j)
	}
	hidden := cc.Name
	nc := *cc
	nc.Name, nc.State, nc.Changing = cc.Changing.Name, model.StatePublic, nil
	removeNonPublic(t, cc.ID)
	var dropped []deleterange.Range
	byOld := map[int64]*model.IndexInfo{}
	copies := map[*model.IndexInfo]bool{}
	for _, ix := range t.Indices {
		if ix.ChangingOf != 0 {
			byOld[ix.ChangingOf] = ix
			copies[ix] = true
		}
	}
	var kept []*model.IndexInfo
	for _, ix := range t.Indices {
		switch cp := byOld[ix.ID]; {
		case copies[ix]:
			continue // placed where the index it copies was
		case cp != nil:
			dropped = append(dropped, deleterange.Index(j.ID, t.ID, ix.ID))
			cp.Name, cp.State, cp.ChangingOf = ix.Name, model.StatePublic, 0
			for _, ic := range cp.Columns {
				if ic.Name == hidden {
					ic.Name = oc.Name // replaceColumn renames it with the column
				}
			}
			kept = append(kept, cp)
		default:
			kept = append(kept, ix)
		}
	}
	t.Indices = kept
	var pos ColumnPosition
	if len(j.Positions) == 1 {
		pos = j.Positions[0]
	}
	if err := replaceColumn(t, oc.Name, &nc, pos); err != nil {
		return nil, err
	}
	return dropped, nil
}
