package executor

import (
	"context"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/planner"
)

// maxCachedPlans bounds a session's plan cache.
const maxCachedPlans = 256

var planCacheTotal = promauto.NewCounterVec(prometheus.CounterOpts{
	Namespace: "strata", Subsystem: "sql", Name: "plan_cache_total",
	Help: "Executions of prepared SELECTs by plan cache result: hit (no planning), miss (planned).",
}, []string{"result"})

var (
	planCacheHit  = planCacheTotal.WithLabelValues("hit")
	planCacheMiss = planCacheTotal.WithLabelValues("miss")
)

// notCacheable marks a statement whose plan is not cached (planned at
// every execution).
var notCacheable = &planner.PointTemplate{}

// PlanCache keeps the plans of one session's prepared statements, keyed by
// the statement (parsed once at PREPARE) and checked against the table
// definition they were built from at every execution. Only point selects
// are cached (planner.PointTemplate). Not safe for concurrent use: a
// session owns one.
type PlanCache struct {
	entries map[*ast.SelectStmt]*planner.PointTemplate
	// Hits and Misses count executions that did not / did plan; LastHit
	// says whether the last one did not (TiDB's last_plan_from_cache).
	Hits, Misses uint64
	LastHit      bool
}

// Forget drops the plan of a closed statement.
func (pc *PlanCache) Forget(s ast.StmtNode) {
	if sel, ok := s.(*ast.SelectStmt); ok {
		delete(pc.entries, sel)
	}
}

// SelectPrepared runs s, a prepared SELECT whose parameters env binds,
// through pc: a cached point-select plan is bound to the parameters and
// run without planning; anything else is planned as Select does.
func (e *Executor) SelectPrepared(ctx context.Context, s *ast.SelectStmt, pc *PlanCache, env expr.Env, tx TxnSource) (*Result, error) {
	t := pc.entries[s]
	if t != nil && t != notCacheable {
		switch pg, res := e.planner.BindPoint(ctx, t, env); res {
		case planner.Bound, planner.BoundEmpty:
			pc.Hits++
			pc.LastHit = true
			planCacheHit.Inc()
			if res == planner.BoundEmpty {
				return &Result{Columns: t.Columns}, nil
			}
			txn, err := tx.Txn(ctx, pg.Index == nil)
			if err != nil {
				return nil, err
			}
			rc := newRunCtx(e, tx, txn)
			return rc.pointSelect(ctx, t.Columns, t.Proj, pg)
		case planner.Stale:
			t = nil
		}
	}
	pc.Misses++
	planCacheMiss.Inc()
	if t == nil {
		nt, err := e.planner.PointTemplate(ctx, s, env)
		if err != nil {
			return nil, err
		}
		if nt == nil {
			nt = notCacheable
		}
		if pc.entries == nil || len(pc.entries) >= maxCachedPlans {
			pc.entries = map[*ast.SelectStmt]*planner.PointTemplate{}
		}
		pc.entries[s] = nt
	}
	return e.Select(ctx, s, env, tx)
}
