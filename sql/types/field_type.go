package types

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pingcap/tidb/pkg/parser/charset"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	ptypes "github.com/pingcap/tidb/pkg/parser/types"
)

// Class groups types by how their values compare and compute.
type Class uint8

// Type classes.
const (
	ClassNull Class = iota
	ClassInt
	ClassFloat
	ClassDecimal
	ClassString
	ClassTime
)

// Collation ids sent in column definitions.
const (
	CollationBinary  uint16 = 63
	CollationUTF8MB4 uint16 = 46 // utf8mb4_bin: Strata compares strings bytewise
)

// FieldType is a column's (or an expression's) type.
type FieldType struct {
	Tp byte `json:"tp"` // mysql.TypeXxx, as sent on the wire
	// Coll is a text type's collation (its MySQL id, sql/collate); 0 is
	// utf8mb4_bin, the default, so that types from before collations and
	// every utf8mb4_bin column keep the bytewise path. Binary strings
	// (the Binary flag) are the binary collation whatever Coll says. (It
	// sits in Tp's padding: the type stays 56 bytes.)
	Coll    uint16 `json:"coll,omitempty"`
	Flen    int    `json:"flen"`    // display width / max chars; -1 unknown
	Decimal int    `json:"decimal"` // scale for DECIMAL, fsp for DATETIME
	Flag    uint   `json:"flag"`    // mysql.XxxFlag bits (NotNull, Unsigned, PriKey, AutoIncrement, Binary)
	// Elems are the members of an ENUM or SET, in definition order.
	Elems []string `json:"elems,omitempty"`
}

// Unsigned reports whether the type is an unsigned integer.
func (ft FieldType) Unsigned() bool { return ft.Flag&mysql.UnsignedFlag != 0 }

// NotNull reports whether NULL is rejected.
func (ft FieldType) NotNull() bool { return ft.Flag&mysql.NotNullFlag != 0 }

// Binary reports whether a string type holds bytes rather than text.
func (ft FieldType) Binary() bool { return ft.Flag&mysql.BinaryFlag != 0 }

// Class returns the type's class.
func (ft FieldType) Class() Class {
	switch ft.Tp {
	case mysql.TypeTiny, mysql.TypeShort, mysql.TypeInt24, mysql.TypeLong, mysql.TypeLonglong, mysql.TypeYear, mysql.TypeBit:
		return ClassInt
	case mysql.TypeFloat, mysql.TypeDouble:
		return ClassFloat
	case mysql.TypeNewDecimal:
		return ClassDecimal
	case mysql.TypeDate, mysql.TypeDatetime, mysql.TypeTimestamp, mysql.TypeNewDate, mysql.TypeDuration:
		return ClassTime
	case mysql.TypeNull:
		return ClassNull
	}
	return ClassString
}

// Numeric reports whether values of the type compare as numbers.
func (ft FieldType) Numeric() bool {
	c := ft.Class()
	return c == ClassInt || c == ClassFloat || c == ClassDecimal
}

// Charset returns the collation id for column definitions (JSON is sent
// as binary, as MySQL sends it).
func (ft FieldType) Charset() uint16 { return ft.Collation() }

// Collation is the id of the collation values of the type compare under:
// Coll for text, utf8mb4_bin when unset, binary for binary strings,
// numbers, temporals and JSON.
func (ft FieldType) Collation() uint16 {
	if ft.Class() == ClassString && !ft.Binary() && ft.Tp != mysql.TypeJSON && ft.Tp != mysql.TypeNull {
		if ft.Coll != 0 {
			return ft.Coll
		}
		return CollationUTF8MB4
	}
	return CollationBinary
}

// ColumnLength is the column length sent in column definitions.
func (ft FieldType) ColumnLength() uint32 {
	if ft.Flen < 0 {
		return 0
	}
	if ft.Tp == mysql.TypeEnum || ft.Tp == mysql.TypeSet {
		return uint32(ft.enumLen() * 4)
	}
	if ft.Class() == ClassDecimal {
		// MySQL counts the point and the sign: DECIMAL(10,6) is 12 wide.
		n := ft.Flen
		if ft.Decimal > 0 {
			n++
		}
		if !ft.Unsigned() {
			n++
		}
		return uint32(n)
	}
	if ft.Class() == ClassString && !ft.Binary() && ft.Tp != mysql.TypeJSON {
		n := uint64(ft.Flen) * 4
		if n > 0xFFFFFFFF {
			n = 0xFFFFFFFF
		}
		return uint32(n)
	}
	return uint32(ft.Flen)
}

