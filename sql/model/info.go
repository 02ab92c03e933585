package model

import (
	"slices"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
)

// DBInfo describes a database.
type DBInfo struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	// Collate is the default collation of its new tables (CREATE
	// DATABASE ... COLLATE); empty is utf8mb4_bin.
	Collate string `json:"collate,omitempty"`
}

// ColumnInfo describes a column.
type ColumnInfo struct {
	ID     int64           `json:"id"` // unique within the table, >= 1, never reused
	Name   string          `json:"name"`
	Offset int             `json:"offset"` // position in the table's row
	Type   types.FieldType `json:"type"`
	// Default: HasDefault false means "no DEFAULT clause"; DefaultNull means
	// DEFAULT NULL; otherwise Default holds the value in its canonical text
	// form (already converted to the column type), or DefaultNow is set for
	// DEFAULT CURRENT_TIMESTAMP.
	HasDefault  bool   `json:"has_default,omitempty"`
	DefaultNull bool   `json:"default_null,omitempty"`
	Default     string `json:"default,omitempty"`
	DefaultNow  bool   `json:"default_now,omitempty"`
	// OnUpdateNow is ON UPDATE CURRENT_TIMESTAMP: an UPDATE that changes
	// a row and does not assign the column sets it to the statement's time.
	OnUpdateNow   bool `json:"on_update_now,omitempty"`
	AutoIncrement bool `json:"auto_increment,omitempty"`
	// State is the column's F1 state while ALTER TABLE ADD / DROP COLUMN
	// runs (public otherwise). A non-public column is not in
	// TableInfo.Columns but in NonPublic: queries do not see it; DML keeps
	// it as its state says (ForWrite).
	State SchemaState `json:"state,omitempty"`
	// Origin, when set, is the value a row that lacks the column decodes
	// to: the column's default when ADD COLUMN added it (TiDB's origin
	// default), so that rows written before it, which were never
	// rewritten, read as that value whatever SET DEFAULT does later. Nil:
	// the column existed when the table was created (every row holds it);
	// a missing value decodes as DefaultDatum.
	Origin *OriginDefault `json:"origin_default,omitempty"`
	// Pending, while MODIFY COLUMN narrows the column or makes it NOT
	// NULL, is the type it is becoming: DML also refuses values that type
	// refuses (TiDB's PreventNullInsertFlag, for types too) until the job
	// has checked every row.
	Pending *types.FieldType `json:"pending_type,omitempty"`
	// Changing, on the hidden column a MODIFY COLUMN that rewrites rows
	// builds, names the column whose values it holds converted
	// (changing.go).
	Changing *ChangeInfo `json:"changing,omitempty"`
	// Generated, when set, makes the column a generated column; a VIRTUAL
	// one is not stored in the row value (GeneratedInfo).
	Generated *GeneratedInfo `json:"generated,omitempty"`
}

// OriginDefault is a column's origin default: NULL, or a value in the
// canonical text form of Default.
type OriginDefault struct {
	Null  bool   `json:"null,omitempty"`
	Value string `json:"value,omitempty"`
}

// HandleColumnName is the name of the hidden row handle of tables without an
// integer primary key.
const HandleColumnName = "_tidb_rowid"

