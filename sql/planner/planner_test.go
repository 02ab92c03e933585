package planner

import (
	"strings"
	"testing"
	"time"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
)

type nullEnv struct{}

func (nullEnv) CurrentDB() string              { return "db" }
func (nullEnv) User() string                   { return "root@%" }
func (nullEnv) ConnectionID() uint64           { return 1 }
func (nullEnv) LastInsertID() uint64           { return 0 }
func (nullEnv) Now() time.Time                 { return time.Unix(0, 0) }
func (nullEnv) UserVar(string) types.Datum     { return types.NullDatum }
func (nullEnv) Param(int) (types.Datum, bool)  { return types.NullDatum, false }
func (nullEnv) StatementDone() <-chan struct{} { return nil }
func (nullEnv) SysVar(name string, _ bool) (types.Datum, types.FieldType, error) {
	return types.NullDatum, types.FieldType{}, errno.New(errno.ErrUnknownSystemVar, "Unknown system variable '%s'", name)
}

// testSource is t(id INT PRIMARY KEY, k INT, c VARCHAR(10), u BIGINT
// UNSIGNED, d DECIMAL) with KEY k(k), UNIQUE uc(c, k) and an index w(c)
// in state wState; without pkHandle the handle is _tidb_rowid.
func testSource(pkHandle bool, wState model.SchemaState) *Source {
	t := &model.TableInfo{ID: 9, Name: "t", HandleOffset: -1, AutoIncOffset: -1, Columns: []*model.ColumnInfo{
		{ID: 1, Name: "id", Type: types.FieldType{Tp: mysql.TypeLong, Flag: mysql.PriKeyFlag | mysql.NotNullFlag}},
		{ID: 2, Name: "k", Type: types.FieldType{Tp: mysql.TypeLong}},
		{ID: 3, Name: "c", Type: types.FieldType{Tp: mysql.TypeVarchar, Flen: 10}},
		{ID: 4, Name: "u", Type: types.FieldType{Tp: mysql.TypeLonglong, Flag: mysql.UnsignedFlag}},
		{ID: 5, Name: "d", Type: types.DecimalType(6, 2)},
	}, Indices: []*model.IndexInfo{
		{ID: 1, Name: "k", Columns: []*model.IndexColumn{{Name: "k", Offset: 1}}},
		{ID: 2, Name: "uc", Unique: true, Columns: []*model.IndexColumn{{Name: "c", Offset: 2}, {Name: "k", Offset: 1}}},
		{ID: 3, Name: "w", State: wState, Columns: []*model.IndexColumn{{Name: "c", Offset: 2}}},
		{ID: 4, Name: "iu", Columns: []*model.IndexColumn{{Name: "u", Offset: 3}}},
		{ID: 5, Name: "id_", Columns: []*model.IndexColumn{{Name: "d", Offset: 4}}},
	}}
	if pkHandle {
		t.PKIsHandle, t.HandleOffset = true, 0
	}
	t.Init()
	return &Source{DB: &model.DBInfo{ID: 1, Name: "db"}, Table: t, Alias: "t", Cols: t.Schema()}
}

func parseWhere(t *testing.T, where string) (*ast.SelectStmt, []ast.ExprNode) {
	stmt, err := parser.New().ParseOneStmt("SELECT * FROM t WHERE "+where, "", "")
	require.NoError(t, err)
	sel := stmt.(*ast.SelectStmt)
	return sel, conjuncts(sel.Where, nil)
}

