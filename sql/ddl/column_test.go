package ddl

import (
	"testing"
	"time"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/types"
)

type nowEnv struct{ expr.Env }

func (nowEnv) Now() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }

func testTable(t *testing.T, sql string) *model.TableInfo {
	stmt, err := parser.New().ParseOneStmt(sql, "", "")
	require.NoError(t, err)
	ti, err := BuildTableInfo(stmt.(*ast.CreateTableStmt), "test", nil, nil)
	require.NoError(t, err)
	return ti
}

func alterSpecs(t *testing.T, sql string) []*ast.AlterTableSpec {
	stmt, err := parser.New().ParseOneStmt(sql, "", "")
	require.NoError(t, err, sql)
	return stmt.(*ast.AlterTableStmt).Specs
}

// TestNewColumns: ADD COLUMN validation, ids, origin defaults, and where
// the owner's public step places the columns.
func TestNewColumns(t *testing.T) {
	for _, tc := range []struct {
		alter  string
		code   uint16
		order  string // column order once public
		origin []string
	}{
		{"ALTER TABLE t ADD COLUMN c INT DEFAULT 3", 0, "a,b,c", []string{"3"}},
		{"ALTER TABLE t ADD COLUMN c INT", 0, "a,b,c", []string{"NULL"}},
		{"ALTER TABLE t ADD COLUMN c VARCHAR(3) NOT NULL", 0, "a,b,c", []string{""}},
		{"ALTER TABLE t ADD COLUMN c INT NOT NULL", 0, "a,b,c", []string{"0"}},
		{"ALTER TABLE t ADD COLUMN c DATETIME DEFAULT CURRENT_TIMESTAMP", 0, "a,b,c", []string{"2026-01-02 03:04:05"}},
		{"ALTER TABLE t ADD COLUMN c INT DEFAULT NULL FIRST", 0, "c,a,b", []string{"NULL"}},
		{"ALTER TABLE t ADD COLUMN c INT AFTER a, ADD COLUMN d INT FIRST, ADD COLUMN e INT AFTER c", 0, "d,a,c,e,b", []string{"NULL", "NULL", "NULL"}},
		{"ALTER TABLE t ADD COLUMN (c INT, d TEXT)", 0, "a,b,c,d", []string{"NULL", "NULL"}},
		{"ALTER TABLE t ADD COLUMN A INT", errno.ErrDupFieldName, "", nil},
		{"ALTER TABLE t ADD COLUMN c INT, ADD COLUMN C INT", errno.ErrDupFieldName, "", nil},
		{"ALTER TABLE t ADD COLUMN c INT AFTER z", errno.ErrBadField, "", nil},
		{"ALTER TABLE t ADD COLUMN c INT PRIMARY KEY", errno.ErrNotSupportedYet, "", nil},
		{"ALTER TABLE t ADD COLUMN c INT UNIQUE", errno.ErrNotSupportedYet, "", nil},
		{"ALTER TABLE t ADD COLUMN c INT AUTO_INCREMENT", errno.ErrNotSupportedYet, "", nil},
		{"ALTER TABLE t ADD COLUMN c TINYINT DEFAULT 999", errno.ErrInvalidDefault, "", nil},
		{"ALTER TABLE t ADD COLUMN _tidb_rowid INT", errno.ErrWrongFieldSpec, "", nil},
	} {
		tbl := testTable(t, "CREATE TABLE t (a INT PRIMARY KEY, b INT, KEY kb (b))")
		var defs []*ast.ColumnDef
		var pos []*ast.ColumnPosition
		for _, sp := range alterSpecs(t, tc.alter) {
			for _, cd := range sp.NewColumns {
				defs, pos = append(defs, cd), append(pos, sp.Position)
			}
		}
		cols, poss, err := NewColumns(tbl, defs, pos, nowEnv{})
		if tc.code != 0 {
			require.Equal(t, tc.code, errno.FromError(err).Code, "%s: %v", tc.alter, err)
			continue
		}
		require.NoError(t, err, tc.alter)
		var origins []string
		for i, c := range cols {
			require.Equal(t, int64(3+i), c.ID, tc.alter)
			if c.Origin.Null {
				origins = append(origins, "NULL")
			} else {
				origins = append(origins, c.Origin.Value)
			}
		}
		require.Equal(t, tc.origin, origins, tc.alter)
		// The owner's steps: non-public while delete/write only, then
		// placed; offsets of the handle and of indexes follow.
		j := &Job{Columns: cols, Positions: poss}
		nt := tbl.Clone()
		applyAddColumns(nt, j, model.StateWriteOnly)
		require.Len(t, nt.Columns, 2)
		require.Len(t, nt.NonPublic, len(cols))
		require.Len(t, nt.ForWrite().Columns, 2+len(cols))
		applyAddColumns(nt, j, model.StatePublic)
		require.Empty(t, nt.NonPublic)
		var names []string
		for _, c := range nt.Columns {
			names = append(names, c.Name)
		}
		require.Equal(t, tc.order, joinNames(names), tc.alter)
		require.Equal(t, "a", nt.Columns[nt.HandleOffset].Name)
		require.Equal(t, "b", nt.Columns[nt.Indices[0].Columns[0].Offset].Name)
		require.Equal(t, int64(2+len(cols)), nt.MaxColumnID)
		// The published table was not touched.
		require.Equal(t, 0, tbl.HandleOffset)
		require.Equal(t, 1, tbl.Indices[0].Columns[0].Offset)
	}
}