// TableInfo describes a table. Published TableInfos are immutable.
type TableInfo struct {
	ID      int64         `json:"id"`
	DBID    int64         `json:"db_id"`
	Name    string        `json:"name"`
	Columns []*ColumnInfo `json:"columns"`
	// PKIsHandle: the single integer PRIMARY KEY column (HandleOffset) is the
	// row handle and is not stored in the row value. Otherwise rows get a
	// hidden _tidb_rowid handle from AllocID.
	PKIsHandle   bool `json:"pk_is_handle"`
	HandleOffset int  `json:"handle_offset"` // -1 without PKIsHandle
	// CommonHandle: the PRIMARY KEY (of any other type, or of several
	// columns) is clustered: the rows are keyed by its encoded values
	// (handle.go).
	CommonHandle  bool   `json:"is_common_handle,omitempty"`
	AutoIncOffset int    `json:"auto_inc_offset"` // -1 without AUTO_INCREMENT
	Comment       string `json:"comment,omitempty"`
	// Affinity is the AFFINITY table option: "table" makes the table an
	// affinity group in PD (sql/ddl affinity.go); empty is none.
	Affinity string `json:"affinity,omitempty"`
	// Collate is the table's default collation (DEFAULT CHARSET /
	// COLLATE), the one text columns added later get; empty is
	// utf8mb4_bin. Each column's own is in its type.
	Collate string `json:"collate,omitempty"`
	// Indices are the secondary indexes, in creation order; MaxIndexID is
	// the largest index id ever given (ids are never reused, so entries of a
	// dropped index are never mistaken for a new one's).
	Indices    []*IndexInfo `json:"indices,omitempty"`
	MaxIndexID int64        `json:"max_index_id,omitempty"`
	// View, when set, makes the entry a view: no rows, Columns are its
	// result columns.
	View *ViewInfo `json:"view,omitempty"`
	// NonPublic are the columns an ADD or DROP COLUMN job is moving
	// through the F1 states (delete only, write only); Columns holds the
	// public ones only, so every reader sees the table as it is public.
	// MaxColumnID is the largest column id ever given (0 on tables from
	// before it was kept: the largest id in Columns): ids of dropped
	// columns are never reused, as old rows still hold values under them.
	NonPublic   []*ColumnInfo `json:"non_public_columns,omitempty"`
	MaxColumnID int64         `json:"max_column_id,omitempty"`
	// ForeignKeys are the table's FOREIGN KEY constraints (it is their
	// child), in creation order; MaxFKID is the largest FK id given.
	ForeignKeys []*FKInfo `json:"foreign_keys,omitempty"`
	MaxFKID     int64     `json:"max_fk_id,omitempty"`
	// Checks are the table's CHECK constraints, ordered by name
	// (constraint.go); MaxCheckID is the largest id given.
	Checks     []*CheckInfo `json:"checks,omitempty"`
	MaxCheckID int64        `json:"max_check_id,omitempty"`

	// Derived on load.
	storedIDs  []int64                // ids of columns stored in the value, in offset order
	storedOff  []int                  // their offsets
	decoder    *tablecodec.RowDecoder // decodes all columns (by offset)
	byName     map[string]int
	schema     []expr.SchemaColumn
	npub       int             // public columns: Columns[:npub]
	write      *TableInfo      // ForWrite's table (nil: t itself)
	gen        []genCol        // generated columns in dependency order
	changing   []changingCol   // ForWrite's table: columns that convert another
	genErr     error           // why they could not be compiled
	checks     []compiledCheck // enforced CHECK constraints
	checkErr   error           // why they could not be compiled
	pk         *IndexInfo      // a CommonHandle table's PRIMARY KEY
	pkDecimal  []bool          // which of its columns are DECIMAL
	pkRestore  []bool          // by column offset: HandleRestores
	anyRestore bool
}

// CollationName is the database's default collation.
func (d *DBInfo) CollationName() string { return orBin(d.Collate) }

// CollationName is the table's default collation.
func (t *TableInfo) CollationName() string { return orBin(t.Collate) }

func orBin(c string) string {
	if c == "" {
		return "utf8mb4_bin"
	}
	return c
}

// ViewInfo is a view's definition (CREATE VIEW), as MySQL keeps it.
type ViewInfo struct {
	Select    string   `json:"select"`         // the query, restored as SQL
	Cols      []string `json:"cols,omitempty"` // the column list given, if any
	Algorithm string   `json:"algorithm"`      // UNDEFINED, MERGE, TEMPTABLE
	Definer   string   `json:"definer"`        // user@host, quoted as SHOW CREATE VIEW shows it
	Security  string   `json:"security"`       // DEFINER or INVOKER
	Check     string   `json:"check,omitempty"`
}

// IsView reports whether t is a view.
func (t *TableInfo) IsView() bool { return t.View != nil }

