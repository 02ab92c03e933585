package pd

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/proto/pdpb"
)

// GC state in etcd.
const (
	keyGCSafePoint = rootPath + "gc/safe_point" // decimal TSO timestamp
	keyGCConfig    = rootPath + "gc/config"     // pdpb.GCConfig
)

// GC defaults (TiDB's tidb_gc_life_time and tidb_gc_run_interval).
const (
	DefaultGCLifeTime    = 10 * time.Minute
	DefaultGCRunInterval = 10 * time.Minute
)

var gcSafePointGauge = promauto.NewGauge(prometheus.GaugeOpts{
	Namespace: "strata", Subsystem: "pd", Name: "gc_safe_point",
	Help: "The cluster's GC safe point (a TSO timestamp; physical ms = value >> 18) as known to this PD leader.",
})

// gcState is one leader term's GC bookkeeping: the safe point (persisted,
// monotonic), the GC settings (persisted), and the SQL nodes' heartbeats
// with the GC leadership (in memory: a new term rebuilds them from the
// heartbeats it receives, and grants no GC leadership until every node had
// a full TTL to report its min start_ts to it).
//
// Safe point updates are serialized by mu and written through the term's
// fenced etcd writes, so within a term and across terms (the next term
// loads the persisted value) it never moves back.
type gcState struct {
	kv    *fencedKV
	start time.Time // term start

	mu        sync.Mutex
	loaded    bool
	safePoint uint64
	cfg       *pdpb.GCConfig
	nodes     map[string]gcNode
	leader    string
	leaderExp time.Time
	maxTTL    time.Duration // largest TTL any node asked for this term
}

type gcNode struct {
	minStartTS uint64
	expires    time.Time
}

func newGCState(kv *fencedKV) *gcState {
	return &gcState{kv: kv, start: time.Now(), nodes: map[string]gcNode{}}
}

// load reads the persisted state once per term; mu is held.
func (g *gcState) load(ctx context.Context) error {
	if g.loaded {
		return nil
	}
	sp, err := g.kv.getUint(ctx, keyGCSafePoint)
	if err != nil {
		return fmt.Errorf("load gc safe point: %w", err)
	}
	cfg := &pdpb.GCConfig{}
	v, ok, err := g.kv.get(ctx, keyGCConfig)
	if err != nil {
		return fmt.Errorf("load gc config: %w", err)
	}
	if ok {
		if err := proto.Unmarshal([]byte(v), cfg); err != nil {
			return fmt.Errorf("pd: decode %s: %w", keyGCConfig, err)
		}
	}
	g.safePoint, g.cfg, g.loaded = sp, cfg, true
	gcSafePointGauge.Set(float64(sp))
	return nil
}

func (g *gcState) getSafePoint(ctx context.Context) (uint64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.load(ctx); err != nil {
		return 0, err
	}
	return g.safePoint, nil
}

// updateSafePoint raises the safe point to sp if it is higher and returns
// the resulting safe point. The new value is persisted before it is
// returned or served.
func (g *gcState) updateSafePoint(ctx context.Context, sp uint64) (uint64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.load(ctx); err != nil {
		return 0, err
	}
	if sp <= g.safePoint {
		return g.safePoint, nil
	}
	if err := g.kv.put(ctx, keyGCSafePoint, strconv.FormatUint(sp, 10)); err != nil {
		return 0, fmt.Errorf("persist gc safe point: %w", err)
	}
	g.safePoint = sp
	gcSafePointGauge.Set(float64(sp))
	return sp, nil
}

// storedConfig is the config as set, unset fields replaced by their
// defaults. The GC leader applies its minimum life time on top (as TiDB, a
// shorter tidb_gc_life_time counts as 10m); mu is held.
func (g *gcState) storedConfig() *pdpb.GCConfig {
	c := &pdpb.GCConfig{LifeTimeMs: g.cfg.GetLifeTimeMs(), RunIntervalMs: g.cfg.GetRunIntervalMs()}
	if c.LifeTimeMs == 0 {
		c.LifeTimeMs = uint64(DefaultGCLifeTime.Milliseconds())
	}
	if c.RunIntervalMs == 0 {
		c.RunIntervalMs = uint64(DefaultGCRunInterval.Milliseconds())
	}
	return c
}

func (g *gcState) setConfig(ctx context.Context, c *pdpb.GCConfig) (*pdpb.GCConfig, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.load(ctx); err != nil {
		return nil, err
	}
	if c.GetLifeTimeMs() == 0 && c.GetRunIntervalMs() == 0 {
		return g.storedConfig(), nil // a read
	}
	next := &pdpb.GCConfig{LifeTimeMs: g.cfg.GetLifeTimeMs(), RunIntervalMs: g.cfg.GetRunIntervalMs()}
	if c.GetLifeTimeMs() != 0 {
		next.LifeTimeMs = c.GetLifeTimeMs()
	}
	if c.GetRunIntervalMs() != 0 {
		next.RunIntervalMs = c.GetRunIntervalMs()
	}
	if err := g.kv.put(ctx, keyGCConfig, mustMarshal(next)); err != nil {
		return nil, fmt.Errorf("persist gc config: %w", err)
	}
	g.cfg = next
	return g.storedConfig(), nil
}