// WireDecimals is the "decimals" byte of a column definition.
func (ft FieldType) WireDecimals() byte {
	switch ft.Class() {
	case ClassFloat:
		if ft.Decimal > 0 {
			return byte(ft.Decimal)
		}
		return 0x1f
	case ClassDecimal, ClassTime:
		return byte(ft.Decimal)
	case ClassString:
		if ft.Tp == mysql.TypeNull {
			return 0
		}
		return 0x1f
	}
	return 0
}

// WireFlags is the "flags" field of a column definition.
func (ft FieldType) WireFlags() uint16 {
	f := ft.Flag
	if ft.Numeric() {
		f |= mysql.NumFlag
	}
	switch ft.Tp {
	case mysql.TypeBlob, mysql.TypeTinyBlob, mysql.TypeMediumBlob, mysql.TypeLongBlob:
		f |= mysql.BlobFlag
	case mysql.TypeJSON:
		f |= mysql.BlobFlag | mysql.BinaryFlag
	case mysql.TypeBit:
		f = f&^mysql.NumFlag | mysql.UnsignedFlag
	case mysql.TypeYear:
		f |= mysql.UnsignedFlag | mysql.ZerofillFlag
	case mysql.TypeEnum:
		f |= mysql.EnumFlag
	case mysql.TypeSet:
		f |= mysql.SetFlag
	}
	return uint16(f)
}

// Common expression result types.
var (
	Int64Type   = FieldType{Tp: mysql.TypeLonglong, Flen: 21, Flag: mysql.BinaryFlag}
	Uint64Type  = FieldType{Tp: mysql.TypeLonglong, Flen: 20, Flag: mysql.BinaryFlag | mysql.UnsignedFlag}
	DoubleType  = FieldType{Tp: mysql.TypeDouble, Flen: 22, Decimal: -1, Flag: mysql.BinaryFlag}
	VarcharType = FieldType{Tp: mysql.TypeVarString, Flen: 255}
	NullType    = FieldType{Tp: mysql.TypeNull, Flen: 0, Flag: mysql.BinaryFlag}
	// JSONType is a JSON column's and a JSON function's type.
	JSONType = FieldType{Tp: mysql.TypeJSON, Flen: 4294967295}
)

// DecimalType returns an expression DECIMAL type of the given width.
func DecimalType(flen, scale int) FieldType {
	return FieldType{Tp: mysql.TypeNewDecimal, Flen: flen, Decimal: scale, Flag: mysql.BinaryFlag}
}

// ErrUnsupportedType is returned by FromAST for a column type Strata lacks;
// its text names the type.
type ErrUnsupportedType struct{ Name string }

func (e ErrUnsupportedType) Error() string { return "column type " + e.Name }

// ErrBitWidth is returned by FromAST for BIT(n) with n > 64 (MySQL's 1439).
var ErrBitWidth = errors.New("types: BIT width above 64")

// enumLen is the longest member of an ENUM, or all members joined for a SET.
func (ft FieldType) enumLen() int {
	n := 0
	for _, e := range ft.Elems {
		if ft.Tp == mysql.TypeSet {
			n += utf8.RuneCountInString(e) + 1
		} else {
			n = max(n, utf8.RuneCountInString(e))
		}
	}
	if ft.Tp == mysql.TypeSet && n > 0 {
		n--
	}
	return n
}

