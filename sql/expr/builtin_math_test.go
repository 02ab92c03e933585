package expr_test

import (
	"testing"

	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/expr"
)

func TestMathFuncs(t *testing.T) {
	evalFnCases(t, []fnCase{
		{"ROUND(2.5)", "3"},
		{"ROUND(-2.5)", "-3"},
		{"ROUND(2.5e0)", "2"}, // doubles: half to even, as MySQL's rint
		{"ROUND(3.5e0)", "4"},
		{"ROUND(1.298, 1)", "1.3"},
		{"ROUND(1.298, 0)", "1"},
		{"ROUND(23.298, -1)", "20"},
		{"ROUND(1.25, 5)", "1.25"},
		{"ROUND(d, 1)", "-12.4"},
		{"ROUND(d)", "-12"},
		{"ROUND(d, i)", "-12.35"},
		{"ROUND(i, -1)", "10"},
		{"ROUND(-15, -1)", "-20"},
		{"ROUND(1234, 2)", "1234"},
		{"ROUND(f)", "2"},
		{"ROUND(f, 1)", "2.5"},
		{"ROUND(1.005e0, 2)", "1"},
		{"ROUND('1.7')", "2"},
		{"ROUND(n)", "NULL"},
		{"ROUND(1.5, n)", "NULL"},
		{"TRUNCATE(1.223, 1)", "1.2"},
		{"TRUNCATE(1.999, 1)", "1.9"},
		{"TRUNCATE(1.999, 0)", "1"},
		{"TRUNCATE(-1.999, 1)", "-1.9"},
		{"TRUNCATE(122, -2)", "100"},
		{"TRUNCATE(d, 1)", "-12.3"},
		{"TRUNCATE(1.999e0, 2)", "1.99"},
		{"TRUNCATE(-1.999e0, 0)", "-1"},
		{"FLOOR(1.23)", "1"},
		{"FLOOR(-1.23)", "-2"},
		{"FLOOR(d)", "-13"},
		{"CEIL(d)", "-12"},
		{"CEILING(1.23)", "2"},
		{"CEIL(5)", "5"},
		{"CEIL(f)", "3"},
		{"FLOOR(-2.5e0)", "-3"},
		{"FLOOR(n)", "NULL"},
		{"MOD(7, 3)", "1"},
		{"POW(2, 10)", "1024"},
		{"POWER(2, -1)", "0.5"},
		{"SQRT(16)", "4"},
		{"SQRT(-1)", "NULL"},
		{"EXP(0)", "1"},
		{"LN(1)", "0"},
		{"LN(0)", "NULL"},
		{"LOG(100) = LN(100)", "1"},
		{"LOG(2, 8)", "3"},
		{"LOG(1, 8)", "NULL"},
		{"LOG2(1024)", "10"},
		{"LOG10(1000)", "3"},
		{"LOG10(-1)", "NULL"},
		{"SIGN(-5)", "-1"},
		{"SIGN(0)", "0"},
		{"SIGN(d)", "-1"},
		{"SIGN(2.5e0)", "1"},
		{"SIGN(n)", "NULL"},
		{"PI()", "3.141592653589793"},
		{"DEGREES(PI())", "180"},
		{"RADIANS(180) = PI()", "1"},
		{"SIN(0)", "0"},
		{"COS(0)", "1"},
		{"TAN(0)", "0"},
		{"ASIN(1) * 2 = PI()", "1"},
		{"ACOS(1)", "0"},
		{"ACOS(2)", "NULL"},
		{"ATAN(1) * 4 = PI()", "1"},
		{"ATAN(1, 1) * 4 = PI()", "1"},
		{"ATAN2(0, -1) = PI()", "1"},
		{"ROUND(COT(1), 6)", "0.642093"},
		{"SIN(n)", "NULL"},
		{"GREATEST(1, 5, 3)", "5"},
		{"LEAST(1, 5, 3)", "1"},
		{"GREATEST(1, 2.5)", "2.5"},
		{"GREATEST(1, 2.5e0)", "2.5"},
		{"LEAST(2, 1.5e0)", "1.5"},
		{"GREATEST('b', 'abc')", "b"},
		{"GREATEST('10', '9')", "9"},
		{"GREATEST(10, '9')", "9"}, // a mix with strings: as strings
		{"GREATEST(1, n)", "NULL"},
		{"LEAST(dd, '2024-01-01')", "2023-12-31"},
		{"LEAST(i, d)", "-12.35"},
		{"CRC32('MySQL')", "3259397556"},
		{"CRC32(n)", "NULL"},
	})
}

func TestMathFuncTypes(t *testing.T) {
	cases := []struct {
		expr        string
		tp          byte
		flen, scale int
	}{
		{"ROUND(d, 1)", mysql.TypeNewDecimal, 8, 1},
		{"ROUND(d)", mysql.TypeNewDecimal, 7, 0},
		{"ROUND(i)", mysql.TypeLonglong, 21, 0},
		{"ROUND(f, 1)", mysql.TypeDouble, 22, -1},
		{"FLOOR(d)", mysql.TypeLonglong, 21, 0},
		{"SQRT(i)", mysql.TypeDouble, 22, -1},
		{"GREATEST(i, d)", mysql.TypeNewDecimal, 8, 2},
		{"GREATEST(i, f)", mysql.TypeDouble, 22, -1},
		{"GREATEST(s, i)", mysql.TypeVarString, 21, 0},
	}
	for _, c := range cases {
		e, err := expr.Compile(parseExpr(t, c.expr), &expr.Ctx{Columns: fnSchema, Env: env{}})
		require.NoError(t, err, c.expr)
		ft := e.Type()
		require.Equal(t, []int{int(c.tp), c.flen, c.scale}, []int{int(ft.Tp), ft.Flen, ft.Decimal}, c.expr)
	}
}