// Init computes the derived fields; call it once before publishing. The
// columns of Columns must be the table's own (Init sets their Offset).
func (t *TableInfo) Init() {
	t.storedIDs, t.storedOff = nil, nil
	ids := make([]int64, len(t.Columns))
	t.byName = make(map[string]int, len(t.Columns))
	t.npub = 0
	for i, c := range t.Columns {
		c.Offset = i
		ids[i] = c.ID
		if c.State == StatePublic {
			// ForWrite's table lists the non-public columns last.
			t.npub = i + 1
			t.byName[strings.ToLower(c.Name)] = i
		}
		if (t.PKIsHandle && i == t.HandleOffset) || c.State == StateDeleteOnly || c.IsVirtual() {
			continue
		}
		t.storedIDs = append(t.storedIDs, c.ID)
		t.storedOff = append(t.storedOff, i)
	}
	for _, ix := range t.Indices {
		for _, ic := range ix.Columns {
			if off, ok := t.byName[strings.ToLower(ic.Name)]; ok {
				ic.Offset = off // columns added FIRST / AFTER move the others
			} else if off := t.hiddenColumn(ic.Name); off >= 0 {
				ic.Offset = off // a changing index's changing column (ForWrite's table)
			}
		}
	}
	t.decoder = tablecodec.NewRowDecoder(ids)
	t.initHandle()
	t.initChanging()
	t.initGenerated()
	t.initChecks()
	t.schema = t.BuildSchema(strings.ToLower(t.Name))
	t.write = nil
	if len(t.NonPublic) > 0 {
		w := *t
		w.Columns = slices.Clone(t.Columns)
		for _, c := range t.NonPublic {
			cc := *c
			w.Columns = append(w.Columns, &cc)
		}
		w.NonPublic = nil
		w.Init()
		t.write = &w
	}
}

// ForWrite returns the table as DML that rewrites rows must see it: t
// itself when every column is public, else a copy whose Columns are the
// public ones followed by the non-public ones (by their offsets there,
// as hidden schema columns no name resolves to). An UPDATE reads its rows
// through it, so a value a newer node wrote to a column this node does
// not show yet is carried over instead of lost (TiDB's WritableCols);
// its index offsets are t's. Its JSON is what a pushed-down scan of such
// a read gets.
func (t *TableInfo) ForWrite() *TableInfo {
	if t.write != nil {
		return t.write
	}
	return t
}

// PublicColumns is the number of public columns: Columns[:PublicColumns()]
// (all of Columns except on a ForWrite table).
func (t *TableInfo) PublicColumns() int { return t.npub }

// NextColumnID is the id a new column gets.
func (t *TableInfo) NextColumnID() int64 {
	id := t.MaxColumnID
	for _, c := range t.Columns {
		id = max(id, c.ID)
	}
	for _, c := range t.NonPublic {
		id = max(id, c.ID)
	}
	return id + 1
}

// BuildSchema returns the row layout expressions resolve against: every
// column, then the hidden handle, qualified by alias. Non-public columns
// (on a ForWrite table) are hidden and have no name.
func (t *TableInfo) BuildSchema(alias string) []expr.SchemaColumn {
	cols := make([]expr.SchemaColumn, 0, len(t.Columns)+1)
	for _, c := range t.Columns {
		if c.State != StatePublic {
			cols = append(cols, expr.SchemaColumn{Table: alias, Type: c.Type, Hidden: true})
			continue
		}
		cols = append(cols, expr.SchemaColumn{Table: alias, Name: c.Name, Type: c.Type, Default: c.defaultOf()})
	}
	if t.CommonHandle {
		// No _tidb_rowid: the slot holds the common handle's bytes, under
		// no name.
		return append(cols, expr.SchemaColumn{Table: alias, Type: commonHandleType, Hidden: true})
	}
	return append(cols, expr.SchemaColumn{Table: alias, Name: HandleColumnName, Type: types.Int64Type, Hidden: true})
}

// Schema is BuildSchema(lower(Name)), computed once. Callers must not
// modify it.
func (t *TableInfo) Schema() []expr.SchemaColumn { return t.schema }

// FindColumn returns the offset of the named column, or -1.
func (t *TableInfo) FindColumn(name string) int {
	if i, ok := t.byName[strings.ToLower(name)]; ok {
		return i
	}
	return -1
}

// RowWidth is the number of datums a decoded row needs: every column plus
// the handle in the last slot.
func (t *TableInfo) RowWidth() int { return len(t.Columns) + 1 }

