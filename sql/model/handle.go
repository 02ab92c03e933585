package model

import (
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
)

// A table's rows are keyed by their handle (sql/tablecodec Handle):
//
//   - PKIsHandle: the single integer PRIMARY KEY column's value, an int
//     handle, not stored in the row value;
//   - CommonHandle: the encoded values of a clustered PRIMARY KEY of any
//     other type or of several columns (TiDB's common handle), whose
//     columns are stored in the row value as every other column;
//   - neither: a hidden _tidb_rowid from AllocID (a NONCLUSTERED key is a
//     unique index named PRIMARY over it).
//
// A common-handle table's PRIMARY index (Primary, in Indices) has no
// entries of its own: its entries are the rows (Clustered). Readers read
// its ranges as row-key ranges (CommonHandleKey) and writers skip it; a
// secondary index entry carries the common handle where an int one
// carries the int.

// commonHandleType is the type of a common-handle table's hidden handle
// slot: the encoded handle, a binary string.
var commonHandleType = types.FieldType{Tp: mysql.TypeVarString, Flen: 3072, Flag: mysql.BinaryFlag}

// Clustered reports whether ix is t's clustered common-handle PRIMARY
// KEY, whose entries are the rows themselves.
func (t *TableInfo) Clustered(ix *IndexInfo) bool { return t.CommonHandle && ix.Primary }

// HasEntries reports whether writers keep entries of ix (every index but
// a clustered PRIMARY KEY).
func (t *TableInfo) HasEntries(ix *IndexInfo) bool { return !t.Clustered(ix) }

// CommonHandleKey appends the common handle of index values vals (the
// PRIMARY KEY's first len(vals) columns, as IndexColumnDatum gives them)
// to b: a whole handle, or the prefix every handle beginning with those
// values shares.
func (t *TableInfo) CommonHandleKey(b []byte, vals []types.Datum) []byte {
	out, err := tablecodec.AppendCommonHandle(b, vals, t.pkDecimal[:len(vals)])
	if err != nil {
		// A DECIMAL key value that is not a decimal (converted values
		// always are): encoded as its bytes, it matches no row.
		out, _ = tablecodec.AppendCommonHandle(b, vals, make([]bool, len(vals)))
	}
	return out
}

// HandleOf is the handle of row (the table's columns by offset, in the
// layout index entries are computed from): its int primary key, its
// common handle, or the hidden handle in row's last slot.
func (t *TableInfo) HandleOf(row []types.Datum) tablecodec.Handle {
	switch {
	case t.PKIsHandle:
		return tablecodec.HandleOfDatum(row[t.HandleOffset])
	case t.CommonHandle:
		pk := t.pk
		vals := make([]types.Datum, len(pk.Columns))
		for i, c := range pk.Columns {
			vals[i] = IndexColumnDatum(t.Columns[c.Offset].Type, row[c.Offset], c.Length)
		}
		return tablecodec.CommonHandle(t.CommonHandleKey(nil, vals))
	}
	return tablecodec.HandleOfDatum(row[len(t.Columns)])
}

// setHandle puts h in row's handle slot (Handle.Datum) and an int
// handle's value in its integer PRIMARY KEY column.
func (t *TableInfo) setHandle(h tablecodec.Handle, row []types.Datum) {
	row[len(t.Columns)] = h.Datum()
	if !t.PKIsHandle {
		return
	}
	if t.Columns[t.HandleOffset].Type.Unsigned() {
		row[t.HandleOffset] = types.NewUint(uint64(h.IntValue()))
	} else {
		row[t.HandleOffset] = types.NewInt(h.IntValue())
	}
}

// HandleRestores reports whether the handle of t's rows gives back
// column off's value exactly, so an index entry (which carries the
// handle) holds the column: an int handle's column, or a common handle's
// column of an integer, DECIMAL (its text converted back to the column's
// scale), DATE, DATETIME or TIME type, or a whole string compared as its
// bytes (a sort key or a prefix is not the value; a TIMESTAMP is left to
// the row).
func (t *TableInfo) HandleRestores(off int) bool {
	if t.PKIsHandle {
		return off == t.HandleOffset
	}
	return t.pkRestore[off]
}

// restoreHandle sets in row the columns a common handle h gives back
// (HandleRestores).
func (t *TableInfo) restoreHandle(h tablecodec.Handle, row []types.Datum) {
	if !t.anyRestore {
		return
	}
	vals, err := tablecodec.DecodeCommonHandle(h.Encoded())
	if err != nil || len(vals) != len(t.pk.Columns) {
		return // the row lookup, if any, gives them
	}
	for i, c := range t.pk.Columns {
		if !t.pkRestore[c.Offset] {
			continue
		}
		if t.pkDecimal[i] { // its shortest text, in the column's scale
			d, err := t.Columns[c.Offset].Type.Convert(vals[i])
			if err != nil {
				continue
			}
			vals[i] = d
		}
		row[c.Offset] = vals[i]
	}
}

// initHandle finds a common-handle table's PRIMARY KEY.
func (t *TableInfo) initHandle() {
	t.pk, t.pkDecimal, t.pkRestore, t.anyRestore = nil, nil, make([]bool, len(t.Columns)), false
	if !t.CommonHandle {
		return
	}
	t.pk = t.PrimaryIndex()
	if t.pk == nil {
		return
	}
	t.pkDecimal = make([]bool, len(t.pk.Columns))
	for i, c := range t.pk.Columns {
		ft := t.Columns[c.Offset].Type
		t.pkDecimal[i] = ft.Tp == mysql.TypeNewDecimal
		switch ft.Tp {
		case mysql.TypeTiny, mysql.TypeShort, mysql.TypeInt24, mysql.TypeLong, mysql.TypeLonglong, mysql.TypeYear,
			mysql.TypeDate, mysql.TypeDatetime, mysql.TypeDuration, mysql.TypeNewDecimal,
			mysql.TypeVarchar, mysql.TypeVarString, mysql.TypeString:
			if c.Length == 0 && expr.Collation(ft) == nil {
				t.pkRestore[c.Offset], t.anyRestore = true, true
			}
		}
	}
}
