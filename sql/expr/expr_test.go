package expr_test

import (
	"testing"
	"time"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	coppb "github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/types"
)

type env struct{}

func (env) CurrentDB() string              { return "db1" }
func (env) User() string                   { return "root@127.0.0.1" }
func (env) ConnectionID() uint64           { return 7 }
func (env) LastInsertID() uint64           { return 42 }
func (env) Now() time.Time                 { return time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC) }
func (env) UserVar(string) types.Datum     { return types.NullDatum }
func (env) Param(int) (types.Datum, bool)  { return types.NullDatum, false }
func (env) StatementDone() <-chan struct{} { return nil }
func (env) SysVar(name string, _ bool) (types.Datum, types.FieldType, error) {
	if name == "autocommit" {
		return types.NewInt(1), types.Int64Type, nil
	}
	return types.NullDatum, types.FieldType{}, errno.New(errno.ErrUnknownSystemVar, "Unknown system variable '%s'", name)
}

var schema = []expr.SchemaColumn{
	{Table: "t", Name: "i", Type: types.FieldType{Tp: mysql.TypeLong}},
	{Table: "t", Name: "s", Type: types.FieldType{Tp: mysql.TypeVarchar, Flen: 10}},
	{Table: "t", Name: "d", Type: types.FieldType{Tp: mysql.TypeNewDecimal, Flen: 8, Decimal: 2}},
	{Table: "t", Name: "n", Type: types.FieldType{Tp: mysql.TypeLong}},
	{Table: "t", Name: "u", Type: types.FieldType{Tp: mysql.TypeLonglong, Flag: mysql.UnsignedFlag}},
}

var row = []types.Datum{types.NewInt(5), types.NewString("abc"), types.NewString("10.50"), types.NullDatum, types.NewUint(1 << 63)}

func parseExpr(t testing.TB, s string) ast.ExprNode {
	stmt, err := parser.New().ParseOneStmt("SELECT "+s+" FROM t", "", "")
	require.NoError(t, err, s)
	return stmt.(*ast.SelectStmt).Fields.Fields[0].Expr
}

