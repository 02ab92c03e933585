package model

import (
	"strings"

	"github.com/stratadb/strata/sql/types"
)

// SchemaState is the visibility of an index during its creation (the F1 /
// TiDB online schema change states). DML maintains an index according to
// its state; only public indexes are read.
type SchemaState int

const (
	// StatePublic: written by every DML path and read by queries.
	StatePublic SchemaState = iota
	// StateDeleteOnly: DML deletes the entries of rows it removes or
	// changes but writes no new entries.
	StateDeleteOnly
	// StateWriteOnly: DML maintains entries fully; queries do not read the
	// index yet (the backfill is running or about to).
	StateWriteOnly
)

// String is the state as ADMIN/SHOW output names it.
func (s SchemaState) String() string {
	switch s {
	case StateDeleteOnly:
		return "delete only"
	case StateWriteOnly:
		return "write only"
	}
	return "public"
}

// IndexColumn is one column of an index.
type IndexColumn struct {
	Name   string `json:"name"`
	Offset int    `json:"offset"` // column offset in TableInfo.Columns
}

// IndexInfo describes a secondary index. Keys are laid out as in
// sql/tablecodec: t{table id}_i{index id}{values}[{handle}].
type IndexInfo struct {
	ID      int64          `json:"id"` // unique within the table, >= 1, never reused
	Name    string         `json:"name"`
	Columns []*IndexColumn `json:"columns"`
	Unique  bool           `json:"unique"`
	// Primary: the table's PRIMARY KEY when it is not the row handle (a
	// composite or non-integer key): a unique index named PRIMARY over a
	// hidden _tidb_rowid handle, TiDB's NONCLUSTERED primary key.
	Primary bool        `json:"primary,omitempty"`
	State   SchemaState `json:"state,omitempty"`
	Comment string      `json:"comment,omitempty"`
}

// Writable reports whether DML must write new entries of the index.
func (ix *IndexInfo) Writable() bool { return ix.State == StatePublic || ix.State == StateWriteOnly }

// Deletable reports whether DML must delete entries of the index (every
// state does).
func (ix *IndexInfo) Deletable() bool { return true }

// Public reports whether queries may read the index.
func (ix *IndexInfo) Public() bool { return ix.State == StatePublic }

// FindIndex returns the named index (case-insensitive), or nil.
func (t *TableInfo) FindIndex(name string) *IndexInfo {
	for _, ix := range t.Indices {
		if strings.EqualFold(ix.Name, name) {
			return ix
		}
	}
	return nil
}

// PrimaryIndex returns the non-clustered PRIMARY KEY index, or nil (no
// primary key, or an integer one that is the row handle).
func (t *TableInfo) PrimaryIndex() *IndexInfo {
	for _, ix := range t.Indices {
		if ix.Primary {
			return ix
		}
	}
	return nil
}

// IndexByID returns the index with the given id, or nil.
func (t *TableInfo) IndexByID(id int64) *IndexInfo {
	for _, ix := range t.Indices {
		if ix.ID == id {
			return ix
		}
	}
	return nil
}

// Clone returns a deep copy of t (columns, indexes and their columns),
// which may be modified; t, which may be published, is left alone. Call
// Init on the copy before publishing it.
func (t *TableInfo) Clone() *TableInfo {
	nt := *t
	cloneCols := func(cols []*ColumnInfo) []*ColumnInfo {
		out := make([]*ColumnInfo, len(cols))
		for i, c := range cols {
			cc := *c
			if c.Origin != nil {
				o := *c.Origin
				cc.Origin = &o
			}
			if c.Pending != nil {
				p := *c.Pending
				cc.Pending = &p
			}
			out[i] = &cc
		}
		return out
	}
	nt.Columns = cloneCols(t.Columns)
	if t.NonPublic != nil {
		nt.NonPublic = cloneCols(t.NonPublic)
	}
	nt.Indices = make([]*IndexInfo, len(t.Indices))
	for i, ix := range t.Indices {
		c := *ix
		c.Columns = make([]*IndexColumn, len(ix.Columns))
		for j, ic := range ix.Columns {
			icc := *ic
			c.Columns[j] = &icc
		}
		nt.Indices[i] = &c
	}
	nt.write = nil
	return &nt
}

// SetIndexRow sets, in row (width RowWidth(), other slots left as they
// are), the columns an entry of ix holds: its values at their columns'
// offsets and handle h in the handle slot (and in the integer primary
// key's). The SQL node's index readers and the stores' IndexScan share it.
func (t *TableInfo) SetIndexRow(ix *IndexInfo, vals []types.Datum, h int64, row []types.Datum) {
	for i, c := range ix.Columns {
		row[c.Offset] = vals[i]
	}
	row[len(t.Columns)] = types.NewInt(h)
	if t.PKIsHandle {
		if t.Columns[t.HandleOffset].Type.Unsigned() {
			row[t.HandleOffset] = types.NewUint(uint64(h))
		} else {
			row[t.HandleOffset] = types.NewInt(h)
		}
	}
}
