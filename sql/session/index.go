package session

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/sql/catalog"
	"github.com/stratadb/strata/sql/ddl"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/executor"
	"github.com/stratadb/strata/sql/table"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
)

// MySQL / TiDB error codes of index DDL and ADMIN CHECK.
const (
	errDupKeyName          uint16 = 1061 // Duplicate key name
	errKeyColumnNotExist   uint16 = 1072 // Key column '%s' doesn't exist in table
	errCantDropKey         uint16 = 1091 // Can't DROP '%s'; check that column/key exists
	errBlobKeyWithoutLen   uint16 = 1170 // BLOB/TEXT column used in key specification without a key length
	errTooManyKeys         uint16 = 1069
	errTooManyKeyParts     uint16 = 1070
	errPrimaryCantHaveNull uint16 = 1171 // All parts of a PRIMARY KEY must be NOT NULL
	errAdminCheckTable     uint16 = 8003 // index count != table count
	errDataInconsistent    uint16 = 8223 // an entry does not match its row
)

const (
	maxIndexes     = 64
	maxIndexParts  = 16
	backfillBatch  = 256
	backfillTries  = 50
	adminCheckPage = 1024
)

// addIndexInfo appends a new index (in state public: the table is being
// created, it has no rows) to t.
func addIndexInfo(t *catalog.TableInfo, name string, parts []*ast.IndexPartSpecification, unique bool, opt *ast.IndexOption) error {
	ix, err := newIndexInfo(t, name, parts, unique, opt)
	if err != nil {
		return err
	}
	t.MaxIndexID++
	ix.ID = t.MaxIndexID
	t.Indices = append(t.Indices, ix)
	return nil
}

// newIndexInfo validates an index definition against t and returns it
// (without an id).
func newIndexInfo(t *catalog.TableInfo, name string, parts []*ast.IndexPartSpecification, unique bool, opt *ast.IndexOption) (*catalog.IndexInfo, error) {
	if len(parts) == 0 {
		return nil, errno.New(errno.ErrParse, "an index needs at least one column")
	}
	if len(parts) > maxIndexParts {
		return nil, errno.New(errTooManyKeyParts, "Too many key parts specified; max %d parts allowed", maxIndexParts)
	}
	if len(t.Indices) >= maxIndexes {
		return nil, errno.New(errTooManyKeys, "Too many keys specified; max %d keys allowed", maxIndexes)
	}
	ix := &catalog.IndexInfo{Unique: unique}
	if opt != nil {
		ix.Comment = opt.Comment
	}
	for _, p := range parts {
		if p.Expr != nil || p.Column == nil {
			return nil, errno.NotSupported("expression indexes")
		}
		off := t.FindColumn(p.Column.Name.O)
		if off < 0 {
			return nil, errno.New(errKeyColumnNotExist, "Key column '%s' doesn't exist in table", p.Column.Name.O)
		}
		c := t.Columns[off]
		if p.Length > 0 {
			return nil, errno.NotSupported("index prefix lengths")
		}
		switch c.Type.Tp {
		case mysql.TypeBlob, mysql.TypeTinyBlob, mysql.TypeMediumBlob, mysql.TypeLongBlob:
			return nil, errno.New(errBlobKeyWithoutLen, "BLOB/TEXT column '%s' used in key specification without a key length", c.Name)
		}
		for _, have := range ix.Columns {
			if have.Offset == off {
				return nil, errno.New(errDupFieldName(), "Duplicate column name '%s'", c.Name)
			}
		}
		ix.Columns = append(ix.Columns, &catalog.IndexColumn{Name: c.Name, Offset: off})
	}
	if name == "" {
		// MySQL names an unnamed index after its first column, _2, _3... on
		// a clash.
		base := ix.Columns[0].Name
		name = base
		for i := 2; t.FindIndex(name) != nil || strings.EqualFold(name, "PRIMARY"); i++ {
			name = fmt.Sprintf("%s_%d", base, i)
		}
	}
	if len(name) > 64 {
		return nil, errno.New(1059, "Identifier name '%s' is too long", name)
	}
	if strings.EqualFold(name, "PRIMARY") {
		return nil, errno.New(1280, "Incorrect index name '%s'", name)
	}
	if t.FindIndex(name) != nil {
		return nil, errno.New(errDupKeyName, "Duplicate key name '%s'", name)
	}
	ix.Name = name
	return ix, nil
}

