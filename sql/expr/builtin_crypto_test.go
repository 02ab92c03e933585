package expr_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/types"
)

func TestCryptoFuncs(t *testing.T) {
	evalFnCases(t, []fnCase{
		{"MD5('abc')", "900150983cd24fb0d6963f7d28e17f72"},
		{"MD5(123)", "202cb962ac59075b964b07152d234b70"},
		{"MD5(n)", "NULL"},
		{"SHA1('abc')", "a9993e364706816aba3e25717850c26c9cd0d89d"},
		{"SHA('abc')", "a9993e364706816aba3e25717850c26c9cd0d89d"},
		{"SHA2('abc', 224)", "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7"},
		{"SHA2('abc', 256)", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{"SHA2('abc', 0)", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{"SHA2('abc', 384)", "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7"},
		{"SHA2('abc', 512)", "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"},
		{"SHA2('abc', 1)", "NULL"},
		{"SHA2('abc', n)", "NULL"},
		{"SHA2(n, 256)", "NULL"},
		{"UNHEX('4D7953514C')", "MySQL"},
		{"UNHEX('4d7953514c')", "MySQL"},
		{"HEX(UNHEX('F'))", "0F"},
		{"HEX(UNHEX(123))", "0123"},
		{"UNHEX('GG')", "NULL"},
		{"UNHEX('')", ""},
		{"UNHEX(n)", "NULL"},
		{"TO_BASE64('abc')", "YWJj"},
		{"TO_BASE64('')", ""},
		{"TO_BASE64(REPEAT('a', 60))", "YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFh\nYWFh"},
		{"FROM_BASE64('YWJj')", "abc"},
		{"FROM_BASE64(TO_BASE64(REPEAT('a', 60))) = REPEAT('a', 60)", "1"},
		{"FROM_BASE64('YW Jj')", "abc"},
		{"FROM_BASE64('!!')", "NULL"},
		{"FROM_BASE64(n)", "NULL"},
		{"CHAR_LENGTH(UUID())", "36"},
		{"SUBSTRING(UUID(), 15, 1)", "1"},
		{"UUID() = UUID()", "0"},
		// MySQL 8.0's documented RAND(3) and RAND(20) values.
		{"RAND(3)", "0.9057697559760601"},
		{"RAND(20)", "0.15888261251047497"},
		{"RAND(i) = RAND(i)", "1"},
		{"RAND() >= 0 AND RAND() < 1", "1"},
		// FORMAT rounds exact numbers half up and DOUBLEs as ROUND does
		// (to even: MySQL's rint).
		{"FORMAT(12332.123456, 4)", "12,332.1235"},
		{"FORMAT(12332.1, 4)", "12,332.1000"},
		{"FORMAT(12332.2, 0)", "12,332"},
		{"FORMAT(-1234567.891, 2)", "-1,234,567.89"},
		{"FORMAT(123, 2)", "123.00"},
		{"FORMAT(1234, -1)", "1,234"},
		{"FORMAT(0.5, 0)", "1"},
		{"FORMAT(2.5e0, 0)", "2"},
		{"FORMAT(f, 3)", "2.500"},
		{"FORMAT('1234.5', 1)", "1,234.5"},
		{"FORMAT(d, 1)", "-12.4"},
		{"FORMAT(n, 2)", "NULL"},
		{"FORMAT(1, n)", "NULL"},
		{"FORMAT(1234.5, 2, 'en_US')", "1,234.50"},
		{"CONVERT_TZ('2004-01-01 12:00:00', '+00:00', '+10:00')", "2004-01-01 22:00:00"},
		{"CONVERT_TZ('2004-01-01 12:00:00.25', '+01:00', '-02:30')", "2004-01-01 08:30:00.25"},
		{"CONVERT_TZ(dt, '+00:00', '+14:00')", "2024-03-16 03:45:30.123456"},
		{"CONVERT_TZ(dd, '+00:00', '+01:00')", "2023-12-31 01:00:00"},
		{"CONVERT_TZ('2024-07-01 12:00:00', 'UTC', 'Europe/Berlin')", "2024-07-01 14:00:00"},
		{"CONVERT_TZ('2024-01-01 12:00:00', 'UTC', 'Europe/Berlin')", "2024-01-01 13:00:00"},
		{"CONVERT_TZ('2024-01-01 12:00:00', 'SYSTEM', 'SYSTEM')", "2024-01-01 12:00:00"},
		{"CONVERT_TZ('2024-01-01 12:00:00', '+00:00', '+14:01')", "NULL"},
		{"CONVERT_TZ('2024-01-01 12:00:00', '+00:00', 'No/Such_Zone')", "NULL"},
		{"CONVERT_TZ('2024-01-01 12:00:00', '+00:00', '10:00')", "NULL"},
		{"CONVERT_TZ('1960-01-01 12:00:00', '+00:00', '+01:00')", "1960-01-01 12:00:00"},
		{"CONVERT_TZ('nope', '+00:00', '+01:00')", "NULL"},
		{"CONVERT_TZ(n, '+00:00', '+01:00')", "NULL"},
	})
}

// TestRandSequence: RAND(N) with a constant seed continues one sequence
// across rows (MySQL's RAND(3) over three rows), while RAND() differs.
func TestRandSequence(t *testing.T) {
	e, err := expr.Compile(parseExpr(t, "RAND(3)"), &expr.Ctx{Columns: fnSchema, Env: env{}})
	require.NoError(t, err)
	var got []string
	for range 3 {
		d, err := e.Eval(fnRow)
		require.NoError(t, err)
		got = append(got, d.String())
	}
	require.Equal(t, []string{"0.9057697559760601", "0.37307905813034536", "0.14808605345719125"}, got)

	e, err = expr.Compile(parseExpr(t, "RAND()"), &expr.Ctx{Columns: fnSchema, Env: env{}})
	require.NoError(t, err)
	seen := map[string]bool{}
	for range 10 {
		d, err := e.Eval(fnRow)
		require.NoError(t, err)
		seen[d.String()] = true
	}
	require.Greater(t, len(seen), 1)
}

func TestNewFuncParamCount(t *testing.T) {
	for _, s := range []string{"MD5()", "SHA1('a', 'b')", "SHA2('a')", "UNHEX()", "TO_BASE64()", "FROM_BASE64('a', 1)",
		"UUID(1)", "RAND(1, 2)", "FORMAT(1)", "FORMAT(1, 2, 'en_US', 4)", "CONVERT_TZ('a', 'b')",
		"REGEXP_LIKE('a')", "REGEXP_LIKE('a', 'b', 'c', 'd')", "REGEXP_INSTR('a')", "REGEXP_SUBSTR('a', 'b', 1, 1, 'c', 1)",
		"REGEXP_REPLACE('a', 'b')"} {
		_, err := expr.Compile(parseExpr(t, s), &expr.Ctx{Columns: fnSchema, Env: env{}})
		require.Error(t, err, s)
		require.Equal(t, uint16(1582), errno.FromError(err).Code, "%s: %v", s, err)
	}
}

func TestRegexpFuncs(t *testing.T) {
	evalFnCases(t, []fnCase{
		{"'abc' REGEXP 'b'", "1"},
		{"'abc' RLIKE '^b'", "0"},
		{"'abc' NOT REGEXP 'x'", "1"},
		{"s REGEXP '^H.*d$'", "1"},
		{"n REGEXP 'a'", "NULL"},
		{"s REGEXP n", "NULL"},
		{"'Abc' REGEXP 'abc'", "0"}, // utf8mb4_bin: case-sensitive
		{"REGEXP_LIKE('Abc', 'abc', 'i')", "1"},
		{"REGEXP_LIKE('Abc', 'abc', 'ic')", "0"},
		{"REGEXP_LIKE('a\nb', 'a.b')", "0"},
		{"REGEXP_LIKE('a\nb', 'a.b', 'n')", "1"},
		{"REGEXP_LIKE('a\nb', '^b$')", "0"},
		{"REGEXP_LIKE('a\nb', '^b$', 'm')", "1"},
		{"REGEXP_LIKE(u, 'w.rld')", "1"},
		{"REGEXP_INSTR('dog cat dog', 'dog')", "1"},
		{"REGEXP_INSTR('dog cat dog', 'dog', 2)", "9"},
		{"REGEXP_INSTR('dog cat dog', 'dog', 1, 2)", "9"},
		{"REGEXP_INSTR('dog cat dog', 'dog', 1, 3)", "0"},
		{"REGEXP_INSTR('dog cat dog', 'dog', 1, 1, 1)", "4"},
		{"REGEXP_INSTR('aa aaa aaaa', 'a{4}')", "8"},
		{"REGEXP_INSTR('aa aaa aaaa', 'a{2}')", "1"},
		{"REGEXP_INSTR('héllo', 'l')", "3"},
		{"REGEXP_INSTR(b, 'l')", "4"}, // binary: bytes
		{"REGEXP_INSTR('abc', 'B', 1, 1, 0, 'i')", "2"},
		{"REGEXP_SUBSTR('abc def ghi', '[a-z]+')", "abc"},
		{"REGEXP_SUBSTR('abc def ghi', '[a-z]+', 1, 3)", "ghi"},
		{"REGEXP_SUBSTR('abc def ghi', '[a-z]+', 6)", "ef"},
		{"REGEXP_SUBSTR('abc', 'x')", "NULL"},
		{"REGEXP_REPLACE('a b c', 'b', 'X')", "a X c"},
		{"REGEXP_REPLACE('abc def ghi', '[a-z]+', 'X', 1, 3)", "abc def X"},
		{"REGEXP_REPLACE('abc def ghi', '[a-z]+', 'X', 5)", "abc X X"},
		{"REGEXP_REPLACE('abc def ghi', '[a-z]+', 'X', 1, 4)", "abc def ghi"},
		{"REGEXP_REPLACE('abc', '(b)', '[$1]')", "a[b]c"},
		{"REGEXP_REPLACE('abc', 'b', '\\\\$1')", "a$1c"},
		{"REGEXP_REPLACE('abc', 'x*', '-')", "-a-b-c-"},
		{"REGEXP_REPLACE('héllo', 'é', 'e')", "hello"},
		{"REGEXP_REPLACE(n, 'a', 'b')", "NULL"},
		{"REGEXP_REPLACE('a', 'a', n)", "NULL"},
		{"REGEXP_LIKE(s, CONCAT('W', 'or'))", "1"},
	})
	for _, c := range []struct {
		expr string
		code uint16
	}{
		{"'a' REGEXP ''", 3685},
		{"'a' REGEXP '('", 3691},
		{"'a' REGEXP '[a'", 3696},
		{"'a' REGEXP '(a)\\\\1'", 3685}, // a backreference: RE2 has none
		{"REGEXP_LIKE('a', 'a', 'x')", 3685},
		{"REGEXP_INSTR('abc', 'b', 0)", 3686},
		{"REGEXP_INSTR('abc', 'b', 5)", 3686},
	} {
		e, err := expr.Compile(parseExpr(t, c.expr), &expr.Ctx{Columns: fnSchema, Env: env{}})
		if err == nil {
			_, err = e.Eval(fnRow)
		}
		require.Error(t, err, c.expr)
		require.Equal(t, c.code, errno.FromError(err).Code, "%s: %v", c.expr, err)
	}
	// A pattern from a column compiles per row.
	e, err := expr.Compile(parseExpr(t, "'abc' REGEXP s"), &expr.Ctx{Columns: fnSchema, Env: env{}})
	require.NoError(t, err)
	for _, c := range []struct{ pat, want string }{{"^a", "1"}, {"^b", "0"}, {"^a", "1"}} {
		row := append([]types.Datum{types.NewString(c.pat)}, fnRow[1:]...)
		d, err := e.Eval(row)
		require.NoError(t, err)
		require.Equal(t, c.want, d.String(), c.pat)
	}
}
