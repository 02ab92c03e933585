package server

import (
	"github.com/cockroachdb/pebble/v2"
	"runtime"

	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/kv/regionkeys"
	"github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/proto/errorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
	"github.com/stratadb/strata/proto/storepb"
	"github.com/stratadb/strata/raftstore"
	"github.com/stratadb/strata/store/concurrency"
	"github.com/stratadb/strata/store/coprocessor"
	"github.com/stratadb/strata/store/gc"
	"github.com/stratadb/strata/store/mvcc"
	"github.com/stratadb/strata/store/txn"
)

var copBatchTasks = promauto.NewCounter(prometheus.CounterOpts{
	Namespace: "strata", Subsystem: "store", Name: "coprocessor_batch_tasks_total",
	Help: "Region tasks served inside another region's coprocessor RPC (store batching).",
})

var rpcSeconds = promauto.NewHistogramVec(prometheus.HistogramOpts{
	Namespace: "strata", Subsystem: "store", Name: "rpc_seconds",
	Help:    "Latency of store gRPC requests by method and outcome (ok, region_error, key_error, error).",
	Buckets: prometheus.ExponentialBuckets(0.00005, 2, 18),
}, []string{"method", "result"})

// TSO hands out PD timestamps.
type TSO interface {
	GetTS(ctx context.Context) (uint64, error)
}

// Service implements storepb.StoreServer on a raftstore.Store: every KV
// command goes through store/txn (Percolator evaluated on the leader, plain
// writes proposed through raft).
type Service struct {
	storepb.UnimplementedStoreServer
	store    *raftstore.Store
	eng      raftEngine
	st       *txn.Storage
	cm       *concurrency.Manager
	detector *clusterDetector
	// exportLimit paces every KvExport's file writes on this store
	// together (backup.go).
	exportLimit exportLimiter
	// gc, when set, refuses reads below the GC safe point (gc.go).
	gc *gc.Worker
	// cop bounds concurrent coprocessor requests (point gets bypass it).
	cop *coprocessor.Limiter
}

// NewService returns the gRPC service of store; tso is used to sync the max
// read timestamp whenever this store gains a region leadership, pd to find
// the cluster's deadlock detector. Close releases its connections.
// memLocks is txn.Config.InMemoryPessimisticLock: the service then installs
// the storage's hooks on store (leader changes, handover before transfers
// and splits).
func NewService(store *raftstore.Store, tso TSO, pd RegionLocator, log *slog.Logger, memLocks bool) *Service {
	cm := concurrency.New()
	det := newClusterDetector(store, pd, log)
	eng := raftEngine{s: store, peers: &storeClients{pd: pd, dial: store.Security().DialOption()}}
	st := txn.New(eng, cm, tso, txn.Config{Detector: det, InMemoryPessimisticLock: memLocks})
	// Always: a lost leadership also wakes the region's lock waiters.
	store.SetTxnHooks(&raftstore.TxnHooks{LeaderChanged: st.LeaderChanged, Handover: st.Handover})
	store.SetResolvedTSHooks(resolvedTSHooks(tso, cm))
	return &Service{store: store, eng: eng, cm: cm, detector: det, st: st, cop: coprocessor.NewLimiter(copSlots())}
}

// Close releases the service's outgoing connections (to the deadlock
// detector, to other stores for follower reads). Call it after the gRPC
// server stopped.
func (s *Service) Close() {
	s.detector.close()
	s.eng.peers.close()
}

// Storage returns the transaction layer the service runs on.
func (s *Service) Storage() *txn.Storage { return s.st }

func (e raftEngine) Snapshot() txn.Snapshot { return readView(e.s.Engine()) }

// readView returns a consistent view of db for one request: an mvcc.View
// (no DB mutex, no compaction picking on close), or a pebble snapshot if the
// view cannot be opened.
func readView(db *pebble.DB) txn.Snapshot {
	if v, err := mvcc.NewView(db); err == nil {
		return v
	}
	return db.NewSnapshot()
}

func (e raftEngine) LeaderGeneration() uint64 { return e.s.LeaderGeneration() }

func (e raftEngine) LeaderTerm(regionID uint64) uint64 { return e.s.LeaderTerm(regionID) }

func (e raftEngine) Write(ctx context.Context, rctx *kvrpcpb.Context, region *metapb.Region, gen uint64, reqs []*raft_cmdpb.Request, wd *kvrpcpb.WriteDetail) (*errorpb.Error, error) {
	resp, timing, err := e.s.ProposeTimed(ctx, raftCmd(rctx, region, reqs), gen)
	timing.FillWriteDetail(wd)
	if err != nil {
		return nil, err
	}
	return resp.GetRegionError(), nil
}

