package table

import (
	"errors"

	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/types"
)

// ConvError is the MySQL error for a value of column c of tbl, in row
// rowNum (1-based), that err (a *types.ConvError from Convert) says does
// not fit: 1264 out of range, 1406 too long, 1265 truncated, 1366 / 1292
// an incorrect number / date, 3140 invalid JSON. Any other err is
// returned as it is. INSERT, UPDATE and MODIFY COLUMN's row rewrite share
// it.
func ConvError(tbl *model.TableInfo, c *model.ColumnInfo, err error, rowNum int64) error {
	var ce *types.ConvError
	if !errors.As(err, &ce) {
		return err
	}
	switch ce.Kind {
	case types.ConvOutOfRange:
		return errno.New(errno.ErrWarnDataOutOfRange, "Out of range value for column '%s' at row %d", c.Name, rowNum)
	case types.ConvTooLong:
		return errno.New(errno.ErrDataTooLong, "Data too long for column '%s' at row %d", c.Name, rowNum)
	case types.ConvTruncated:
		return errno.New(errno.ErrDataTruncated, "Data truncated for column '%s' at row %d", c.Name, rowNum)
	case types.ConvInvalidJSON:
		var se *types.JSONSyntaxError
		if errors.As(ce.Err, &se) {
			return errno.New(3140, "Invalid JSON text: \"%s\" at position %d in value for column '%s.%s'.", se.Msg, se.Pos, tbl.Name, c.Name)
		}
		return ce.Err
	}
	if c.Type.Class() == types.ClassTime {
		return errno.New(errno.ErrTruncatedWrongValue, "Incorrect %s value: '%s' for column '%s' at row %d", ce.What, ce.Value, c.Name, rowNum)
	}
	return errno.New(errno.ErrTruncatedWrongField, "Incorrect %s value: '%s' for column '%s' at row %d", ce.What, ce.Value, c.Name, rowNum)
}

// changingZone converts v between TIMESTAMP (UTC) and the other type of
// a MODIFY COLUMN in the ALTER's time zone (model.ChangeInfo.TimeZone).
func changingZone(tbl *model.TableInfo, c *model.ColumnInfo, v types.Datum) types.Datum {
	loc, _, ok := expr.ParseTimeZone(c.Changing.TimeZone)
	if !ok {
		return v
	}
	for _, src := range tbl.Columns {
		if src.ID == c.Changing.From {
			return expr.WriteDatum(v, src.Type, c.Type, loc)
		}
	}
	return v
}

// ConvertChanging converts v, a value of the column a MODIFY COLUMN
// changes, for its changing column c (row rowNum, 1-based), as ALTER
// TABLE copies a value in MySQL: types.Convert, or outside strict mode
// (c.Changing.Lenient) types.ConvertLenient with the refusal returned as
// warn (NULL into NOT NULL becomes ImplicitDefault, warning 1265). err is
// MySQL's error naming the column by its final name: 1138 for NULL into
// NOT NULL, 1265 for a string cut short (ALTER reports truncation, not
// 1406), else ConvError's.
func ConvertChanging(tbl *model.TableInfo, c *model.ColumnInfo, v types.Datum, rowNum int64) (out types.Datum, warn, err error) {
	named := *c
	if c.Changing != nil {
		named.Name = c.Changing.Name
	}
	lenient := c.Changing != nil && c.Changing.Lenient
	if v.IsNull() {
		if !c.Type.NotNull() {
			return types.NullDatum, nil, nil
		}
		if d, ok := ImplicitDefault(c); ok && lenient {
			return d, errno.New(errno.ErrDataTruncated, "Data truncated for column '%s' at row %d", named.Name, rowNum), nil
		}
		return v, nil, errno.New(errno.ErrInvalidUseOfNull, "Invalid use of NULL value")
	}
	if c.Changing != nil && c.Changing.TimeZone != "" {
		v = changingZone(tbl, c, v)
	}
	d, cerr := c.Type.Convert(v)
	if cerr == nil {
		return d, nil, nil
	}
	var ce *types.ConvError
	if errors.As(cerr, &ce) && ce.Kind == types.ConvTooLong {
		cerr = &types.ConvError{Kind: types.ConvTruncated, Value: ce.Value, What: ce.What}
	}
	if lenient {
		if d, w, ok := c.Type.ConvertLenient(v); ok {
			if w != nil && w.Kind == types.ConvTooLong {
				w = &types.ConvError{Kind: types.ConvTruncated, Value: w.Value, What: w.What}
			}
			if w != nil {
				return d, ConvError(tbl, &named, w, rowNum), nil
			}
			return d, nil, nil
		}
	}
	return v, nil, ConvError(tbl, &named, cerr, rowNum)
}

// ImplicitDefault is the value MySQL stores for NULL in a NOT NULL column
// outside strict mode: 0 for numbers, ” for strings; ok is false for the
// other types (dates, ENUM, SET, BIT, YEAR), which keep the error.
func ImplicitDefault(c *model.ColumnInfo) (types.Datum, bool) {
	switch c.Type.Tp {
	case mysql.TypeBit, mysql.TypeYear, mysql.TypeDuration, mysql.TypeEnum, mysql.TypeSet:
		return types.NullDatum, false
	}
	var zero types.Datum
	switch c.Type.Class() {
	case types.ClassInt, types.ClassFloat, types.ClassDecimal:
		zero = types.NewInt(0)
	case types.ClassString:
		zero = types.NewString("")
	default:
		return types.NullDatum, false
	}
	d, err := c.Type.Convert(zero)
	return d, err == nil
}
