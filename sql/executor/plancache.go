package executor

import (
	"context"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/stratadb/strata/kv/execdetails"
	"github.com/stratadb/strata/sql/expr"
	"github.com/stratadb/strata/sql/planner"
)

// maxCachedPlans bounds a session's plan cache.
const maxCachedPlans = 256

var planCacheTotal = promauto.NewCounterVec(prometheus.CounterOpts{
	Namespace: "strata", Subsystem: "sql", Name: "plan_cache_total",
	Help: "Executions of prepared SELECTs and single- or multi-table UPDATEs and DELETEs by plan cache result: hit (a cached plan, no planning), miss (planned and cached), uncacheable (planned; the statement's plan is not cached).",
}, []string{"result"})

var (
	planCacheHit         = planCacheTotal.WithLabelValues("hit")
	planCacheMiss        = planCacheTotal.WithLabelValues("miss")
	planCacheUncacheable = planCacheTotal.WithLabelValues("uncacheable")
)

// PlanVars are the session variables planning reads: a cached plan holds
// only while they keep the values it was planned with (with the current
// database and the parameters' kinds, the rest of the cache key).
var PlanVars = [...]string{
	"sql_mode", "collation_connection", "character_set_connection", "group_concat_max_len", "time_zone",
	planner.AllowPushdownVar, planner.IndexLookupPushdownVar,
}

// SessionVars is implemented by an Env whose session variables are kept
// as text (the session): the plan cache keys plans by PlanVars.
type SessionVars interface {
	VarValue(name string) string
}

// PlanCache keeps the plans of one session's prepared SELECTs and the
// read plans of its prepared single-table UPDATEs and DELETEs (TiDB's
// prepared plan cache; a multi-table one is uncacheable): one per
// statement (parsed once at PREPARE, so keyed by its node), with the key
// it was planned under: the current
// database, PlanVars and each parameter's kind. An execution under the
// same key rebinds the plan to its parameters (planner.Rebind: the tables
// must be the catalog's still, which a schema change ends, and the
// ranges rebuilt from the values must have the plan's shape); otherwise
// the statement is planned again and the new plan replaces the old. A
// statement whose plan cannot be reused (planner.PlanPrepared's reason)
// is planned at every execution. Not safe for concurrent use: a session
// owns one.
type PlanCache struct {
	entries map[ast.StmtNode]*planEntry
	// Hits and Misses count executions that did not / did plan; LastHit
	// says whether the last one did not (TiDB's last_plan_from_cache).
	Hits, Misses uint64
	LastHit      bool
	// LastReason is why the last statement planned was not cached ("":
	// it was).
	LastReason string
}

// planEntry is one statement's cached plan and its key.
type planEntry struct {
	plan   *planner.CachedPlan // nil: not cacheable
	reason string
	db     string
	vars   [len(PlanVars)]string
	kinds  []byte // per parameter: its value's types.Kind
}

// Forget drops the plan of a closed statement.
func (pc *PlanCache) Forget(s ast.StmtNode) { delete(pc.entries, s) }

// matches reports whether env executes under the key pe was planned with.
func (pe *planEntry) matches(env expr.Env) bool {
	if env.CurrentDB() != pe.db {
		return false
	}
	if sv, ok := env.(SessionVars); ok {
		for i, name := range PlanVars {
			if sv.VarValue(name) != pe.vars[i] {
				return false
			}
		}
	}
	for i, k := range pe.kinds {
		if v, _ := env.Param(i); byte(v.Kind()) != k {
			return false
		}
	}
	if _, more := env.Param(len(pe.kinds)); more {
		return false
	}
	return true
}

// newPlanEntry records the key env executes under.
func newPlanEntry(env expr.Env) *planEntry {
	pe := &planEntry{db: env.CurrentDB()}
	if sv, ok := env.(SessionVars); ok {
		for i, name := range PlanVars {
			pe.vars[i] = sv.VarValue(name)
		}
	}
	for i := 0; ; i++ {
		v, ok := env.Param(i)
		if !ok {
			break
		}
		pe.kinds = append(pe.kinds, byte(v.Kind()))
	}
	return pe
}

