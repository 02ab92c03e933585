package expr_test

import (
	"testing"

	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/types"
)

// fnSchema is the row the builtin function tests evaluate on.
var fnSchema = []expr.SchemaColumn{
	{Table: "t", Name: "s", Type: types.FieldType{Tp: mysql.TypeVarchar, Flen: 20}},
	{Table: "t", Name: "u", Type: types.FieldType{Tp: mysql.TypeVarchar, Flen: 20}},
	{Table: "t", Name: "b", Type: types.FieldType{Tp: mysql.TypeVarchar, Flen: 20, Flag: mysql.BinaryFlag}},
	{Table: "t", Name: "n", Type: types.FieldType{Tp: mysql.TypeLong}},
	{Table: "t", Name: "i", Type: types.FieldType{Tp: mysql.TypeLong}},
	{Table: "t", Name: "dt", Type: types.FieldType{Tp: mysql.TypeDatetime, Flen: 26, Decimal: 6}},
	{Table: "t", Name: "dd", Type: types.FieldType{Tp: mysql.TypeDate, Flen: 10}},
	{Table: "t", Name: "tm", Type: types.FieldType{Tp: mysql.TypeDuration, Flen: 10}},
	{Table: "t", Name: "d", Type: types.FieldType{Tp: mysql.TypeNewDecimal, Flen: 8, Decimal: 2}},
	{Table: "t", Name: "f", Type: types.FieldType{Tp: mysql.TypeDouble, Flen: 22, Decimal: -1}},
}

var fnRow = []types.Datum{
	types.NewString("Hello, World"),
	types.NewString("héllo wörld"),
	types.NewString("h\xc3\xa9llo"),
	types.NullDatum,
	types.NewInt(5),
	types.NewString("2024-03-15 13:45:30.123456"),
	types.NewString("2023-12-31"),
	types.NewString("-100:02:03"),
	types.NewString("-12.35"),
	types.NewFloat(2.5),
}

type fnCase struct {
	expr string
	want string // Datum.String(); "NULL" for NULL
}

func evalFnCases(t *testing.T, cases []fnCase) {
	t.Helper()
	for _, c := range cases {
		e, err := expr.Compile(parseExpr(t, c.expr), &expr.Ctx{Columns: fnSchema, Env: env{}})
		require.NoError(t, err, c.expr)
		d, err := e.Eval(fnRow)
		require.NoError(t, err, c.expr)
		require.Equal(t, c.want, d.String(), c.expr)
	}
}

