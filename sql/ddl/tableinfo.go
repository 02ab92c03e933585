package ddl

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/collate"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/types"
)

// Table-info building: a CREATE TABLE statement or an index definition
// validated and turned into the catalog's TableInfo / IndexInfo, before an
// id is allocated and the job is submitted.

// MySQL error codes of table and index definitions.
const (
	errDupKeyName          uint16 = 1061 // Duplicate key name
	errKeyColumnNotExist   uint16 = 1072 // Key column '%s' doesn't exist in table
	errBlobKeyWithoutLen   uint16 = 1170 // BLOB/TEXT column used in key specification without a key length
	errTooManyKeys         uint16 = 1069
	errTooManyKeyParts     uint16 = 1070
	errPrimaryCantHaveNull uint16 = 1171 // All parts of a PRIMARY KEY must be NOT NULL
	errBlobCantHaveDefault uint16 = 1101 // BLOB, TEXT, GEOMETRY or JSON column can't have a default value
	errJSONUsedAsKey       uint16 = 3152 // JSON column supports indexing only via generated columns
	errWrongSubKey         uint16 = 1089 // Incorrect prefix key
	errTooLongKey          uint16 = 1071 // Specified key was too long
)

// maxKeyBytes is InnoDB's (DYNAMIC row format) largest key part, as MySQL 8
// and TiDB limit a prefix.
const maxKeyBytes = 3072

const (
	maxIndexes    = 64
	maxIndexParts = 16
)

// addIndexInfo appends a new index (in state public: the table is being
// created, it has no rows) to t.
func addIndexInfo(t *model.TableInfo, name string, parts []*ast.IndexPartSpecification, unique bool, opt *ast.IndexOption) error {
	ix, err := NewIndexInfo(t, name, parts, unique, opt)
	if err != nil {
		return err
	}
	t.MaxIndexID++
	ix.ID = t.MaxIndexID
	t.Indices = append(t.Indices, ix)
	return nil
}

// NewIndexInfo validates an index definition against t and returns it
// (without an id).
func NewIndexInfo(t *model.TableInfo, name string, parts []*ast.IndexPartSpecification, unique bool, opt *ast.IndexOption) (*model.IndexInfo, error) {
	if len(parts) == 0 {
		return nil, errno.New(errno.ErrParse, "an index needs at least one column")
	}
	if len(parts) > maxIndexParts {
		return nil, errno.New(errTooManyKeyParts, "Too many key parts specified; max %d parts allowed", maxIndexParts)
	}
	if len(t.Indices) >= maxIndexes {
		return nil, errno.New(errTooManyKeys, "Too many keys specified; max %d keys allowed", maxIndexes)
	}
	ix := &model.IndexInfo{Unique: unique}
	if opt != nil {
		ix.Comment = opt.Comment
	}
	for _, p := range parts {
		if p.Expr != nil || p.Column == nil {
			return nil, errno.NotSupported("expression indexes")
		}
		off := t.FindColumn(p.Column.Name.O)
		if off < 0 {
			return nil, errno.New(errKeyColumnNotExist, "Key column '%s' doesn't exist in table", p.Column.Name.O)
		}
		c := t.Columns[off]
		length, err := keyPartLength(c, p.Length)
		if err != nil {
			return nil, err
		}
		switch c.Type.Tp {
		case mysql.TypeBlob, mysql.TypeTinyBlob, mysql.TypeMediumBlob, mysql.TypeLongBlob:
			if length == 0 {
				return nil, errno.New(errBlobKeyWithoutLen, "BLOB/TEXT column '%s' used in key specification without a key length", c.Name)
			}
		case mysql.TypeJSON:
			return nil, errno.New(errJSONUsedAsKey, "JSON column '%s' supports indexing only via generated columns on a specified JSON path.", c.Name)
		}
		for _, have := range ix.Columns {
			if have.Offset == off {
				return nil, errno.New(errno.ErrDupFieldName, "Duplicate column name '%s'", c.Name)
			}
		}
		ix.Columns = append(ix.Columns, &model.IndexColumn{Name: c.Name, Offset: off, Length: length})
	}
	if name == "" {
		// MySQL names an unnamed index after its first column, _2, _3... on
		// a clash.
		base := ix.Columns[0].Name
		name = base
		for i := 2; t.FindIndex(name) != nil || strings.EqualFold(name, "PRIMARY"); i++ {
			name = fmt.Sprintf("%s_%d", base, i)
		}
	}
	if len(name) > 64 {
		return nil, errno.New(1059, "Identifier name '%s' is too long", name)
	}
	if strings.EqualFold(name, "PRIMARY") {
		return nil, errno.New(1280, "Incorrect index name '%s'", name)
	}
	if t.FindIndex(name) != nil {
		return nil, errno.New(errDupKeyName, "Duplicate key name '%s'", name)
	}
	ix.Name = name
	return ix, nil
}

