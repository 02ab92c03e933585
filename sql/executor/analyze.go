package executor

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/model"
	"github.com/stratadb/strata/sql/statistics"
	"github.com/stratadb/strata/sql/types"
)

// ANALYZE TABLE t [, t2 …] reads each table at one snapshot and stores its
// statistics (package statistics), which the planner then uses instead of
// pseudo estimates. Options (INDEX, COLUMNS, WITH n BUCKETS …) are
// accepted; every column and index is analyzed.
func (e *Executor) Analyze(ctx context.Context, x *ast.AnalyzeTableStmt, env StmtEnv) (*Result, error) {
	if len(x.PartitionNames) > 0 {
		return nil, errno.NotSupported("ANALYZE of partitions")
	}
	for _, tn := range x.TableNames {
		t, err := e.showTable(ctx, env, tn, "")
		if err != nil {
			return nil, err
		}
		st, err := e.dom.Stats().Analyze(ctx, t)
		if err != nil {
			return nil, fmt.Errorf("analyze table %s: %w", t.Name, err)
		}
		if err := e.dom.Stats().Save(ctx, st); err != nil {
			return nil, fmt.Errorf("analyze table %s: saving statistics: %w", t.Name, err)
		}
	}
	return &Result{}, nil
}

// statsTable is a table with statistics or modify counts, with its names.
type statsTable struct {
	db       string
	t        *model.TableInfo
	st       *statistics.Table // nil: never analyzed
	delta    statistics.Delta
	hasDelta bool
}

func (e *Executor) analyzedTables(ctx context.Context, env StmtEnv) ([]statsTable, error) {
	var out []statsTable
	err := e.eachTable(ctx, env, func(db string, t *model.TableInfo) {
		st := e.dom.Stats().Get(t.ID)
		d, ok := e.dom.Stats().Delta(t.ID)
		if st != nil || ok {
			out = append(out, statsTable{db: db, t: t, st: st, delta: d, hasDelta: ok})
		}
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].db != out[j].db {
			return out[i].db < out[j].db
		}
		return out[i].t.Name < out[j].t.Name
	})
	return out, nil
}

// showStats answers SHOW STATS_META and SHOW STATS_HISTOGRAMS with TiDB's
// columns (LIKE and WHERE filter them as for other SHOW statements).
func (e *Executor) showStats(ctx context.Context, env StmtEnv, x *ast.ShowStmt) (*Result, error) {
	tables, err := e.analyzedTables(ctx, env)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	dt := func(st *statistics.Table) string {
		if st == nil {
			return ""
		}
		return st.Updated.Local().Format("2006-01-02 15:04:05")
	}
	num := func(v int64) types.Datum { return types.NewInt(v) }
	if x.Tp == ast.ShowStatsMeta {
		res.Columns = []ResultColumn{StringColumn("Db_name", 64), StringColumn("Table_name", 64), StringColumn("Partition_name", 64),
			StringColumn("Update_time", 19), IntColumn("Modify_count"), IntColumn("Row_count")}
		for _, t := range tables {
			// Modify_count and Row_count as of the last statistics lease
			// (every SQL node's committed writes, flushed each lease).
			count := t.delta.Count
			if !t.hasDelta {
				count = t.st.Count
			}
			res.Rows = append(res.Rows, append(StringRow(t.db, t.t.Name, "", dt(t.st)), num(t.delta.Modify), num(count)))
		}
		return FilterShow(res, x, env)
	}
	res.Columns = []ResultColumn{StringColumn("Db_name", 64), StringColumn("Table_name", 64), StringColumn("Partition_name", 64),
		StringColumn("Column_name", 64), IntColumn("Is_index"), StringColumn("Update_time", 19), IntColumn("Distinct_count"),
		IntColumn("Null_count"), StringColumn("Avg_col_size", 20), StringColumn("Correlation", 20), StringColumn("Load_status", 20),
		IntColumn("Total_mem_usage"), IntColumn("Hist_mem_usage"), IntColumn("Topn_mem_usage"), IntColumn("Cms_mem_usage")}
	add := func(t statsTable, c *statistics.Column, isIndex int64) {
		avg := 0.0
		if n := t.st.Count - c.NullCount; n > 0 {
			avg = float64(c.TotalSize) / float64(n)
		}
		hist, topn := int64(0), int64(0)
		for _, b := range c.Buckets {
			hist += int64(len(b.Lower) + len(b.Upper) + 16)
		}
		for _, it := range c.TopN {
			topn += int64(len(it.Value) + 8)
		}
		row := StringRow(t.db, t.t.Name, "", c.Name)
		row = append(row, num(isIndex), types.NewString(dt(t.st)), num(c.NDV), num(c.NullCount))
		row = append(row, StringRow(strconv.FormatFloat(avg, 'f', 2, 64), "0", "allLoaded")...)
		row = append(row, num(hist+topn), num(hist), num(topn), num(0))
		res.Rows = append(res.Rows, row)
	}
	for _, t := range tables {
		if t.st == nil {
			continue
		}
		for off, c := range t.st.Columns {
			if c != nil && off < len(t.t.Columns) && t.t.Columns[off].ID == c.ID {
				add(t, c, 0)
			}
		}
		for _, ix := range t.t.Indices {
			if c := t.st.Index(ix.ID); c != nil {
				add(t, c, 1)
			}
		}
	}
	return FilterShow(res, x, env)
}
