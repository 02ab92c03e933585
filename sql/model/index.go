package model

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/tablecodec"
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
	// Length, when > 0, makes the column a prefix key part (`v(10)`): the
	// entry holds the value's first Length characters (bytes for a binary
	// string), see IndexColumnDatum. Such an index neither covers the
	// column nor gives its order, and a unique one is unique over the
	// prefixes, as in MySQL.
	Length int `json:"length,omitempty"`
}

// HasPrefix reports whether some column of ix is a prefix key part.
func (ix *IndexInfo) HasPrefix() bool {
	for _, c := range ix.Columns {
		if c.Length > 0 {
			return true
		}
	}
	return false
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
	// ChangingOf, on the copy of an index a MODIFY COLUMN that rewrites
	// rows builds over its changing column, is the id of the index it
	// replaces (changing.go).
	ChangingOf int64 `json:"changing_of,omitempty"`
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
			if c.Generated != nil {
				g := *c.Generated
				g.Deps = slices.Clone(c.Generated.Deps)
				cc.Generated = &g
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
	if t.ForeignKeys != nil {
		nt.ForeignKeys = make([]*FKInfo, len(t.ForeignKeys))
		for i, fk := range t.ForeignKeys {
			c := *fk
			c.Cols, c.RefCols = slices.Clone(fk.Cols), slices.Clone(fk.RefCols)
			nt.ForeignKeys[i] = &c
		}
	}
	if t.Checks != nil {
		nt.Checks = make([]*CheckInfo, len(t.Checks))
		for i, c := range t.Checks {
			cc := *c
			cc.Deps = slices.Clone(c.Deps)
			nt.Checks[i] = &cc
		}
	}
	nt.write = nil
	return &nt
}

// SetIndexRow sets, in row (width RowWidth(), other slots left as they
// are), the columns an entry of ix holds: its values at their columns'
// offsets and handle h in the handle slot (and in the integer primary
// key's). The SQL node's index readers and the stores' IndexScan share it.
func (t *TableInfo) SetIndexRow(ix *IndexInfo, vals []types.Datum, h tablecodec.Handle, row []types.Datum) {
	for i, c := range ix.Columns {
		row[c.Offset] = vals[i]
	}
	t.setHandle(h, row)
	if t.CommonHandle {
		t.restoreHandle(h, row)
	}
}

// FKAction is a foreign key's ON DELETE / ON UPDATE action.
type FKAction string

// The actions. The zero value is no clause given: NO ACTION, which InnoDB
// checks at once, as RESTRICT; SHOW CREATE TABLE omits it and
// information_schema shows NO ACTION (MySQL 8.0). SET DEFAULT is refused.
const (
	FKDefault  FKAction = ""
	FKRestrict FKAction = "RESTRICT"
	FKNoAction FKAction = "NO ACTION"
	FKCascade  FKAction = "CASCADE"
	FKSetNull  FKAction = "SET NULL"
)

// String is the action as information_schema names it.
func (a FKAction) String() string {
	if a == FKDefault {
		return string(FKNoAction)
	}
	return string(a)
}

// FKInfo is a FOREIGN KEY of the table holding it (the child): Cols
// reference RefCols of table RefSchema.RefTable (the parent), by name as
// MySQL keeps them, so the parent may be created after the child under
// foreign_key_checks=0. Every FK has an index of the child whose first
// columns are Cols (ddl creates one when none exists) and the parent one
// whose first columns are RefCols (or RefCols is its integer primary key).
type FKInfo struct {
	ID        int64    `json:"id"`
	Name      string   `json:"name"`
	Cols      []string `json:"cols"`
	RefSchema string   `json:"ref_schema"`
	RefTable  string   `json:"ref_table"`
	RefCols   []string `json:"ref_cols"`
	OnDelete  FKAction `json:"on_delete,omitempty"`
	OnUpdate  FKAction `json:"on_update,omitempty"`
}

// FindFK returns the named foreign key (case-insensitive), or nil.
func (t *TableInfo) FindFK(name string) *FKInfo {
	for _, fk := range t.ForeignKeys {
		if strings.EqualFold(fk.Name, name) {
			return fk
		}
	}
	return nil
}

// References reports whether fk's parent is db.table (case-insensitive).
func (fk *FKInfo) References(db, table string) bool {
	return strings.EqualFold(fk.RefSchema, db) && strings.EqualFold(fk.RefTable, table)
}

// ColumnOffsets returns the offsets in t of the named columns; ok is false
// when one is missing.
func (t *TableInfo) ColumnOffsets(names []string) (offs []int, ok bool) {
	offs = make([]int, len(names))
	for i, n := range names {
		if offs[i] = t.FindColumn(n); offs[i] < 0 {
			return nil, false
		}
	}
	return offs, true
}

// FKIndex returns the index whose first columns are offs (in order) that
// a foreign key over them uses: a public one, preferring the shortest;
// nil when there is none. On a table whose integer primary key is the
// row handle, a key of that column alone needs no index (ok is true, ix
// nil).
func (t *TableInfo) FKIndex(offs []int) (ix *IndexInfo, ok bool) {
	if len(offs) == 1 && t.PKIsHandle && offs[0] == t.HandleOffset {
		return nil, true
	}
	for _, cand := range t.Indices {
		if !cand.Public() || len(cand.Columns) < len(offs) || (ix != nil && len(ix.Columns) <= len(cand.Columns)) {
			continue
		}
		match := true
		for i, off := range offs {
			if cand.Columns[i].Offset != off || cand.Columns[i].Length > 0 { // no prefix key part, as InnoDB
				match = false
				break
			}
		}
		if match {
			ix = cand
		}
	}
	return ix, ix != nil
}

// Clause is fk as SHOW CREATE TABLE prints it and MySQL's 1451 / 1452
// messages quote it: CONSTRAINT `fk` FOREIGN KEY (`c`) REFERENCES
// `parent` (`id`) [ON DELETE ...] [ON UPDATE ...], the parent qualified
// by its database when that is not childDB.
func (fk *FKInfo) Clause(childDB string) string {
	var b strings.Builder
	b.WriteString("CONSTRAINT " + quoteIdent(fk.Name) + " FOREIGN KEY (")
	writeIdents(&b, fk.Cols)
	b.WriteString(") REFERENCES ")
	if !strings.EqualFold(fk.RefSchema, childDB) {
		b.WriteString(quoteIdent(fk.RefSchema) + ".")
	}
	b.WriteString(quoteIdent(fk.RefTable) + " (")
	writeIdents(&b, fk.RefCols)
	b.WriteString(")")
	if fk.OnDelete != FKDefault {
		b.WriteString(" ON DELETE " + string(fk.OnDelete))
	}
	if fk.OnUpdate != FKDefault {
		b.WriteString(" ON UPDATE " + string(fk.OnUpdate))
	}
	return b.String()
}

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

func writeIdents(b *strings.Builder, names []string) {
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quoteIdent(n))
	}
}