// keyPartLength checks the prefix length n of a key part over c (`c(n)`,
// 0 for none) as MySQL 8 does and returns the one the index keeps: a
// prefix only of a string column, at most the column's length (1089), of
// at most maxKeyBytes bytes (1071); a prefix as long as a CHAR, VARCHAR,
// BINARY or VARBINARY column is the whole column (no prefix), as MySQL
// records it.
func keyPartLength(c *model.ColumnInfo, n int) (int, error) {
	if n <= 0 {
		return 0, nil
	}
	ft := c.Type
	wrong := errno.New(errWrongSubKey, "Incorrect prefix key; the used key part isn't a string, the used length is longer than the key part, or the storage engine doesn't support unique prefix keys")
	switch ft.Tp {
	case mysql.TypeString, mysql.TypeVarchar, mysql.TypeVarString:
		if ft.Flen >= 0 && n > ft.Flen {
			return 0, wrong
		}
		if n == ft.Flen {
			return 0, nil
		}
	case mysql.TypeBlob, mysql.TypeTinyBlob, mysql.TypeMediumBlob, mysql.TypeLongBlob:
		if ft.Flen > 0 && n > ft.Flen {
			return 0, wrong
		}
	default:
		return 0, wrong // numbers, temporals, ENUM, SET, JSON, BIT
	}
	perChar := 1
	if !ft.Binary() {
		if cs := collate.CharsetByName(collate.Of(ft.Collation()).Charset); cs != nil {
			perChar = cs.Maxlen
		}
	}
	if n*perChar > maxKeyBytes {
		return 0, errno.New(errTooLongKey, "Specified key was too long; max key length is %d bytes", maxKeyBytes)
	}
	return n, nil
}

// refitKeyPart is the prefix length a key part of length n (0: the whole
// column) keeps when its column becomes c (CHANGE / MODIFY COLUMN), as
// MySQL 8 does: a prefix of a column that is no longer a string, or whose
// new CHAR / VARCHAR / (VAR)BINARY length is at most the prefix, becomes
// the whole column; a whole-column key part of a BLOB / TEXT is 1170, and
// a prefix of too many bytes for the new character set 1071.
func refitKeyPart(c *model.ColumnInfo, n int) (int, error) {
	switch c.Type.Tp {
	case mysql.TypeBlob, mysql.TypeTinyBlob, mysql.TypeMediumBlob, mysql.TypeLongBlob:
		if n == 0 {
			return 0, errno.New(errBlobKeyWithoutLen, "BLOB/TEXT column '%s' used in key specification without a key length", c.Name)
		}
	case mysql.TypeString, mysql.TypeVarchar, mysql.TypeVarString:
		if n >= c.Type.Flen {
			return 0, nil
		}
	default:
		return 0, nil
	}
	return keyPartLength(c, n)
}

