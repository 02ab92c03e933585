package kvclient

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/proto/errorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/storepb"
)

// fakeCluster is an in-process cluster for client tests: a PD (it
// implements PD) and store servers on loopback that check routing like real
// leaders do and keep MVCC data in a map.
type fakeCluster struct {
	t testing.TB

	mu       sync.Mutex
	regions  map[uint64]*fakeRegion
	nextID   uint64
	stores   map[uint64]*fakeStore
	data     map[string][]fakeVersion // oldest first
	hideHint bool                     // NotLeader without leader hint
	noBatch  bool                     // stores ignore StoreBatchTasks (as before store batching)
	pdLeader map[uint64]uint64        // region id → store PD claims leads it
	pdErr    error
	onePCs   map[uint64]int // region id → applied 1PC prewrites

	pdCalls atomic.Int32
}

type fakeRegion struct {
	meta   *metapb.Region
	leader uint64 // store id; 0 = no leader
}

type fakeVersion struct {
	commitTS uint64
	value    []byte
	deleted  bool
}

// hookFn runs in a store handler before it serves (after=false) and, for
// KvPrewrite, after it applied (after=true). A non-nil result is sent as the
// region error instead of the normal response.
type hookFn func(ctx context.Context, method string, after bool) *errorpb.Error

type fakeStore struct {
	storepb.UnimplementedStoreServer
	id    uint64
	cl    *fakeCluster
	srv   *grpc.Server
	addr  string
	calls sync.Map // method → *atomic.Int32
	hook  atomic.Pointer[hookFn]
}

func newFakeCluster(t testing.TB, nStores int) *fakeCluster {
	cl := &fakeCluster{
		t:        t,
		regions:  make(map[uint64]*fakeRegion),
		stores:   make(map[uint64]*fakeStore),
		data:     make(map[string][]fakeVersion),
		pdLeader: make(map[uint64]uint64),
		onePCs:   make(map[uint64]int),
		nextID:   2,
	}
	meta := &metapb.Region{Id: 1, RegionEpoch: &metapb.RegionEpoch{ConfVer: 1, Version: 1}}
	for i := 1; i <= nStores; i++ {
		id := uint64(i)
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		s := &fakeStore{id: id, cl: cl, srv: grpc.NewServer(grpc.InitialWindowSize(kv.StreamWindowSize), grpc.InitialConnWindowSize(kv.ConnWindowSize)), addr: lis.Addr().String()}
		storepb.RegisterStoreServer(s.srv, s)
		go func() { _ = s.srv.Serve(lis) }()
		cl.stores[id] = s
		meta.Peers = append(meta.Peers, &metapb.Peer{Id: 100 + id, StoreId: id})
		t.Cleanup(s.srv.Stop)
	}
	cl.regions[1] = &fakeRegion{meta: meta, leader: 1}
	return cl
}

// client returns a client of the cluster, closed at test end.
func (cl *fakeCluster) client(cfg Config) *Client {
	if cfg.BackoffBudget == 0 {
		cfg.BackoffBudget = 3e9
	}
	if cfg.RPCTimeout == 0 {
		cfg.RPCTimeout = 2e9
	}
	c := New(cl, cfg)
	cl.t.Cleanup(func() { _ = c.Close() })
	return c
}

func (cl *fakeCluster) regionOf(key []byte) *fakeRegion {
	for _, r := range cl.regions {
		if bytes.Compare(r.meta.StartKey, key) <= 0 && (len(r.meta.EndKey) == 0 || bytes.Compare(key, r.meta.EndKey) < 0) {
			return r
		}
	}
	return nil
}

// split splits the region containing key at key; both halves keep the
// peers and leader and get a new version. It returns the new region's id.
func (cl *fakeCluster) split(key string) uint64 {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.splitLocked(key)
}

func (cl *fakeCluster) splitLocked(key string) uint64 {
	old := cl.regionOf([]byte(key))
	m := old.meta
	ver := m.RegionEpoch.Version + 1
	left := &metapb.Region{Id: m.Id, StartKey: m.StartKey, EndKey: []byte(key),
		RegionEpoch: &metapb.RegionEpoch{ConfVer: m.RegionEpoch.ConfVer, Version: ver}, Peers: m.Peers}
	id := cl.nextID
	cl.nextID++
	var peers []*metapb.Peer
	for _, p := range m.Peers {
		peers = append(peers, &metapb.Peer{Id: id*100 + p.StoreId, StoreId: p.StoreId})
	}
	right := &metapb.Region{Id: id, StartKey: []byte(key), EndKey: m.EndKey,
		RegionEpoch: &metapb.RegionEpoch{ConfVer: m.RegionEpoch.ConfVer, Version: ver}, Peers: peers}
	cl.regions[m.Id] = &fakeRegion{meta: left, leader: old.leader}
	cl.regions[id] = &fakeRegion{meta: right, leader: old.leader}
	return id
}