func errDupFieldName() uint16 { return errno.ErrDupFieldName }

func (s *Session) createIndex(ctx context.Context, x *ast.CreateIndexStmt) (*executor.Result, error) {
	switch x.KeyType {
	case ast.IndexKeyTypeNone, ast.IndexKeyTypeUnique:
	default:
		return nil, errno.NotSupported("FULLTEXT / SPATIAL / VECTOR indexes")
	}
	spec := &ast.Constraint{Name: x.IndexName, Keys: x.IndexPartSpecifications, Option: x.IndexOption, IfNotExists: x.IfNotExists}
	return &executor.Result{}, s.addIndex(ctx, x, x.Table, spec, x.KeyType == ast.IndexKeyTypeUnique)
}

func (s *Session) dropIndexStmt(ctx context.Context, x *ast.DropIndexStmt) (*executor.Result, error) {
	return &executor.Result{}, s.dropIndex(ctx, x, x.Table, x.IndexName, x.IfExists)
}

func (s *Session) alterTable(ctx context.Context, x *ast.AlterTableStmt) (*executor.Result, error) {
	for _, sp := range x.Specs {
		switch sp.Tp {
		case ast.AlterTableAddConstraint:
			c := sp.Constraint
			switch c.Tp {
			case ast.ConstraintIndex, ast.ConstraintKey:
				if err := s.addIndex(ctx, x, x.Table, c, false); err != nil {
					return nil, err
				}
			case ast.ConstraintUniq, ast.ConstraintUniqKey, ast.ConstraintUniqIndex:
				if err := s.addIndex(ctx, x, x.Table, c, true); err != nil {
					return nil, err
				}
			default:
				return nil, errno.NotSupported("ALTER TABLE ADD of this constraint")
			}
		case ast.AlterTableDropIndex:
			if err := s.dropIndex(ctx, x, x.Table, sp.Name, sp.IfExists); err != nil {
				return nil, err
			}
		case ast.AlterTableLock, ast.AlterTableAlgorithm:
			// Accepted: index changes are always online here.
		default:
			return nil, errno.NotSupported("this ALTER TABLE clause (only ADD/DROP INDEX)")
		}
	}
	return &executor.Result{}, nil
}

// freshTable reads the table definition from the KV layer, not the cache.
func (s *Session) freshTable(ctx context.Context, db *catalog.DBInfo, name string) (*catalog.TableInfo, error) {
	s.cat.Reload(db, name)
	return s.cat.GetTable(ctx, db, name)
}

// addIndex validates the index against the table's definition and runs it
// as an ADD INDEX job (package ddl: delete only, write only, backfill,
// public; a failed backfill, e.g. a duplicate in a UNIQUE index, removes
// the index again).
func (s *Session) addIndex(ctx context.Context, stmt ast.StmtNode, tn *ast.TableName, c *ast.Constraint, unique bool) error {
	db, err := s.dbFor(ctx, tn.Schema.O)
	if err != nil {
		return err
	}
	t, err := s.freshTable(ctx, db, tn.Name.O)
	if err != nil {
		return err
	}
	if c.IfNotExists && c.Name != "" && t.FindIndex(c.Name) != nil {
		return nil
	}
	ix, err := newIndexInfo(t, c.Name, c.Keys, unique, c.Option)
	if err != nil {
		return err
	}
	return s.submitDDL(ctx, stmt, &ddl.Job{Type: ddl.ActionAddIndex, SchemaID: db.ID, SchemaName: db.Name,
		TableID: t.ID, TableName: t.Name, Index: ix, IfNotExists: c.IfNotExists})
}

// dropIndex runs a DROP INDEX job: write only (queries stop reading it),
// then absent. Its entries stay under an id never reused.
func (s *Session) dropIndex(ctx context.Context, stmt ast.StmtNode, tn *ast.TableName, name string, ifExists bool) error {
	db, err := s.dbFor(ctx, tn.Schema.O)
	if err != nil {
		return err
	}
	t, err := s.freshTable(ctx, db, tn.Name.O)
	if err != nil {
		return err
	}
	ix := t.FindIndex(name)
	if ix == nil {
		if ifExists {
			return nil
		}
		return errno.New(errCantDropKey, "Can't DROP '%s'; check that column/key exists", name)
	}
	if ix.Primary {
		return errno.NotSupported("dropping a PRIMARY KEY")
	}
	return s.submitDDL(ctx, stmt, &ddl.Job{Type: ddl.ActionDropIndex, SchemaID: db.ID, SchemaName: db.Name,
		TableID: t.ID, TableName: t.Name, IndexName: name, IfExists: ifExists})
}

