package executor

import (
	"context"
	"fmt"
	"hash/crc32"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
)

// checksumPage is how many rows CHECKSUM TABLE reads per Txn.Scan.
const checksumPage = 1024

// ChecksumTable answers MySQL's CHECKSUM TABLE: one row per table, Table
// ("db.name") and Checksum. A table that does not exist gets a NULL
// checksum and a 1146 warning, as in MySQL; a view is refused the same
// way MySQL refuses it (its checksum is NULL too).
//
// The checksum is a function of the rows' values only: the sum (mod 2^32)
// over the rows of the CRC-32 of the row's public columns, each in its
// memcomparable encoding (NULL has its own flag), in declaration order.
// Row order, row ids, regions and the history of the table (instant ADD
// COLUMN defaults, DDL) do not change it, so a table dumped and reloaded
// into another cluster checksums equal. The number is not the one MySQL
// computes from its own row format. Rows are read from one snapshot (at
// readTS when it is not 0: the session's tidb_snapshot), a page at a
// time. With quick (CHECKSUM TABLE ... QUICK) every checksum is
// NULL: MySQL has a live checksum only for MyISAM tables and answers NULL
// for InnoDB's, without reading them.
func (e *Executor) ChecksumTable(ctx context.Context, tables []*ast.TableName, quick bool, readTS uint64, env StmtEnv) (*Result, error) {
	res := &Result{Columns: []ResultColumn{
		{Name: "Table", Type: types.FieldType{Tp: mysql.TypeVarchar, Flen: 129}},
		{Name: "Checksum", Type: types.FieldType{Tp: mysql.TypeLonglong, Flen: 21, Flag: mysql.BinaryFlag}},
	}}
	txn, err := e.dom.Store().Begin(ctx, kv.TxnOptions{ReadOnly: true, StartTS: readTS})
	if err != nil {
		return nil, err
	}
	defer func() { _ = txn.Rollback(context.WithoutCancel(ctx)) }()
	for _, tn := range tables {
		db, err := e.dbFor(ctx, env, tn.Schema.O)
		var t *model.TableInfo
		if err == nil {
			t, err = e.freshTable(ctx, db, tn.Name.O)
		}
		schema := tn.Schema.O
		if db != nil {
			schema = db.Name
		}
		name := schema + "." + tn.Name.O
		if err != nil {
			if c := errno.FromError(err).Code; c != errno.ErrNoSuchTable && c != errno.ErrBadDB {
				return nil, err
			}
		}
		if err != nil || t.IsView() {
			res.Rows = append(res.Rows, []types.Datum{types.NewString(name), types.NullDatum})
			res.Warn(errno.ErrNoSuchTable, fmt.Sprintf("Table '%s' doesn't exist", name))
			continue
		}
		if quick {
			res.Rows = append(res.Rows, []types.Datum{types.NewString(name), types.NullDatum})
			continue
		}
		sum, err := checksumRows(ctx, txn, t)
		if err != nil {
			return nil, err
		}
		res.Rows = append(res.Rows, []types.Datum{types.NewString(name), types.NewInt(int64(sum))})
	}
	return res, nil
}

// checksumRows is the checksum of t's rows in txn's snapshot.
func checksumRows(ctx context.Context, txn kv.Txn, t *model.TableInfo) (uint32, error) {
	var cols []int
	for i, c := range t.Columns {
		if c.State == model.StatePublic {
			cols = append(cols, i)
		}
	}
	row := make([]types.Datum, t.RowWidth())
	var sum uint32
	var buf []byte
	start, end := tablecodec.RecordRange(t.ID)
	err := kv.ScanPages(ctx, txn, start, end, checksumPage, func(p kv.KvPair) error {
		if err := t.DecodeRow(p.Key, p.Value, row); err != nil {
			return fmt.Errorf("checksum table: decode row of %s: %w", t.Name, err)
		}
		buf = rowChecksumBytes(buf[:0], row, cols)
		sum += crc32.ChecksumIEEE(buf)
		return nil
	})
	return sum, err
}

// rowChecksumBytes appends the encoding CHECKSUM TABLE hashes for one row:
// the columns cols of row, each memcomparable.
func rowChecksumBytes(b []byte, row []types.Datum, cols []int) []byte {
	for _, i := range cols {
		b = tablecodec.AppendMemComparable(b, row[i])
	}
	return b
}
