package pd

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stratadb/strata/pd/schedule"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/pdpb"
)

// HTTP API in the shape of TiDB's PD (/pd/api/v1/...), served on the
// status port (cmd/pd). Only the leader answers cluster state; another
// member forwards such a request to the leader (members.go), or answers
// 503 naming the leader when it cannot. docs/operations.md lists the
// endpoints with curl lines.

// APIPrefix is the path every API route starts with.
const APIPrefix = "/pd/api/v1/"

// APIHandler returns the HTTP API handler. State-changing requests need a
// verified client certificate or the bearer token when cluster TLS or
// Config.HTTPTokenFile is set (security.Guard).
func (s *Server) APIHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+APIPrefix+"stores", s.leaderAPI(apiStores))
	mux.HandleFunc("GET "+APIPrefix+"store/{id}", s.leaderAPI(apiStore))
	mux.HandleFunc("DELETE "+APIPrefix+"store/{id}", s.leaderAPI(apiDeleteStore))
	mux.HandleFunc("GET "+APIPrefix+"regions", s.leaderAPI(apiRegions))
	mux.HandleFunc("GET "+APIPrefix+"region/id/{id}", s.leaderAPI(apiRegionByID))
	mux.HandleFunc("GET "+APIPrefix+"region/key/{key}", s.leaderAPI(apiRegionByKey))
	mux.HandleFunc("GET "+APIPrefix+"operators", s.leaderAPI(apiOperators))
	mux.HandleFunc("GET "+APIPrefix+"operators/{region}", s.leaderAPI(apiOperator))
	mux.HandleFunc("POST "+APIPrefix+"operators", s.leaderAPI(apiAddOperator))
	mux.HandleFunc("DELETE "+APIPrefix+"operators/{region}", s.leaderAPI(apiRemoveOperator))
	mux.HandleFunc("GET "+APIPrefix+"schedulers", s.leaderAPI(apiSchedulers))
	mux.HandleFunc("POST "+APIPrefix+"schedulers", s.leaderAPI(apiAddScheduler))
	mux.HandleFunc("DELETE "+APIPrefix+"schedulers/{name}", s.leaderAPI(apiRemoveScheduler))
	mux.HandleFunc("GET "+APIPrefix+"config", s.leaderAPI(apiConfig))
	mux.HandleFunc("POST "+APIPrefix+"config", s.leaderAPI(apiSetConfig))
	mux.HandleFunc("GET "+APIPrefix+"affinity-groups", s.leaderAPI(apiAffinityGroups))
	mux.HandleFunc("GET "+APIPrefix+"affinity-groups/{table}", s.leaderAPI(apiAffinityGroup))
	mux.HandleFunc("POST "+APIPrefix+"affinity-groups", s.leaderAPI(apiAddAffinityGroups))
	mux.HandleFunc("DELETE "+APIPrefix+"affinity-groups/{table}", s.leaderAPI(apiRemoveAffinityGroup))
	mux.HandleFunc("GET "+APIPrefix+"members", s.apiMembers)
	mux.HandleFunc("POST "+APIPrefix+"members", s.apiAddMember)
	mux.HandleFunc("DELETE "+APIPrefix+"members/name/{name}", s.apiRemoveMember)
	mux.HandleFunc("DELETE "+APIPrefix+"members/id/{id}", s.apiRemoveMember)
	mux.HandleFunc("GET "+APIPrefix+"health", s.apiHealth)
	return s.guard.Wrap(mux)
}

type apiFunc func(r *http.Request, c *cluster) (any, error)

// apiError is an error with its HTTP status.
type apiError struct {
	code int
	msg  string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &apiError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) error {
	return &apiError{http.StatusNotFound, fmt.Sprintf(format, args...)}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func (s *Server) leaderAPI(f apiFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		t := s.leaderTerm()
		if t == nil && s.forward(w, r) {
			return
		}
		if t == nil {
			_, leader, _ := s.members(r.Context())
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{
				"error": fmt.Sprintf("this PD member is not the leader; ask the leader %q (gRPC %v)", leader.GetName(), leader.GetClientUrls())})
			return
		}
		v, err := f(r, t.cluster)
		if err != nil {
			code := http.StatusInternalServerError
			var ae *apiError
			switch {
			case errors.As(err, &ae):
				code = ae.code
			case errors.Is(err, ErrInvalidArgument):
				code = http.StatusBadRequest
			}
			writeJSON(w, code, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, v)
	}
}