// adminCheck runs ADMIN CHECK TABLE t[, ...] / ADMIN CHECK INDEX t idx at
// one snapshot: every row has its entry in each public index (same key,
// same value) and every index entry belongs to a row. The rows' expected
// entries are held in memory (bounded by the table's size).
func (s *Session) adminCheck(ctx context.Context, x *ast.AdminStmt) (*executor.Result, error) {
	txn, err := s.dom.Store().Begin(ctx, kv.TxnOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer func() { _ = txn.Rollback(context.WithoutCancel(ctx)) }()
	for _, tn := range x.Tables {
		db, err := s.dbFor(ctx, tn.Schema.O)
		if err != nil {
			return nil, err
		}
		t, err := s.freshTable(ctx, db, tn.Name.O)
		if err != nil {
			return nil, err
		}
		var ixs []*catalog.IndexInfo
		if x.Tp == ast.AdminCheckIndex {
			ix := t.FindIndex(x.Index)
			if ix == nil || !ix.Public() {
				return nil, errno.New(errno.ErrUnknown, "index %s not found in table %s", x.Index, t.Name)
			}
			ixs = []*catalog.IndexInfo{ix}
		} else {
			for _, ix := range t.Indices {
				if ix.Public() {
					ixs = append(ixs, ix)
				}
			}
		}
		if err := checkIndexes(ctx, txn, t, ixs); err != nil {
			return nil, err
		}
	}
	return &executor.Result{}, nil
}

// expected is a row's entry in one index.
type expected struct {
	value  []byte
	handle int64
	vals   string
}

func checkIndexes(ctx context.Context, txn kv.Txn, t *catalog.TableInfo, ixs []*catalog.IndexInfo) error {
	if len(ixs) == 0 {
		return nil
	}
	want := make([]map[string]expected, len(ixs))
	for i := range want {
		want[i] = map[string]expected{}
	}
	row := make([]types.Datum, t.RowWidth())
	var rows int64
	start, end := tablecodec.RecordRange(t.ID)
	for {
		pairs, err := txn.Scan(ctx, start, end, adminCheckPage, false)
		if err != nil {
			return err
		}
		for _, kv := range pairs {
			if err := t.DecodeRow(kv.Key, kv.Value, row); err != nil {
				return fmt.Errorf("admin check: decode row of %s: %w", t.Name, err)
			}
			rows++
			h := row[len(t.Columns)].Int64()
			for i, ix := range ixs {
				k, v, _ := table.IndexEntry(nil, t, ix, row, h)
				vals := make([]types.Datum, len(ix.Columns))
				for j, c := range ix.Columns {
					vals[j] = row[c.Offset]
				}
				want[i][string(k)] = expected{value: v, handle: h, vals: table.FormatValues(vals)}
			}
		}
		if len(pairs) < adminCheckPage {
			break
		}
		last := pairs[len(pairs)-1].Key
		start = append(append(make([]byte, 0, len(last)+1), last...), 0)
	}
	for i, ix := range ixs {
		var entries int64
		start, end := tablecodec.IndexRange(t.ID, ix.ID)
		for {
			pairs, err := txn.Scan(ctx, start, end, adminCheckPage, false)
			if err != nil {
				return err
			}
			for _, kv := range pairs {
				entries++
				_, _, vals, kh, hasH, err := tablecodec.DecodeIndexKey(kv.Key, len(ix.Columns))
				if err != nil {
					return errno.New(errDataInconsistent, "data inconsistency in table: %s, index: %s, malformed key %x: %v", t.Name, ix.Name, kv.Key, err)
				}
				h, herr := tablecodec.DecodeIndexHandle(kh, hasH, kv.Value)
				e, ok := want[i][string(kv.Key)]
				switch {
				case herr != nil:
					return errno.New(errDataInconsistent, "data inconsistency in table: %s, index: %s, index-values:%q has a malformed value %x", t.Name, ix.Name, table.FormatValues(vals), kv.Value)
				case !ok:
					return errno.New(errDataInconsistent, "data inconsistency in table: %s, index: %s, handle: %d, index-values:%q != record-values:<none>", t.Name, ix.Name, h, table.FormatValues(vals))
				case !bytes.Equal(e.value, kv.Value):
					return errno.New(errDataInconsistent, "data inconsistency in table: %s, index: %s, handle: %d, index-values:%q (handle %d) != record-values:%q", t.Name, ix.Name, e.handle, table.FormatValues(vals), h, e.vals)
				}
				delete(want[i], string(kv.Key))
			}
			if len(pairs) < adminCheckPage {
				break
			}
			last := pairs[len(pairs)-1].Key
			start = append(append(make([]byte, 0, len(last)+1), last...), 0)
		}
		for _, e := range want[i] {
			return errno.New(errAdminCheckTable, "admin check table %s failed: index %s has %d entries for %d rows; the row with handle %d (values %q) has no entry", t.Name, ix.Name, entries, rows, e.handle, e.vals)
		}
	}
	return nil
}

// showIndex answers SHOW INDEX / KEYS FROM t in MySQL's column layout.
func (s *Session) showIndex(ctx context.Context, x *ast.ShowStmt) (*executor.Result, error) {
	t, err := s.showTable(ctx, x.Table, x.DBName)
	if err != nil {
		return nil, err
	}
	intCol := func(name string) executor.ResultColumn {
		return executor.ResultColumn{Name: name, OrgName: name, Type: types.Int64Type}
	}
	res := &executor.Result{Columns: []executor.ResultColumn{
		strCol("Table", 64), intCol("Non_unique"), strCol("Key_name", 64), intCol("Seq_in_index"), strCol("Column_name", 64),
		strCol("Collation", 1), intCol("Cardinality"), intCol("Sub_part"), strCol("Packed", 10), strCol("Null", 3),
		strCol("Index_type", 16), strCol("Comment", 16), strCol("Index_comment", 1024), strCol("Visible", 3), strCol("Expression", 64), strCol("Clustered", 3),
	}}
	add := func(key string, unique bool, seq int, c *catalog.ColumnInfo, comment string, clustered bool) {
		nonUnique, null, cl := int64(1), "YES", "NO"
		if unique {
			nonUnique = 0
		}
		if c.Type.NotNull() {
			null = ""
		}
		if clustered {
			cl = "YES"
		}
		res.Rows = append(res.Rows, []types.Datum{
			types.NewString(t.Name), types.NewInt(nonUnique), types.NewString(key), types.NewInt(int64(seq)), types.NewString(c.Name),
			types.NewString("A"), types.NewInt(0), types.NullDatum, types.NullDatum, types.NewString(null),
			types.NewString("BTREE"), types.NewString(""), types.NewString(comment), types.NewString("YES"), types.NullDatum, types.NewString(cl),
		})
	}
	if t.PKIsHandle {
		add("PRIMARY", true, 1, t.Columns[t.HandleOffset], "", true)
	}
	for _, ix := range t.Indices {
		if !ix.Public() {
			continue
		}
		for i, c := range ix.Columns {
			add(ix.Name, ix.Unique, i+1, t.Columns[c.Offset], ix.Comment, false)
		}
	}
	return filterShow(res, x, s)
}

// indexDefs renders the public indexes of t as SHOW CREATE TABLE lines.
func indexDefs(t *catalog.TableInfo) []string {
	var out []string
	for _, ix := range t.Indices {
		if !ix.Public() {
			continue
		}
		cols := make([]string, len(ix.Columns))
		for i, c := range ix.Columns {
			cols[i] = "`" + t.Columns[c.Offset].Name + "`"
		}
		var line string
		switch {
		case ix.Primary:
			line = "  PRIMARY KEY (" + strings.Join(cols, ",") + ") /*T![clustered_index] NONCLUSTERED */"
		case ix.Unique:
			line = "  UNIQUE KEY `" + ix.Name + "` (" + strings.Join(cols, ",") + ")"
		default:
			line = "  KEY `" + ix.Name + "` (" + strings.Join(cols, ",") + ")"
		}
		if ix.Comment != "" {
			line += " COMMENT '" + strings.ReplaceAll(ix.Comment, "'", "''") + "'"
		}
		out = append(out, line)
	}
	return out
}