func raftCmd(rctx *kvrpcpb.Context, region *metapb.Region, reqs []*raft_cmdpb.Request) *raft_cmdpb.RaftCmdRequest {
	return &raft_cmdpb.RaftCmdRequest{
		Header: &raft_cmdpb.RaftRequestHeader{
			RegionId: region.GetId(), Peer: rctx.GetPeer(), RegionEpoch: region.GetRegionEpoch(),
		},
		Requests: reqs,
	}
}

var _ storepb.StoreServer = (*Service)(nil)

// GRPCError maps a store/txn (or raftstore) error to the gRPC status error
// a store node answers with.
func GRPCError(err error) error {
	if _, ok := status.FromError(err); ok {
		return err // already a status (a handler, or a test's fault, chose it)
	}
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
	case errors.Is(err, txn.ErrInvalidRequest):
		return status.Error(codes.InvalidArgument, err.Error())
	default:
		return status.Error(codes.Internal, err.Error())
	}
}

// resultOf classifies a response for the rpc_seconds metric.
func resultOf(resp any, err error) string {
	if err != nil {
		return "error"
	}
	if r, ok := resp.(interface{ GetRegionError() *errorpb.Error }); ok && r.GetRegionError() != nil {
		return "region_error"
	}
	if r, ok := resp.(interface{ GetError() *kvrpcpb.KeyError }); ok && r.GetError() != nil {
		return "key_error"
	}
	if r, ok := resp.(interface{ GetErrors() []*kvrpcpb.KeyError }); ok && len(r.GetErrors()) > 0 {
		return "key_error"
	}
	return "ok"
}

// call runs one command, records its latency and maps errors to gRPC
// status errors.
func call[Req, Resp any](ctx context.Context, method string, req Req, fn func(context.Context, Req) (Resp, error)) (Resp, error) {
	start := time.Now()
	resp, err := fn(ctx, req)
	return called(method, start, resp, err)
}

// called is call's end: it records the latency of a command that started
// at start and maps its error to a gRPC status error.
func called[Resp any](method string, start time.Time, resp Resp, err error) (Resp, error) {
	now := time.Now()
	rpcSeconds.WithLabelValues(method, resultOf(resp, err)).Observe(now.Sub(start).Seconds())
	if err != nil {
		var zero Resp
		return zero, GRPCError(err)
	}
	finishDetails(method, resp, start, now)
	return resp, nil
}

// KvGet implements storepb.StoreServer.
func (s *Service) KvGet(ctx context.Context, req *kvrpcpb.GetRequest) (*kvrpcpb.GetResponse, error) {
	return call(ctx, "kv_get", req, gcChecked(s.gc, (*kvrpcpb.GetRequest).GetVersion, refuseGet, s.st.Get))
}

// refuseGet is a get's answer for a version below the GC safe point.
func refuseGet(ke *kvrpcpb.KeyError) *kvrpcpb.GetResponse { return &kvrpcpb.GetResponse{Error: ke} }

// KvBatchGet implements storepb.StoreServer.
func (s *Service) KvBatchGet(ctx context.Context, req *kvrpcpb.BatchGetRequest) (*kvrpcpb.BatchGetResponse, error) {
	return call(ctx, "kv_batch_get", req, gcChecked(s.gc, (*kvrpcpb.BatchGetRequest).GetVersion,
		func(ke *kvrpcpb.KeyError) *kvrpcpb.BatchGetResponse { return &kvrpcpb.BatchGetResponse{Error: ke} }, s.st.BatchGet))
}

// KvScan implements storepb.StoreServer. The range is clamped to the
// region.
func (s *Service) KvScan(ctx context.Context, req *kvrpcpb.ScanRequest) (*kvrpcpb.ScanResponse, error) {
	return call(ctx, "kv_scan", req, gcChecked(s.gc, (*kvrpcpb.ScanRequest).GetVersion,
		func(ke *kvrpcpb.KeyError) *kvrpcpb.ScanResponse { return &kvrpcpb.ScanResponse{Error: ke} }, s.st.Scan))
}

// KvPrewrite implements storepb.StoreServer.
func (s *Service) KvPrewrite(ctx context.Context, req *kvrpcpb.PrewriteRequest) (*kvrpcpb.PrewriteResponse, error) {
	return call(ctx, "kv_prewrite", req, s.st.Prewrite)
}