// BuildTableInfo validates a CREATE TABLE and converts it to a TableInfo
// (without an id). db is the database it is created in (the parent's of
// a FOREIGN KEY that names none); its FOREIGN KEYs are checked against
// the table only (the caller checks their parents: CheckFKParent).
func BuildTableInfo(x *ast.CreateTableStmt, db string, dbColl *collate.Collation, env expr.Env) (*model.TableInfo, error) {
	t := &model.TableInfo{Name: x.Table.Name.O, HandleOffset: -1, AutoIncOffset: -1}
	if dbColl == nil {
		dbColl = collate.Default
	}
	tcoll, err := tableOptionsCollation(x.Options, dbColl)
	if err != nil {
		return nil, err
	}
	if tcoll != collate.Default {
		t.Collate = tcoll.Name
	}
	if len(x.Cols) == 0 {
		return nil, errno.New(errno.ErrTableMustHaveCols, "A table must have at least 1 column")
	}
	if len(t.Name) > 64 {
		return nil, errno.New(1103, "Incorrect table name '%s'", t.Name)
	}
	// pkParts is the PRIMARY KEY, from a column option or a constraint;
	// pkTp its CLUSTERED / NONCLUSTERED keyword.
	var pkParts []*ast.IndexPartSpecification
	var pkTp ast.PrimaryKeyType
	setPK := func(parts []*ast.IndexPartSpecification, tp ast.PrimaryKeyType) error {
		if pkParts != nil {
			return errno.New(errno.ErrMultiplePriKey, "Multiple primary key defined")
		}
		pkParts, pkTp = parts, tp
		return nil
	}
	nullable := map[int]bool{} // columns declared NULL explicitly
	names := map[string]bool{}
	var uniqCols []string // columns declared UNIQUE
	colChecks := make([][]CheckDef, len(x.Cols))
	for i, cd := range x.Cols {
		name := cd.Name.Name.O
		if names[strings.ToLower(name)] {
			return nil, errno.New(errno.ErrDupFieldName, "Duplicate column name '%s'", name)
		}
		names[strings.ToLower(name)] = true
		c, o, err := buildColumn(cd, t.Name, int64(i+1), tcoll, env)
		if err != nil {
			return nil, err
		}
		c.Offset = i
		if o.pk {
			if err := setPK([]*ast.IndexPartSpecification{{Column: cd.Name}}, o.pkTp); err != nil {
				return nil, err
			}
		}
		if o.null {
			nullable[i] = true
		}
		if o.unique {
			uniqCols = append(uniqCols, name)
		}
		colChecks[i] = o.checks
		if c.AutoIncrement {
			if t.AutoIncOffset >= 0 {
				return nil, errno.New(errno.ErrWrongAutoKey, "Incorrect table definition; there can be only one auto column and it must be defined as a key")
			}
			t.AutoIncOffset = i
		}
		t.Columns = append(t.Columns, c)
	}
	t.MaxColumnID = int64(len(t.Columns))
	t.Init() // name lookups for the constraints; Init runs again below
	if err := CheckGenerated(t); err != nil {
		return nil, err
	}
	var fks []*ast.Constraint
	for _, con := range x.Constraints {
		switch con.Tp {
		case ast.ConstraintPrimaryKey:
			var tp ast.PrimaryKeyType
			if con.Option != nil {
				tp = con.Option.PrimaryKeyTp
			}
			if err := setPK(con.Keys, tp); err != nil {
				return nil, err
			}
		case ast.ConstraintCheck:
			// After the keys (createChecks).
		case ast.ConstraintForeignKey:
			fks = append(fks, con) // after the PRIMARY KEY and the other indexes, as MySQL
		case ast.ConstraintIndex, ast.ConstraintKey, ast.ConstraintUniq, ast.ConstraintUniqKey, ast.ConstraintUniqIndex:
			unique := con.Tp == ast.ConstraintUniq || con.Tp == ast.ConstraintUniqKey || con.Tp == ast.ConstraintUniqIndex
			if err := addIndexInfo(t, con.Name, con.Keys, unique, con.Option); err != nil {
				return nil, err
			}
		case ast.ConstraintFulltext, ast.ConstraintVector, ast.ConstraintColumnar:
			return nil, errno.NotSupported("FULLTEXT / VECTOR / COLUMNAR indexes")
		default:
			return nil, errno.NotSupported("this table constraint")
		}
	}
	for _, c := range uniqCols {
		spec := []*ast.IndexPartSpecification{{Column: &ast.ColumnName{Name: ast.NewCIStr(c)}}}
		if err := addIndexInfo(t, "", spec, true, nil); err != nil {
			return nil, err
		}
	}
	if pkParts != nil {
		if err := setPrimaryKey(t, pkParts, nullable, Clustering(pkTp, env)); err != nil {
			return nil, err
		}
	}
	for _, con := range fks {
		fk, err := NewFKInfo(t, con, db)
		if err != nil {
			return nil, err
		}
		if _, err := AddFK(t, fk); err != nil {
			return nil, err
		}
	}
	for _, def := range createChecks(x, colChecks) {
		c, err := NewCheck(t, def, false)
		if err != nil {
			return nil, err
		}
		AddCheck(t, c)
	}
	if t.AutoIncOffset >= 0 && !isKeyPrefix(t, t.AutoIncOffset) {
		return nil, errno.New(errno.ErrWrongAutoKey, "Incorrect table definition; there can be only one auto column and it must be defined as a key")
	}
	for _, o := range x.Options {
		switch o.Tp {
		case ast.TableOptionComment:
			t.Comment = o.StrValue
		case ast.TableOptionAffinity:
			level, err := Affinity(o.StrValue)
			if err != nil {
				return nil, err
			}
			t.Affinity = level
		}
	}
	t.Init()
	return t, nil
}

