package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/stratadb/strata/kv/execdetails"
	"github.com/stratadb/strata/sql/domain"
	"github.com/stratadb/strata/sql/errno"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/planner"
	"github.com/stratadb/strata/sql/tablecodec"
	"github.com/stratadb/strata/sql/types"
)

// Executor runs DML statements. Safe for concurrent use.
type Executor struct {
	dom     *domain.Domain
	planner *planner.Planner
}

// New returns an Executor over the node's domain; its planner reads the
// domain's catalog, statistics and information_schema.
func New(dom *domain.Domain) *Executor {
	return &Executor{dom: dom, planner: &planner.Planner{Catalog: dom.Catalog(), Stats: dom.Stats(), System: dom.InfoSchema()}}
}

type datum = types.Datum

// handle identifies a row of its table (an int or a common handle).
type handle = tablecodec.Handle

// ResultColumn describes one column of a result set.
type ResultColumn = planner.ResultColumn

// resolveTable resolves the target of INSERT / UPDATE / DELETE: system
// tables are read-only (1044).
func (e *Executor) resolveTable(ctx context.Context, refs *ast.TableRefsClause, env expr.Env, what string) (*planner.Source, error) {
	src, err := e.planner.ResolveTable(ctx, refs, env, what)
	if err == nil && src.Mem != nil {
		return nil, planner.ErrReadOnlySystemTable(env.User(), src)
	}
	if err == nil && src.Sub != nil {
		return nil, errno.New(1288, "The target table %s of the %s is not updatable", src.DisplayName(), what)
	}
	return src, err
}

// Select runs a SELECT in tx's transaction: planned by sql/planner, run as
// a tree of streaming operators. FOR UPDATE and LOCK IN SHARE MODE lock
// the rows read (both take an exclusive lock: Strata has no shared locks)
// and, in pessimistic mode, return their latest committed values.
func (e *Executor) Select(ctx context.Context, s *ast.SelectStmt, env expr.Env, tx TxnSource) (*Result, error) {
	start := time.Now()
	p, err := e.planner.PlanSelect(ctx, s, env, false)
	execdetails.From(ctx).Since(execdetails.Compile, start)
	if err != nil {
		return nil, err
	}
	return e.runSelect(ctx, p, tx, nil)
}

// Query runs a query expression (a SELECT or a UNION) in tx's transaction.
func (e *Executor) Query(ctx context.Context, n ast.Node, env expr.Env, tx TxnSource) (*Result, error) {
	start := time.Now()
	p, err := e.planner.PlanQuery(ctx, n, env, false)
	execdetails.From(ctx).Since(execdetails.Compile, start)
	if err != nil {
		return nil, err
	}
	return e.runSelect(ctx, p, tx, nil)
}

// QueryColumns is SelectColumns for any query expression.
func (e *Executor) QueryColumns(ctx context.Context, n ast.Node, env expr.Env) ([]ResultColumn, error) {
	p, err := e.planner.PlanQuery(ctx, n, env, true)
	if err != nil {
		return nil, err
	}
	return p.Columns, nil
}

// SelectColumns plans s (with whatever parameters env binds) and returns its
// result columns without reading any rows; used to describe prepared
// statements.
func (e *Executor) SelectColumns(ctx context.Context, s *ast.SelectStmt, env expr.Env) ([]ResultColumn, error) {
	p, err := e.planner.PlanSelect(ctx, s, env, true)
	if err != nil {
		return nil, err
	}
	return p.Columns, nil
}