// KvCommit implements storepb.StoreServer.
func (s *Service) KvCommit(ctx context.Context, req *kvrpcpb.CommitRequest) (*kvrpcpb.CommitResponse, error) {
	return call(ctx, "kv_commit", req, s.st.Commit)
}

// KvBatchRollback implements storepb.StoreServer.
func (s *Service) KvBatchRollback(ctx context.Context, req *kvrpcpb.BatchRollbackRequest) (*kvrpcpb.BatchRollbackResponse, error) {
	return call(ctx, "kv_batch_rollback", req, s.st.BatchRollback)
}

// KvCleanup implements storepb.StoreServer.
func (s *Service) KvCleanup(ctx context.Context, req *kvrpcpb.CleanupRequest) (*kvrpcpb.CleanupResponse, error) {
	return call(ctx, "kv_cleanup", req, s.st.Cleanup)
}

// KvCheckTxnStatus implements storepb.StoreServer.
func (s *Service) KvCheckTxnStatus(ctx context.Context, req *kvrpcpb.CheckTxnStatusRequest) (*kvrpcpb.CheckTxnStatusResponse, error) {
	return call(ctx, "kv_check_txn_status", req, s.st.CheckTxnStatus)
}

// KvCheckSecondaryLocks implements storepb.StoreServer.
func (s *Service) KvCheckSecondaryLocks(ctx context.Context, req *kvrpcpb.CheckSecondaryLocksRequest) (*kvrpcpb.CheckSecondaryLocksResponse, error) {
	return call(ctx, "kv_check_secondary_locks", req, s.st.CheckSecondaryLocks)
}

// KvResolveLock implements storepb.StoreServer.
func (s *Service) KvResolveLock(ctx context.Context, req *kvrpcpb.ResolveLockRequest) (*kvrpcpb.ResolveLockResponse, error) {
	return call(ctx, "kv_resolve_lock", req, s.st.ResolveLock)
}

// KvTxnHeartBeat implements storepb.StoreServer.
func (s *Service) KvTxnHeartBeat(ctx context.Context, req *kvrpcpb.TxnHeartBeatRequest) (*kvrpcpb.TxnHeartBeatResponse, error) {
	return call(ctx, "kv_txn_heart_beat", req, s.st.TxnHeartBeat)
}

// KvPessimisticLock implements storepb.StoreServer. It may wait for another
// transaction's lock (see txn.Storage.PessimisticLock).
func (s *Service) KvPessimisticLock(ctx context.Context, req *kvrpcpb.PessimisticLockRequest) (*kvrpcpb.PessimisticLockResponse, error) {
	return call(ctx, "kv_pessimistic_lock", req, s.st.PessimisticLock)
}

// KvPessimisticRollback implements storepb.StoreServer.
func (s *Service) KvPessimisticRollback(ctx context.Context, req *kvrpcpb.PessimisticRollbackRequest) (*kvrpcpb.PessimisticRollbackResponse, error) {
	return call(ctx, "kv_pessimistic_rollback", req, s.st.PessimisticRollback)
}

// KvScanLock implements storepb.StoreServer.
func (s *Service) KvScanLock(ctx context.Context, req *kvrpcpb.ScanLockRequest) (*kvrpcpb.ScanLockResponse, error) {
	return call(ctx, "kv_scan_lock", req, s.st.ScanLock)
}

// SplitRegion implements storepb.StoreServer: splits the region in the
// request's context, which this store must lead (raftstore.SplitRegion).
func (s *Service) SplitRegion(ctx context.Context, req *kvrpcpb.SplitRegionRequest) (*kvrpcpb.SplitRegionResponse, error) {
	return call(ctx, "split_region", req, func(ctx context.Context, req *kvrpcpb.SplitRegionRequest) (*kvrpcpb.SplitRegionResponse, error) {
		rc := req.GetContext()
		regions, rerr, err := s.store.SplitRegion(ctx, rc.GetRegionId(), rc.GetRegionEpoch(), req.GetSplitKeys())
		if err != nil {
			return nil, err
		}
		return &kvrpcpb.SplitRegionResponse{RegionError: rerr, Regions: regions}, nil
	})
}

// copSlots is how many coprocessor requests a store runs at once: two per
// core, at least four (most are short range reads that should not queue
// behind each other), so long scans still leave room for point reads and
// writes.
func copSlots() int { return max(4, 2*runtime.GOMAXPROCS(0)) }

