package ddl

import (
	"testing"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/stretchr/testify/require"
)

// TestElementKinds: the table elements of CREATE TABLE text, column
// definitions (true) and constraints, in order, past quotes, comments
// and nested parentheses.
func TestElementKinds(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []bool
	}{
		{"CREATE TABLE t (a INT)", []bool{true}},
		{"CREATE TABLE t (CHECK (a > 0), a INT CHECK (a < 9), CONSTRAINT c CHECK (a <> 1), b INT)", []bool{false, true, false, true}},
		{"create table `t(` (`check` int, `key` varchar(3) default ',)', primary key (`check`), check(`key` <> ')'))", []bool{true, true, false, false}},
		{"CREATE TABLE t (a INT /* , CHECK (x) */, -- , b INT\n b DECIMAL(10,2), # , c\n UNIQUE KEY (a, b), FOREIGN KEY (a) REFERENCES p (id))", []bool{true, true, false, false}},
		{"CREATE TABLE t (a INT, b INT", nil},
	} {
		require.Equal(t, tc.want, elementKinds(tc.text), tc.text)
	}
}

// TestCreateCheckOrder: unnamed constraints are numbered in the order
// they appear across column and table constraints, as MySQL does.
func TestCreateCheckOrder(t *testing.T) {
	st, err := parser.New().ParseOneStmt("CREATE TABLE t1 (CHECK (c1 <> c2), c1 INT CHECK (c1 > 10), c2 INT CONSTRAINT c2_positive CHECK (c2 > 0), c3 INT CHECK (c3 < 100), CONSTRAINT c1_nonzero CHECK (c1 <> 0), CHECK (c1 > c3))", "", "")
	require.NoError(t, err)
	tbl, err := BuildTableInfo(st.(*ast.CreateTableStmt), "test", nil, nil)
	require.NoError(t, err)
	got := map[string]string{}
	for _, c := range tbl.Checks {
		got[c.Name] = c.Expr
	}
	require.Equal(t, map[string]string{
		"t1_chk_1": "(`c1` <> `c2`)", "t1_chk_2": "(`c1` > 10)", "c2_positive": "(`c2` > 0)",
		"t1_chk_3": "(`c3` < 100)", "c1_nonzero": "(`c1` <> 0)", "t1_chk_4": "(`c1` > `c3`)",
	}, got)
}
