package executor

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/planner"
	"github.com/stratadb/strata/sql/types"
)

// Explain runs EXPLAIN [ANALYZE] [FORMAT = 'row' | 'brief'] of a SELECT,
// UPDATE, DELETE, INSERT or REPLACE: the physical plan in TiDB's tabular form. ANALYZE
// (SELECT only) runs the statement in tx's transaction and adds the rows,
// loops and time each operator produced.
func (e *Executor) Explain(ctx context.Context, x *ast.ExplainStmt, env expr.Env, tx TxnSource) (*Result, error) {
	format := strings.ToLower(x.Format)
	switch format {
	case "", "row", "brief":
	default:
		return nil, errno.New(errno.ErrNotSupportedYet, "This version of Strata doesn't yet support 'EXPLAIN FORMAT = %s'; use 'row' or 'brief'", x.Format)
	}
	var root planner.Plan
	var sel *planner.SelectPlan
	switch s := x.Stmt.(type) {
	case *ast.SelectStmt, *ast.SetOprStmt:
		p, err := e.planner.PlanQuery(ctx, s, env, false)
		if err != nil {
			return nil, err
		}
		sel, root = p, p.Root
	case *ast.UpdateStmt, *ast.DeleteStmt:
		if x.Analyze {
			return nil, errno.NotSupported("EXPLAIN ANALYZE of UPDATE or DELETE")
		}
		var refs *ast.TableRefsClause
		var where ast.ExprNode
		var order *ast.OrderByClause
		var limit *ast.Limit
		tp := "Update"
		if u, ok := s.(*ast.UpdateStmt); ok {
			refs, where, order, limit = u.TableRefs, u.Where, u.Order, u.Limit
			if IsMultiTableUpdate(u) {
				return nil, errno.NotSupported("EXPLAIN of multi-table UPDATE")
			}
		} else {
			d := s.(*ast.DeleteStmt)
			refs, where, order, limit, tp = d.TableRefs, d.Where, d.Order, d.Limit, "Delete"
			if d.IsMultiTable {
				return nil, errno.NotSupported("EXPLAIN of multi-table DELETE")
			}
		}
		src, err := e.resolveTable(ctx, refs, env, strings.ToUpper(tp))
		if err != nil {
			return nil, err
		}
		sp, err := e.planner.PlanScan(src, where, order, limit, env)
		if err != nil {
			return nil, err
		}
		root = planner.ExplainDML(tp, sp.Root)
	case *ast.InsertStmt:
		if x.Analyze {
			return nil, errno.NotSupported("EXPLAIN ANALYZE of INSERT or REPLACE")
		}
		if _, err := e.resolveTable(ctx, s.Table, env, "INSERT"); err != nil {
			return nil, err
		}
		root = planner.ExplainInsert()
	default:
		return nil, errno.NotSupported("EXPLAIN of this statement")
	}
	var stats map[planner.Plan]*opStats
	if x.Analyze {
		stats = map[planner.Plan]*opStats{}
		if _, err := e.runSelect(ctx, sel, tx, stats); err != nil {
			return nil, err
		}
	}
	return explainResult(root, format == "brief", stats), nil
}

func explainResult(root planner.Plan, brief bool, stats map[planner.Plan]*opStats) *Result {
	names := []string{"id", "estRows", "task", "access object", "operator info"}
	if stats != nil {
		names = []string{"id", "estRows", "actRows", "task", "access object", "execution info", "operator info", "memory", "disk"}
	}
	res := &Result{}
	for _, n := range names {
		res.Columns = append(res.Columns, ResultColumn{Name: n, Type: types.VarcharType})
	}
	var last *opStats // a cop task's rows are its root reader's
	var cop *copStats // the stores' summaries of the reader above
	copRow := 0       // cop rows shown under it (executors, last first)
	for _, r := range planner.Explain(root) {
		id := r.ID
		if brief {
			id = briefID(id, r.Plan.Base())
		}
		vals := []string{id, r.EstRows, r.Task, r.Access, r.Info}
		if stats != nil {
			act, info := "0", "time:0s, loops:0"
			st, ok := stats[r.Plan]
			if ok {
				cop, copRow = st.cop, 0
				if cop != nil && cop.calls == 0 { // it read through the transaction
					cop = nil
				}
			}
			isReader := false
			switch r.Plan.(type) {
			case *planner.TableReader, *planner.IndexReader, *planner.IndexLookUp:
				isReader = true
			}
			switch {
			case ok:
				last = st
				act = strconv.FormatInt(st.rows, 10)
				info = fmt.Sprintf("time:%s, loops:%d", st.time.Round(time.Microsecond), st.loops)
				if cop != nil && isReader {
					info += ", " + cop.taskInfo()
				}
			case isReader && cop != nil:
				// The reader of a pushed aggregation: the operator above
				// sent its requests.
				n, _ := cop.execInfo(len(cop.execs) - 1)
				act, info = strconv.FormatInt(n, 10), cop.taskInfo()
			case r.Plan.Base().Task != "root" && cop != nil && copRow < len(cop.execs):
				// Cop operators are listed top down, the DAG's executors
				// bottom up.
				n, ti := cop.execInfo(len(cop.execs) - 1 - copRow)
				copRow++
				act, info = strconv.FormatInt(n, 10), ti
			case r.Plan.Base().Task != "root" && last != nil:
				// No filter below it (or an IndexLookUp's table side, which
				// no executor of the DAG stands for).
				act, info = strconv.FormatInt(last.rows, 10), "read by its root reader"
			}
			vals = []string{id, r.EstRows, act, r.Task, r.Access, info, r.Info, "N/A", "N/A"}
		}
		row := make([]datum, len(vals))
		for i, v := range vals {
			row[i] = types.NewString(v)
		}
		res.Rows = append(res.Rows, row)
	}
	return res
}

// briefID drops the operator's id: Point_Get_1 → Point_Get.
func briefID(id string, b *planner.BasePlan) string {
	return strings.Replace(id, b.ExplainID(), b.Tp, 1)
}