// FromAST converts a parsed column type (CREATE TABLE) into a FieldType with
// MySQL's default widths filled in.
func FromAST(pt *ptypes.FieldType) (FieldType, error) {
	ft := FieldType{Tp: pt.GetType(), Flen: pt.GetFlen(), Decimal: pt.GetDecimal(), Flag: pt.GetFlag() & (mysql.UnsignedFlag | mysql.BinaryFlag)}
	unsigned := ft.Unsigned()
	def := func(v int) {
		if ft.Flen == ptypes.UnspecifiedLength || ft.Flen <= 0 {
			ft.Flen = v
		}
	}
	switch ft.Tp {
	case mysql.TypeTiny:
		def(map[bool]int{false: 4, true: 3}[unsigned])
	case mysql.TypeShort:
		def(map[bool]int{false: 6, true: 5}[unsigned])
	case mysql.TypeInt24:
		def(map[bool]int{false: 9, true: 8}[unsigned])
	case mysql.TypeLong:
		def(map[bool]int{false: 11, true: 10}[unsigned])
	case mysql.TypeLonglong:
		def(20)
	case mysql.TypeDouble:
		ft.Flen, ft.Decimal = 22, -1
		if pt.GetDecimal() > 0 {
			ft.Decimal = pt.GetDecimal()
		}
	case mysql.TypeFloat:
		if ft.Flen > 24 { // FLOAT(p) with p > 24 is DOUBLE
			ft.Tp = mysql.TypeDouble
			ft.Flen = 22
		} else {
			ft.Flen = 12
		}
		if ft.Decimal <= 0 {
			ft.Decimal = -1
		}
	case mysql.TypeNewDecimal:
		def(10)
		if ft.Decimal == ptypes.UnspecifiedLength || ft.Decimal < 0 {
			ft.Decimal = 0
		}
		if ft.Flen > 65 || ft.Decimal > 30 || ft.Decimal > ft.Flen {
			return ft, ErrUnsupportedType{Name: "DECIMAL(" + strconv.Itoa(ft.Flen) + "," + strconv.Itoa(ft.Decimal) + ")"}
		}
	case mysql.TypeVarchar, mysql.TypeVarString:
		ft.Tp = mysql.TypeVarchar
		if ft.Flen < 0 {
			return ft, ErrUnsupportedType{Name: "VARCHAR without a length"}
		}
	case mysql.TypeString:
		def(1)
	case mysql.TypeBlob, mysql.TypeTinyBlob, mysql.TypeMediumBlob, mysql.TypeLongBlob:
		switch ft.Tp {
		case mysql.TypeTinyBlob:
			ft.Flen = 255
		case mysql.TypeBlob:
			ft.Flen = 65535
		case mysql.TypeMediumBlob:
			ft.Flen = 16777215
		default:
			ft.Flen = 4294967295
		}
	case mysql.TypeDate:
		ft.Flen, ft.Decimal = 10, 0
	case mysql.TypeJSON:
		return JSONType, nil
	case mysql.TypeDuration:
		fsp := max(pt.GetDecimal(), 0)
		if fsp > 6 {
			return ft, ErrUnsupportedType{Name: "fractional seconds precision above 6"}
		}
		ft.Decimal, ft.Flen = fsp, 10
		if fsp > 0 {
			ft.Flen += 1 + fsp
		}
	case mysql.TypeBit:
		def(1)
		if ft.Flen > 64 {
			return ft, ErrBitWidth
		}
		ft.Flag |= mysql.UnsignedFlag
	case mysql.TypeYear:
		ft.Flen, ft.Decimal = 4, 0
		ft.Flag |= mysql.UnsignedFlag
	case mysql.TypeEnum, mysql.TypeSet:
		ft.Flen = -1
		if len(pt.GetElems()) == 0 {
			return ft, ErrUnsupportedType{Name: "ENUM or SET without members"}
		}
		if ft.Tp == mysql.TypeSet && len(pt.GetElems()) > 64 {
			return ft, ErrUnsupportedType{Name: "SET with more than 64 members"}
		}
		ft.Elems = append([]string(nil), pt.GetElems()...)
		seen := map[string]bool{}
		for _, e := range ft.Elems {
			k := strings.ToLower(strings.TrimRight(e, " "))
			if seen[k] || (ft.Tp == mysql.TypeSet && strings.Contains(e, ",")) {
				return ft, ErrUnsupportedType{Name: "ENUM or SET with duplicate members or commas"}
			}
			seen[k] = true
		}
		ft.Flen = ft.enumLen()
	case mysql.TypeDatetime, mysql.TypeTimestamp:
		fsp := pt.GetDecimal()
		if fsp < 0 {
			fsp = 0
		}
		if fsp > 6 {
			return ft, ErrUnsupportedType{Name: "fractional seconds precision above 6"}
		}
		ft.Decimal, ft.Flen = fsp, 19
		if fsp > 0 {
			ft.Flen += 1 + fsp
		}
	default:
		return ft, ErrUnsupportedType{Name: strings.ToUpper(ptypes.TypeToStr(pt.GetType(), pt.GetCharset()))}
	}
	if ft.Class() == ClassString && pt.GetCharset() == charset.CharsetBin {
		ft.Flag |= mysql.BinaryFlag
	}
	if ft.Class() != ClassString {
		ft.Flag |= mysql.BinaryFlag
	}
	return ft, nil
}