// TestRanges: the ranges of one index built from WHERE, as EXPLAIN prints
// them, and which conditions stay as filters.
func TestRanges(t *testing.T) {
	cases := []struct {
		where    string
		cols     []int // source offsets, in index order
		ranges   string
		residual int
	}{
		{"k = 5", []int{1}, "[5,5]", 0},
		{"5 = k", []int{1}, "[5,5]", 0},
		{"k = '7'", []int{1}, "[7,7]", 0},
		{"k = 1 + 1", []int{1}, "[2,2]", 0},
		{"k = 1.5", []int{1}, "", 0},
		{"k = 5 AND k = 6", []int{1}, "", 0},
		{"k IN (3, 1, 3, NULL)", []int{1}, "[1,1] [3,3]", 0},
		{"k BETWEEN 10 AND 20", []int{1}, "[10,20]", 0},
		{"k NOT BETWEEN 10 AND 20", []int{1}, "", 1},
		{"k > 10 AND k <= 20", []int{1}, "(10,20]", 0},
		{"k >= 10.5 AND k < 20.5", []int{1}, "[11,20]", 0},
		{"k < 3", []int{1}, "(NULL,3)", 0},
		{"k > 9223372036854775807", []int{1}, "(9223372036854775807,+inf]", 0}, // no key
		{"k = 5 OR k > 8", []int{1}, "[5,5] (8,+inf]", 0},
		{"k = 5 OR c = 'a'", []int{1}, "", 1},
		{"k IS NULL", []int{1}, "[NULL,NULL]", 0},
		{"k IS NOT NULL", []int{1}, "(NULL,+inf]", 0},
		{"k IS NULL OR k < 2", []int{1}, "[NULL,2)", 0},
		{"k = NULL", []int{1}, "", 0},
		{"k = c", []int{1}, "", 1},
		{"c = 'a' AND k > 1", []int{2, 1}, `("a" 1,"a" +inf]`, 0},
		{"c IN ('a', 'b') AND k IN (1, 2)", []int{2, 1}, `["a" 1,"a" 1] ["a" 2,"a" 2] ["b" 1,"b" 1] ["b" 2,"b" 2]`, 0},
		{"c > 'a' AND k = 1", []int{2, 1}, `("a",+inf]`, 1},
		{"k = 1", []int{2, 1}, "", 1},
		{"c = 5", []int{2}, "", 1},
		{"c LIKE 'a%'", []int{2}, "", 1},
		{"u = 3", []int{3}, "[3,3]", 0},
		{"u > -1", []int{3}, "(NULL,+inf]", 0},
		{"u < -1", []int{3}, "", 0},
		{"u = 1.5", []int{3}, "", 1},
		{"d = 2", []int{4}, "", 1}, // decimals are text in keys: never ranges
		// DNF: a row-constructor IN or an OR of conjunctions is the union of
		// its disjuncts' ranges, each with the other conjuncts.
		{"(c, k) IN (('b', 2), ('a', 1), ('b', 2))", []int{2, 1}, `["a" 1,"a" 1] ["b" 2,"b" 2]`, 0},
		{"(k, c) IN ((2, 'b'), (1, 'a'))", []int{2, 1}, `["a" 1,"a" 1] ["b" 2,"b" 2]`, 0},
		{"(c = 'a' AND k = 1) OR (c = 'b' AND k = 2)", []int{2, 1}, `["a" 1,"a" 1] ["b" 2,"b" 2]`, 0},
		{"(c, k) IN (('a', 1), ('b', 2)) AND k > 0", []int{2, 1}, `["a" 1,"a" 1] ["b" 2,"b" 2]`, 0},
		{"(c, k) IN (('a', 1), ('b', 2))", []int{2}, `["a","a"] ["b","b"]`, 1},
		{"c = 'a' AND (k, u) IN ((1, 5), (2, 6))", []int{2, 1, 3}, `["a" 1 5,"a" 1 5] ["a" 2 6,"a" 2 6]`, 0},
		{"(c, k) IN (('a', 1), ('a', NULL))", []int{2, 1}, `["a" 1,"a" 1]`, 0},
		{"(c = 'a' AND k > 1) OR (c = 'a' AND k > 5)", []int{2, 1}, `("a" 1,"a" +inf]`, 1}, // overlap: column by column
		{"(c = 'a' AND k = 1) OR k = 2", []int{2, 1}, "", 1},                               // a disjunct bounds no column
		{"(k, u) IN ((1, 5), (2, 6))", []int{1}, "[1,1] [2,2]", 1},
	}
	src := testSource(true, model.StatePublic)
	for _, c := range cases {
		_, conds := parseWhere(t, c.where)
		rg := &ranger{src: src, env: nullEnv{}}
		d := rg.detach(conds, c.cols)
		var rs []string
		for _, r := range d.ranges {
			rs = append(rs, formatRange(r))
		}
		if d.usedCols == 0 {
			rs = nil
		}
		require.Equal(t, c.ranges, strings.Join(rs, " "), c.where)
		require.Len(t, residualOf(d.access), c.residual, c.where)
	}
}

func TestHandleRanges(t *testing.T) {
	r := handleRanges([]Range{
		{Low: []types.Datum{types.NewInt(3)}, High: []types.Datum{types.NewInt(7)}, LowExcl: true, HighExcl: true},
		{Low: []types.Datum{types.NullDatum}, LowExcl: true, High: []types.Datum{types.NewInt(-1)}},
		{Low: []types.Datum{types.NullDatum}, High: []types.Datum{types.NullDatum}},
	})
	require.Equal(t, []HandleRange{{4, 6}, {FullHandleRange.Lo, -1}}, r)
	start, end := HandleRange{Lo: 3, Hi: 7}.Keys(9)
	require.Equal(t, tablecodec.RowKey(9, 3), start)
	require.Equal(t, tablecodec.RowKey(9, 8), end)
}