func TestStringFuncs(t *testing.T) {
	evalFnCases(t, []fnCase{
		{"SUBSTR(s, 1, 1)", "H"},
		{"SUBSTRING(s, 8)", "World"},
		{"SUBSTRING(s FROM 8 FOR 3)", "Wor"},
		{"SUBSTRING(s, -5)", "World"},
		{"SUBSTRING(s, -5, 2)", "Wo"},
		{"SUBSTRING(s, 0)", ""},
		{"SUBSTRING(s, 13)", ""},
		{"SUBSTRING(s, -13)", ""},
		{"SUBSTRING(s, 2, 0)", ""},
		{"SUBSTRING(s, 2, -1)", ""},
		{"SUBSTRING(s, 10, 100)", "rld"},
		{"SUBSTRING(s, 1.5, 2)", "el"},
		{"SUBSTRING(n, 1)", "NULL"},
		{"SUBSTRING(s, n)", "NULL"},
		{"SUBSTRING(s, 1, n)", "NULL"},
		{"SUBSTRING(u, 2, 4)", "éllo"},
		{"SUBSTRING(u, -5)", "wörld"},
		{"SUBSTRING(b, 2, 2)", "\xc3\xa9"}, // binary: bytes
		{"SUBSTRING(12345, 2, 3)", "234"},
		{"MID(s, 3, 2)", "ll"},
		{"LEFT(s, 5)", "Hello"},
		{"LEFT(u, 2)", "hé"},
		{"LEFT(s, 0)", ""},
		{"LEFT(s, 100)", "Hello, World"},
		{"RIGHT(u, 3)", "rld"},
		{"RIGHT(u, 4)", "örld"},
		{"RIGHT(s, -1)", ""},
		{"LEFT(n, 1)", "NULL"},
		{"TRIM('  a b  ')", "a b"},
		{"LTRIM('  a b  ')", "a b  "},
		{"RTRIM('  a b  ')", "  a b"},
		{"TRIM(BOTH 'x' FROM 'xxaxbxx')", "axb"},
		{"TRIM(LEADING 'xy' FROM 'xyxyaxy')", "axy"},
		{"TRIM(TRAILING 'xy' FROM 'xyaxyxy')", "xya"},
		{"TRIM('x' FROM 'xax')", "a"},
		{"TRIM(LEADING FROM '  a  ')", "a  "},
		{"TRIM(BOTH '' FROM ' a ')", " a "},
		{"TRIM(n)", "NULL"},
		{"REPLACE(s, 'o', '0')", "Hell0, W0rld"},
		{"REPLACE(s, '', 'x')", "Hello, World"},
		{"REPLACE(s, 'l', '')", "Heo, Word"},
		{"REPLACE(s, n, 'x')", "NULL"},
		{"LOCATE('o', s)", "5"},
		{"LOCATE('o', s, 6)", "9"},
		{"LOCATE('z', s)", "0"},
		{"LOCATE('', s)", "1"},
		{"LOCATE('', 'abc', 4)", "4"},
		{"LOCATE('', 'abc', 5)", "0"},
		{"LOCATE('o', s, 0)", "0"},
		{"LOCATE('w', u)", "7"},
		{"LOCATE('ö', u, 3)", "8"},
		{"POSITION('W' IN s)", "8"},
		{"INSTR(s, 'World')", "8"},
		{"INSTR(u, 'l')", "3"},
		{"INSTR(s, n)", "NULL"},
		{"LPAD('hi', 5, 'ab')", "abahi"},
		{"RPAD('hi', 5, 'ab')", "hiaba"},
		{"LPAD('hello', 3, 'x')", "hel"},
		{"RPAD('hé', 4, 'ö')", "héöö"},
		{"LPAD('hi', 5, '')", "NULL"},
		{"LPAD('hi', -1, 'x')", "NULL"},
		{"LPAD('hi', 0, 'x')", ""},
		{"RPAD(n, 5, 'x')", "NULL"},
		{"REPEAT('ab', 3)", "ababab"},
		{"REPEAT('ab', 0)", ""},
		{"REPEAT('ab', -1)", ""},
		{"REPEAT(n, 2)", "NULL"},
		{"REVERSE('abc')", "cba"},
		{"REVERSE(u)", "dlröw olléh"},
		{"REVERSE(n)", "NULL"},
		{"CONCAT_WS(',', 'a', n, 'b', 1)", "a,b,1"},
		{"CONCAT_WS(n, 'a', 'b')", "NULL"},
		{"CONCAT_WS('-', n)", ""},
		{"ASCII('A')", "65"},
		{"ASCII('')", "0"},
		{"ASCII(2)", "50"},
		{"ASCII(n)", "NULL"},
		{"SPACE(3)", "   "},
		{"SPACE(-1)", ""},
		{"CONCAT('[', SPACE(0), ']')", "[]"},
		{"STRCMP('a', 'b')", "-1"},
		{"STRCMP('b', 'a')", "1"},
		{"STRCMP('a', 'a')", "0"},
		{"STRCMP('a', n)", "NULL"},
		{"ELT(2, 'a', 'b', 'c')", "b"},
		{"ELT(0, 'a', 'b')", "NULL"},
		{"ELT(4, 'a', 'b')", "NULL"},
		{"ELT(n, 'a')", "NULL"},
		{"FIELD('b', 'a', 'b', 'c')", "2"},
		{"FIELD('d', 'a', 'b')", "0"},
		{"FIELD(n, 'a', n)", "0"},
		{"FIELD(2, 1, 2.0, 3)", "2"},
		{"FIELD('2', 1, '2.0', 2)", "2"}, // mixed: as numbers
		{"FIELD('2', '1', '2.0', '2')", "3"},
		{"FIND_IN_SET('b', 'a,b,c')", "2"},
		{"FIND_IN_SET('d', 'a,b,c')", "0"},
		{"FIND_IN_SET('', 'a,,c')", "2"},
		{"FIND_IN_SET('a,b', 'a,b')", "0"},
		{"FIND_IN_SET(n, 'a')", "NULL"},
		{"INSERT('Quadratic', 3, 4, 'What')", "QuWhattic"},
		{"INSERT('Quadratic', -1, 4, 'What')", "Quadratic"},
		{"INSERT('Quadratic', 3, 100, 'What')", "QuWhat"},
		{"INSERT('héllo', 2, 1, 'e')", "hello"},
		{"INSERT('abc', 2, n, 'x')", "NULL"},
		{"CHAR_LENGTH(SUBSTRING(u, 1, 3))", "3"},
	})
}

func TestBuiltinParamCount(t *testing.T) {
	for _, s := range []string{"MID(s, 1)", "LEFT(s)", "REPLACE(s, 'a')",
		"LOCATE('a')", "LPAD('a', 1)", "CONCAT_WS(',')", "ELT(1)", "FIELD('a')", "INSERT('a', 1, 2)",
		"YEAR()", "YEAR(dt, 1)", "WEEK()"} {
		_, err := expr.Compile(parseExpr(t, s), &expr.Ctx{Columns: fnSchema, Env: env{}})
		require.Error(t, err, s)
		require.Equal(t, uint16(1582), errno.FromError(err).Code, "%s: %v", s, err)
	}
}

func TestStringFuncTypes(t *testing.T) {
	cases := []struct {
		expr string
		tp   byte
		flen int
	}{
		{"SUBSTR(s, 1, 1)", mysql.TypeVarString, 20},
		{"LEFT(s, 2)", mysql.TypeVarString, 20},
		{"LOCATE('a', s)", mysql.TypeLonglong, 21},
		{"LPAD(s, 30, ' ')", mysql.TypeVarString, 30},
	}
	for _, c := range cases {
		e, err := expr.Compile(parseExpr(t, c.expr), &expr.Ctx{Columns: fnSchema, Env: env{}})
		require.NoError(t, err, c.expr)
		require.Equal(t, []int{int(c.tp), c.flen}, []int{int(e.Type().Tp), e.Type().Flen}, c.expr)
	}
}

// benchEval measures one evaluation of e per row on fnRow.
func benchEval(b *testing.B, e string) {
	x, err := expr.Compile(parseExpr(b, e), &expr.Ctx{Columns: fnSchema, Env: env{}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := x.Eval(fnRow); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSubstr: CH-benCHmark's substr(c_state, 1, 1) per row returns
// a slice of the argument: the one allocation is funcExpr's argument buffer.
func BenchmarkSubstr(b *testing.B) { benchEval(b, "SUBSTR(u, 2, 3)") }
