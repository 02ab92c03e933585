package executor

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/sql/ddl"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/table"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
)

// Admin runs ADMIN CHECK TABLE / INDEX, ADMIN SHOW DDL [JOBS] and ADMIN
// CANCEL DDL JOBS for the session env.
func (e *Executor) Admin(ctx context.Context, x *ast.AdminStmt, env StmtEnv) (*Result, error) {
	switch x.Tp {
	case ast.AdminCheckTable, ast.AdminCheckIndex:
		return e.adminCheck(ctx, env, x)
	case ast.AdminShowDDL:
		return e.adminShowDDL(ctx, env)
	case ast.AdminShowDDLJobs:
		return e.adminShowDDLJobs(ctx, env, x)
	case ast.AdminCancelDDLJobs:
		return e.adminCancelDDLJobs(ctx, env, x)
	}
	return nil, errno.NotSupported("this ADMIN statement")
}

// adminCheck runs ADMIN CHECK TABLE t[, ...] / ADMIN CHECK INDEX t idx at
// one snapshot: every row has its entry in each public index (same key,
// same value) and every index entry belongs to a row. The rows' expected
// entries are held in memory (bounded by the table's size).
func (e *Executor) adminCheck(ctx context.Context, env StmtEnv, x *ast.AdminStmt) (*Result, error) {
	txn, err := e.dom.Store().Begin(ctx, kv.TxnOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer func() { _ = txn.Rollback(context.WithoutCancel(ctx)) }()
	for _, tn := range x.Tables {
		db, err := e.dbFor(ctx, env, tn.Schema.O)
		if err != nil {
			return nil, err
		}
		t, err := e.freshTable(ctx, db, tn.Name.O)
		if err != nil {
			return nil, err
		}
		var ixs []*model.IndexInfo
		if x.Tp == ast.AdminCheckIndex {
			ix := t.FindIndex(x.Index)
			if ix == nil || !ix.Public() {
				return nil, errno.New(errno.ErrUnknown, "index %s not found in table %s", x.Index, t.Name)
			}
			if t.HasEntries(ix) { // a clustered PRIMARY KEY's entries are the rows
				ixs = []*model.IndexInfo{ix}
			}
		} else {
			for _, ix := range t.Indices {
				if ix.Public() && t.HasEntries(ix) {
					ixs = append(ixs, ix)
				}
			}
		}
		if err := checkIndexes(ctx, txn, t, ixs); err != nil {
			return nil, err
		}
	}
	return &Result{}, nil
}

// TiDB error codes of ADMIN CHECK.
const (
	errAdminCheckTable  uint16 = 8003 // index count != table count
	errDataInconsistent uint16 = 8223 // an entry does not match its row
)

// adminCheckPage is how many keys ADMIN CHECK reads per Txn.Scan.
const adminCheckPage = 1024

// expected is a row's entry in one index.
type expected struct {
	value  []byte
	handle tablecodec.Handle
	vals   string
}

func checkIndexes(ctx context.Context, txn kv.Txn, t *model.TableInfo, ixs []*model.IndexInfo) error {
	if len(ixs) == 0 && !t.CommonHandle {
		return nil
	}
	want := make([]map[string]expected, len(ixs))
	for i := range want {
		want[i] = map[string]expected{}
	}
	row := make([]types.Datum, t.RowWidth())
	var rows int64
	start, end := tablecodec.RecordRange(t.ID)
	err := kv.ScanPages(ctx, txn, start, end, adminCheckPage, func(p kv.KvPair) error {
		if err := t.DecodeRow(p.Key, p.Value, row); err != nil {
			return fmt.Errorf("admin check: decode row of %s: %w", t.Name, err)
		}
		rows++
		h := tablecodec.HandleOfDatum(row[len(t.Columns)]).Clone()
		if t.CommonHandle && !h.Equal(t.HandleOf(row)) {
			return errno.New(errDataInconsistent, "data inconsistency in table: %s, the row keyed %s holds the primary key values of %s", t.Name, h, t.HandleOf(row))
		}
		for i, ix := range ixs {
			k, v, _ := table.IndexEntry(nil, t, ix, row, h)
			vals := make([]types.Datum, len(ix.Columns))
			for j, c := range ix.Columns {
				vals[j] = row[c.Offset]
			}
			want[i][string(k)] = expected{value: v, handle: h, vals: table.FormatValues(vals)}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i, ix := range ixs {
		var entries int64
		start, end := tablecodec.IndexRange(t.ID, ix.ID)
		err := kv.ScanPages(ctx, txn, start, end, adminCheckPage, func(p kv.KvPair) error {
			entries++
			_, _, vals, kh, hasH, err := tablecodec.DecodeIndexKey(p.Key, len(ix.Columns), t.CommonHandle)
			if err != nil {
				return errno.New(errDataInconsistent, "data inconsistency in table: %s, index: %s, malformed key %x: %v", t.Name, ix.Name, p.Key, err)
			}
			h, herr := tablecodec.DecodeIndexHandle(kh, hasH, p.Value, t.CommonHandle)
			e, ok := want[i][string(p.Key)]
			switch {
			case herr != nil:
				return errno.New(errDataInconsistent, "data inconsistency in table: %s, index: %s, index-values:%q has a malformed value %x", t.Name, ix.Name, table.FormatValues(vals), p.Value)
			case !ok:
				return errno.New(errDataInconsistent, "data inconsistency in table: %s, index: %s, handle: %s, index-values:%q != record-values:<none>", t.Name, ix.Name, h, table.FormatValues(vals))
			case !bytes.Equal(e.value, p.Value):
				return errno.New(errDataInconsistent, "data inconsistency in table: %s, index: %s, handle: %s, index-values:%q (handle %s) != record-values:%q", t.Name, ix.Name, e.handle, table.FormatValues(vals), h, e.vals)
			}
			delete(want[i], string(p.Key))
			return nil
		})
		if err != nil {
			return err
		}
		for _, e := range want[i] {
			return errno.New(errAdminCheckTable, "admin check table %s failed: index %s has %d entries for %d rows; the row with handle %s (values %q) has no entry", t.Name, ix.Name, entries, rows, e.handle, e.vals)
		}
	}
	return nil
}

// adminShowDDL answers ADMIN SHOW DDL: the schema version, the owner and
// the running jobs, with TiDB's columns.
func (e *Executor) adminShowDDL(ctx context.Context, env StmtEnv) (*Result, error) {
	o, _, err := e.dom.DDL().Owner(ctx)
	if err != nil {
		return nil, err
	}
	running, _, err := e.dom.DDL().Jobs(ctx, 0)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(running))
	for i, j := range running {
		ids[i] = fmt.Sprintf("ID:%d, Type:%s, State:%s, SchemaState:%s, SchemaID:%d, TableID:%d, RowCount:%d", j.ID, j.Type, j.State, j.SchemaState, j.SchemaID, j.TableID, j.RowCount)
	}
	res := &Result{Columns: []ResultColumn{
		{Name: "SCHEMA_VER", OrgName: "SCHEMA_VER", Type: types.Int64Type}, StringColumn("OWNER_ID", 64), StringColumn("OWNER_ADDRESS", 64),
		StringColumn("RUNNING_JOBS", 1024), StringColumn("SELF_ID", 64), StringColumn("QUERY", 1024),
	}}
	query := ""
	if len(running) > 0 {
		query = running[0].Query
	}
	res.Rows = append(res.Rows, []types.Datum{types.NewInt(e.dom.Catalog().Version()), types.NewString(o.NodeID), types.NewString(o.Addr),
		types.NewString(strings.Join(ids, "\n")), types.NewString(e.dom.DDL().NodeID()), types.NewString(query)})
	return res, nil
}

// adminShowDDLJobs answers ADMIN SHOW DDL JOBS [n] [WHERE ...]: the queued
// jobs, then the last n (10) ended ones, newest first, in TiDB's columns.
func (e *Executor) adminShowDDLJobs(ctx context.Context, env StmtEnv, x *ast.AdminStmt) (*Result, error) {
	n := 10
	if x.JobNumber > 0 {
		n = int(x.JobNumber)
	}
	running, history, err := e.dom.DDL().Jobs(ctx, n)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: []ResultColumn{
		IntColumn("JOB_ID"), StringColumn("DB_NAME", 64), StringColumn("TABLE_NAME", 64), StringColumn("JOB_TYPE", 64), StringColumn("SCHEMA_STATE", 64),
		IntColumn("SCHEMA_ID"), IntColumn("TABLE_ID"), IntColumn("ROW_COUNT"), StringColumn("CREATE_TIME", 19), StringColumn("START_TIME", 19),
		StringColumn("END_TIME", 19), StringColumn("STATE", 64),
	}}
	at := func(ms int64) types.Datum {
		if ms == 0 {
			return types.NullDatum
		}
		return types.NewString(time.UnixMilli(ms).Format(time.DateTime))
	}
	for i := len(running) - 1; i >= 0; i-- { // newest first, as TiDB
		history = append([]*ddl.Job{running[i]}, history...)
	}
	for _, j := range history {
		res.Rows = append(res.Rows, []types.Datum{
			types.NewInt(j.ID), types.NewString(j.SchemaName), types.NewString(j.TableName), types.NewString(string(j.Type)),
			types.NewString(j.SchemaState), types.NewInt(j.SchemaID), types.NewInt(j.TableID), types.NewInt(j.RowCount),
			at(j.CreateMs), at(j.StartMs), at(j.EndMs), types.NewString(string(j.State)),
		})
	}
	if x.Where != nil {
		return FilterShow(res, &ast.ShowStmt{Where: x.Where}, env)
	}
	return res, nil
}

// adminCancelDDLJobs answers ADMIN CANCEL DDL JOBS id, ...: one row per
// job, "successful" or the error (8224 not found, 8225 finished, 8226 too
// late), as TiDB. It needs SUPER.
func (e *Executor) adminCancelDDLJobs(ctx context.Context, env StmtEnv, x *ast.AdminStmt) (*Result, error) {
	if err := env.CheckGlobal(mysql.SuperPriv, "SUPER"); err != nil {
		return nil, err
	}
	res := &Result{Columns: []ResultColumn{
		{Name: "JOB_ID", OrgName: "JOB_ID", Type: types.Int64Type}, StringColumn("RESULT", 128),
	}}
	for _, id := range x.JobIDs {
		msg := "successful"
		if err := e.dom.DDL().Cancel(ctx, id); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			e := errno.FromError(err)
			msg = fmt.Sprintf("error: [%d]%s", e.Code, e.Msg)
		}
		res.Rows = append(res.Rows, []types.Datum{types.NewInt(id), types.NewString(msg)})
	}
	return res, nil
}
