package ddl

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/collate"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/types"
)

// ResolveCollation is the collation a CHARACTER SET cs and COLLATE coll
// clause (either may be empty) name, def when both are empty: a
// character set alone gives its default collation. Errors: 1115 for an
// unknown character set, 1273 for an unknown collation, 1253 for a
// collation of another character set.
func ResolveCollation(cs, coll string, def *collate.Collation) (*collate.Collation, error) {
	var set *collate.Charset
	if cs != "" {
		if set = collate.CharsetByName(cs); set == nil {
			return nil, errno.New(errno.ErrUnknownCharacterSet, "Unknown character set: '%s'", cs)
		}
	}
	if coll == "" {
		if set != nil {
			return set.Default, nil
		}
		return def, nil
	}
	c := collate.ByName(coll)
	if c == nil {
		return nil, errno.New(errno.ErrUnknownCollation, "Unknown collation: '%s'", coll)
	}
	if set != nil && c.Charset != set.Name {
		return nil, errno.New(errno.ErrCollationCharsetMismatch, "COLLATION '%s' is not valid for CHARACTER SET '%s'", c.Name, set.Name)
	}
	return c, nil
}

// DBCollation is db's default collation (utf8mb4_bin when it names none).
func DBCollation(db *model.DBInfo) *collate.Collation {
	if db != nil {
		return byNameOrDefault(db.CollationName())
	}
	return collate.Default
}

func byNameOrDefault(name string) *collate.Collation {
	if c := collate.ByName(name); c != nil {
		return c
	}
	return collate.Default
}

// TableCollation is t's default collation, the one its new text columns
// get (utf8mb4_bin when it names none).
func TableCollation(t *model.TableInfo) *collate.Collation {
	return byNameOrDefault(t.CollationName())
}

// DatabaseCollation resolves the CHARACTER SET and COLLATE options of a
// CREATE DATABASE (the last of each wins, as MySQL).
func DatabaseCollation(opts []*ast.DatabaseOption) (*collate.Collation, error) {
	var cs, coll string
	for _, o := range opts {
		cs, coll = pickOption(o.Tp == ast.DatabaseOptionCharset, o.Tp == ast.DatabaseOptionCollate, o.Value, cs, coll)
	}
	return ResolveCollation(cs, coll, collate.Default)
}

// TableOptionsCollation resolves the [DEFAULT] CHARACTER SET / COLLATE
// table options of CREATE or ALTER TABLE against def (the database's
// default, or the table's).
func TableOptionsCollation(opts []*ast.TableOption, def *collate.Collation) (*collate.Collation, error) {
	return tableOptionsCollation(opts, def)
}

// tableOptionsCollation resolves CREATE TABLE's DEFAULT CHARSET / COLLATE
// options against the database default.
func tableOptionsCollation(opts []*ast.TableOption, def *collate.Collation) (*collate.Collation, error) {
	var cs, coll string
	for _, o := range opts {
		cs, coll = pickOption(o.Tp == ast.TableOptionCharset, o.Tp == ast.TableOptionCollate, o.StrValue, cs, coll)
	}
	return ResolveCollation(cs, coll, def)
}

// pickOption records v as the character set or the collation.
func pickOption(isCharset, isCollate bool, v, cs, coll string) (string, string) {
	switch {
	case isCharset:
		return v, coll
	case isCollate:
		return cs, v
	}
	return cs, coll
}

// setColumnCollation gives a text column its collation: the type's
// CHARACTER SET / COLLATE, else a COLLATE column option, else the table's
// default. A BINARY / VARBINARY / BLOB column (or CHARACTER SET binary)
// keeps the binary flag and no collation.
func setColumnCollation(ft *types.FieldType, cd *ast.ColumnDef, def *collate.Collation) error {
	if ft.Class() != types.ClassString || ft.Binary() || ft.Tp == mysql.TypeJSON {
		return nil
	}
	cs, coll := cd.Tp.GetCharset(), cd.Tp.GetCollate()
	for _, o := range cd.Options {
		if o.Tp == ast.ColumnOptionCollate {
			coll = o.StrValue
		}
	}
	if strings.EqualFold(cs, "binary") && coll == "" {
		return nil // FromAST made it binary
	}
	c, err := ResolveCollation(cs, coll, def)
	if err != nil {
		return err
	}
	setColl(ft, c)
	return nil
}

// setColl records c on a text type (utf8mb4_bin as 0; binary as the
// binary flag).
func setColl(ft *types.FieldType, c *collate.Collation) {
	switch c.ID {
	case types.CollationUTF8MB4:
		ft.Coll = 0
	case types.CollationBinary:
		ft.Coll = 0
		ft.Flag |= mysql.BinaryFlag
	default:
		ft.Coll = c.ID
	}
}

// textTypes are the TEXT types from the smallest, with their byte length.
var textTypes = []struct {
	tp   byte
	flen int
}{{mysql.TypeTinyBlob, 255}, {mysql.TypeBlob, 65535}, {mysql.TypeMediumBlob, 16777215}, {mysql.TypeLongBlob, 4294967295}}

// ConvertColumn is column oc of t as ALTER TABLE ... CONVERT TO CHARACTER
// SET gives it collation c, or nil when oc keeps its type (not a text
// column: numbers, dates, JSON, BINARY / VARBINARY / BLOB; or one that
// has c already). A TEXT column whose character set takes more bytes
// per character under c becomes the smallest TEXT type that holds as
// many characters, as MySQL (TEXT in latin1 becomes MEDIUMTEXT in
// utf8mb4). Errors are MODIFY COLUMN's for the same change: a key prefix
// that no longer fits, and a rewrite TiDB refuses (the collation of a
// PRIMARY KEY column, 8200).
func ConvertColumn(t *model.TableInfo, oc *model.ColumnInfo, c *collate.Collation) (*model.ColumnInfo, error) {
	ft := oc.Type
	if ft.Class() != types.ClassString || ft.Binary() || ft.Tp == mysql.TypeJSON {
		return nil, nil
	}
	old := collate.Of(ft.Collation())
	if old.ID == c.ID {
		return nil, nil
	}
	nc := *oc
	setColl(&nc.Type, c)
	if from, to := collate.CharsetByName(old.Charset), collate.CharsetByName(c.Charset); from != nil && to != nil && to.Maxlen > from.Maxlen {
		for i, tt := range textTypes {
			if tt.tp != ft.Tp {
				continue
			}
			need := tt.flen / from.Maxlen * to.Maxlen
			for _, wider := range textTypes[i:] {
				if wider.flen >= need || wider.tp == mysql.TypeLongBlob {
					nc.Type.Tp, nc.Type.Flen = wider.tp, wider.flen
					break
				}
			}
		}
	}
	for _, ix := range t.Indices {
		for _, ic := range ix.Columns {
			if ic.Offset == oc.Offset {
				if _, err := refitKeyPart(&nc, ic.Length); err != nil {
					return nil, err
				}
			}
		}
	}
	if NeedsRewrite(t, oc, &nc) {
		if err := checkRewrite(t, oc, &nc); err != nil {
			return nil, err
		}
	}
	return &nc, nil
}
