package types

import (
	"testing"

	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stretchr/testify/require"
)

func TestConvertLenient(t *testing.T) {
	tinyU := FieldType{Tp: mysql.TypeTiny, Flen: 3, Flag: mysql.UnsignedFlag}
	small := FieldType{Tp: mysql.TypeShort, Flen: 6}
	dec := FieldType{Tp: mysql.TypeNewDecimal, Flen: 5, Decimal: 2}
	vc := FieldType{Tp: mysql.TypeVarchar, Flen: 3}
	fl := FieldType{Tp: mysql.TypeFloat, Flen: -1, Decimal: -1}
	for _, tc := range []struct {
		name string
		ft   FieldType
		in   Datum
		want string
		kind ConvErrKind
		warn bool
		ok   bool
	}{
		{"fits", small, NewInt(7), "7", 0, false, true},
		{"int above", small, NewInt(40000), "32767", ConvOutOfRange, true, true},
		{"int below", small, NewInt(-40000), "-32768", ConvOutOfRange, true, true},
		{"unsigned negative", tinyU, NewInt(-1), "0", ConvOutOfRange, true, true},
		{"unsigned above", tinyU, NewString("300"), "255", ConvOutOfRange, true, true},
		{"numeric prefix", small, NewString("12abc"), "12", ConvTruncated, true, true},
		{"no number", small, NewString("abc"), "0", ConvBadValue, true, true},
		{"prefix out of range", small, NewString("99999x"), "32767", ConvTruncated, true, true},
		{"decimal above", dec, NewString("12345.678"), "999.99", ConvOutOfRange, true, true},
		{"decimal below", dec, NewFloat(-1e9), "-999.99", ConvOutOfRange, true, true},
		{"decimal bad", dec, NewString("x"), "0.00", ConvBadValue, true, true},
		{"float above", fl, NewFloat(1e300), "3.4028234663852886e+38", ConvOutOfRange, true, true},
		{"string too long", vc, NewString("abcdef"), "abc", ConvTruncated, true, true},
		{"multibyte too long", vc, NewString("ééééé"), "ééé", ConvTruncated, true, true},
		{"date stays an error", FieldType{Tp: mysql.TypeDate}, NewString("nope"), "", ConvBadValue, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, warn, ok := tc.ft.ConvertLenient(tc.in)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.warn, warn != nil, "warning %v", warn)
			if warn != nil {
				require.Equal(t, tc.kind, warn.Kind)
			}
			if ok {
				require.Equal(t, tc.want, out.String())
			}
		})
	}
}
