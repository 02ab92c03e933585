package storetest

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/proto/coprocessorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/storepb"
	"github.com/stratadb/strata/store/coprocessor"
	"github.com/stratadb/strata/store/mvcc"
	"github.com/stratadb/strata/store/server"
	"github.com/stratadb/strata/store/txn"
)

// Fault answers matching requests in place of the store, with what the
// store would send: a response carrying a region or key error, or a gRPC
// status error (server.GRPCError of the store's error).
type Fault struct {
	// Method is the RPC, as storepb names it: "KvPrewrite", "KvCommit",
	// "KvPessimisticLock", ...
	Method string
	// Store, when not zero, limits the fault to requests arriving at that
	// store node.
	Store uint64
	// Match, when set, picks the requests the fault applies to. It runs
	// with the Store's lock held.
	Match func(req proto.Message) bool
	// Times is how many requests the fault answers; 0: until removed.
	Times int
	// Do, when set, runs where the fault acts (before the request runs,
	// or with Applied after it applied), before the answer: a wait (a
	// node that hangs, an answer held back until the test lets it go or
	// ctx ends; ctx is the request's, or its BatchCommands stream's) or
	// an action of the test at that point (a split between two pages).
	Do func(ctx context.Context, req proto.Message)
	// Answer returns the response or the error for req. Nil: the store's
	// own (the request runs after Do, or with Applied has run).
	Answer func(req proto.Message) (proto.Message, error)
	// Applied runs the request first and then answers with Answer instead
	// of its response: an answer lost after the store applied the request.
	Applied bool

	hits int
}

// Inject makes f answer requests from now on; the returned function
// removes it. Faults are tried in the order they were injected.
func (s *Store) Inject(f *Fault) (remove func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, f)
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, g := range s.faults {
			if g == f {
				s.faults = append(s.faults[:i], s.faults[i+1:]...)
				return
			}
		}
	}
}

// Hits is how many requests f answered.
func (s *Store) Hits(f *Fault) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return f.hits
}

// Calls is how many requests of method (an RPC as storepb names it:
// "KvGet", "KvPrewrite", ...) the store received, faulted ones included.
func (s *Store) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// fault counts the request to node storeID and returns the first fault
// matching it.
func (s *Store) fault(storeID uint64, method string, req proto.Message) *Fault {
	s.mu.Lock()
	if s.calls == nil {
		s.calls = map[string]int{}
		s.nodeCalls = map[nodeMethod]int{}
	}
	s.calls[method]++
	s.nodeCalls[nodeMethod{storeID, method}]++
	var f *Fault
	for _, g := range s.faults {
		if g.Method == method && (g.Store == 0 || g.Store == storeID) && (g.Times == 0 || g.hits < g.Times) && (g.Match == nil || g.Match(req)) {
			f = g
			f.hits++
			break
		}
	}
	s.mu.Unlock()
	return f
}

// service is the gRPC service of one simulated store node.
type service struct {
	storepb.UnimplementedStoreServer
	s       *Store
	storeID uint64
}

var _ storepb.StoreServer = (*service)(nil)

// handle runs one request through fn (store/txn or the coprocessor) unless
// a fault answers it; errors become the gRPC status errors a store node
// answers with.
func handle[Req, Resp proto.Message](ctx context.Context, sv *service, method string, req Req, fn func(context.Context, Req) (Resp, error)) (Resp, error) {
	var zero Resp
	f := sv.s.fault(sv.storeID, method, req)
	if f == nil {
		resp, err := fn(ctx, req)
		if err != nil {
			return zero, server.GRPCError(err)
		}
		return resp, nil
	}
	var (
		resp Resp
		err  error
	)
	if f.Applied {
		if resp, err = fn(ctx, req); err != nil {
			return zero, server.GRPCError(err)
		}
	}
	if f.Do != nil {
		f.Do(ctx, req)
	}
	if f.Answer == nil {
		if !f.Applied {
			if resp, err = fn(ctx, req); err != nil {
				return zero, server.GRPCError(err)
			}
		}
		return resp, nil
	}
	ans, err := f.Answer(req)
	if err != nil {
		return zero, err
	}
	return ans.(Resp), nil
}

func (sv *service) KvGet(ctx context.Context, req *kvrpcpb.GetRequest) (*kvrpcpb.GetResponse, error) {
	return handle(ctx, sv, "KvGet", req, sv.s.st.Get)
}