// EncodeRow appends the value for row (len(Columns) datums, by offset),
// using scratch (len >= len(Columns)) to avoid allocation.
func (t *TableInfo) EncodeRow(buf []byte, row []types.Datum, scratch []types.Datum) []byte {
	scratch = scratch[:0]
	for _, off := range t.storedOff {
		scratch = append(scratch, row[off])
	}
	return tablecodec.EncodeRow(buf, t.storedIDs, scratch)
}

// DecodeRow decodes key/value into out (len >= RowWidth): out[i] is column
// i, out[len(Columns)] is the handle (Handle.Datum). Byte values alias
// value, and a common handle key.
func (t *TableInfo) DecodeRow(key, value []byte, out []types.Datum) error {
	_, h, err := tablecodec.DecodeHandleRowKey(key, t.CommonHandle)
	if err != nil {
		return err
	}
	if err := t.decoder.Decode(value, out); err != nil {
		return err
	}
	for i, c := range t.Columns {
		if out[i].Kind() == types.KindAbsent {
			out[i] = c.OriginDatum()
		}
	}
	t.setHandle(h, out)
	if len(t.gen) > 0 {
		t.fillVirtual(out)
	}
	return nil
}

// DefaultDatum is the stored default (NULL when there is none); DEFAULT
// CURRENT_TIMESTAMP is resolved by the caller.
func (c *ColumnInfo) DefaultDatum() types.Datum {
	if !c.HasDefault || c.DefaultNull || c.DefaultNow {
		return types.NullDatum
	}
	d, err := c.Type.Convert(types.NewString(c.Default))
	if err != nil {
		return types.NullDatum
	}
	return d
}

// defaultOf is c's DEFAULT as DEFAULT(col) reads it.
func (c *ColumnInfo) defaultOf() *expr.ColumnDefault {
	return &expr.ColumnDefault{
		Value: c.DefaultDatum(),
		Now:   c.DefaultNow,
		None:  !c.HasDefault && c.Type.NotNull() && !c.AutoIncrement && c.Generated == nil,
	}
}

// OriginDatum is the value of the column in a row that lacks it: its
// origin default, or DefaultDatum for a column the table was created with.
func (c *ColumnInfo) OriginDatum() types.Datum {
	if c.Origin == nil {
		return c.DefaultDatum()
	}
	if c.Origin.Null {
		return types.NullDatum
	}
	d, err := c.Type.Convert(types.NewString(c.Origin.Value))
	if err != nil {
		return types.NullDatum
	}
	return d
}

// FillDatum is the value DML writes to a write-only column it does not
// show when it inserts a row: the column's default, or its origin
// default when the default depends on the time or there is none (a
// NOT NULL column without one is being added or dropped: MySQL's
// implicit value).
func (c *ColumnInfo) FillDatum() types.Datum {
	if c.HasDefault && !c.DefaultNow {
		return c.DefaultDatum()
	}
	return c.OriginDatum()
}

// RefusesNull reports whether DML must refuse NULL in the column: it is
// NOT NULL, or becoming so.
func (c *ColumnInfo) RefusesNull() bool {
	return c.Type.NotNull() || (c.Pending != nil && c.Pending.NotNull())
}

// DefaultNowText is how MySQL shows the default of a DEFAULT
// CURRENT_TIMESTAMP column: CURRENT_TIMESTAMP(n) with the column's
// fractional seconds precision n.
func (c *ColumnInfo) DefaultNowText() string {
	if c.Type.Decimal > 0 {
		return "CURRENT_TIMESTAMP(" + strconv.Itoa(c.Type.Decimal) + ")"
	}
	return "CURRENT_TIMESTAMP"
}

// OnUpdateExtra is the EXTRA text of an ON UPDATE CURRENT_TIMESTAMP
// column ("on update CURRENT_TIMESTAMP(n)", as MySQL shows it), else "".
func (c *ColumnInfo) OnUpdateExtra() string {
	if !c.OnUpdateNow {
		return ""
	}
	return "on update " + c.DefaultNowText()
}

// IsPrimaryKey reports whether the column is the primary key.
func (c *ColumnInfo) IsPrimaryKey() bool { return c.Type.Flag&mysql.PriKeyFlag != 0 }