func pathID(r *http.Request, name string) (uint64, error) {
	id, err := strconv.ParseUint(r.PathValue(name), 10, 64)
	if err != nil {
		return 0, badRequest("%s %q is not a number", name, r.PathValue(name))
	}
	return id, nil
}

// Stores.

type apiStoreMeta struct {
	ID            uint64     `json:"id"`
	Address       string     `json:"address"`
	StatusAddress string     `json:"status_address"`
	Labels        []apiLabel `json:"labels,omitempty"`
	State         int32      `json:"state"`
	StateName     string     `json:"state_name"`
}

type apiLabel struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type apiStoreStatus struct {
	Capacity        uint64    `json:"capacity"`
	Available       uint64    `json:"available"`
	UsedSize        uint64    `json:"used_size"`
	LeaderCount     int       `json:"leader_count"`
	RegionCount     int       `json:"region_count"`
	RegionSize      uint64    `json:"region_size"`
	BytesWritten    uint64    `json:"bytes_written"`
	KeysWritten     uint64    `json:"keys_written"`
	BytesRead       uint64    `json:"bytes_read"`
	KeysRead        uint64    `json:"keys_read"`
	LastHeartbeatTS time.Time `json:"last_heartbeat_ts"`
}

type apiStoreInfo struct {
	Store  apiStoreMeta   `json:"store"`
	Status apiStoreStatus `json:"status"`
}

func storeView(c *cluster, s *schedule.StoreInfo) apiStoreInfo {
	cfg := c.model.Config()
	st := s.State(c.model.Now(), &cfg)
	n, l, size := c.model.StoreCounts(s.Meta.GetId())
	out := apiStoreInfo{
		Store: apiStoreMeta{ID: s.Meta.GetId(), Address: s.Meta.GetAddress(), StatusAddress: s.Meta.GetStatusAddress(),
			State: int32(s.Meta.GetState()), StateName: st.String()},
		Status: apiStoreStatus{LeaderCount: l, RegionCount: n, RegionSize: size >> 20, LastHeartbeatTS: s.LastHeartbeat},
	}
	for _, l := range s.Meta.GetLabels() {
		out.Store.Labels = append(out.Store.Labels, apiLabel{Key: l.GetKey(), Value: l.GetValue()})
	}
	if ss := s.Stats; ss != nil {
		out.Status.Capacity, out.Status.Available, out.Status.UsedSize = ss.GetCapacity(), ss.GetAvailable(), ss.GetUsedSize()
		out.Status.BytesWritten, out.Status.KeysWritten = ss.GetBytesWritten(), ss.GetKeysWritten()
		out.Status.BytesRead, out.Status.KeysRead = ss.GetBytesRead(), ss.GetKeysRead()
	}
	return out
}

func apiStores(r *http.Request, c *cluster) (any, error) {
	stores := c.model.Stores()
	out := struct {
		Count  int            `json:"count"`
		Stores []apiStoreInfo `json:"stores"`
	}{Stores: []apiStoreInfo{}}
	for _, s := range stores {
		v := storeView(c, s)
		if v.Store.StateName == schedule.StoreTombstone.String() && r.URL.Query().Get("state") == "" {
			continue // PD hides tombstones unless asked
		}
		out.Stores = append(out.Stores, v)
	}
	out.Count = len(out.Stores)
	return out, nil
}

func apiStore(r *http.Request, c *cluster) (any, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return nil, err
	}
	s := c.model.GetStore(id)
	if s == nil {
		return nil, notFound("store %d not found", id)
	}
	return storeView(c, s), nil
}

