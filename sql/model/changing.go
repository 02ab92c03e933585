package model

import "github.com/stratadb/strata/sql/types"

// Changing columns: a MODIFY COLUMN whose rows must be rewritten (a type
// change the stored values do not decode unchanged under) builds a hidden
// column of the new type beside the old one, as TiDB does. While the job
// runs it is non-public (NonPublic, delete only then write only), and
// every write computes its value from the old column's (FillChanging); an
// index over the old column has a changing copy over the new one, written
// the same way. At the end the changing column takes the old one's name
// and place, and the copies the old indexes' names.

// ChangeInfo marks a changing column (TiDB's ChangeStateInfo).
type ChangeInfo struct {
	// From is the id of the column whose values it holds converted.
	From int64 `json:"from"`
	// Name is the column's name once the change is done: the name a
	// value that does not fit is reported under.
	Name string `json:"name"`
	// Lenient: the ALTER ran outside strict mode, so a value that does
	// not fit is stored adjusted (types.ConvertLenient) instead of
	// refused.
	Lenient bool `json:"lenient,omitempty"`
	// TimeZone is the ALTER's @@time_zone when the change is between
	// TIMESTAMP (stored as UTC) and another type, and that zone is not
	// UTC: a DATETIME or string becoming a TIMESTAMP is read in it, a
	// TIMESTAMP becoming anything else is its wall clock there.
	TimeZone string `json:"time_zone,omitempty"`
}

// changingCol is a changing column's offset and its source's, in
// ForWrite's table.
type changingCol struct{ off, src int }

func (t *TableInfo) initChanging() {
	t.changing = nil
	for i, c := range t.Columns {
		if c.Changing == nil {
			continue
		}
		for j, s := range t.Columns {
			if s.ID == c.Changing.From {
				t.changing = append(t.changing, changingCol{off: i, src: j})
				break
			}
		}
	}
}

// hiddenColumn is the offset of the non-public column named name in
// Columns (only ForWrite's table lists them), or -1.
func (t *TableInfo) hiddenColumn(name string) int {
	for i := t.npub; i < len(t.Columns); i++ {
		if t.Columns[i].State != StatePublic && t.Columns[i].Name == name {
			return i
		}
	}
	return -1
}

// HasChanging reports whether a MODIFY COLUMN that rewrites rows runs on
// t: rows written must carry its changing column's value (FillChanging)
// and index entries are computed over ForWrite's layout.
func (t *TableInfo) HasChanging() bool { return len(t.ForWrite().changing) > 0 }

// FillChanging sets in full, a row in ForWrite's layout, every changing
// column to its source column's value converted by conv.
func (t *TableInfo) FillChanging(full []types.Datum, conv func(c *ColumnInfo, v types.Datum) (types.Datum, error)) error {
	w := t.ForWrite()
	for _, cc := range w.changing {
		v, err := conv(w.Columns[cc.off], full[cc.src])
		if err != nil {
			return err
		}
		full[cc.off] = v
	}
	return nil
}

// ChangingColumn returns the changing column converting column id (in
// NonPublic), or nil.
func (t *TableInfo) ChangingColumn(id int64) *ColumnInfo {
	for _, c := range t.NonPublic {
		if c.Changing != nil && c.Changing.From == id {
			return c
		}
	}
	return nil
}
