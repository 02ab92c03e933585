package expr_test

import (
	"testing"

	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/types"
)

// collSchema: ci is utf8mb4_general_ci, uc utf8mb4_unicode_ci, ai
// utf8mb4_0900_ai_ci, bin the default utf8mb4_bin, vb a VARBINARY.
var collSchema = []expr.SchemaColumn{
	{Table: "t", Name: "ci", Type: types.FieldType{Tp: mysql.TypeVarchar, Flen: 20, Coll: 45}},
	{Table: "t", Name: "uc", Type: types.FieldType{Tp: mysql.TypeVarchar, Flen: 20, Coll: 224}},
	{Table: "t", Name: "ai", Type: types.FieldType{Tp: mysql.TypeVarchar, Flen: 20, Coll: 255}},
	{Table: "t", Name: "bin", Type: types.FieldType{Tp: mysql.TypeVarchar, Flen: 20}},
	{Table: "t", Name: "vb", Type: types.FieldType{Tp: mysql.TypeVarchar, Flen: 20, Flag: mysql.BinaryFlag}},
	{Table: "t", Name: "n", Type: types.FieldType{Tp: mysql.TypeLong}},
}

var collRow = []types.Datum{types.NewString("Straße"), types.NewString("Straße"), types.NewString("Åsa "), types.NewString("Ann"), types.NewString("Ann"), types.NewInt(3)}

func TestCollationEval(t *testing.T) {
	for _, c := range []struct {
		expr, want string
	}{
		{"ci = 'STRASSE'", "0"}, // general_ci: ß weighs as one S
		{"ci = 'STRASE'", "1"},
		{"uc = 'STRASSE'", "1"}, // UCA: ß is ss
		{"ai = 'asa'", "0"},     // NO PAD: the trailing space counts
		{"ai = 'asa '", "1"},
		{"bin = 'ann'", "0"},
		{"bin = 'ann' COLLATE utf8mb4_general_ci", "1"},
		{"ci COLLATE utf8mb4_bin = 'Straße'", "1"},
		{"ci COLLATE utf8mb4_bin = 'STRASE'", "0"},
		{"ci IN ('x', 'strase')", "1"},
		{"ci LIKE 'stra_e'", "1"},
		{"ci LIKE 'strasse'", "0"},
		{"CASE ci WHEN 'STRASE' THEN 'y' ELSE 'n' END", "y"},
		{"ci BETWEEN 'S' AND 'T'", "1"},
		{"vb = 'ann'", "0"},
		{"ci = vb", "0"},              // a binary string wins: bytewise
		{"ci = BINARY 'straße'", "0"}, // BINARY is implicit and binary: it wins
		{"ci = BINARY 'Straße'", "1"},
		{"COERCIBILITY(BINARY 'x')", "2"},
		{"n = '3'", "1"},
		{"COLLATION(ci)", "utf8mb4_general_ci"},
		{"COLLATION(ci COLLATE utf8mb4_unicode_ci)", "utf8mb4_unicode_ci"},
		{"COLLATION(vb)", "binary"},
		{"COLLATION(n)", "binary"},
		{"CHARSET(ci)", "utf8mb4"},
		{"COERCIBILITY(ci)", "2"},
		{"COERCIBILITY('x')", "4"},
		{"COERCIBILITY(ci COLLATE utf8mb4_bin)", "0"},
		{"COERCIBILITY(NULL)", "6"},
		{"COERCIBILITY(n)", "5"},
		{"UPPER(ci) = 'strase'", "1"}, // a string function keeps its argument's collation
		{"CONCAT(ci, 'x') = 'STRASEX'", "1"},
		{"COLLATION(LOWER(uc))", "utf8mb4_unicode_ci"},
		{"COERCIBILITY(LOWER(uc))", "2"},
	} {
		e, err := expr.Compile(parseExpr(t, c.expr), &expr.Ctx{Columns: collSchema, Env: env{}})
		require.NoError(t, err, c.expr)
		d, err := e.Eval(collRow)
		require.NoError(t, err, c.expr)
		require.Equal(t, c.want, d.String(), c.expr)
		// The stores evaluate a pushed comparison under the same collation.
		if e2, ok := roundTrip(t, e, len(collRow), c.expr); ok {
			d2, err := e2.Eval(collRow)
			require.NoError(t, err, c.expr)
			require.Equal(t, c.want, d2.String(), c.expr)
		}
	}
}

