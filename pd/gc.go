package pd

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/proto/pdpb"
)

// GC state in etcd.
const (
	keyGCSafePoint = rootPath + "gc/safe_point" // decimal TSO timestamp
	keyGCConfig    = rootPath + "gc/config"     // pdpb.GCConfig
	// + service id -> JSON serviceSafePoint
	prefixServiceSafePoint = rootPath + "gc/service_safe_point/"
)

// GC defaults (TiDB's tidb_gc_life_time and tidb_gc_run_interval).
const (
	DefaultGCLifeTime    = 10 * time.Minute
	DefaultGCRunInterval = 10 * time.Minute
)

var (
	gcSafePointGauge = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: "strata", Subsystem: "pd", Name: "gc_safe_point",
		Help: "The cluster's GC safe point (a TSO timestamp; physical ms = value >> 18) as known to this PD leader.",
	})
	serviceSafePointsGauge = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: "strata", Subsystem: "pd", Name: "gc_service_safe_points",
		Help: "Live service GC safe points (a running backup holds one) as known to this PD leader.",
	})
)

// serviceSafePoint is a service's hold on the GC safe point (TiDB's
// service GC safe point): until ExpiresMs (Unix milliseconds on the PD
// leader's clock, persisted so a new leader honours it) the GC safe point
// does not pass SafePoint.
type serviceSafePoint struct {
	SafePoint uint64 `json:"safe_point"`
	ExpiresMs int64  `json:"expires_ms"`
}

func serviceSafePointKey(id string) string { return prefixServiceSafePoint + id }

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
	services  map[string]serviceSafePoint
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
	resp, err := g.kv.cli.Get(ctx, prefixServiceSafePoint, clientv3.WithPrefix())
	if err != nil {
		return fmt.Errorf("load service safe points: %w", err)
	}
	services := map[string]serviceSafePoint{}
	for _, kv := range resp.Kvs {
		var ssp serviceSafePoint
		if err := json.Unmarshal(kv.Value, &ssp); err != nil {
			return fmt.Errorf("pd: decode %s: %w", kv.Key, err)
		}
		services[strings.TrimPrefix(string(kv.Key), prefixServiceSafePoint)] = ssp
	}
	g.safePoint, g.cfg, g.services, g.loaded = sp, cfg, services, true
	gcSafePointGauge.Set(float64(sp))
	return nil
}

// minServiceSafePoint returns the smallest live service safe point and its
// service, dropping expired ones from memory (their etcd keys stay until
// the service is updated or removed, and are ignored); mu is held.
func (g *gcState) minServiceSafePoint(now time.Time) (id string, sp uint64, ok bool) {
	for sid, s := range g.services {
		if now.UnixMilli() >= s.ExpiresMs {
			delete(g.services, sid)
			continue
		}
		if !ok || s.SafePoint < sp {
			id, sp, ok = sid, s.SafePoint, true
		}
	}
	serviceSafePointsGauge.Set(float64(len(g.services)))
	return id, sp, ok
}

// updateServiceSafePoint registers or renews (ttl > 0) or removes (ttl <=
// 0) service id's safe point and returns the smallest live one (the GC
// safe point when none is live or it is smaller). A safe point below the
// GC safe point is not registered: the returned minimum is then above
// what the caller asked for, and the caller must give up (its snapshot's
// versions may be gone).
func (g *gcState) updateServiceSafePoint(ctx context.Context, id string, ttl time.Duration, sp uint64, now time.Time) (*pdpb.UpdateServiceGCSafePointResponse, error) {
	if id == "" {
		return nil, fmt.Errorf("%w: service safe point without service id", ErrInvalidArgument)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.load(ctx); err != nil {
		return nil, err
	}
	switch {
	case ttl <= 0:
		if err := g.kv.txn(ctx, nil, clientv3.OpDelete(serviceSafePointKey(id))); err != nil {
			return nil, fmt.Errorf("remove service safe point %s: %w", id, err)
		}
		delete(g.services, id)
	case sp >= g.safePoint:
		ssp := serviceSafePoint{SafePoint: sp, ExpiresMs: now.Add(ttl).UnixMilli()}
		v, _ := json.Marshal(ssp)
		if err := g.kv.put(ctx, serviceSafePointKey(id), string(v)); err != nil {
			return nil, fmt.Errorf("persist service safe point %s: %w", id, err)
		}
		g.services[id] = ssp
	}
	resp := &pdpb.UpdateServiceGCSafePointResponse{ServiceId: "gc_worker", MinSafePoint: g.safePoint}
	if sid, min, ok := g.minServiceSafePoint(now); ok && min >= g.safePoint {
		resp.ServiceId, resp.MinSafePoint = sid, min
		resp.TtlSeconds = int64(time.Duration(g.services[sid].ExpiresMs-now.UnixMilli()) * time.Millisecond / time.Second)
	}
	return resp, nil
}

func (g *gcState) getSafePoint(ctx context.Context) (uint64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.load(ctx); err != nil {
		return 0, err
	}
	return g.safePoint, nil
}

// updateSafePoint raises the safe point to sp if it is higher, but never
// above a live service safe point, and returns the resulting safe point.
// The new value is persisted before it is returned or served.
func (g *gcState) updateSafePoint(ctx context.Context, sp uint64, now time.Time) (uint64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.load(ctx); err != nil {
		return 0, err
	}
	if _, min, ok := g.minServiceSafePoint(now); ok && sp > min {
		sp = min
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
	sp, err := t.gc.updateSafePoint(ctx, req.GetSafePoint(), time.Now())
	if err != nil {
		return &pdpb.UpdateGCSafePointResponse{Header: errorHeader(t, err)}, nil
	}
	return &pdpb.UpdateGCSafePointResponse{Header: header(t), NewSafePoint: sp}, nil
}

func (sv *service) UpdateServiceGCSafePoint(ctx context.Context, req *pdpb.UpdateServiceGCSafePointRequest) (*pdpb.UpdateServiceGCSafePointResponse, error) {
	t := sv.s.leaderTerm()
	if t == nil {
		return &pdpb.UpdateServiceGCSafePointResponse{Header: notLeaderHeader}, nil
	}
	resp, err := t.gc.updateServiceSafePoint(ctx, req.GetServiceId(), time.Duration(req.GetTtlSeconds())*time.Second, req.GetSafePoint(), time.Now())
	if err != nil {
		return &pdpb.UpdateServiceGCSafePointResponse{Header: errorHeader(t, err)}, nil
	}
	resp.Header = header(t)
	return resp, nil
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