// apiDeleteStore makes a store Offline: its replicas move away, then it
// becomes Tombstone.
func apiDeleteStore(r *http.Request, c *cluster) (any, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return nil, err
	}
	if c.model.GetStore(id) == nil {
		return nil, notFound("store %d not found", id)
	}
	if err := c.setStoreState(r.Context(), id, metapb.StoreState_Offline); err != nil {
		return nil, err
	}
	return "The store is set as Offline.", nil
}

// Regions.

type apiPeer struct {
	ID       uint64 `json:"id"`
	StoreID  uint64 `json:"store_id"`
	RoleName string `json:"role_name"`
}

type apiEpoch struct {
	ConfVer uint64 `json:"conf_ver"`
	Version uint64 `json:"version"`
}

type apiRegion struct {
	ID              uint64    `json:"id"`
	StartKey        string    `json:"start_key"`
	EndKey          string    `json:"end_key"`
	Epoch           apiEpoch  `json:"epoch"`
	Peers           []apiPeer `json:"peers"`
	Leader          *apiPeer  `json:"leader,omitempty"`
	DownPeers       []apiPeer `json:"down_peers,omitempty"`
	PendingPeers    []apiPeer `json:"pending_peers,omitempty"`
	WrittenBytes    uint64    `json:"written_bytes"`
	WrittenKeys     uint64    `json:"written_keys"`
	ReadBytes       uint64    `json:"read_bytes"`
	ReadKeys        uint64    `json:"read_keys"`
	ApproximateSize uint64    `json:"approximate_size"`
	ApproximateKeys uint64    `json:"approximate_keys"`
}

func peerView(p *metapb.Peer) apiPeer {
	role := "Voter"
	if p.GetRole() == metapb.PeerRole_Learner {
		role = "Learner"
	}
	return apiPeer{ID: p.GetId(), StoreID: p.GetStoreId(), RoleName: role}
}

func regionView(r *schedule.RegionInfo) apiRegion {
	e := r.Epoch()
	out := apiRegion{
		ID: r.ID(), StartKey: strings.ToUpper(hex.EncodeToString(r.Meta.GetStartKey())), EndKey: strings.ToUpper(hex.EncodeToString(r.Meta.GetEndKey())),
		Epoch: apiEpoch{ConfVer: e.GetConfVer(), Version: e.GetVersion()}, Peers: []apiPeer{},
		WrittenBytes: r.BytesWritten, WrittenKeys: r.KeysWritten, ReadBytes: r.BytesRead, ReadKeys: r.KeysRead,
		ApproximateSize: r.ApproximateSize >> 20, ApproximateKeys: r.ApproximateKeys,
	}
	for _, p := range r.Meta.GetPeers() {
		out.Peers = append(out.Peers, peerView(p))
	}
	if r.Leader != nil {
		l := peerView(r.Leader)
		out.Leader = &l
	}
	for _, d := range r.DownPeers {
		out.DownPeers = append(out.DownPeers, peerView(d.GetPeer()))
	}
	for _, p := range r.PendingPeers {
		out.PendingPeers = append(out.PendingPeers, peerView(p))
	}
	return out
}

func apiRegions(r *http.Request, c *cluster) (any, error) {
	limit := 0
	if l := r.URL.Query().Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			return nil, badRequest("limit %q is not a non-negative number", l)
		}
		limit = n
	}
	rs := c.model.ScanRegions(nil, nil, limit)
	out := struct {
		Count   int         `json:"count"`
		Regions []apiRegion `json:"regions"`
	}{Count: len(rs), Regions: make([]apiRegion, 0, len(rs))}
	for _, ri := range rs {
		out.Regions = append(out.Regions, regionView(ri))
	}
	return out, nil
}

func apiRegionByID(r *http.Request, c *cluster) (any, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return nil, err
	}
	ri := c.model.GetRegion(id)
	if ri == nil {
		return nil, notFound("region %d not found", id)
	}
	return regionView(ri), nil
}