func (sv *service) KvBatchGet(ctx context.Context, req *kvrpcpb.BatchGetRequest) (*kvrpcpb.BatchGetResponse, error) {
	return handle(ctx, sv, "KvBatchGet", req, sv.s.st.BatchGet)
}

func (sv *service) KvScan(ctx context.Context, req *kvrpcpb.ScanRequest) (*kvrpcpb.ScanResponse, error) {
	return handle(ctx, sv, "KvScan", req, sv.s.st.Scan)
}

func (sv *service) KvPrewrite(ctx context.Context, req *kvrpcpb.PrewriteRequest) (*kvrpcpb.PrewriteResponse, error) {
	return handle(ctx, sv, "KvPrewrite", req, sv.s.st.Prewrite)
}

func (sv *service) KvCommit(ctx context.Context, req *kvrpcpb.CommitRequest) (*kvrpcpb.CommitResponse, error) {
	return handle(ctx, sv, "KvCommit", req, sv.s.st.Commit)
}

func (sv *service) KvBatchRollback(ctx context.Context, req *kvrpcpb.BatchRollbackRequest) (*kvrpcpb.BatchRollbackResponse, error) {
	return handle(ctx, sv, "KvBatchRollback", req, sv.s.st.BatchRollback)
}

func (sv *service) KvCleanup(ctx context.Context, req *kvrpcpb.CleanupRequest) (*kvrpcpb.CleanupResponse, error) {
	return handle(ctx, sv, "KvCleanup", req, sv.s.st.Cleanup)
}

func (sv *service) KvCheckTxnStatus(ctx context.Context, req *kvrpcpb.CheckTxnStatusRequest) (*kvrpcpb.CheckTxnStatusResponse, error) {
	return handle(ctx, sv, "KvCheckTxnStatus", req, sv.s.st.CheckTxnStatus)
}

func (sv *service) KvCheckSecondaryLocks(ctx context.Context, req *kvrpcpb.CheckSecondaryLocksRequest) (*kvrpcpb.CheckSecondaryLocksResponse, error) {
	return handle(ctx, sv, "KvCheckSecondaryLocks", req, sv.s.st.CheckSecondaryLocks)
}

func (sv *service) KvResolveLock(ctx context.Context, req *kvrpcpb.ResolveLockRequest) (*kvrpcpb.ResolveLockResponse, error) {
	return handle(ctx, sv, "KvResolveLock", req, sv.s.st.ResolveLock)
}

func (sv *service) KvTxnHeartBeat(ctx context.Context, req *kvrpcpb.TxnHeartBeatRequest) (*kvrpcpb.TxnHeartBeatResponse, error) {
	return handle(ctx, sv, "KvTxnHeartBeat", req, sv.s.st.TxnHeartBeat)
}

func (sv *service) KvPessimisticLock(ctx context.Context, req *kvrpcpb.PessimisticLockRequest) (*kvrpcpb.PessimisticLockResponse, error) {
	return handle(ctx, sv, "KvPessimisticLock", req, sv.s.st.PessimisticLock)
}

func (sv *service) KvPessimisticRollback(ctx context.Context, req *kvrpcpb.PessimisticRollbackRequest) (*kvrpcpb.PessimisticRollbackResponse, error) {
	return handle(ctx, sv, "KvPessimisticRollback", req, sv.s.st.PessimisticRollback)
}

func (sv *service) KvScanLock(ctx context.Context, req *kvrpcpb.ScanLockRequest) (*kvrpcpb.ScanLockResponse, error) {
	return handle(ctx, sv, "KvScanLock", req, sv.s.st.ScanLock)
}

func (sv *service) SplitRegion(ctx context.Context, req *kvrpcpb.SplitRegionRequest) (*kvrpcpb.SplitRegionResponse, error) {
	return handle(ctx, sv, "SplitRegion", req, func(_ context.Context, req *kvrpcpb.SplitRegionRequest) (*kvrpcpb.SplitRegionResponse, error) {
		regions, rerr := sv.s.eng.SplitRegion(req.GetContext(), req.GetSplitKeys())
		return &kvrpcpb.SplitRegionResponse{RegionError: rerr, Regions: regions}, nil
	})
}

// BatchCommands serves the stream as a store node does
// (server.ServeBatchCommands), every request on a worker.
func (sv *service) BatchCommands(stream storepb.Store_BatchCommandsServer) error {
	return server.ServeBatchCommands(stream, sv, nil)
}