// runSelect runs p; stats, when not nil, collects per-operator numbers
// (EXPLAIN ANALYZE).
func (e *Executor) runSelect(ctx context.Context, p *planner.SelectPlan, tx TxnSource, stats map[planner.Plan]*opStats) (*Result, error) {
	rc := newRunCtx(e, tx, nil)
	defer rc.observeRPCs()
	if p.Src != nil || len(p.Subqueries) > 0 {
		// An autocommit point get may read the newest committed version
		// (no TSO round trip): the leader serves it after a ReadIndex and
		// checks locks, so it sees every write acknowledged before the
		// statement began, exactly as a fresh start_ts would.
		txn, err := tx.Txn(ctx, p.PointRead)
		if err != nil {
			return nil, err
		}
		rc.txn = txn
	}
	rc.bindSubqueries(ctx, p.Subqueries)
	if stats == nil {
		if proj, ok := p.Root.(*planner.Projection); ok {
			if pg, ok := proj.Children[0].(*planner.PointGet); ok {
				return rc.pointSelect(ctx, p.Columns, proj, pg)
			}
		}
	}
	op, err := rc.build(p.Root, stats)
	if err != nil {
		return nil, err
	}
	if stats != nil {
		// EXPLAIN ANALYZE: the rows are counted, not kept, so a result
		// that would not fit in memory can still be analysed.
		return &Result{Columns: p.Columns, Warnings: rc.warnings}, runOp(ctx, op, func(*Chunk) error { return nil })
	}
	rows, err := drain(ctx, op, rc.mem)
	if err != nil {
		return nil, err
	}
	return &Result{Columns: p.Columns, Rows: rows, Warnings: rc.warnings}, nil
}

// bindSubqueries sets each subquery's Run: its plan, built and drained in
// rc (the statement's transaction).
func (rc *runCtx) bindSubqueries(ctx context.Context, subs []*planner.Subquery) {
	for _, sq := range subs {
		root := sq.Plan.Root
		sq.Run = func() ([][]datum, error) {
			op, err := rc.build(root, nil)
			if err != nil {
				return nil, err
			}
			return drain(ctx, op, rc.mem)
		}
	}
}

// pointSelect runs Projection over PointGet, the point select, without
// operators or chunks: one row read, one row projected.
func (rc *runCtx) pointSelect(ctx context.Context, cols []ResultColumn, proj *planner.Projection, pg *planner.PointGet) (*Result, error) {
	w := len(pg.Src.Cols)
	slab := make([]datum, w+len(proj.Exprs))
	row, out := slab[:w:w], slab[w:]
	found, err := rc.readPoint(ctx, pg, row)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: cols}
	if !found {
		return res, nil
	}
	for j, e := range proj.Exprs {
		if out[j], err = e.Eval(row); err != nil {
			return nil, err
		}
	}
	res.Rows = [][]datum{out}
	return res, nil
}

// rowKeys returns the record keys of rows read from src.
func rowKeys(src *planner.Source, rows [][]datum) [][]byte {
	hOff := len(src.Table.Columns)
	keys := make([][]byte, len(rows))
	for i, r := range rows {
		keys[i] = tablecodec.AppendHandleRowKey(nil, src.Table.ID, tablecodec.HandleOfDatum(r[hOff]))
	}
	return keys
}

// decodeLatest decodes the values LockKeys returned (nil: the row is gone).
func decodeLatest(src *planner.Source, keys, vals [][]byte) ([][]datum, error) {
	w := src.Table.RowWidth()
	out := make([][]datum, 0, len(keys))
	for i, v := range vals {
		if v == nil {
			continue
		}
		row := make([]datum, w)
		if err := src.Table.DecodeRow(keys[i], v, row); err != nil {
			return nil, fmt.Errorf("decode row of %s: %w", src.Table.Name, err)
		}
		out = append(out, row)
	}
	return out, nil
}

func filterRows(w expr.Expr, rows [][]datum) ([][]datum, error) {
	kept := rows[:0]
	for _, r := range rows {
		ok, err := cond(w, r)
		if err != nil {
			return nil, err
		}
		if ok {
			kept = append(kept, r)
		}
	}
	return kept, nil
}

// rowKey encodes values for grouping / DISTINCT (expr.AppendGroupKey,
// which the stores group by too).
func rowKey(b []byte, vals []datum) []byte { return expr.AppendGroupKey(b, vals) }