func joinNames(n []string) string {
	s := ""
	for i, x := range n {
		if i > 0 {
			s += ","
		}
		s += x
	}
	return s
}

func TestCheckDropColumn(t *testing.T) {
	tbl := testTable(t, "CREATE TABLE t (a INT PRIMARY KEY, b INT, c INT, d INT, KEY kb (b), KEY kcd (c, d))")
	for _, tc := range []struct {
		col  string
		code uint16
	}{
		{"b", 0},
		{"B", 0},
		{"a", errno.ErrNotSupportedYet},
		{"c", errno.ErrNotSupportedYet},
		{"z", 1091},
	} {
		err := CheckDropColumn(tbl, tc.col)
		if tc.code == 0 {
			require.NoError(t, err, tc.col)
		} else {
			require.Equal(t, tc.code, errno.FromError(err).Code, "%s: %v", tc.col, err)
		}
	}
	require.Equal(t, uint16(1090), errno.FromError(CheckDropColumn(testTable(t, "CREATE TABLE o (x INT)"), "x")).Code)
	require.Len(t, columnIndexes(tbl, 1), 1)
	require.Empty(t, columnIndexes(tbl, 2))
}

func TestModifyColumn(t *testing.T) {
	tbl := testTable(t, "CREATE TABLE t (id INT PRIMARY KEY, n SMALLINT, u INT UNSIGNED, s VARCHAR(10), nn INT NOT NULL, f DOUBLE, c CHAR(10), b BINARY(4), j JSON, dep INT, g INT AS (dep + 1), KEY ks (s))")
	const rewrite = 1 // the change is allowed and rewrites every row (NeedsRewrite)
	for _, tc := range []struct {
		alter string
		code  uint16
	}{
		{"ALTER TABLE t MODIFY n BIGINT", 0},
		{"ALTER TABLE t MODIFY n INT DEFAULT 4", 0},
		{"ALTER TABLE t MODIFY n SMALLINT", 0},
		{"ALTER TABLE t MODIFY n TINYINT", 0},
		{"ALTER TABLE t MODIFY n BIGINT UNSIGNED", rewrite},
		{"ALTER TABLE t MODIFY u BIGINT UNSIGNED", 0},
		{"ALTER TABLE t MODIFY s VARCHAR(20)", 0},
		{"ALTER TABLE t MODIFY s VARCHAR(5)", 0},
		{"ALTER TABLE t MODIFY s VARCHAR(10) NOT NULL", 0},
		{"ALTER TABLE t MODIFY s INT", rewrite},
		{"ALTER TABLE t MODIFY s CHAR(10)", rewrite}, // trailing spaces go
		{"ALTER TABLE t MODIFY c CHAR(20)", 0},
		{"ALTER TABLE t MODIFY c CHAR(5)", 0},
		{"ALTER TABLE t MODIFY c VARCHAR(10)", 0},
		{"ALTER TABLE t MODIFY c VARBINARY(10)", rewrite},
		{"ALTER TABLE t MODIFY b BINARY(8)", rewrite}, // padded with 0x00 to its length
		{"ALTER TABLE t MODIFY nn INT NULL", 0},
		{"ALTER TABLE t MODIFY f FLOAT", rewrite},
		{"ALTER TABLE t CHANGE s n VARCHAR(10)", errno.ErrDupFieldName},
		{"ALTER TABLE t CHANGE s s2 VARCHAR(10)", 0},
		{"ALTER TABLE t CHANGE zz s2 VARCHAR(10)", errno.ErrBadField},
		{"ALTER TABLE t MODIFY id BIGINT", 0},
		{"ALTER TABLE t MODIFY n INT PRIMARY KEY", errno.ErrNotSupportedYet},
		{"ALTER TABLE t MODIFY id VARCHAR(10)", errUnsupportedDDL},
		{"ALTER TABLE t MODIFY s VARCHAR(10) COLLATE utf8mb4_general_ci", rewrite}, // indexed: its entries hold sort keys
		{"ALTER TABLE t MODIFY j TEXT", errno.ErrNotSupportedYet},
		{"ALTER TABLE t MODIFY b CHAR(4)", errUnsupportedDDL}, // bytes made text
		{"ALTER TABLE t MODIFY s JSON", errno.ErrNotSupportedYet},
		{"ALTER TABLE t MODIFY dep VARCHAR(10)", 3106}, // g reads it
	} {
		sp := alterSpecs(t, tc.alter)[0]
		old := sp.NewColumns[0].Name.Name.O
		if sp.OldColumnName != nil {
			old = sp.OldColumnName.Name.O
		}
		nc, err := ModifyColumn(tbl, old, sp.NewColumns[0], nil)
		if tc.code > rewrite {
			require.Equal(t, tc.code, errno.FromError(err).Code, "%s: %v", tc.alter, err)
			continue
		}
		require.NoError(t, err, tc.alter)
		oc := tbl.Columns[tbl.FindColumn(old)]
		require.Equal(t, oc.ID, nc.ID, tc.alter)
		require.Equal(t, tc.code == rewrite, NeedsRewrite(tbl, oc, nc), tc.alter)
	}
	// NOT NULL on a nullable column is checked by the job.
	sp0 := alterSpecs(t, "ALTER TABLE t MODIFY s VARCHAR(10) NOT NULL")[0]
	nc0, err := ModifyColumn(tbl, "s", sp0.NewColumns[0], nil)
	require.NoError(t, err)
	require.True(t, NeedsCheck(tbl.Columns[tbl.FindColumn("s")], nc0))
	require.False(t, NeedsCheck(tbl.Columns[tbl.FindColumn("nn")], tbl.Columns[tbl.FindColumn("nn")]))
	// So is a narrower type; a wider one is not.
	for alter, want := range map[string]bool{"ALTER TABLE t MODIFY n TINYINT": true, "ALTER TABLE t MODIFY n BIGINT": false,
		"ALTER TABLE t MODIFY s VARCHAR(5)": true, "ALTER TABLE t MODIFY s VARCHAR(50)": false,
		"ALTER TABLE t MODIFY c CHAR(5)": true, "ALTER TABLE t MODIFY c CHAR(50)": false, "ALTER TABLE t MODIFY c VARCHAR(8)": true} {
		sp := alterSpecs(t, alter)[0]
		old := sp.NewColumns[0].Name.Name.O
		nc, err := ModifyColumn(tbl, old, sp.NewColumns[0], nil)
		require.NoError(t, err, alter)
		require.Equal(t, want, NeedsCheck(tbl.Columns[tbl.FindColumn(old)], nc), alter)
	}
	for st, want := range map[string]step{SchemaNone: stepCheckRows, SchemaWriteOnly: stepCheckRows, SchemaReorg: stepCheckRows, SchemaDeleteOnly: stepNone} {
		require.Equal(t, want, nextStep(&Job{Type: ActionModifyColumn, CheckRows: true, State: StateRunning, SchemaState: st}), st)
	}
	// The primary key keeps its key flags and stays NOT NULL.
	sp := alterSpecs(t, "ALTER TABLE t MODIFY id BIGINT")[0]
	nc, err := ModifyColumn(tbl, "id", sp.NewColumns[0], nil)
	require.NoError(t, err)
	require.True(t, nc.IsPrimaryKey())
	require.True(t, nc.Type.NotNull())
}