// Coprocessor serves a request as a store node does
// (server.ServeCoprocessor), after the split check of Options.RegionKeys.
func (sv *service) Coprocessor(ctx context.Context, req *kvrpcpb.CoprocessorRequest) (*kvrpcpb.CoprocessorResponse, error) {
	if err := sv.s.splitCheck(); err != nil {
		return nil, server.GRPCError(err)
	}
	return handle(ctx, sv, "Coprocessor", req, func(ctx context.Context, req *kvrpcpb.CoprocessorRequest) (*kvrpcpb.CoprocessorResponse, error) {
		if sv.s.opts.IgnoreStoreBatch && len(req.GetTasks()) > 0 {
			req = proto.Clone(req).(*kvrpcpb.CoprocessorRequest)
			req.Tasks = nil
		}
		return server.ServeCoprocessor(ctx, sv.s.shortPages(req), sv.copRegion)
	})
}

// shortPages returns req with its time-bounded pages ended after
// Options.PageScanRows rows (req itself when that does not apply).
func (s *Store) shortPages(req *kvrpcpb.CoprocessorRequest) *kvrpcpb.CoprocessorRequest {
	if s.opts.PageScanRows == 0 {
		return req
	}
	dag := &coprocessorpb.DAGRequest{}
	if err := proto.Unmarshal(req.GetData(), dag); err != nil || dag.GetPageMs() == 0 {
		return req // a bad DAG is ServeCoprocessor's to answer
	}
	dag.PageScanRows = s.opts.PageScanRows
	data, err := proto.Marshal(dag)
	if err != nil {
		return req
	}
	out := proto.Clone(req).(*kvrpcpb.CoprocessorRequest)
	out.Data = data
	return out
}

// copRegion runs dag over ranges of the region rctx names, in the order
// store/server's does: leadership and epoch (ReadIndex), ranges checked
// and clamped to the region, max_ts raised and in-memory locks waited
// for, one snapshot, the leadership checked again, then the read.
func (sv *service) copRegion(ctx context.Context, dag *coprocessorpb.DAGRequest, rctx *kvrpcpb.Context, kranges []*kvrpcpb.KeyRange, startTS uint64) (*kvrpcpb.CoprocessorResponse, error) {
	start := time.Now()
	eng := sv.s.eng
	check := txn.NewReadCheck(eng, nil, rctx.GetRegionId())
	region, rerr, err := eng.ReadIndex(ctx, rctx)
	if err != nil {
		return nil, err
	}
	if rerr != nil {
		return &kvrpcpb.CoprocessorResponse{RegionError: rerr}, nil
	}
	ct := server.StartCopTimer(start)
	ranges, rerr, err := server.CopRanges(ctx, sv.s.cm, region, kranges, startTS)
	if err != nil {
		return nil, err
	}
	if rerr != nil {
		return &kvrpcpb.CoprocessorResponse{RegionError: rerr}, nil
	}
	ct.CMDone()
	snap := eng.Snapshot()
	defer snap.Close()
	if rerr := check.Gone(); rerr != nil {
		return &kvrpcpb.CoprocessorResponse{RegionError: rerr}, nil
	}
	sr := mvcc.NewSnapshotReader(snap, mvcc.ReadOptionsFrom(rctx, startTS))
	defer sr.Close()
	var rows coprocessor.RowReader
	if execs := dag.GetExecutors(); len(execs) > 1 && execs[1].GetTp() == coprocessorpb.ExecType_TypeIndexLookUp {
		rows = &rowLookup{sv: sv, ctx: ctx, rctx: rctx, ts: startTS}
	}
	ct.WaitDone() // no slots here
	return ct.Done(server.CopResponse(coprocessor.ExecuteLookUp(sr, rows, dag, ranges)))
}

// rowLookup is the coprocessor.RowReader of an IndexLookUp: it reads the
// rows in regions this store node leads, as store/server's does, and
// leaves the others to the SQL node.
type rowLookup struct {
	sv   *service
	ctx  context.Context
	rctx *kvrpcpb.Context
	ts   uint64
}

// LookUp implements coprocessor.RowReader.
func (l *rowLookup) LookUp(keys, vals [][]byte, local []bool) error {
	eng, n := l.sv.s.eng, 0
	for i, k := range keys {
		if eng.Leader(eng.RegionByKey(k)).GetStoreId() != l.sv.storeID {
			continue
		}
		if err := l.sv.s.cm.ReadKey(l.ctx, k, l.ts); err != nil {
			return err
		}
		local[i] = true
		n++
	}
	if n == 0 {
		return nil
	}
	snap := eng.Snapshot()
	defer snap.Close()
	return server.ReadLocalRows(snap, l.rctx, l.ts, keys, vals, local)
}