// Coprocessor implements storepb.StoreServer.
func (s *Service) Coprocessor(ctx context.Context, req *kvrpcpb.CoprocessorRequest) (*kvrpcpb.CoprocessorResponse, error) {
	return call(ctx, "coprocessor", req, gcChecked(s.gc, (*kvrpcpb.CoprocessorRequest).GetStartTs,
		func(ke *kvrpcpb.KeyError) *kvrpcpb.CoprocessorResponse {
			return &kvrpcpb.CoprocessorResponse{Locked: ke}
		}, s.coprocessor))
}

func (s *Service) coprocessor(ctx context.Context, req *kvrpcpb.CoprocessorRequest) (*kvrpcpb.CoprocessorResponse, error) {
	return ServeCoprocessor(ctx, req, s.copRegion)
}

// CopRegion runs dag over ranges of the region rctx names, read at startTS.
type CopRegion func(ctx context.Context, dag *coprocessorpb.DAGRequest, rctx *kvrpcpb.Context, ranges []*kvrpcpb.KeyRange, startTS uint64) (*kvrpcpb.CoprocessorResponse, error)

// ServeCoprocessor decodes req's DAG and runs it with region over the
// request's region and, concurrently, over every store-batched task's
// region. It is exported so that store/storetest answers coprocessor
// requests as a store node does.
func ServeCoprocessor(ctx context.Context, req *kvrpcpb.CoprocessorRequest, region CopRegion) (*kvrpcpb.CoprocessorResponse, error) {
	dag := &coprocessorpb.DAGRequest{}
	if err := proto.Unmarshal(req.GetData(), dag); err != nil {
		return &kvrpcpb.CoprocessorResponse{OtherError: "coprocessor: bad DAG request: " + err.Error()}, nil
	}
	tasks := req.GetTasks()
	if len(tasks) == 0 {
		return region(ctx, dag, req.GetContext(), req.GetRanges(), req.GetStartTs())
	}
	// Store batching: every task is a region of its own, checked and read
	// as the request's region is, concurrently with it (each takes its own
	// coprocessor slot, none waits holding one).
	batch := make([]*kvrpcpb.StoreBatchTaskResponse, len(tasks))
	var wg sync.WaitGroup
	for i, t := range tasks {
		wg.Go(func() {
			rctx := proto.Clone(req.GetContext()).(*kvrpcpb.Context)
			rctx.RegionId, rctx.RegionEpoch, rctx.Peer = t.GetRegionId(), t.GetRegionEpoch(), t.GetPeer()
			resp, err := region(ctx, dag, rctx, t.GetRanges(), req.GetStartTs())
			if err != nil {
				// What fails a request (a stopped store, a failed
				// ReadIndex) makes the client retry the task alone, as
				// it would retry an unbatched request.
				batch[i] = &kvrpcpb.StoreBatchTaskResponse{RegionError: &errorpb.Error{Message: "coprocessor task: " + err.Error()}}
				return
			}
			batch[i] = &kvrpcpb.StoreBatchTaskResponse{RegionError: resp.RegionError, Locked: resp.Locked, OtherError: resp.OtherError, Data: resp.Data}
		})
	}
	resp, err := region(ctx, dag, req.GetContext(), req.GetRanges(), req.GetStartTs())
	wg.Wait()
	copBatchTasks.Add(float64(len(tasks)))
	if err != nil {
		return nil, err
	}
	resp.BatchResponses = batch
	return resp, nil
}