// TestFits: the errors a MODIFY COLUMN check ends with, as MySQL's ALTER
// in strict mode.
func TestFits(t *testing.T) {
	tbl := testTable(t, "CREATE TABLE t (a TINYINT NOT NULL, s VARCHAR(3) NOT NULL, n INT)")
	for _, tc := range []struct {
		col  string
		v    types.Datum
		code uint16
	}{
		{"a", types.NewInt(127), 0},
		{"a", types.NewInt(300), errno.ErrWarnDataOutOfRange},
		{"a", types.NullDatum, errno.ErrInvalidUseOfNull},
		{"s", types.NewString("abc"), 0},
		{"s", types.NewString("abcd"), errno.ErrDataTruncated},
		{"n", types.NullDatum, 0},
	} {
		err := fits(tbl.Columns[tbl.FindColumn(tc.col)], tc.v, 7)
		if tc.code == 0 {
			require.NoError(t, err, "%s %v", tc.col, tc.v)
			continue
		}
		require.Equal(t, tc.code, errno.FromError(err).Code, "%s %v: %v", tc.col, tc.v, err)
	}
	require.Equal(t, "Out of range value for column 'a' at row 7", errno.FromError(fits(tbl.Columns[0], types.NewInt(300), 7)).Msg)
}

func TestAlterDefault(t *testing.T) {
	tbl := testTable(t, "CREATE TABLE t (id INT PRIMARY KEY, n INT DEFAULT 1)")
	sp := alterSpecs(t, "ALTER TABLE t ALTER COLUMN n SET DEFAULT 5")[0]
	c, err := AlterDefault(tbl, sp.NewColumns[0], nil)
	require.NoError(t, err)
	require.Equal(t, "5", c.Default)
	sp = alterSpecs(t, "ALTER TABLE t ALTER COLUMN n DROP DEFAULT")[0]
	c, err = AlterDefault(tbl, sp.NewColumns[0], nil)
	require.NoError(t, err)
	require.False(t, c.HasDefault)
	sp = alterSpecs(t, "ALTER TABLE t ALTER COLUMN n SET DEFAULT 'x'")[0]
	_, err = AlterDefault(tbl, sp.NewColumns[0], nil)
	require.Equal(t, errno.ErrInvalidDefault, errno.FromError(err).Code)
	sp = alterSpecs(t, "ALTER TABLE t ALTER COLUMN z SET DEFAULT 1")[0]
	_, err = AlterDefault(tbl, sp.NewColumns[0], nil)
	require.Equal(t, errno.ErrBadField, errno.FromError(err).Code)
}