// SelectPrepared runs s, a prepared SELECT whose parameters env binds,
// through pc: a cached plan is rebound to the parameters and run without
// planning; otherwise s is planned (and the plan cached when it may be).
func (e *Executor) SelectPrepared(ctx context.Context, s *ast.SelectStmt, pc *PlanCache, env expr.Env, tx TxnSource) (*Result, error) {
	if c := pc.lookup(ctx, e.planner, s, env); c != nil {
		return e.runSelect(ctx, c.Plan, tx, nil)
	}
	if reason := pc.knownUncacheable(s, env); reason != "" {
		// Plan it as Select does.
		res, err := e.Select(ctx, s, env, tx)
		return skipWarning(res, err, reason)
	}
	start := time.Now()
	c, reason, err := e.planner.PlanPrepared(ctx, s, env)
	execdetails.From(ctx).Since(execdetails.Compile, start)
	if err != nil {
		return nil, err
	}
	pc.store(s, env, c, reason)
	res, err := e.runSelect(ctx, c.Plan, tx, nil)
	return skipWarning(res, err, reason)
}

// planScan plans the read of stmt, a single-table UPDATE or DELETE
// (planner.PlanScan's arguments), through pc when it is not nil (stmt is
// prepared): a cached read plan is rebound to the parameters; otherwise
// the read is planned and cached when it may be. reason is why the plan
// was not cached ("" when it was, or without pc).
func (e *Executor) planScan(ctx context.Context, pc *PlanCache, stmt ast.StmtNode, src *planner.Source, where ast.ExprNode,
	order *ast.OrderByClause, limit *ast.Limit, env expr.Env) (sp *planner.ScanPlan, reason string, err error) {
	if pc != nil {
		if c := pc.lookup(ctx, e.planner, stmt, env); c != nil {
			return c.Scan, "", nil
		}
	}
	start := time.Now()
	defer func() { execdetails.From(ctx).Since(execdetails.Compile, start) }()
	if pc == nil {
		sp, err = e.planner.PlanScan(src, where, order, limit, env)
		return sp, "", err
	}
	if reason := pc.knownUncacheable(stmt, env); reason != "" {
		sp, err = e.planner.PlanScan(src, where, order, limit, env)
		return sp, reason, err
	}
	c, reason, err := e.planner.PlanPreparedScan(src, where, order, limit, env)
	if err != nil {
		return nil, "", err
	}
	pc.store(stmt, env, c, reason)
	return c.Scan, reason, nil
}

// lookup returns s's cached plan rebound to env's parameters, counting a
// hit, or nil (then s is planned: the caller calls knownUncacheable and
// store, or uncacheable).
func (pc *PlanCache) lookup(ctx context.Context, pl *planner.Planner, s ast.StmtNode, env expr.Env) *planner.CachedPlan {
	pe := pc.entries[s]
	if pe != nil && pe.plan != nil && pe.matches(env) && pl.Rebind(ctx, pe.plan, env) {
		pc.Hits++
		pc.LastHit = true
		planCacheHit.Inc()
		return pe.plan
	}
	return nil
}

// knownUncacheable returns why s's plan is not cached when pc knows it
// is not under env's key (then it counts the execution), else "".
func (pc *PlanCache) knownUncacheable(s ast.StmtNode, env expr.Env) string {
	pe := pc.entries[s]
	if pe == nil || pe.plan != nil || !pe.matches(env) {
		return ""
	}
	pc.uncacheable(pe.reason)
	return pe.reason
}

// uncacheable counts an execution planned because its plan is never
// cached, for reason.
func (pc *PlanCache) uncacheable(reason string) {
	pc.Misses++
	pc.LastReason = reason
	planCacheUncacheable.Inc()
}

// store records c, s's plan made under env's key, as its entry: cached
// when reason is "", else known uncacheable for reason.
func (pc *PlanCache) store(s ast.StmtNode, env expr.Env, c *planner.CachedPlan, reason string) {
	pe := newPlanEntry(env)
	if reason == "" {
		pc.Misses++
		pc.LastReason = ""
		pe.plan = c
		planCacheMiss.Inc()
	} else {
		pe.reason = reason
		pc.uncacheable(reason)
	}
	if pc.entries == nil || len(pc.entries) >= maxCachedPlans {
		pc.entries = map[ast.StmtNode]*planEntry{}
	}
	pc.entries[s] = pe
}

// multiTable counts the execution of a multi-table UPDATE or DELETE,
// what, which is planned at every execution, when it is prepared (pc not
// nil), and adds to its result the warning saying so.
func (pc *PlanCache) multiTable(res *Result, err error, what string) (*Result, error) {
	if pc == nil {
		return res, err
	}
	pc.uncacheable(what)
	return skipWarning(res, err, what)
}

// skipWarning adds to a result planned without the cache TiDB's warning
// 1105 "skip prepared plan-cache: <reason>" (nothing when reason is "").
func skipWarning(res *Result, err error, reason string) (*Result, error) {
	if err == nil && reason != "" {
		res.Warn(1105, "skip prepared plan-cache: "+reason)
	}
	return res, err
}