func (cl *fakeCluster) setLeader(regionID, storeID uint64) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.regions[regionID].leader = storeID
}

// setPDLeader makes PD report storeID as the leader of regionID.
func (cl *fakeCluster) setPDLeader(regionID, storeID uint64) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.pdLeader[regionID] = storeID
}

func (cl *fakeCluster) setPDErr(err error) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.pdErr = err
}

func (cl *fakeCluster) kill(storeID uint64) { cl.stores[storeID].srv.Stop() }

func (cl *fakeCluster) setHook(storeID uint64, h hookFn) {
	if h == nil {
		cl.stores[storeID].hook.Store(nil)
		return
	}
	cl.stores[storeID].hook.Store(&h)
}

func (cl *fakeCluster) put(key, value string, commitTS uint64) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.data[key] = append(cl.data[key], fakeVersion{commitTS: commitTS, value: []byte(value)})
}

func (cl *fakeCluster) appliedOnePCs(regionID uint64) int {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.onePCs[regionID]
}

func (s *fakeStore) count(method string) int {
	v, ok := s.calls.Load(method)
	if !ok {
		return 0
	}
	return int(v.(*atomic.Int32).Load())
}

func (cl *fakeCluster) calls(storeID uint64, method string) int {
	return cl.stores[storeID].count(method)
}

// --- PD ---

func (cl *fakeCluster) pdRegion(r *fakeRegion) (*metapb.Region, *metapb.Peer) {
	ls := r.leader
	if o, ok := cl.pdLeader[r.meta.Id]; ok {
		ls = o
	}
	for _, p := range r.meta.Peers {
		if p.StoreId == ls {
			return r.meta, p
		}
	}
	return r.meta, nil
}

func (cl *fakeCluster) GetRegion(_ context.Context, key []byte) (*metapb.Region, *metapb.Peer, error) {
	cl.pdCalls.Add(1)
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.pdErr != nil {
		return nil, nil, cl.pdErr
	}
	r := cl.regionOf(key)
	if r == nil {
		return nil, nil, errors.New("fake pd: region not found")
	}
	m, p := cl.pdRegion(r)
	return m, p, nil
}

func (cl *fakeCluster) GetRegionByID(_ context.Context, id uint64) (*metapb.Region, *metapb.Peer, error) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	r, ok := cl.regions[id]
	if !ok {
		return nil, nil, errors.New("fake pd: region not found")
	}
	m, p := cl.pdRegion(r)
	return m, p, nil
}

func (cl *fakeCluster) GetStore(_ context.Context, id uint64) (*metapb.Store, error) {
	s, ok := cl.stores[id]
	if !ok {
		return nil, errors.New("fake pd: store not found")
	}
	return &metapb.Store{Id: id, Address: s.addr}, nil
}

// --- store ---

// check validates routing like a leader would; it is called with cl.mu held.
func (s *fakeStore) check(rctx *kvrpcpb.Context, keys ...[]byte) (*fakeRegion, *errorpb.Error) {
	cl := s.cl
	r := cl.regions[rctx.GetRegionId()]
	onStore := false
	if r != nil {
		for _, p := range r.meta.Peers {
			onStore = onStore || p.StoreId == s.id
		}
	}
	if !onStore {
		return nil, &errorpb.Error{RegionNotFound: &errorpb.RegionNotFound{RegionId: rctx.GetRegionId()}}
	}
	// A replica read may be served by any replica (hooks model one that
	// is not ready).
	if r.leader != s.id && !rctx.GetReplicaRead() && !rctx.GetStaleRead() {
		nl := &errorpb.NotLeader{RegionId: r.meta.Id}
		if !cl.hideHint {
			for _, p := range r.meta.Peers {
				if p.StoreId == r.leader {
					nl.Leader = p
				}
			}
		}
		return nil, &errorpb.Error{NotLeader: nl}
	}
	if !proto.Equal(rctx.GetRegionEpoch(), r.meta.RegionEpoch) {
		var cur []*metapb.Region
		for _, o := range cl.regions {
			cur = append(cur, o.meta)
		}
		return nil, &errorpb.Error{EpochNotMatch: &errorpb.EpochNotMatch{CurrentRegions: cur}}
	}
	for _, k := range keys {
		if bytes.Compare(k, r.meta.StartKey) < 0 || (len(r.meta.EndKey) != 0 && bytes.Compare(k, r.meta.EndKey) >= 0) {
			return nil, &errorpb.Error{KeyNotInRegion: &errorpb.KeyNotInRegion{Key: k, RegionId: r.meta.Id}}
		}
	}
	return r, nil
}

