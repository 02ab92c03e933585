package types_test

import (
	"testing"

	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/types"
)

func TestConvert(t *testing.T) {
	tiny := types.FieldType{Tp: mysql.TypeTiny}
	utiny := types.FieldType{Tp: mysql.TypeTiny, Flag: mysql.UnsignedFlag}
	bigU := types.FieldType{Tp: mysql.TypeLonglong, Flag: mysql.UnsignedFlag}
	dec := types.FieldType{Tp: mysql.TypeNewDecimal, Flen: 5, Decimal: 2}
	vc := types.FieldType{Tp: mysql.TypeVarchar, Flen: 3}
	ch := types.FieldType{Tp: mysql.TypeString, Flen: 3}
	dt := types.FieldType{Tp: mysql.TypeDatetime}
	date := types.FieldType{Tp: mysql.TypeDate}
	dbl := types.FieldType{Tp: mysql.TypeDouble}
	cases := []struct {
		name string
		ft   types.FieldType
		in   types.Datum
		want string
		err  types.ConvErrKind
		fail bool
	}{
		{"tiny ok", tiny, types.NewInt(127), "127", 0, false},
		{"tiny min", tiny, types.NewInt(-128), "-128", 0, false},
		{"tiny over", tiny, types.NewInt(128), "", types.ConvOutOfRange, true},
		{"utiny neg", utiny, types.NewInt(-1), "", types.ConvOutOfRange, true},
		{"utiny 255", utiny, types.NewInt(255), "255", 0, false},
		{"tiny from string", tiny, types.NewString(" 12 "), "12", 0, false},
		{"tiny from float rounds", tiny, types.NewFloat(2.5), "3", 0, false},
		{"tiny from junk", tiny, types.NewString("abc"), "", types.ConvBadValue, true},
		{"bigint unsigned max", bigU, types.NewString("18446744073709551615"), "18446744073709551615", 0, false},
		{"decimal rounds", dec, types.NewString("1.005"), "1.01", 0, false},
		{"decimal pads", dec, types.NewInt(3), "3.00", 0, false},
		{"decimal over", dec, types.NewString("1000"), "", types.ConvOutOfRange, true},
		{"decimal negative zero", dec, types.NewString("-0.001"), "0.00", 0, false},
		{"varchar fits runes", vc, types.NewString("héé"), "héé", 0, false},
		{"varchar too long", vc, types.NewString("abcd"), "", types.ConvTooLong, true},
		{"char trims trailing spaces", ch, types.NewString("ab   "), "ab", 0, false},
		{"varchar from int", vc, types.NewInt(12), "12", 0, false},
		{"datetime", dt, types.NewString("2024-01-02 03:04:05"), "2024-01-02 03:04:05", 0, false},
		{"datetime from date", dt, types.NewString("2024-01-02"), "2024-01-02 00:00:00", 0, false},
		{"date from datetime", date, types.NewString("2024-01-02 10:00:00"), "2024-01-02", 0, false},
		{"bad date", date, types.NewString("2024-13-40"), "", types.ConvBadValue, true},
		{"double from string", dbl, types.NewString("1e3"), "1000", 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.ft.Convert(c.in)
			if c.fail {
				var ce *types.ConvError
				require.ErrorAs(t, err, &ce)
				require.Equal(t, c.err, ce.Kind)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, string(types.AppendText(nil, got, &c.ft)))
		})
	}
}

func TestAppendFloat(t *testing.T) {
	cases := []struct {
		f    float64
		want string
	}{
		{0, "0"}, {1.5, "1.5"}, {1234567, "1234567"}, {0.0001, "0.0001"}, {1e20, "1e20"}, {-2.5e-7, "-2.5e-07"},
	}
	for _, c := range cases {
		require.Equal(t, c.want, string(types.AppendFloat(nil, c.f, 64)))
	}
}

// TestSQLNameIntegerWidths: as MySQL 8.0.19+, integer display widths are
// not shown, but for signed TINYINT(1), which clients read as a boolean.
func TestSQLNameIntegerWidths(t *testing.T) {
	for _, c := range []struct {
		ft   types.FieldType
		want string
	}{
		{types.FieldType{Tp: mysql.TypeTiny, Flen: 1}, "tinyint(1)"},
		{types.FieldType{Tp: mysql.TypeTiny, Flen: 4}, "tinyint"},
		{types.FieldType{Tp: mysql.TypeTiny, Flen: 1, Flag: mysql.UnsignedFlag}, "tinyint unsigned"},
		{types.FieldType{Tp: mysql.TypeShort, Flen: 1}, "smallint"},
		{types.FieldType{Tp: mysql.TypeLong, Flen: 11}, "int"},
		{types.FieldType{Tp: mysql.TypeLonglong, Flen: 20, Flag: mysql.UnsignedFlag}, "bigint unsigned"},
	} {
		require.Equal(t, c.want, c.ft.SQLName(), "%+v", c.ft)
	}
}