func TestEval(t *testing.T) {
	cases := []struct {
		expr string
		want string // Datum.String(); "NULL" for NULL
	}{
		{"i = 5", "1"},
		{"i <> 5", "0"},
		{"i > 4 AND s = 'abc'", "1"},
		{"i < 4 OR s >= 'abd'", "0"},
		{"NOT i", "0"},
		{"n IS NULL", "1"},
		{"n IS NOT NULL", "0"},
		{"n = 1", "NULL"},
		{"n = 1 AND 0", "0"},
		{"n = 1 OR 1", "1"},
		{"n <=> NULL", "1"},
		{"i IN (1, 5)", "1"},
		{"i NOT IN (1, 2)", "1"},
		{"i IN (1, NULL)", "NULL"},
		{"(i, s) IN ((5, 'abc'), (1, 'x'))", "1"},
		{"(i, s) IN ((5, 'x'), (1, 'abc'))", "0"},
		{"(i, n) IN ((5, 1))", "NULL"},
		{"(i, n) IN ((4, 1))", "0"},
		{"(i, s) NOT IN ((1, 'x'))", "1"},
		{"(i, n) NOT IN ((5, 1))", "NULL"},
		{"d > 9", "1"},      // decimal compares numerically, not as text
		{"d > '9.00'", "1"}, // decimal vs string: numeric
		{"s > 'ab'", "1"},   // two strings: bytewise
		{"'10' < '9'", "1"}, // strings bytewise
		{"10 < '9'", "0"},   // number vs string: numeric
		{"u > i", "1"},      // uint64 above int64 range
		{"i + 1", "6"},
		{"i - 10", "-5"},
		{"i * 2", "10"},
		{"i / 2", "2.5000"},
		{"i DIV 2", "2"},
		{"i % 3", "2"},
		{"i / 0", "NULL"},
		{"-i", "-5"},
		{"i BETWEEN 1 AND 5", "1"},
		{"i NOT BETWEEN 1 AND 5", "0"},
		{"s LIKE 'a%'", "1"},
		{"s LIKE '_b_'", "1"},
		{"s LIKE 'b%'", "0"},
		{"s NOT LIKE '%c'", "0"},
		{"CASE WHEN i > 3 THEN 'big' ELSE 'small' END", "big"},
		{"CASE i WHEN 1 THEN 'one' WHEN 5 THEN 'five' END", "five"},
		{"IF(n IS NULL, 'x', 'y')", "x"},
		{"COALESCE(n, i)", "5"},
		{"IFNULL(n, 'z')", "z"},
		{"CONCAT(s, '-', i)", "abc-5"},
		{"UPPER(s)", "ABC"},
		{"LENGTH(s)", "3"},
		{"ABS(-3)", "3"},
		{"POWER(i - 2, 2)", "9"},
		{"POW(2, -1)", "0.5"},
		{"POWER(n, 2)", "NULL"},
		{"DATABASE()", "db1"},
		{"LAST_INSERT_ID()", "42"},
		{"CONNECTION_ID()", "7"},
		{"@@autocommit", "1"},
		{"NOW()", "2024-01-02 03:04:05"},
		{"CAST('12' AS SIGNED) + 1", "13"},
		{"1.5 + 1", "2.5"},
		// DECIMAL is exact with MySQL's result scales.
		{"-5.00 * 2", "-10.00"},
		{"1 / 3", "0.3333"},
		{"d / 3", "3.500000"},
		{"d * d", "110.2500"},
		{"d + 0.005", "10.505"},
		{"d - i", "5.50"},
		{"d % 4", "2.50"},
		{"d DIV 4", "2"},
		{"-d", "-10.50"},
		{"d / 0", "NULL"},
		{"d = 10.5", "1"},
		{"d = '10.5'", "1"},
		{"1.10 = 1.1", "1"},
		{"12345678901234567890.1 > 12345678901234567890", "1"},
		{"0.1 + 0.2 = 0.3", "1"},
		{"d * 1e0", "10.5"}, // with a DOUBLE: double
		{"CAST(1.005 AS DECIMAL(5,2))", "1.01"},
		{"ABS(-5.00)", "5.00"},
		{"ABS(d - 20)", "9.50"},
		{"i IS TRUE", "1"},
	}
	pushed := 0
	for _, c := range cases {
		e, err := expr.Compile(parseExpr(t, c.expr), &expr.Ctx{Columns: schema, Env: env{}})
		require.NoError(t, err, c.expr)
		d, err := e.Eval(row)
		require.NoError(t, err, c.expr)
		require.Equal(t, c.want, d.String(), c.expr)
		// A pushable expression evaluates the same after a round trip
		// through the coprocessor's wire form.
		if e2, ok := roundTrip(t, e, len(row), c.expr); ok {
			d2, err := e2.Eval(row)
			require.NoError(t, err, c.expr)
			require.Equal(t, c.want, d2.String(), c.expr)
			require.Equal(t, e.Type(), e2.Type(), c.expr)
			pushed++
		}
	}
	require.Greater(t, pushed, len(cases)/2)
}

// roundTrip sends e through the coprocessor's wire form and back; ok is
// false when e is not pushable.
func roundTrip(t *testing.T, e expr.Expr, width int, what string) (expr.Expr, bool) {
	p, err := expr.ToPB(e)
	if err != nil {
		require.ErrorIs(t, err, expr.ErrNotPushable, what)
		return nil, false
	}
	wire, err := proto.Marshal(p)
	require.NoError(t, err)
	var back coppb.Expr
	require.NoError(t, proto.Unmarshal(wire, &back))
	e2, err := expr.FromPB(&back, width)
	require.NoError(t, err, what)
	return e2, true
}

// TestPBDurations: a TIME compared as a duration keeps that after a round
// trip (its text does not order 100+ hour values).
func TestPBDurations(t *testing.T) {
	sch := []expr.SchemaColumn{{Table: "t", Name: "tm", Type: types.FieldType{Tp: mysql.TypeDuration}}}
	r := []types.Datum{types.NewString("100:00:00")}
	for _, s := range []string{"tm > '99:00:00'", "tm IN ('-01:00:00', '100:00:00')", "tm BETWEEN '20:00:00' AND '120:00:00'"} {
		e, err := expr.Compile(parseExpr(t, s), &expr.Ctx{Columns: sch, Env: env{}})
		require.NoError(t, err, s)
		p, err := expr.ToPB(e)
		require.NoError(t, err, s)
		e2, err := expr.FromPB(p, 1)
		require.NoError(t, err, s)
		d, err := e2.Eval(r)
		require.NoError(t, err, s)
		require.Equal(t, "1", d.String(), s)
	}
}