// enter counts the call and runs the hook.
func (s *fakeStore) enter(ctx context.Context, method string, after bool) *errorpb.Error {
	if !after {
		v, _ := s.calls.LoadOrStore(method, new(atomic.Int32))
		v.(*atomic.Int32).Add(1)
	}
	if h := s.hook.Load(); h != nil {
		return (*h)(ctx, method, after)
	}
	return nil
}

func (cl *fakeCluster) visible(key string, ts uint64) ([]byte, bool) {
	vs := cl.data[key]
	for i := len(vs) - 1; i >= 0; i-- {
		if vs[i].commitTS <= ts {
			if vs[i].deleted {
				return nil, false
			}
			return vs[i].value, true
		}
	}
	return nil, false
}

func (cl *fakeCluster) scan(start, end []byte, ts uint64, limit int) []*kvrpcpb.KvPair {
	keys := make([]string, 0, len(cl.data))
	for k := range cl.data {
		if k >= string(start) && (len(end) == 0 || k < string(end)) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []*kvrpcpb.KvPair
	for _, k := range keys {
		if v, ok := cl.visible(k, ts); ok {
			out = append(out, &kvrpcpb.KvPair{Key: []byte(k), Value: v})
			if limit > 0 && len(out) == limit {
				break
			}
		}
	}
	return out
}

func (s *fakeStore) KvGet(ctx context.Context, req *kvrpcpb.GetRequest) (*kvrpcpb.GetResponse, error) {
	if re := s.enter(ctx, "KvGet", false); re != nil {
		return &kvrpcpb.GetResponse{RegionError: re}, nil
	}
	s.cl.mu.Lock()
	defer s.cl.mu.Unlock()
	if _, re := s.check(req.Context, req.Key); re != nil {
		return &kvrpcpb.GetResponse{RegionError: re}, nil
	}
	v, ok := s.cl.visible(string(req.Key), req.Version)
	return &kvrpcpb.GetResponse{Value: v, NotFound: !ok}, nil
}

// SplitRegion splits the region at every key strictly inside it, as a
// store does, and answers with the resulting regions in key order.
func (s *fakeStore) SplitRegion(ctx context.Context, req *kvrpcpb.SplitRegionRequest) (*kvrpcpb.SplitRegionResponse, error) {
	if re := s.enter(ctx, "SplitRegion", false); re != nil {
		return &kvrpcpb.SplitRegionResponse{RegionError: re}, nil
	}
	s.cl.mu.Lock()
	defer s.cl.mu.Unlock()
	r, re := s.check(req.Context, req.SplitKeys...)
	if re != nil {
		return &kvrpcpb.SplitRegionResponse{RegionError: re}, nil
	}
	ids := []uint64{r.meta.Id}
	for _, k := range req.SplitKeys {
		if !bytes.Equal(k, r.meta.StartKey) {
			ids = append(ids, s.cl.splitLocked(string(k)))
		}
	}
	resp := &kvrpcpb.SplitRegionResponse{}
	for _, id := range ids {
		resp.Regions = append(resp.Regions, s.cl.regions[id].meta)
	}
	return resp, nil
}

func (s *fakeStore) KvScan(ctx context.Context, req *kvrpcpb.ScanRequest) (*kvrpcpb.ScanResponse, error) {
	if re := s.enter(ctx, "KvScan", false); re != nil {
		return &kvrpcpb.ScanResponse{RegionError: re}, nil
	}
	s.cl.mu.Lock()
	defer s.cl.mu.Unlock()
	r, re := s.check(req.Context, req.StartKey)
	if re != nil {
		return &kvrpcpb.ScanResponse{RegionError: re}, nil
	}
	end := req.EndKey
	if len(r.meta.EndKey) != 0 && (len(end) == 0 || bytes.Compare(end, r.meta.EndKey) > 0) {
		end = r.meta.EndKey
	}
	return &kvrpcpb.ScanResponse{Pairs: s.cl.scan(req.StartKey, end, req.Version, int(req.Limit))}, nil
}

// KvPrewrite serves 1PC prewrites only (try_one_pc, as kvclient/txn sends
// a one-region write): every mutation is committed at min_commit_ts, or the
// key errors are returned.
func (s *fakeStore) KvPrewrite(ctx context.Context, req *kvrpcpb.PrewriteRequest) (*kvrpcpb.PrewriteResponse, error) {
	if !req.GetTryOnePc() {
		return nil, errors.New("fake store: only 1PC prewrites are supported")
	}
	if re := s.enter(ctx, "KvPrewrite", false); re != nil {
		return &kvrpcpb.PrewriteResponse{RegionError: re}, nil
	}
	cl := s.cl
	cl.mu.Lock()
	keys := make([][]byte, len(req.Mutations))
	for i, m := range req.Mutations {
		keys[i] = m.Key
	}
	r, re := s.check(req.Context, keys...)
	if re != nil {
		cl.mu.Unlock()
		return &kvrpcpb.PrewriteResponse{RegionError: re}, nil
	}
	var kes []*kvrpcpb.KeyError
	for _, m := range req.Mutations {
		vs := cl.data[string(m.Key)]
		if n := len(vs); n > 0 && vs[n-1].commitTS > req.StartVersion {
			kes = append(kes, &kvrpcpb.KeyError{Conflict: &kvrpcpb.WriteConflict{
				StartTs: req.StartVersion, ConflictCommitTs: vs[n-1].commitTS, Key: m.Key}})
			continue
		}
		if _, live := cl.visible(string(m.Key), req.StartVersion); live && m.Op == kvrpcpb.Op_Insert {
			kes = append(kes, &kvrpcpb.KeyError{AlreadyExist: &kvrpcpb.AlreadyExist{Key: m.Key}})
		}
	}
	if len(kes) == 0 {
		for _, m := range req.Mutations {
			cl.data[string(m.Key)] = append(cl.data[string(m.Key)], fakeVersion{
				commitTS: req.MinCommitTs, value: m.Value, deleted: m.Op == kvrpcpb.Op_Del})
		}
		cl.onePCs[r.meta.Id]++
	}
	cl.mu.Unlock()
	if re := s.enter(ctx, "KvPrewrite", true); re != nil {
		return &kvrpcpb.PrewriteResponse{RegionError: re}, nil
	}
	if len(kes) == 0 {
		return &kvrpcpb.PrewriteResponse{OnePcCommitTs: req.MinCommitTs}, nil
	}
	return &kvrpcpb.PrewriteResponse{Errors: kes}, nil
}

// Coprocessor returns the rows in the ranges, or their count when the DAG
// has an aggregation; with page_scan_rows it ends a page after that many
// rows with a resume key. Batched tasks are answered each as its own
// region (store batching).
func (s *fakeStore) Coprocessor(ctx context.Context, req *kvrpcpb.CoprocessorRequest) (*kvrpcpb.CoprocessorResponse, error) {
	if re := s.enter(ctx, "Coprocessor", false); re != nil {
		return &kvrpcpb.CoprocessorResponse{RegionError: re}, nil
	}
	var dag coprocessorpb.DAGRequest
	if err := proto.Unmarshal(req.Data, &dag); err != nil {
		return &kvrpcpb.CoprocessorResponse{OtherError: err.Error()}, nil
	}
	s.cl.mu.Lock()
	defer s.cl.mu.Unlock()
	resp, err := s.copRegion(&dag, req.Context, req.Ranges, req.StartTs)
	if err != nil {
		return nil, err
	}
	for _, t := range req.Tasks {
		if s.cl.noBatch {
			break
		}
		rctx := proto.Clone(req.Context).(*kvrpcpb.Context)
		rctx.RegionId, rctx.RegionEpoch, rctx.Peer = t.RegionId, t.RegionEpoch, t.Peer
		tr, err := s.copRegion(&dag, rctx, t.Ranges, req.StartTs)
		if err != nil {
			return nil, err
		}
		resp.BatchResponses = append(resp.BatchResponses, &kvrpcpb.StoreBatchTaskResponse{
			RegionError: tr.RegionError, OtherError: tr.OtherError, Data: tr.Data})
	}
	return resp, nil
}

func (s *fakeStore) copRegion(dag *coprocessorpb.DAGRequest, rctx *kvrpcpb.Context, ranges []*kvrpcpb.KeyRange, ts uint64) (*kvrpcpb.CoprocessorResponse, error) {
	keys := make([][]byte, 0, len(ranges))
	for _, kr := range ranges {
		keys = append(keys, kr.Start)
	}
	r, re := s.check(rctx, keys...)
	if re != nil {
		return &kvrpcpb.CoprocessorResponse{RegionError: re}, nil
	}
	var sr coprocessorpb.SelectResponse
	scanned := uint64(0)
	for _, kr := range ranges {
		if len(kr.End) == 0 && len(r.meta.EndKey) != 0 || len(r.meta.EndKey) != 0 && bytes.Compare(kr.End, r.meta.EndKey) > 0 {
			return &kvrpcpb.CoprocessorResponse{OtherError: "range beyond region"}, nil
		}
		for _, p := range s.cl.scan(kr.Start, kr.End, ts, 0) {
			if n := dag.PagingSize; n > 0 && uint64(len(sr.Rows)) == n {
				sr.ResumeKey = append(bytes.Clone(sr.Rows[n-1].Key), 0)
				break
			}
			if n := dag.PageScanRows; n > 0 && scanned == n {
				sr.ResumeKey = append(bytes.Clone(sr.Rows[n-1].Key), 0)
				break
			}
			scanned++
			sr.Rows = append(sr.Rows, &coprocessorpb.Row{Key: p.Key, Value: p.Value})
		}
		if sr.ResumeKey != nil {
			break
		}
	}
	for _, e := range dag.Executors {
		if e.Tp == coprocessorpb.ExecType_TypeAggregation {
			sr.AggValues = []int64{int64(len(sr.Rows))}
			sr.Rows = nil
		}
	}
	data, err := proto.Marshal(&sr)
	if err != nil {
		return nil, err
	}
	return &kvrpcpb.CoprocessorResponse{Data: data}, nil
}

// BatchCommands serves the stream by running each request on its own
// goroutine through the unary handlers (hooks and counters included) and
// answering each as it completes.
func (s *fakeStore) BatchCommands(stream storepb.Store_BatchCommandsServer) error {
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	defer wg.Wait()
	for {
		msg, err := stream.Recv()
		if err != nil {
			return nil
		}
		for i, r := range msg.Requests {
			id := msg.RequestIds[i]
			wg.Go(func() {
				resp := s.dispatch(stream.Context(), r)
				mu.Lock()
				defer mu.Unlock()
				_ = stream.Send(&storepb.BatchCommandsResponse{
					Responses: []*storepb.BatchCommandsResponse_Response{resp}, RequestIds: []uint64{id}})
			})
		}
	}
}

func (s *fakeStore) dispatch(ctx context.Context, r *storepb.BatchCommandsRequest_Request) *storepb.BatchCommandsResponse_Response {
	out := &storepb.BatchCommandsResponse_Response{}
	var err error
	switch c := r.Cmd.(type) {
	case *storepb.BatchCommandsRequest_Request_Get:
		var resp *kvrpcpb.GetResponse
		resp, err = s.KvGet(ctx, c.Get)
		out.Cmd = &storepb.BatchCommandsResponse_Response_Get{Get: resp}
	case *storepb.BatchCommandsRequest_Request_Scan:
		var resp *kvrpcpb.ScanResponse
		resp, err = s.KvScan(ctx, c.Scan)
		out.Cmd = &storepb.BatchCommandsResponse_Response_Scan{Scan: resp}
	case *storepb.BatchCommandsRequest_Request_Prewrite:
		var resp *kvrpcpb.PrewriteResponse
		resp, err = s.KvPrewrite(ctx, c.Prewrite)
		out.Cmd = &storepb.BatchCommandsResponse_Response_Prewrite{Prewrite: resp}
	case *storepb.BatchCommandsRequest_Request_SplitRegion:
		var resp *kvrpcpb.SplitRegionResponse
		resp, err = s.SplitRegion(ctx, c.SplitRegion)
		out.Cmd = &storepb.BatchCommandsResponse_Response_SplitRegion{SplitRegion: resp}
	case *storepb.BatchCommandsRequest_Request_Coprocessor:
		var resp *kvrpcpb.CoprocessorResponse
		resp, err = s.Coprocessor(ctx, c.Coprocessor)
		out.Cmd = &storepb.BatchCommandsResponse_Response_Coprocessor{Coprocessor: resp}
	default:
		err = errors.New("fake store: unsupported command")
	}
	if err != nil {
		out.Error = err.Error()
	}
	return out
}