// apiRegionByKey takes the key as text, or as hex with ?format=hex.
func apiRegionByKey(r *http.Request, c *cluster) (any, error) {
	key := []byte(r.PathValue("key"))
	if r.URL.Query().Get("format") == "hex" {
		k, err := hex.DecodeString(string(key))
		if err != nil {
			return nil, badRequest("key %q is not hex", key)
		}
		key = k
	}
	ri := c.model.GetRegionByKey(key)
	if ri == nil {
		return nil, notFound("no region contains key %q", key)
	}
	return regionView(ri), nil
}

// Operators.

func apiOperators(r *http.Request, c *cluster) (any, error) {
	if r.URL.Query().Get("history") != "" {
		return c.ops.History(), nil
	}
	return c.ops.Operators(), nil
}

func apiOperator(r *http.Request, c *cluster) (any, error) {
	id, err := pathID(r, "region")
	if err != nil {
		return nil, err
	}
	v, ok := c.ops.GetOperator(id)
	if !ok {
		return nil, notFound("region %d has no operator", id)
	}
	return v, nil
}

// opRequest is PD's POST /operators body.
type opRequest struct {
	Name      string `json:"name"` // transfer-leader, transfer-peer, add-peer, remove-peer
	RegionID  uint64 `json:"region_id"`
	ToStoreID uint64 `json:"to_store_id"`
	// StoreID is the store of add-peer and remove-peer.
	StoreID     uint64 `json:"store_id"`
	FromStoreID uint64 `json:"from_store_id"`
	// Keys are split-region's keys, hex (like the region keys shown).
	Keys []string `json:"keys"`
}

func apiAddOperator(r *http.Request, c *cluster) (any, error) {
	var req opRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return nil, badRequest("bad operator request: %v", err)
	}
	op, err := c.adminOperator(r.Context(), req)
	if err != nil {
		return nil, err
	}
	if err := c.ops.AddOperator(op); err != nil {
		return nil, &apiError{http.StatusConflict, err.Error()}
	}
	return "The operator is created.", nil
}

// adminOperator builds the operator an API request asks for.
func (c *cluster) adminOperator(ctx context.Context, req opRequest) (*schedule.Operator, error) {
	ri := c.model.GetRegion(req.RegionID)
	if ri == nil {
		return nil, notFound("region %d not found", req.RegionID)
	}
	timeout := c.model.Config().RegionOpTimeout.D()
	storeOK := func(id uint64) error {
		if st := c.model.GetStore(id); st == nil || c.model.StoreState(id) != schedule.StoreUp {
			return badRequest("store %d is not an Up store", id)
		}
		return nil
	}
	switch req.Name {
	case "transfer-leader":
		p := ri.PeerOnStore(req.ToStoreID)
		if p == nil || p.GetRole() != metapb.PeerRole_Voter {
			return nil, badRequest("region %d has no voter on store %d", ri.ID(), req.ToStoreID)
		}
		return schedule.NewOperator("admin-transfer-leader", schedule.OpAdmin, ri, c.model.Config().LeaderOpTimeout.D(),
			schedule.TransferLeader{FromStore: ri.LeaderStore(), ToStore: req.ToStoreID}), nil
	case "add-peer":
		if ri.PeerOnStore(req.StoreID) != nil {
			return nil, badRequest("region %d already has a peer on store %d", ri.ID(), req.StoreID)
		}
		if err := storeOK(req.StoreID); err != nil {
			return nil, err
		}
		id, err := c.ids.alloc(ctx, 1)
		if err != nil {
			return nil, err
		}
		return schedule.NewOperator("admin-add-peer", schedule.OpAdmin, ri, timeout,
			schedule.AddLearner{ToStore: req.StoreID, PeerID: id}, schedule.PromoteLearner{ToStore: req.StoreID, PeerID: id}), nil
	case "transfer-peer":
		if ri.PeerOnStore(req.FromStoreID) == nil {
			return nil, badRequest("region %d has no peer on store %d", ri.ID(), req.FromStoreID)
		}
		if ri.PeerOnStore(req.ToStoreID) != nil {
			return nil, badRequest("region %d already has a peer on store %d", ri.ID(), req.ToStoreID)
		}
		if err := storeOK(req.ToStoreID); err != nil {
			return nil, err
		}
		id, err := c.ids.alloc(ctx, 1)
		if err != nil {
			return nil, err
		}
		return schedule.NewOperator("admin-transfer-peer", schedule.OpAdmin, ri, timeout,
			schedule.MovePeerSteps(ri, req.FromStoreID, req.ToStoreID, id)...), nil
	case "split-region":
		if len(req.Keys) == 0 {
			return nil, badRequest("split-region needs keys (hex, in the region key space)")
		}
		var keys [][]byte
		for _, k := range req.Keys {
			b, err := hex.DecodeString(k)
			if err != nil {
				return nil, badRequest("split key %q is not hex", k)
			}
			if bytes.Compare(b, ri.Meta.GetStartKey()) <= 0 || (len(ri.Meta.GetEndKey()) > 0 && bytes.Compare(b, ri.Meta.GetEndKey()) >= 0) {
				return nil, badRequest("split key %s is not strictly inside region %d", k, ri.ID())
			}
			keys = append(keys, b)
		}
		return schedule.NewOperator("admin-split-region", schedule.OpAdmin, ri, timeout, schedule.SplitRegion{Keys: keys}), nil
	case "remove-peer":
		p := ri.PeerOnStore(req.StoreID)
		if p == nil {
			return nil, badRequest("region %d has no peer on store %d", ri.ID(), req.StoreID)
		}
		var steps []schedule.OpStep
		if ri.LeaderStore() == req.StoreID {
			for _, v := range ri.Voters() {
				if v.GetStoreId() != req.StoreID {
					steps = append(steps, schedule.TransferLeader{FromStore: req.StoreID, ToStore: v.GetStoreId()})
					break
				}
			}
		}
		steps = append(steps, schedule.RemovePeer{FromStore: req.StoreID, PeerID: p.GetId()})
		return schedule.NewOperator("admin-remove-peer", schedule.OpAdmin, ri, timeout, steps...), nil
	}
	return nil, badRequest("unknown operator %q (transfer-leader, transfer-peer, add-peer, remove-peer, split-region)", req.Name)
}