func TestFromPBRejects(t *testing.T) {
	col := &coppb.Expr{Tp: coppb.ExprType_ExprColumn, Offset: 1}
	cases := []struct {
		name string
		e    *coppb.Expr
	}{
		{"nil", nil},
		{"offset-outside-row", &coppb.Expr{Tp: coppb.ExprType_ExprColumn, Offset: 5}},
		{"negative-offset", &coppb.Expr{Tp: coppb.ExprType_ExprColumn, Offset: -1}},
		{"compare-one-operand", &coppb.Expr{Tp: coppb.ExprType_ExprCompare, Op: int32(opcode.EQ), Children: []*coppb.Expr{col}}},
		{"compare-bad-op", &coppb.Expr{Tp: coppb.ExprType_ExprCompare, Op: int32(opcode.Plus), Children: []*coppb.Expr{col, col}}},
		{"arith-bad-op", &coppb.Expr{Tp: coppb.ExprType_ExprArith, Op: int32(opcode.EQ), Children: []*coppb.Expr{col, col}}},
		{"case-odd", &coppb.Expr{Tp: coppb.ExprType_ExprCase, Children: []*coppb.Expr{col, col}}},
		{"bad-datum", &coppb.Expr{Tp: coppb.ExprType_ExprConstant, Val: &coppb.Datum{Kind: 9}}},
		{"bad-type", &coppb.Expr{Tp: 99}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := expr.FromPB(c.e, 2)
			require.ErrorIs(t, err, expr.ErrBadPB)
		})
	}
}

func TestCompileErrors(t *testing.T) {
	cases := []struct {
		expr string
		code uint16
	}{
		{"nope", errno.ErrBadField},
		{"t2.i", errno.ErrBadField},
		{"(i, s) IN ((1, 2, 3))", 1241},
		{"@@nosuch", errno.ErrUnknownSystemVar},
		{"(SELECT 1)", errno.ErrNotSupportedYet},
		{"NOSUCHFUNC(1)", errno.ErrNotSupportedYet},
		{"COUNT(*)", 1111},
	}
	for _, c := range cases {
		_, err := expr.Compile(parseExpr(t, c.expr), &expr.Ctx{Columns: schema, Env: env{}})
		require.Error(t, err, c.expr)
		require.Equal(t, c.code, errno.FromError(err).Code, "%s: %v", c.expr, err)
	}
}

func TestArithmeticOverflow(t *testing.T) {
	for _, q := range []string{"9223372036854775807 + i", "POW(10, 400)"} {
		e, err := expr.Compile(parseExpr(t, q), &expr.Ctx{Columns: schema, Env: env{}})
		require.NoError(t, err)
		_, err = e.Eval(row)
		var re *expr.RangeError
		require.ErrorAs(t, err, &re, q)
	}
}

func TestLike(t *testing.T) {
	cases := []struct {
		s, p string
		want bool
	}{
		{"", "", true}, {"", "%", true}, {"a", "", false}, {"abc", "a%c", true}, {"abc", "%%b%", true},
		{"abc", "a_", false}, {"a%c", `a\%c`, true}, {"abc", `a\%c`, false}, {"héllo", "h_llo", true},
	}
	for _, c := range cases {
		require.Equal(t, c.want, expr.Like([]byte(c.s), []byte(c.p), '\\'), "%q LIKE %q", c.s, c.p)
	}
}

func TestDecimalResultType(t *testing.T) {
	cases := []struct {
		expr        string
		tp          byte
		flen, scale int
	}{
		{"d + 1", mysql.TypeNewDecimal, 24, 2}, // literal 1 is BIGINT(21)
		{"d * d", mysql.TypeNewDecimal, 16, 4},
		{"i / 2", mysql.TypeNewDecimal, 5, 4}, // i has no width here
		{"i * 2", mysql.TypeLonglong, 21, 0},
		{"d + 1e0", mysql.TypeDouble, 22, -1},
		{"d + '1'", mysql.TypeDouble, 22, -1},
	}
	for _, c := range cases {
		e, err := expr.Compile(parseExpr(t, c.expr), &expr.Ctx{Columns: schema, Env: env{}})
		require.NoError(t, err, c.expr)
		ft := e.Type()
		require.Equal(t, []int{int(c.tp), c.flen, c.scale}, []int{int(ft.Tp), ft.Flen, ft.Decimal}, c.expr)
	}
}

// BenchmarkDecimalArith measures one exact DECIMAL multiply-add per row:
// the only allocation is the result's text.
func BenchmarkDecimalArith(b *testing.B) {
	e, err := expr.Compile(parseExpr(b, "d * 3 + 0.25"), &expr.Ctx{Columns: schema, Env: env{}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := e.Eval(row); err != nil {
			b.Fatal(err)
		}
	}
}
