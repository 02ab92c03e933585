package infoschema

import (
	"context"
	"sort"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/sql/catalog"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/planner"
	"github.com/stratadb/strata/sql/types"
)

// DBName is the database this package serves.
const DBName = "information_schema"

type datum = types.Datum

// Viewer is what a reading session tells the schema about itself.
type Viewer interface {
	// VisibleDB / VisibleTable: whether the account holds any privilege
	// on the database / table (SHOW DATABASES / SHOW TABLES rules).
	VisibleDB(db string) bool
	VisibleTable(db, table string) bool
	// ProcessRows are the connections the session may see, as
	// information_schema.PROCESSLIST rows (ID, USER, HOST, DB, COMMAND,
	// TIME, STATE, INFO).
	ProcessRows() [][]datum
	// ClusterProcessRows are every live SQL node's connections the session
	// may see, as CLUSTER_PROCESSLIST rows (INSTANCE, then PROCESSLIST's
	// columns); nodes that did not answer are left out with a warning.
	ClusterProcessRows(ctx context.Context) ([][]datum, error)
	// SlowQueryRows are the node's slow query log entries the session may
	// see, as information_schema.SLOW_QUERY rows.
	SlowQueryRows() ([][]datum, error)
	// StatementsSummaryRows are the node's statement digests of the
	// current window (history: of the earlier ones), as
	// information_schema.STATEMENTS_SUMMARY[_HISTORY] rows.
	StatementsSummaryRows(history bool) ([][]datum, error)
}

// AutoIncPeek returns the next AUTO_INCREMENT value of a table
// (TABLES.AUTO_INCREMENT); nil leaves the column NULL.
type AutoIncPeek func(ctx context.Context, tableID int64) (int64, error)

// Schema implements planner.SystemSchema for information_schema.
type Schema struct {
	cat    *catalog.Catalog
	peek   AutoIncPeek
	tables map[string]*memTable
	names  []string // upper-case, sorted
}

var _ planner.SystemSchema = (*Schema)(nil)

// New returns the information_schema over cat.
func New(cat *catalog.Catalog, peek AutoIncPeek) *Schema {
	s := &Schema{cat: cat, peek: peek, tables: map[string]*memTable{}}
	for _, t := range s.defs() {
		t.info.Init()
		s.tables[strings.ToLower(t.info.Name)] = t
		s.names = append(s.names, t.info.Name)
	}
	sort.Strings(s.names)
	return s
}

// IsSystemDB implements planner.SystemSchema.
func (s *Schema) IsSystemDB(db string) bool { return strings.EqualFold(db, DBName) }

// TableNames lists the tables (SHOW TABLES FROM information_schema).
func (s *Schema) TableNames() []string { return s.names }

// Table implements planner.SystemSchema.
func (s *Schema) Table(db, name string) (*model.TableInfo, planner.MemTable, error) {
	t, ok := s.tables[strings.ToLower(name)]
	if !ok {
		return nil, nil, errno.New(errno.ErrNoSuchTable, "Table '%s.%s' doesn't exist", DBName, name)
	}
	return t.info, t, nil
}

// memTable is one information_schema table.
type memTable struct {
	info *model.TableInfo
	rows func(ctx context.Context, v Viewer) ([][]datum, error)
}

// Rows implements planner.MemTable.
func (t *memTable) Rows(ctx context.Context, env expr.Env) ([][]datum, error) {
	v, ok := env.(Viewer)
	if !ok {
		return nil, errno.NotSupported("information_schema outside a session")
	}
	return t.rows(ctx, v)
}

// column types, as MySQL 8.0 declares them
func varchar(n int) types.FieldType {
	return types.FieldType{Tp: mysql.TypeVarchar, Flen: n}
}

func notNull(ft types.FieldType) types.FieldType { ft.Flag |= mysql.NotNullFlag; return ft }

var (
	bigintU = types.FieldType{Tp: mysql.TypeLonglong, Flen: 21, Flag: mysql.UnsignedFlag | mysql.BinaryFlag}
	intU    = types.FieldType{Tp: mysql.TypeLong, Flen: 10, Flag: mysql.UnsignedFlag | mysql.BinaryFlag}
	bigint  = types.FieldType{Tp: mysql.TypeLonglong, Flen: 21, Flag: mysql.BinaryFlag}
	text    = types.FieldType{Tp: mysql.TypeBlob, Flen: 65535}
	ltext   = types.FieldType{Tp: mysql.TypeLongBlob, Flen: 4294967295}
	dt      = types.FieldType{Tp: mysql.TypeDatetime, Flen: 19, Flag: mysql.BinaryFlag}
	name64  = notNull(varchar(64))
)

type col struct {
	name string
	ft   types.FieldType
}

func table(name string, rows func(ctx context.Context, v Viewer) ([][]datum, error), cols ...col) *memTable {
	t := &model.TableInfo{Name: name, HandleOffset: -1, AutoIncOffset: -1}
	for i, c := range cols {
		t.Columns = append(t.Columns, &model.ColumnInfo{ID: int64(i + 1), Name: c.name, Type: c.ft})
	}
	return &memTable{info: t, rows: rows}
}

// str, num and null build datums.
func str(s string) datum  { return types.NewString(s) }
func num(v int64) datum   { return types.NewInt(v) }
func unum(v uint64) datum { return types.NewUint(v) }

var null = types.NullDatum

func strOrNull(s string) datum {
	if s == "" {
		return null
	}
	return str(s)
}
