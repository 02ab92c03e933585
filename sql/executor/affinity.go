package executor

import (
	"context"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/sql/collate"
	"github.com/stratadb/strata/sql/ddl"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/types"
)

// showAffinity answers SHOW AFFINITY [LIKE 'table' | WHERE ...] (TiDB
// 8.5.5): every visible table with an AFFINITY option and its group as PD
// reports it: the target leader and voter stores (NULL while PD has chosen
// none), the status (Pending, Preparing, Stable) and how many of the
// table's regions are already on the target.
func (e *Executor) showAffinity(ctx context.Context, env StmtEnv, x *ast.ShowStmt) (*Result, error) {
	pd, ok := e.dom.Store().(kv.AffinityAdmin)
	if !ok {
		return nil, errno.NotSupported("SHOW AFFINITY on this storage")
	}
	res := &Result{Columns: []ResultColumn{
		StringColumn("Db_name", 64), StringColumn("Table_name", 64), StringColumn("Partition_name", 64),
		IntColumn("Leader_store_id"), StringColumn("Voter_store_ids", 256), StringColumn("Status", 16),
		IntColumn("Region_count"), IntColumn("Affinity_region_count"),
	}}
	type entry struct {
		db string
		t  *model.TableInfo
	}
	var tables []entry
	var ids []int64
	err := e.eachTable(ctx, env, func(db string, t *model.TableInfo) {
		if t.Affinity != "" && env.VisibleTable(db, t.Name) {
			tables = append(tables, entry{db, t})
			ids = append(ids, t.ID)
		}
	})
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return filterShowOn(res, x, env, 1)
	}
	groups, err := pd.AffinityGroups(ctx, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]kv.AffinityGroup, len(groups))
	for _, g := range groups {
		byID[g.TableID] = g
	}
	for _, te := range tables {
		g := byID[te.t.ID]
		leader, voters := types.NullDatum, types.NullDatum
		if g.LeaderStoreID != 0 {
			leader = types.NewInt(int64(g.LeaderStoreID))
			vs := make([]string, len(g.VoterStoreIDs))
			for i, v := range g.VoterStoreIDs {
				vs[i] = strconv.FormatUint(v, 10)
			}
			voters = types.NewString(strings.Join(vs, ","))
		}
		status := "Pending"
		if g.Configured && g.Phase != "" {
			status = strings.ToUpper(g.Phase[:1]) + g.Phase[1:]
		}
		res.Rows = append(res.Rows, []types.Datum{
			types.NewString(te.db), types.NewString(te.t.Name), types.NullDatum, leader, voters,
			types.NewString(status), types.NewInt(int64(g.RegionCount)), types.NewInt(int64(g.AffinityRegionCount)),
		})
	}
	return filterShowOn(res, x, env, 1)
}

// tableOptions are the table options of ALTER TABLE ... <option> [,
// <option>] that change the table's definition: COMMENT and AFFINITY, run
// as one job. ENGINE = InnoDB and AUTO_INCREMENT are accepted elsewhere.
func tableOptions(sp *ast.AlterTableSpec) (*ddl.TableOptions, error) {
	var o ddl.TableOptions
	for _, opt := range sp.Options {
		switch opt.Tp {
		case ast.TableOptionComment:
			c := opt.StrValue
			o.Comment = &c
		case ast.TableOptionAffinity:
			level, err := ddl.Affinity(opt.StrValue)
			if err != nil {
				return nil, err
			}
			o.Affinity = &level
		case ast.TableOptionEngine:
			if opt.StrValue != "" && !strings.EqualFold(opt.StrValue, "InnoDB") {
				return nil, errno.New(errUnknownStorageEngine, "Unknown storage engine '%s'", opt.StrValue)
			}
		case ast.TableOptionCharset, ast.TableOptionCollate:
			if opt.Tp == ast.TableOptionCharset && opt.UintValue == ast.TableOptionCharsetWithConvertTo {
				return nil, errno.NotSupported("ALTER TABLE ... CONVERT TO CHARACTER SET")
			}
			c, err := ddl.TableOptionsCollation(sp.Options, collate.Default)
			if err != nil {
				return nil, err
			}
			name := c.Name
			o.Collate = &name
		case ast.TableOptionAutoIncrement:
		default:
			return nil, errno.NotSupported("this ALTER TABLE table option")
		}
	}
	return &o, nil
}

// errUnknownStorageEngine is MySQL's ER_UNKNOWN_STORAGE_ENGINE.
const errUnknownStorageEngine uint16 = 1286

// alterTableOptions runs an ALTER TABLE ... <table option> clause: the
// definition's options as one job; AUTO_INCREMENT = N raises the next
// automatic value to N (never lowers it, as InnoDB).
func (e *Executor) alterTableOptions(ctx context.Context, env StmtEnv, stmt *ast.AlterTableStmt, sp *ast.AlterTableSpec) error {
	db, t, err := e.alterTarget(ctx, env, stmt.Table)
	if err != nil {
		return err
	}
	o, err := tableOptions(sp)
	if err != nil {
		return err
	}
	if o.Comment != nil || o.Affinity != nil || o.Collate != nil {
		err := e.submitDDL(ctx, stmt, &ddl.Job{Type: ddl.ActionAlterTableOptions, SchemaID: db.ID, SchemaName: db.Name,
			TableID: t.ID, TableName: t.Name, TableOptions: o})
		if err != nil {
			return err
		}
	}
	return e.rebaseAutoInc(ctx, t, sp.Options)
}

// rebaseAutoInc applies an AUTO_INCREMENT = N table option of CREATE or
// ALTER TABLE: t's next automatic value is at least N (the stored bound is
// raised to N-1; it is never lowered, as InnoDB).
func (e *Executor) rebaseAutoInc(ctx context.Context, t *model.TableInfo, opts []*ast.TableOption) error {
	for _, o := range opts {
		if o.Tp == ast.TableOptionAutoIncrement && o.UintValue > 1 && t.AutoIncOffset >= 0 {
			if err := e.dom.AutoInc().Rebase(ctx, t.ID, int64(min(o.UintValue-1, 1<<62))); err != nil {
				return err
			}
		}
	}
	return nil
}