// heartbeat records a SQL node's min start_ts and, when it campaigns,
// grants it the GC leadership if nobody holds a live one. No leadership is
// granted during the term's first maxTTL (nodes must have reported their
// transactions to this term first).
func (g *gcState) heartbeat(ctx context.Context, req *pdpb.GCNodeHeartbeatRequest, now time.Time) (*pdpb.GCNodeHeartbeatResponse, error) {
	if req.GetNodeId() == "" {
		return nil, fmt.Errorf("%w: gc heartbeat without node id", ErrInvalidArgument)
	}
	ttl := time.Duration(req.GetTtlMs()) * time.Millisecond
	if ttl <= 0 {
		return nil, fmt.Errorf("%w: gc heartbeat ttl must be > 0", ErrInvalidArgument)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.load(ctx); err != nil {
		return nil, err
	}
	g.maxTTL = max(g.maxTTL, ttl)
	id := req.GetNodeId()
	g.nodes[id] = gcNode{minStartTS: req.GetMinStartTs(), expires: now.Add(ttl)}
	var minTS uint64
	for n, st := range g.nodes {
		if now.After(st.expires) {
			delete(g.nodes, n)
			continue
		}
		if st.minStartTS != 0 && (minTS == 0 || st.minStartTS < minTS) {
			minTS = st.minStartTS
		}
	}
	if g.leader != "" && now.After(g.leaderExp) {
		g.leader = ""
	}
	warm := now.Sub(g.start) >= g.maxTTL
	switch {
	case g.leader == id && req.GetCampaign():
		g.leaderExp = now.Add(ttl)
	case g.leader == id:
		g.leader = "" // resigns
	case g.leader == "" && req.GetCampaign() && warm:
		g.leader, g.leaderExp = id, now.Add(ttl)
	}
	return &pdpb.GCNodeHeartbeatResponse{
		IsLeader: g.leader == id, LeaderId: g.leader, MinStartTs: minTS, Config: g.storedConfig(),
	}, nil
}

// ---- RPCs ----

func (sv *service) GetGCSafePoint(ctx context.Context, req *pdpb.GetGCSafePointRequest) (*pdpb.GetGCSafePointResponse, error) {
	t := sv.s.leaderTerm()
	if t == nil {
		return &pdpb.GetGCSafePointResponse{Header: notLeaderHeader}, nil
	}
	sp, err := t.gc.getSafePoint(ctx)
	if err != nil {
		return &pdpb.GetGCSafePointResponse{Header: errorHeader(t, err)}, nil
	}
	return &pdpb.GetGCSafePointResponse{Header: header(t), SafePoint: sp}, nil
}

func (sv *service) UpdateGCSafePoint(ctx context.Context, req *pdpb.UpdateGCSafePointRequest) (*pdpb.UpdateGCSafePointResponse, error) {
	t := sv.s.leaderTerm()
	if t == nil {
		return &pdpb.UpdateGCSafePointResponse{Header: notLeaderHeader}, nil
	}
	sp, err := t.gc.updateSafePoint(ctx, req.GetSafePoint())
	if err != nil {
		return &pdpb.UpdateGCSafePointResponse{Header: errorHeader(t, err)}, nil
	}
	return &pdpb.UpdateGCSafePointResponse{Header: header(t), NewSafePoint: sp}, nil
}

func (sv *service) GCNodeHeartbeat(ctx context.Context, req *pdpb.GCNodeHeartbeatRequest) (*pdpb.GCNodeHeartbeatResponse, error) {
	t := sv.s.leaderTerm()
	if t == nil {
		return &pdpb.GCNodeHeartbeatResponse{Header: notLeaderHeader}, nil
	}
	resp, err := t.gc.heartbeat(ctx, req, time.Now())
	if err != nil {
		return &pdpb.GCNodeHeartbeatResponse{Header: errorHeader(t, err)}, nil
	}
	resp.Header = header(t)
	return resp, nil
}

func (sv *service) SetGCConfig(ctx context.Context, req *pdpb.SetGCConfigRequest) (*pdpb.SetGCConfigResponse, error) {
	t := sv.s.leaderTerm()
	if t == nil {
		return &pdpb.SetGCConfigResponse{Header: notLeaderHeader}, nil
	}
	c, err := t.gc.setConfig(ctx, req.GetConfig())
	if err != nil {
		return &pdpb.SetGCConfigResponse{Header: errorHeader(t, err)}, nil
	}
	return &pdpb.SetGCConfigResponse{Header: header(t), Config: c}, nil
}