func TestCollationErrors(t *testing.T) {
	for _, c := range []struct {
		expr string
		code uint16
	}{
		{"ci = uc", errno.ErrIllegalMixOfCollations},
		{"ci = bin", errno.ErrIllegalMixOfCollations},
		{"ci COLLATE utf8mb4_bin = uc COLLATE utf8mb4_general_ci", errno.ErrIllegalMixOfCollations},
		{"ci IN ('a', uc)", errno.ErrIllegalMixOfCollations},
		{"ci LIKE uc", errno.ErrIllegalMixOfCollations},
		{"ci COLLATE latin1_bin", errno.ErrCollationCharsetMismatch},
		{"vb COLLATE utf8mb4_bin", errno.ErrCollationCharsetMismatch},
	} {
		_, err := expr.Compile(parseExpr(t, c.expr), &expr.Ctx{Columns: collSchema, Env: env{}})
		require.Error(t, err, c.expr)
		require.Equal(t, c.code, errno.FromError(err).Code, c.expr)
	}
	// An explicit COLLATE settles a mix of implicit ones.
	_, err := expr.Compile(parseExpr(t, "ci = uc COLLATE utf8mb4_bin"), &expr.Ctx{Columns: collSchema, Env: env{}})
	require.NoError(t, err)
}

func TestCompareAsCollation(t *testing.T) {
	ci := types.FieldType{Tp: mysql.TypeVarchar, Coll: 45}
	bin := types.FieldType{Tp: mysql.TypeVarchar}
	a, b := types.NewString("apple"), types.NewString("Banana")
	require.Less(t, expr.CompareAs(a, b, ci), 0)
	require.Greater(t, expr.CompareAs(a, b, bin), 0)
	require.Zero(t, expr.CompareAs(types.NewString("X "), types.NewString("x"), ci))
}

func TestGroupKeyCollation(t *testing.T) {
	e := []expr.Expr{&expr.Column{Offset: 0, Ft: types.FieldType{Tp: mysql.TypeVarchar, Coll: 45}}, &expr.Column{Offset: 1, Ft: types.VarcharType}}
	colls := expr.Collations(e)
	k1 := expr.AppendGroupKeyColl(nil, []types.Datum{types.NewString("Ann"), types.NewString("x")}, colls)
	k2 := expr.AppendGroupKeyColl(nil, []types.Datum{types.NewString("ANN "), types.NewString("x")}, colls)
	k3 := expr.AppendGroupKeyColl(nil, []types.Datum{types.NewString("ann"), types.NewString("X")}, colls)
	require.Equal(t, k1, k2)
	require.NotEqual(t, k1, k3)
	require.Nil(t, expr.Collations([]expr.Expr{e[1]}))
}

// BenchmarkCompareBin and BenchmarkCompareCI: one string equality under
// utf8mb4_bin (the bytewise path) and under utf8mb4_general_ci.
func BenchmarkCompareBin(b *testing.B) { benchColl(b, "bin = 'Ann'") }
func BenchmarkCompareCI(b *testing.B)  { benchColl(b, "ci = 'strase'") }

func benchColl(b *testing.B, s string) {
	x, err := expr.Compile(parseExpr(b, s), &expr.Ctx{Columns: collSchema, Env: env{}})
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := x.Eval(collRow); err != nil {
			b.Fatal(err)
		}
	}
}