// TestAccessPaths: the physical plan chosen for a WHERE, with hints and
// index states (an index that is not public is never read).
func TestAccessPaths(t *testing.T) {
	cases := []struct {
		where    string
		pkHandle bool
		wState   model.SchemaState
		hints    string
		plan     string // root's type and, for index reads, the index
	}{
		{"id = 5", true, model.StatePublic, "", "Point_Get"},
		{"id = 5 AND k = 1", true, model.StatePublic, "", "Point_Get"},
		{"id IN (1, 2)", true, model.StatePublic, "", "Batch_Point_Get"},
		{"id > 5", true, model.StatePublic, "", "TableReader/TableRangeScan"},
		{"id = 5", false, model.StatePublic, "", "TableReader/TableFullScan"},
		{"_tidb_rowid = 4", false, model.StatePublic, "", "Point_Get"},
		{"k = 1", true, model.StatePublic, "", "IndexLookUp/k"},
		{"c = 'a' AND k = 1", true, model.StatePublic, "", "Point_Get/uc"},
		{"c = 'a' AND k IS NULL", true, model.StatePublic, "", "IndexLookUp/uc"},
		{"c = 'a'", true, model.StatePublic, "", "IndexLookUp/w"},
		{"c = 'a'", true, model.StateWriteOnly, "", "IndexLookUp/uc"},
		{"c = 'a'", true, model.StateDeleteOnly, "", "IndexLookUp/uc"},
		{"c = 'a'", true, model.StateWriteOnly, "USE INDEX (k)", "TableReader/TableFullScan"},
		{"c = 'a'", true, model.StateWriteOnly, "FORCE INDEX (k)", "IndexLookUp/k"},
		{"c = 'a'", true, model.StatePublic, "IGNORE INDEX (w, uc)", "TableReader/TableFullScan"},
		{"k = 1", true, model.StatePublic, "USE INDEX ()", "TableReader/TableFullScan"},
		{"k = 1", true, model.StatePublic, "FORCE INDEX (uc)", "IndexLookUp/uc"},
		{"d = 1", true, model.StatePublic, "", "TableReader/TableFullScan"},
		{"u = 1", true, model.StatePublic, "", "IndexLookUp/iu"},
		{"k = 1 AND 1 = 0", true, model.StatePublic, "", "TableDual"},
	}
	for _, c := range cases {
		src := testSource(c.pkHandle, c.wState)
		q := "SELECT * FROM t " + c.hints + " WHERE " + c.where
		stmt, err := parser.New().ParseOneStmt(q, "", "")
		require.NoError(t, err)
		sel := stmt.(*ast.SelectStmt)
		src.Hints = sel.From.TableRefs.Left.(*ast.TableSource).Source.(*ast.TableName).IndexHints
		lg := &logical{src: src, width: len(src.Cols)}
		require.NoError(t, lg.addWhere(sel.Where, nullEnv{}), q)
		b := &builder{env: nullEnv{}}
		var p Plan
		if lg.dual {
			p = &TableDual{}
			p.Base().Tp = "TableDual"
		} else {
			ap, err := b.bestAccess(src, lg.conds, lg.condE, columnNeeds{s: sel, src: src}, nil, 0)
			require.NoError(t, err, q)
			p = ap.plan
		}
		got := p.Base().Tp
		switch x := p.(type) {
		case *TableReader:
			got += "/" + x.Scan.Tp
		case *IndexLookUp:
			got += "/" + x.Index.Index.Name
		case *IndexReader:
			got += "/" + x.Scan.Index.Name
		case *PointGet:
			if x.Index != nil {
				got += "/" + x.Index.Name
			}
		}
		require.Equal(t, c.plan, got, q)
	}
	// A hint naming an index that is not public is an unknown key.
	src := testSource(true, model.StateWriteOnly)
	stmt, err := parser.New().ParseOneStmt("SELECT * FROM t USE INDEX (w) WHERE c = 'a'", "", "")
	require.NoError(t, err)
	src.Hints = stmt.(*ast.SelectStmt).From.TableRefs.Left.(*ast.TableSource).Source.(*ast.TableName).IndexHints
	_, err = (&builder{env: nullEnv{}}).bestAccess(src, nil, nil, columnNeeds{src: src}, nil, 0)
	require.ErrorContains(t, err, "Key 'w' doesn't exist in table 't'")
}