// IndexDatum is the value an index entry holds for v, a value of a column
// of type ft: v itself, or for a string of a non-binary collation its sort
// key (so the index orders, and a unique index compares, as the collation
// does; the row keeps the value, and such an index never covers it).
// Range bounds on such a column are converted alike.
func IndexDatum(ft types.FieldType, v types.Datum) types.Datum {
	return IndexColumnDatum(ft, v, 0)
}

// IndexColumnDatum is IndexDatum for a key part of prefix length n (0:
// the whole value): the value cut to its first n characters (bytes for a
// binary string) before the collation's sort key is taken.
func IndexColumnDatum(ft types.FieldType, v types.Datum, n int) types.Datum {
	if n > 0 && v.Kind() == types.KindBytes {
		v = types.NewBytes(PrefixOf(ft, v.Bytes(), n))
	}
	return collationKey(ft, v)
}

// PrefixOf is b's first n characters for a string of type ft (bytes for a
// binary string; a byte that is not UTF-8 counts as one character).
func PrefixOf(ft types.FieldType, b []byte, n int) []byte {
	if ft.Binary() {
		return b[:min(n, len(b))]
	}
	i := 0
	for ; n > 0 && i < len(b); n-- {
		_, size := utf8.DecodeRune(b[i:])
		i += size
	}
	return b[:i]
}

func collationKey(ft types.FieldType, v types.Datum) types.Datum {
	if ft.Coll == 0 || v.Kind() != types.KindBytes {
		return v
	}
	if c := expr.Collation(ft); c != nil {
		return types.NewBytes(c.Key(nil, v.Bytes()))
	}
	return v
}

// ColumnIndexed reports whether the column at offset off is in an index.
func (t *TableInfo) ColumnIndexed(off int) bool {
	for _, ix := range t.Indices {
		for _, c := range ix.Columns {
			if c.Offset == off {
				return true
			}
		}
	}
	return false
}
