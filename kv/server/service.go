package server

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/coprocessor"
	"github.com/stratadb/strata/kv/concurrency"
	"github.com/stratadb/strata/kv/mvcc"
	"github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/proto/errorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/storepb"
	"github.com/stratadb/strata/raftstore"
)

var rpcSeconds = promauto.NewHistogramVec(prometheus.HistogramOpts{
	Namespace: "strata", Subsystem: "store", Name: "rpc_seconds",
	Help:    "Latency of store gRPC requests by method and outcome (ok, region_error, key_error, error).",
	Buckets: prometheus.ExponentialBuckets(0.00005, 2, 18),
}, []string{"method", "result"})

func observe(method string, start time.Time, result *string) {
	rpcSeconds.WithLabelValues(method, *result).Observe(time.Since(start).Seconds())
}

// TSO hands out PD timestamps.
type TSO interface {
	GetTS(ctx context.Context) (uint64, error)
}

// Service implements storepb.StoreServer on a raftstore.Store.
type Service struct {
	storepb.UnimplementedStoreServer
	store *raftstore.Store
	tso   TSO
	// cm orders 1PC writes after the reads served before them (package
	// concurrency); syncedGen is the store's leader generation for which
	// cm's max read timestamp was last raised to a fresh PD timestamp.
	cm        *concurrency.Manager
	syncedGen atomic.Uint64
}

// NewService returns the gRPC service of store; tso is used to sync the max
// read timestamp whenever this store gains a region leadership.
func NewService(store *raftstore.Store, tso TSO) *Service {
	return &Service{store: store, tso: tso, cm: concurrency.New()}
}

// syncMaxTS raises the max read timestamp to a fresh PD timestamp once
// after every leadership this store gained: reads the previous leader
// served all had smaller timestamps, so writes here commit after them.
// It returns the leader generation the max read timestamp now covers; a
// write whose commit_ts is chosen after this call is proposed only if the
// store is still at that generation (raftstore.OnePCAtLeaderGen).
func (s *Service) syncMaxTS(ctx context.Context) (uint64, error) {
	gen := s.store.LeaderGeneration()
	if s.syncedGen.Load() == gen {
		return gen, nil
	}
	ts, err := s.tso.GetTS(ctx)
	if err != nil {
		return 0, err
	}
	s.cm.SyncMaxTS(ts)
	s.syncedGen.Store(gen)
	return gen, nil
}

var _ storepb.StoreServer = (*Service)(nil)

