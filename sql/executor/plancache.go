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
	Help: "Executions of prepared SELECTs by plan cache result: hit (a cached plan, no planning), miss (planned and cached), uncacheable (planned; the statement's plan is not cached).",
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

// PlanCache keeps the plans of one session's prepared SELECTs (TiDB's
// prepared plan cache): one per statement (parsed once at PREPARE, so
// keyed by its node), with the key it was planned under: the current
// database, PlanVars and each parameter's kind. An execution under the
// same key rebinds the plan to its parameters (planner.Rebind: the tables
// must be the catalog's still, which a schema change ends, and the
// ranges rebuilt from the values must have the plan's shape); otherwise
// the statement is planned again and the new plan replaces the old. A
// statement whose plan cannot be reused (planner.PlanPrepared's reason)
// is planned at every execution. Not safe for concurrent use: a session
// owns one.
type PlanCache struct {
	entries map[*ast.SelectStmt]*planEntry
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
func (pc *PlanCache) Forget(s ast.StmtNode) {
	if sel, ok := s.(*ast.SelectStmt); ok {
		delete(pc.entries, sel)
	}
}

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
	pe := pc.entries[s]
	if pe != nil && pe.plan != nil && pe.matches(env) && e.planner.Rebind(ctx, pe.plan, env) {
		pc.Hits++
		pc.LastHit = true
		planCacheHit.Inc()
		return e.runSelect(ctx, pe.plan.Plan, tx, nil)
	}
	pc.Misses++
	if pe != nil && pe.plan == nil && pe.matches(env) {
		// Known uncacheable under this key: plan it as Select does.
		planCacheUncacheable.Inc()
		pc.LastReason = pe.reason
		res, err := e.Select(ctx, s, env, tx)
		return skipWarning(res, err, pe.reason)
	}
	start := time.Now()
	pe = newPlanEntry(env)
	c, reason, err := e.planner.PlanPrepared(ctx, s, env)
	execdetails.From(ctx).Since(execdetails.Compile, start)
	if err != nil {
		return nil, err
	}
	pc.LastReason = reason
	if reason == "" {
		pe.plan = c
		planCacheMiss.Inc()
	} else {
		pe.reason = reason
		planCacheUncacheable.Inc()
	}
	if pc.entries == nil || len(pc.entries) >= maxCachedPlans {
		pc.entries = map[*ast.SelectStmt]*planEntry{}
	}
	pc.entries[s] = pe
	res, err := e.runSelect(ctx, c.Plan, tx, nil)
	return skipWarning(res, err, reason)
}

// skipWarning adds to a result planned without the cache TiDB's warning
// 1105 "skip prepared plan-cache: <reason>" (nothing when reason is "").
func skipWarning(res *Result, err error, reason string) (*Result, error) {
	if err == nil && reason != "" {
		res.Warn(1105, "skip prepared plan-cache: "+reason)
	}
	return res, err
}