// columnOpts are the options of a column definition that are about the
// table rather than the column.
type columnOpts struct {
	pk     bool               // PRIMARY KEY
	pkTp   ast.PrimaryKeyType // its CLUSTERED / NONCLUSTERED keyword
	unique bool               // UNIQUE
	null   bool               // NULL given explicitly (last of NULL / NOT NULL)
	checks []CheckDef
}

// buildColumn validates a column definition of table and converts it to a
// ColumnInfo with the given id (CREATE TABLE, ADD / CHANGE / MODIFY
// COLUMN).
func buildColumn(cd *ast.ColumnDef, table string, id int64, tcoll *collate.Collation, env expr.Env) (*model.ColumnInfo, columnOpts, error) {
	var o columnOpts
	name := cd.Name.Name.O
	if strings.EqualFold(name, model.HandleColumnName) {
		return nil, o, errno.New(errno.ErrWrongFieldSpec, "Incorrect column name '%s': the name is reserved for the hidden row handle", name)
	}
	if name == "" || len(name) > 64 || strings.HasSuffix(name, " ") {
		return nil, o, errno.New(1166, "Incorrect column name '%s'", name)
	}
	ft, err := types.FromAST(cd.Tp)
	if errors.Is(err, types.ErrBitWidth) {
		return nil, o, errno.New(errno.ErrTooBigDisplayWidth, "Display width out of range for column '%s' (max = 64)", name)
	}
	if err != nil {
		return nil, o, errno.NotSupported(err.Error())
	}
	if err := setColumnCollation(&ft, cd, tcoll); err != nil {
		return nil, o, err
	}
	c := &model.ColumnInfo{ID: id, Name: name, Type: ft}
	var defExpr ast.ExprNode
	var onUpdate bool
	for _, opt := range cd.Options {
		switch opt.Tp {
		case ast.ColumnOptionPrimaryKey:
			o.pk, o.pkTp = true, opt.PrimaryKeyTp
		case ast.ColumnOptionNotNull:
			c.Type.Flag |= mysql.NotNullFlag
			o.null = false
		case ast.ColumnOptionNull:
			c.Type.Flag &^= mysql.NotNullFlag
			o.null = true
		case ast.ColumnOptionAutoIncrement:
			if c.Type.Class() != types.ClassInt && c.Type.Class() != types.ClassFloat {
				return nil, o, errno.New(errno.ErrWrongFieldSpec, "Incorrect column specifier for column '%s'", name)
			}
			c.AutoIncrement = true
			c.Type.Flag |= mysql.AutoIncrementFlag
		case ast.ColumnOptionDefaultValue:
			defExpr = opt.Expr
		case ast.ColumnOptionUniqKey:
			o.unique = true
		case ast.ColumnOptionComment, ast.ColumnOptionCollate /* setColumnCollation */, ast.ColumnOptionColumnFormat, ast.ColumnOptionStorage, ast.ColumnOptionReference, ast.ColumnOptionNoOption:
			// No effect on storage or semantics Strata implements.
		case ast.ColumnOptionOnUpdate:
			if err := setOnUpdate(c, opt.Expr); err != nil {
				return nil, o, err
			}
			onUpdate = true
		case ast.ColumnOptionGenerated:
			if c.Generated, err = buildGenerated(name, table, opt.Expr, opt.Stored); err != nil {
				return nil, o, err
			}
		case ast.ColumnOptionCheck:
			o.checks = append(o.checks, CheckDef{Name: opt.ConstraintName, Expr: opt.Expr, Enforced: opt.Enforced, Column: name})
		default:
			return nil, o, errno.NotSupported("this column option")
		}
	}
	if c.IsGenerated() {
		switch {
		case defExpr != nil:
			return nil, o, UnsupportedOnGenerated("Specified a default value")
		case c.AutoIncrement:
			return nil, o, UnsupportedOnGenerated("AUTO_INCREMENT")
		case onUpdate:
			return nil, o, UnsupportedOnGenerated("ON UPDATE")
		case o.pk && c.IsVirtual():
			return nil, o, errno.New(ErrPrimaryKeyOnVirtual, "Defining a virtual generated column as primary key is not supported.")
		}
	}
	if defExpr != nil {
		if err := setDefault(c, defExpr, env); err != nil {
			return nil, o, err
		}
	}
	return c, o, nil
}