// SQLName renders the type as SHOW CREATE TABLE / DESCRIBE would.
func (ft FieldType) SQLName() string {
	var s string
	switch ft.Tp {
	case mysql.TypeTiny:
		s = "tinyint"
		if ft.Flen == 1 && !ft.Unsigned() { // MySQL 8.0.19+ drops display widths but signed TINYINT(1)'s (BOOL)
			s = "tinyint(1)"
		}
	case mysql.TypeShort:
		s = "smallint"
	case mysql.TypeInt24:
		s = "mediumint"
	case mysql.TypeLong:
		s = "int"
	case mysql.TypeLonglong:
		s = "bigint"
	case mysql.TypeFloat:
		s = "float"
	case mysql.TypeDouble:
		s = "double"
	case mysql.TypeNewDecimal:
		s = "decimal(" + strconv.Itoa(ft.Flen) + "," + strconv.Itoa(ft.Decimal) + ")"
	case mysql.TypeVarchar, mysql.TypeVarString:
		if ft.Binary() {
			s = "varbinary(" + strconv.Itoa(ft.Flen) + ")"
		} else {
			s = "varchar(" + strconv.Itoa(ft.Flen) + ")"
		}
	case mysql.TypeString:
		if ft.Binary() {
			s = "binary(" + strconv.Itoa(ft.Flen) + ")"
		} else {
			s = "char(" + strconv.Itoa(ft.Flen) + ")"
		}
	case mysql.TypeBlob, mysql.TypeTinyBlob, mysql.TypeMediumBlob, mysql.TypeLongBlob:
		prefix := map[byte]string{mysql.TypeTinyBlob: "tiny", mysql.TypeBlob: "", mysql.TypeMediumBlob: "medium", mysql.TypeLongBlob: "long"}[ft.Tp]
		if ft.Binary() {
			s = prefix + "blob"
		} else {
			s = prefix + "text"
		}
	case mysql.TypeDate:
		s = "date"
	case mysql.TypeJSON:
		return "json"
	case mysql.TypeDuration:
		s = "time"
		if ft.Decimal > 0 {
			s += "(" + strconv.Itoa(ft.Decimal) + ")"
		}
	case mysql.TypeBit:
		return "bit(" + strconv.Itoa(ft.Flen) + ")"
	case mysql.TypeYear:
		return "year"
	case mysql.TypeEnum, mysql.TypeSet:
		s = map[bool]string{true: "enum", false: "set"}[ft.Tp == mysql.TypeEnum] + "("
		for i, e := range ft.Elems {
			if i > 0 {
				s += ","
			}
			s += "'" + strings.ReplaceAll(e, "'", "''") + "'"
		}
		return s + ")"
	case mysql.TypeDatetime, mysql.TypeTimestamp:
		s = map[bool]string{true: "timestamp", false: "datetime"}[ft.Tp == mysql.TypeTimestamp]
		if ft.Decimal > 0 {
			s += "(" + strconv.Itoa(ft.Decimal) + ")"
		}
	default:
		s = "unknown"
	}
	if ft.Unsigned() {
		s += " unsigned"
	}
	return s
}