func grpcError(err error) error {
	switch {
	case errors.Is(err, raftstore.ErrUndetermined):
		// The write reached raft; the client reports it as undetermined.
		return status.Error(codes.Unknown, err.Error())
	case errors.Is(err, raftstore.ErrStopped):
		return status.Error(codes.Unavailable, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	default:
		return status.Error(codes.Internal, err.Error())
	}
}

// read waits for a linearizable read of the request's region.
func (s *Service) read(ctx context.Context, rctx *kvrpcpb.Context) (*metapb.Region, *errorpb.Error, error) {
	region, rerr, err := s.store.ReadIndex(ctx, rctx)
	if err != nil {
		return nil, nil, grpcError(err)
	}
	return region, rerr, nil
}

// KvGet implements storepb.StoreServer.
func (s *Service) KvGet(ctx context.Context, req *kvrpcpb.GetRequest) (_ *kvrpcpb.GetResponse, err error) {
	start, result := time.Now(), "ok"
	defer observe("kv_get", start, &result)
	region, rerr, err := s.read(ctx, req.GetContext())
	if err != nil {
		result = "error"
		return nil, err
	}
	if rerr == nil {
		rerr = raftstore.CheckKeyInRegion(req.GetKey(), region)
	}
	if rerr != nil {
		result = "region_error"
		return &kvrpcpb.GetResponse{RegionError: rerr}, nil
	}
	if err := s.cm.ReadKey(ctx, req.GetKey(), req.GetVersion()); err != nil {
		result = "error"
		return nil, grpcError(err)
	}
	v, found, err := mvcc.NewReader(s.store.Engine()).Get(req.GetKey(), req.GetVersion())
	if err != nil {
		result = "error"
		return nil, grpcError(err)
	}
	return &kvrpcpb.GetResponse{Value: v, NotFound: !found}, nil
}

// KvScan implements storepb.StoreServer. The end key is clamped to the
// region's end.
func (s *Service) KvScan(ctx context.Context, req *kvrpcpb.ScanRequest) (*kvrpcpb.ScanResponse, error) {
	start, result := time.Now(), "ok"
	defer observe("kv_scan", start, &result)
	region, rerr, err := s.read(ctx, req.GetContext())
	if err != nil {
		result = "error"
		return nil, err
	}
	if rerr == nil {
		rerr = raftstore.CheckKeyInRegion(req.GetStartKey(), region)
	}
	if rerr != nil {
		result = "region_error"
		return &kvrpcpb.ScanResponse{RegionError: rerr}, nil
	}
	end := raftstore.ClampEnd(req.GetEndKey(), region)
	if err := s.cm.ReadRange(ctx, req.GetStartKey(), end, req.GetVersion()); err != nil {
		result = "error"
		return nil, grpcError(err)
	}
	pairs, err := mvcc.NewReader(s.store.Engine()).Scan(req.GetStartKey(), end, req.GetVersion(), int(req.GetLimit()), req.GetKeyOnly())
	if err != nil {
		result = "error"
		return nil, grpcError(err)
	}
	resp := &kvrpcpb.ScanResponse{Pairs: make([]*kvrpcpb.KvPair, len(pairs))}
	for i, p := range pairs {
		resp.Pairs[i] = &kvrpcpb.KvPair{Key: p.Key, Value: p.Value}
	}
	return resp, nil
}

// KvOnePC implements storepb.StoreServer.
func (s *Service) KvOnePC(ctx context.Context, req *kvrpcpb.OnePCRequest) (*kvrpcpb.OnePCResponse, error) {
	start, result := time.Now(), "ok"
	defer observe("kv_one_pc", start, &result)
	gen, err := s.syncMaxTS(ctx)
	if err != nil {
		result = "region_error"
		return &kvrpcpb.OnePCResponse{RegionError: raftstore.ErrServerIsBusy("syncing max timestamp with PD: " + err.Error())}, nil
	}
	keys := make([][]byte, len(req.GetMutations()))
	for i, m := range req.GetMutations() {
		keys[i] = m.GetKey()
	}
	commitTS, release, err := s.cm.LockKeys(ctx, keys, req.GetCommitTs())
	if err != nil {
		result = "error"
		return nil, grpcError(err) // nothing proposed
	}
	req.CommitTs = commitTS
	resp, err := s.onePC(ctx, req, commitTS, gen)
	release()
	switch {
	case err != nil:
		result = "error"
		return nil, grpcError(err)
	case resp.GetRegionError() != nil:
		result = "region_error"
	case len(resp.GetErrors()) > 0:
		result = "key_error"
	}
	return resp, nil
}

// Coprocessor implements storepb.StoreServer.
func (s *Service) Coprocessor(ctx context.Context, req *kvrpcpb.CoprocessorRequest) (*kvrpcpb.CoprocessorResponse, error) {
	start, result := time.Now(), "ok"
	defer observe("coprocessor", start, &result)
	dag := &coprocessorpb.DAGRequest{}
	if err := proto.Unmarshal(req.GetData(), dag); err != nil {
		result = "error"
		return &kvrpcpb.CoprocessorResponse{OtherError: "coprocessor: bad DAG request: " + err.Error()}, nil
	}
	region, rerr, err := s.read(ctx, req.GetContext())
	if err != nil {
		result = "error"
		return nil, err
	}
	ranges := coprocessor.RangesFromProto(req.GetRanges())
	for i := range ranges {
		if rerr != nil {
			break
		}
		rerr = raftstore.CheckRangeInRegion(ranges[i].Start, ranges[i].End, region)
		ranges[i].End = raftstore.ClampEnd(ranges[i].End, region)
	}
	if rerr != nil {
		result = "region_error"
		return &kvrpcpb.CoprocessorResponse{RegionError: rerr}, nil
	}
	for _, r := range ranges {
		if err := s.cm.ReadRange(ctx, r.Start, r.End, req.GetStartTs()); err != nil {
			result = "error"
			return nil, grpcError(err)
		}
	}
	sel, err := coprocessor.Execute(mvcc.NewReader(s.store.Engine()), dag, ranges, req.GetStartTs())
	if err != nil {
		result = "error"
		return &kvrpcpb.CoprocessorResponse{OtherError: err.Error()}, nil
	}
	data, err := proto.Marshal(sel)
	if err != nil {
		result = "error"
		return nil, grpcError(err)
	}
	return &kvrpcpb.CoprocessorResponse{Data: data}, nil
}

// Raft implements storepb.StoreServer: the receiving end of another store's
// raft transport.
func (s *Service) Raft(stream storepb.Store_RaftServer) error {
	return s.store.ServeRaftStream(stream)
}