// copRegion runs dag over ranges of the region rctx names: a ReadIndex
// (leadership and epoch), the ranges checked against the region, the
// concurrency manager's max_ts raised and its in-memory locks checked,
// then one engine snapshot, valid only if the peer still leads in the term
// it led in before the ReadIndex (txn.ReadCheck: the wait may have ended
// because the region left this peer), read at startTS under a coprocessor
// slot.
func (s *Service) copRegion(ctx context.Context, dag *coprocessorpb.DAGRequest, rctx *kvrpcpb.Context, kranges []*kvrpcpb.KeyRange, startTS uint64) (*kvrpcpb.CoprocessorResponse, error) {
	start := time.Now()
	var (
		region *metapb.Region
		rerr   *errorpb.Error
		err    error
	)
	replica := rctx.GetReplicaRead() || rctx.GetStaleRead()
	var rr txn.ReplicaReader
	if replica {
		rr = s.eng
	}
	check := txn.NewReadCheck(s.eng, rr, rctx.GetRegionId())
	if replica {
		region, rerr, err = s.eng.ReadReplica(ctx, rctx, startTS)
	} else {
		region, rerr, err = s.store.ReadIndex(ctx, rctx)
	}
	if err != nil {
		return nil, err
	}
	if rerr != nil {
		return &kvrpcpb.CoprocessorResponse{RegionError: rerr}, nil
	}
	ct := StartCopTimer(start)
	ranges, rerr, err := CopRanges(ctx, s.cm, region, kranges, startTS)
	if err != nil {
		return nil, err
	}
	if rerr != nil {
		return &kvrpcpb.CoprocessorResponse{RegionError: rerr}, nil
	}
	// The snapshot is taken before waiting for a slot, right after the
	// checks that make it valid (leadership, epoch, applied index, in-flight
	// writes): a request that queues still reads the region as it was then,
	// even if the region's data left this store while it waited.
	ct.CMDone()
	snap := readView(s.store.Engine())
	defer snap.Close()
	if rerr := check.Gone(); rerr != nil {
		return &kvrpcpb.CoprocessorResponse{RegionError: rerr}, nil
	}
	if err := s.cop.Acquire(ctx); err != nil {
		return nil, err
	}
	defer s.cop.Release()
	ct.WaitDone()
	sr := mvcc.NewSnapshotReader(snap, mvcc.ReadOptionsFrom(rctx, startTS))
	defer sr.Close()
	var rows coprocessor.RowReader
	if execs := dag.GetExecutors(); len(execs) > 1 && execs[1].GetTp() == coprocessorpb.ExecType_TypeIndexLookUp {
		rows = &rowLookup{s: s, ctx: ctx, rctx: rctx, ts: startTS}
	}
	return ct.Done(CopResponse(coprocessor.ExecuteLookUp(sr, rows, dag, ranges)))
}

// CopRanges checks a coprocessor request's ranges against region (a
// KeyNotInRegion region error for one reaching outside) and clamps them to
// it, then raises max_ts to startTS and waits for the in-memory locks of
// writes committing over them (cm.ReadRange), as every read does before
// it takes its snapshot.
func CopRanges(ctx context.Context, cm *concurrency.Manager, region *metapb.Region, kranges []*kvrpcpb.KeyRange, startTS uint64) ([]coprocessor.Range, *errorpb.Error, error) {
	ranges := coprocessor.RangesFromProto(kranges)
	for i := range ranges {
		if rerr := regionkeys.CheckRange(ranges[i].Start, ranges[i].End, region); rerr != nil {
			return nil, rerr, nil
		}
		ranges[i].End = regionkeys.ClampEnd(ranges[i].End, region)
	}
	for _, r := range ranges {
		if err := cm.ReadRange(ctx, r.Start, r.End, startTS); err != nil {
			return nil, nil, err
		}
	}
	return ranges, nil, nil
}

// CopResponse is the response of a coprocessor run that returned sel and
// err: a lock met becomes Locked, a pushed-down expression's MySQL error
// travels with its code, any other failure is other_error.
func CopResponse(sel *coprocessorpb.SelectResponse, err error) (*kvrpcpb.CoprocessorResponse, error) {
	var ke *mvcc.KeyError
	if errors.As(err, &ke) {
		return &kvrpcpb.CoprocessorResponse{Locked: ke.Err}, nil
	}
	var ce coprocessor.CodedError
	if errors.As(err, &ce) {
		// A MySQL error of a pushed-down expression travels with its code.
		code, msg := ce.MySQLError()
		sel, err = &coprocessorpb.SelectResponse{Error: &coprocessorpb.Error{Code: uint32(code), Msg: msg}}, nil
	}
	if err != nil {
		return &kvrpcpb.CoprocessorResponse{OtherError: err.Error()}, nil
	}
	data, err := proto.Marshal(sel)
	if err != nil {
		return nil, err
	}
	return &kvrpcpb.CoprocessorResponse{Data: data}, nil
}

// Raft implements storepb.StoreServer: the receiving end of another store's
// raft transport.
func (s *Service) Raft(stream storepb.Store_RaftServer) error {
	return s.store.ServeRaftStream(stream)
}

// Snapshot implements storepb.StoreServer: the receiving end of another
// store's raft snapshot.
func (s *Service) Snapshot(stream storepb.Store_SnapshotServer) error {
	return s.store.ServeSnapshotStream(stream)
}