func apiRemoveOperator(r *http.Request, c *cluster) (any, error) {
	id, err := pathID(r, "region")
	if err != nil {
		return nil, err
	}
	if !c.ops.RemoveOperator(id) {
		return nil, notFound("region %d has no operator", id)
	}
	return "The operator is removed.", nil
}

// Schedulers and config.

func apiSchedulers(r *http.Request, c *cluster) (any, error) {
	cfg := c.model.Config()
	out := []string{}
	for _, n := range schedule.SchedulerNames() {
		if !contains(cfg.DisabledSchedulers, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func apiAddScheduler(r *http.Request, c *cluster) (any, error) {
	var req struct {
		Name string `json:"name"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return nil, badRequest("bad scheduler request: %v", err)
	}
	if !contains(schedule.SchedulerNames(), req.Name) {
		return nil, badRequest("unknown scheduler %q (one of %v)", req.Name, schedule.SchedulerNames())
	}
	cfg := c.model.Config()
	var kept []string
	for _, n := range cfg.DisabledSchedulers {
		if n != req.Name {
			kept = append(kept, n)
		}
	}
	cfg.DisabledSchedulers = kept
	if err := c.setScheduleConfig(r.Context(), cfg); err != nil {
		return nil, err
	}
	return "The scheduler is created.", nil
}

func apiRemoveScheduler(r *http.Request, c *cluster) (any, error) {
	name := r.PathValue("name")
	if !contains(schedule.SchedulerNames(), name) {
		return nil, notFound("scheduler %q not found", name)
	}
	cfg := c.model.Config()
	if !contains(cfg.DisabledSchedulers, name) {
		cfg.DisabledSchedulers = append(cfg.DisabledSchedulers, name)
	}
	if err := c.setScheduleConfig(r.Context(), cfg); err != nil {
		return nil, err
	}
	return "The scheduler is removed.", nil
}

type apiConfigView struct {
	Schedule    schedule.Config `json:"schedule"`
	Replication struct {
		MaxReplicas int `json:"max-replicas"`
	} `json:"replication"`
}

func apiConfig(r *http.Request, c *cluster) (any, error) {
	var v apiConfigView
	v.Schedule = c.model.Config()
	v.Replication.MaxReplicas = v.Schedule.MaxReplicas
	return v, nil
}

// apiSetConfig merges the posted keys (PD's flat form, e.g.
// {"max-store-down-time": "20s", "store-limit": 30}) into the schedule
// configuration.
func apiSetConfig(r *http.Request, c *cluster) (any, error) {
	cfg := c.model.Config()
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return nil, badRequest("bad config: %v", err)
	}
	if err := c.setScheduleConfig(r.Context(), cfg); err != nil {
		return nil, err
	}
	return "The config is updated.", nil
}

// Affinity groups (pd/schedule/affinity.go): one per table in the
// affinity-tables config, with its target stores, phase and regions
// (changed through cluster.updateAffinityTables, affinity.go).

func pathTable(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("table"), 10, 64)
	if err != nil || id <= 0 {
		return 0, badRequest("table id %q is not a positive number", r.PathValue("table"))
	}
	return id, nil
}

// apiAffinityGroups lists the groups; ?regions=1 adds each group's regions.
func apiAffinityGroups(r *http.Request, c *cluster) (any, error) {
	return c.coord.Affinity().Groups(r.URL.Query().Get("regions") != ""), nil
}

// apiAffinityGroup shows one table's group with its regions (a table not
// configured shows as pending, with its regions and whether they are
// co-led all the same).
func apiAffinityGroup(r *http.Request, c *cluster) (any, error) {
	id, err := pathTable(r)
	if err != nil {
		return nil, err
	}
	return c.coord.Affinity().Group(id, true), nil
}

// apiAddAffinityGroups adds tables to affinity-tables: {"table_ids": [..]}.
func apiAddAffinityGroups(r *http.Request, c *cluster) (any, error) {
	var req struct {
		TableIDs []int64 `json:"table_ids"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.TableIDs) == 0 {
		return nil, badRequest("bad affinity group request (want {\"table_ids\": [id, ...]}): %v", err)
	}
	if _, err := c.updateAffinityTables(r.Context(), req.TableIDs, nil); err != nil {
		return nil, err
	}
	return "The affinity groups are created.", nil
}

func apiRemoveAffinityGroup(r *http.Request, c *cluster) (any, error) {
	id, err := pathTable(r)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(c.model.Config().AffinityTables, id) {
		return nil, notFound("table %d has no affinity group", id)
	}
	if _, err := c.updateAffinityTables(r.Context(), nil, []int64{id}); err != nil {
		return nil, err
	}
	return "The affinity group is removed.", nil
}

// Members.

type apiMember struct {
	Name       string   `json:"name"`
	MemberID   uint64   `json:"member_id"`
	ClientURLs []string `json:"client_urls"`
	PeerURLs   []string `json:"peer_urls"`
	Health     bool     `json:"health,omitempty"`
}

func memberView(m *pdpb.Member) apiMember {
	return apiMember{Name: m.GetName(), MemberID: m.GetMemberId(), ClientURLs: m.GetClientUrls(), PeerURLs: m.GetPeerUrls()}
}

func (s *Server) apiMembers(w http.ResponseWriter, r *http.Request) {
	ms, leader, err := s.members(r.Context())
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	out := struct {
		Members []apiMember `json:"members"`
		Leader  *apiMember  `json:"leader,omitempty"`
	}{Members: []apiMember{}}
	for _, m := range ms {
		out.Members = append(out.Members, memberView(m))
	}
	if leader != nil {
		l := memberView(leader)
		out.Leader = &l
	}
	writeJSON(w, http.StatusOK, out)
}

// apiHealth reports every member of the etcd cluster, healthy when etcd
// lists it as started (it has a name) and the cluster has a leader.
func (s *Server) apiHealth(w http.ResponseWriter, r *http.Request) {
	ms, leader, err := s.members(r.Context())
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	out := []apiMember{}
	for _, m := range ms {
		v := memberView(m)
		v.Health = leader != nil && s.etcd.Server.Leader() != 0
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, out)
}
