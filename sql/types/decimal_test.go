package types_test

import (
	"testing"

	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/types"
	"github.com/stretchr/testify/require"
)

func dec(t *testing.T, s string) types.Decimal {
	t.Helper()
	d, ok := types.ParseDecimal([]byte(s))
	require.True(t, ok, s)
	return d
}

func TestParseFormatDecimal(t *testing.T) {
	cases := []struct{ in, want string }{
		{"0", "0"}, {"-0.00", "0.00"}, {"1.10", "1.10"}, {"-5.00", "-5.00"}, {"+.5", "0.5"},
		{"  12.340 ", "12.340"}, {"0.001", "0.001"}, {"-0.001", "-0.001"}, {"1e3", "1000"},
		{"1.5e-2", "0.015"}, {"12345678901234567890.123456789", "12345678901234567890.123456789"},
		{"-99999999999999999999999999999999999999999999999999999999999999999", "-99999999999999999999999999999999999999999999999999999999999999999"},
		{"9223372036854775807", "9223372036854775807"}, {"-9223372036854775808", "-9223372036854775808"},
		{"9223372036854775808", "9223372036854775808"},
	}
	for _, c := range cases {
		require.Equal(t, c.want, dec(t, c.in).String(), c.in)
	}
	for _, bad := range []string{"", "-", ".", "abc", "1.2.3", "12abc", "1e", "1e999"} {
		_, ok := types.ParseDecimal([]byte(bad))
		require.False(t, ok, bad)
	}
}

func TestDecimalArithmetic(t *testing.T) {
	big := "123456789012345678901234567890.12"
	cases := []struct {
		a, op, b, want string
	}{
		{"-5.00", "*", "2", "-10.00"},
		{"1.10", "+", "1.1", "2.20"},
		{"1", "-", "0.001", "0.999"},
		{"0.1", "*", "0.2", "0.02"},
		{"1", "/", "3", "0.3333"},
		{"2", "/", "3", "0.6667"},
		{"-2", "/", "3", "-0.6667"},
		{"1.00", "/", "3", "0.333333"},
		{"10", "/", "4", "2.5000"},
		{"1", "/", "0", "NULL"},
		{"7.5", "%", "2", "1.5"},
		{"-7.5", "%", "2", "-1.5"},
		{"7", "%", "0", "NULL"},
		{"7.9", "DIV", "2", "3"},
		{"-7.9", "DIV", "2", "-3"},
		{"9223372036854775807", "+", "1", "9223372036854775808"},
		{"-9223372036854775808", "-", "1", "-9223372036854775809"},
		{"9223372036854775807", "*", "10.5", "96845406386975145973.5"},
		{big, "+", big, "246913578024691357802469135780.24"},
		{big, "-", big, "0.00"},
		{big, "*", "2", "246913578024691357802469135780.24"},
		{big, "/", "2", "61728394506172839450617283945.060000"},
		{big, "/", "-7", "-17636684144620811271604938270.017143"},
		{"0.000000000000000000000000000001", "*", "0.1", "0.000000000000000000000000000000"},
	}
	for _, c := range cases {
		x, y := dec(t, c.a), dec(t, c.b)
		var r types.Decimal
		ok := true
		switch c.op {
		case "+":
			r = x.Add(y)
		case "-":
			r = x.Sub(y)
		case "*":
			r = x.Mul(y)
		case "/":
			r, ok = x.Div(y, types.DivPrecisionIncr)
		case "%":
			r, ok = x.Mod(y)
		case "DIV":
			r, ok = x.IntDiv(y)
		}
		got := "NULL"
		if ok {
			got = r.String()
		}
		require.Equal(t, c.want, got, "%s %s %s", c.a, c.op, c.b)
	}
}

func TestDecimalCompareRound(t *testing.T) {
	cmps := []struct {
		a, b string
		want int
	}{
		{"1.10", "1.1", 0}, {"1.1", "1.10", 0}, {"-0.5", "0", -1}, {"2", "1.999", 1},
		{"12345678901234567890.1", "12345678901234567890.10", 0},
		{"12345678901234567891", "12345678901234567890.99", 1},
	}
	for _, c := range cmps {
		require.Equal(t, c.want, dec(t, c.a).Cmp(dec(t, c.b)), "%s vs %s", c.a, c.b)
	}
	rounds := []struct {
		in    string
		scale int
		want  string
	}{
		{"1.005", 2, "1.01"}, {"1.004", 2, "1.00"}, {"-1.005", 2, "-1.01"}, {"-0.001", 2, "0.00"},
		{"2.5", 0, "3"}, {"-2.5", 0, "-3"}, {"3", 2, "3.00"}, {"0.4", 0, "0"},
		{"123456789012345678901234567890.125", 2, "123456789012345678901234567890.13"},
		{"0.0000000000000000000000000004", 5, "0.00000"},
	}
	for _, c := range rounds {
		require.Equal(t, c.want, dec(t, c.in).Round(c.scale).String(), "%s to %d", c.in, c.scale)
	}
}

func TestDecimalResultTypes(t *testing.T) {
	d102 := types.DecimalType(10, 2)
	d53 := types.DecimalType(5, 3)
	i := types.Int64Type
	cases := []struct {
		op         byte
		l, r       types.FieldType
		prec, scal int
	}{
		{'+', d102, d53, 12, 3},
		{'-', d102, i, 24, 2}, // Int64Type is 21 wide
		{'*', d102, d53, 15, 5},
		{'*', d102, i, 31, 2},
		{'/', d102, d53, 17, 6},
		{'/', i, i, 25, 4},
		{'%', d102, d53, 11, 3},
	}
	for _, c := range cases {
		ft := types.DecimalArithType(c.op, c.l, c.r)
		require.Equal(t, mysql.TypeNewDecimal, ft.Tp)
		require.Equal(t, [2]int{c.prec, c.scal}, [2]int{ft.Flen, ft.Decimal}, "%c %+v %+v", c.op, c.l, c.r)
	}
}

func TestToDecimal(t *testing.T) {
	cases := []struct {
		in   types.Datum
		want string
		ok   bool
	}{
		{types.NewInt(-7), "-7", true},
		{types.NewUint(18446744073709551615), "18446744073709551615", true},
		{types.NewFloat(0.1), "0.1", true},
		{types.NewFloat(1e20), "100000000000000000000", true},
		{types.NewString("3.14"), "3.14", true},
		{types.NewString("x"), "", false},
		{types.NullDatum, "", false},
	}
	for _, c := range cases {
		d, ok := types.ToDecimal(c.in)
		require.Equal(t, c.ok, ok, c.in.String())
		if ok {
			require.Equal(t, c.want, d.String(), c.in.String())
		}
	}
}

func TestDecimalSmallNoAlloc(t *testing.T) {
	x, y := dec(t, "12345.67"), dec(t, "-3.5")
	buf := make([]byte, 0, 64)
	n := testing.AllocsPerRun(100, func() {
		r, _ := x.Mul(y).Add(x).Sub(y).Div(y, 4)
		_ = r.Cmp(x)
		buf = r.Round(2).Append(buf[:0])
		_, _ = types.ParseDecimal([]byte("-98765.4321"))
	})
	require.Zero(t, n)
}