// setPrimaryKey makes parts t's PRIMARY KEY, clustered when clustered
// says so (Clustering): a clustered single integer column is the row
// handle (PKIsHandle), any other clustered key a common handle
// (CommonHandle; a key with a prefix part is stored NONCLUSTERED:
// ClusteredWarning); a NONCLUSTERED key is a unique index named PRIMARY,
// rows keeping a hidden _tidb_rowid handle. Every key column becomes NOT
// NULL (1171 when declared NULL, as MySQL).
func setPrimaryKey(t *model.TableInfo, parts []*ast.IndexPartSpecification, nullable map[int]bool, clustered Clustered) error {
	offs := make([]int, len(parts))
	for i, p := range parts {
		if p.Expr != nil || p.Column == nil {
			return errno.NotSupported("expression indexes")
		}
		off := t.FindColumn(p.Column.Name.O)
		if off < 0 {
			return errno.New(errKeyColumnNotExist, "Key column '%s' doesn't exist in table", p.Column.Name.O)
		}
		c := t.Columns[off]
		if c.IsVirtual() {
			return errno.New(ErrPrimaryKeyOnVirtual, "Defining a virtual generated column as primary key is not supported.")
		}
		if nullable[off] {
			return errno.New(errPrimaryCantHaveNull, "All parts of a PRIMARY KEY must be NOT NULL; if you need NULL in a key, use UNIQUE instead")
		}
		if c.HasDefault && c.DefaultNull {
			return errno.New(errno.ErrInvalidDefault, "Invalid default value for '%s'", c.Name)
		}
		offs[i] = off
	}
	intKey := len(offs) == 1 && t.Columns[offs[0]].Type.Class() == types.ClassInt && parts[0].Length <= 0
	switch {
	case clustered != ClusteredNever && intKey:
		c := t.Columns[offs[0]]
		c.Type.Flag |= mysql.PriKeyFlag | mysql.NotNullFlag
		t.PKIsHandle, t.HandleOffset = true, offs[0]
		return nil
	}
	ix, err := NewIndexInfo(t, "", parts, true, nil)
	if err != nil {
		return err
	}
	for _, off := range offs {
		t.Columns[off].Type.Flag |= mysql.PriKeyFlag | mysql.NotNullFlag
	}
	ix.Name, ix.Primary = "PRIMARY", true
	// A clustered key of any other type keys the rows by its values (a
	// common handle), unless a part is a prefix (ClusteredWarning).
	t.CommonHandle = clustered == ClusteredAlways && !ix.HasPrefix()
	t.MaxIndexID++
	ix.ID = t.MaxIndexID
	// First, as MySQL lists it in SHOW INDEX and SHOW CREATE TABLE.
	t.Indices = append([]*model.IndexInfo{ix}, t.Indices...)
	return nil
}

