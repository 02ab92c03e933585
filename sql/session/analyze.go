package session

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/stratadb/strata/sql/catalog"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/executor"
	"github.com/stratadb/strata/sql/statistics"
	"github.com/stratadb/strata/sql/types"
)

// ANALYZE TABLE t [, t2 …] reads each table at one snapshot and stores its
// statistics (package statistics), which the planner then uses instead of
// pseudo estimates. Options (INDEX, COLUMNS, WITH n BUCKETS …) are
// accepted; every column and index is analyzed.
func (s *Session) analyze(ctx context.Context, x *ast.AnalyzeTableStmt) (*executor.Result, error) {
	if len(x.PartitionNames) > 0 {
		return nil, errno.NotSupported("ANALYZE of partitions")
	}
	for _, tn := range x.TableNames {
		t, err := s.showTable(ctx, tn, "")
		if err != nil {
			return nil, err
		}
		st, err := s.dom.Stats().Analyze(ctx, t)
		if err != nil {
			return nil, fmt.Errorf("analyze table %s: %w", t.Name, err)
		}
		if err := s.dom.Stats().Save(ctx, st); err != nil {
			return nil, fmt.Errorf("analyze table %s: saving statistics: %w", t.Name, err)
		}
	}
	return &executor.Result{}, nil
}

// statsTable is a table with statistics or modify counts, with its names.
type statsTable struct {
	db       string
	t        *catalog.TableInfo
	st       *statistics.Table // nil: never analyzed
	delta    statistics.Delta
	hasDelta bool
}

func (s *Session) analyzedTables(ctx context.Context) ([]statsTable, error) {
	dbs, err := s.cat.ListDBs(ctx)
	if err != nil {
		return nil, err
	}
	var out []statsTable
	for _, db := range dbs {
		if !s.visibleDB(db.Name) {
			continue
		}
		ts, err := s.cat.ListTables(ctx, db)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			st := s.dom.Stats().Get(t.ID)
			d, ok := s.dom.Stats().Delta(t.ID)
			if st != nil || ok {
				out = append(out, statsTable{db: db.Name, t: t, st: st, delta: d, hasDelta: ok})
			}
		}
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
func (s *Session) showStats(ctx context.Context, x *ast.ShowStmt) (*executor.Result, error) {
	tables, err := s.analyzedTables(ctx)
	if err != nil {
		return nil, err
	}
	res := &executor.Result{}
	dt := func(st *statistics.Table) string {
		if st == nil {
			return ""
		}
		return st.Updated.Local().Format("2006-01-02 15:04:05")
	}
	num := func(v int64) types.Datum { return types.NewInt(v) }
	if x.Tp == ast.ShowStatsMeta {
		res.Columns = []executor.ResultColumn{strCol("Db_name", 64), strCol("Table_name", 64), strCol("Partition_name", 64),
			strCol("Update_time", 19), intCol("Modify_count"), intCol("Row_count")}
		for _, t := range tables {
			// Modify_count and Row_count as of the last statistics lease
			// (every SQL node's committed writes, flushed each lease).
			count := t.delta.Count
			if !t.hasDelta {
				count = t.st.Count
			}
			res.Rows = append(res.Rows, append(strRow(t.db, t.t.Name, "", dt(t.st)), num(t.delta.Modify), num(count)))
		}
		return filterShow(res, x, s)
	}
	res.Columns = []executor.ResultColumn{strCol("Db_name", 64), strCol("Table_name", 64), strCol("Partition_name", 64),
		strCol("Column_name", 64), intCol("Is_index"), strCol("Update_time", 19), intCol("Distinct_count"),
		intCol("Null_count"), strCol("Avg_col_size", 20), strCol("Correlation", 20), strCol("Load_status", 20),
		intCol("Total_mem_usage"), intCol("Hist_mem_usage"), intCol("Topn_mem_usage"), intCol("Cms_mem_usage")}
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
		row := strRow(t.db, t.t.Name, "", c.Name)
		row = append(row, num(isIndex), types.NewString(dt(t.st)), num(c.NDV), num(c.NullCount))
		row = append(row, strRow(strconv.FormatFloat(avg, 'f', 2, 64), "0", "allLoaded")...)
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
	return filterShow(res, x, s)
}