// isKeyPrefix reports whether column off is the row handle or the first
// column of an index: MySQL's condition for an AUTO_INCREMENT column.
func isKeyPrefix(t *model.TableInfo, off int) bool {
	if t.PKIsHandle && t.HandleOffset == off {
		return true
	}
	for _, ix := range t.Indices {
		if ix.Columns[0].Offset == off {
			return true
		}
	}
	return false
}

// errInvalidOnUpdate is MySQL's ER_INVALID_ON_UPDATE.
const errInvalidOnUpdate uint16 = 1294

// setOnUpdate makes c an ON UPDATE CURRENT_TIMESTAMP column. As in MySQL,
// only a TIMESTAMP or DATETIME column may have it, and the function's
// fractional seconds precision must be the column's (CURRENT_TIMESTAMP(3)
// for a DATETIME(3)); anything else is ERROR 1294.
func setOnUpdate(c *model.ColumnInfo, n ast.ExprNode) error {
	invalid := errno.New(errInvalidOnUpdate, "Invalid ON UPDATE clause for '%s' column", c.Name)
	f, ok := n.(*ast.FuncCallExpr)
	if !ok || (c.Type.Tp != mysql.TypeTimestamp && c.Type.Tp != mysql.TypeDatetime) {
		return invalid
	}
	switch f.FnName.L {
	case "current_timestamp", "now", "localtime", "localtimestamp":
	default:
		return invalid
	}
	fsp := 0
	if len(f.Args) == 1 {
		v, ok := f.Args[0].(ast.ValueExpr)
		if !ok {
			return invalid
		}
		n, err := strconv.Atoi(fmt.Sprint(v.GetValue()))
		if err != nil {
			return invalid
		}
		fsp = n
	} else if len(f.Args) > 1 {
		return invalid
	}
	if fsp != max(c.Type.Decimal, 0) {
		return invalid
	}
	c.OnUpdateNow = true
	return nil
}

func setDefault(c *model.ColumnInfo, n ast.ExprNode, env expr.Env) error {
	invalid := errno.New(errno.ErrInvalidDefault, "Invalid default value for '%s'", c.Name)
	if f, ok := n.(*ast.FuncCallExpr); ok {
		switch f.FnName.L {
		case "current_timestamp", "now", "localtime", "localtimestamp":
			if c.Type.Class() != types.ClassTime || c.Type.Tp == mysql.TypeDate {
				return invalid
			}
			c.HasDefault, c.DefaultNow = true, true
			return nil
		}
	}
	e, err := expr.Compile(n, &expr.Ctx{Env: env})
	if err != nil {
		return invalid
	}
	v, err := e.Eval(nil)
	if err != nil {
		return invalid
	}
	c.HasDefault = true
	if v.IsNull() {
		if c.Type.NotNull() {
			return invalid
		}
		c.DefaultNull = true
		return nil
	}
	if c.AutoIncrement {
		return invalid
	}
	if c.Type.Tp == mysql.TypeJSON {
		return errno.New(errBlobCantHaveDefault, "BLOB, TEXT, GEOMETRY or JSON column '%s' can't have a default value", c.Name)
	}
	d, err := c.Type.Convert(expr.WriteDatum(v, e.Type(), c.Type, expr.TimestampZone(env)))
	if err != nil {
		return invalid
	}
	if types.IsDateOrDatetime(c.Type) { // a zero date the strict sql_mode refuses, as MySQL
		mode := expr.SQLMode(env)
		zeroDate, zeroInDate := types.ZeroParts(d.Bytes())
		if mode.HasStrictMode() && ((zeroDate && mode.HasNoZeroDateMode()) || (zeroInDate && mode.HasNoZeroInDateMode())) {
			return invalid
		}
	}
	if c.Type.Class() == types.ClassFloat {
		c.Default = string(types.AppendFloat(nil, d.Float64(), 64))
	} else if c.Type.Tp == mysql.TypeBit {
		c.Default = string(types.AppendText(nil, d, &c.Type)) // its bytes, read back by Convert
	} else {
		c.Default = string(types.AppendText(nil, d, nil))
	}
	return nil
}
