package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"google.golang.org/grpc/status"

	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/storepb"
	"github.com/stratadb/strata/store/txn"
)

const (
	// batchWorkers is the number of goroutines that run one BatchCommands
	// stream's requests (requests wait for a free one: the stream's
	// backpressure).
	batchWorkers = 64
	// maxLockWaiters bounds a stream's pessimistic lock requests in flight:
	// they may wait for other transactions for a long time, so they run
	// outside the worker pool (a waiter must never keep the holder's
	// commit from running). Beyond it a request is answered at once with
	// an error.
	maxLockWaiters = 4096
	// maxResponsesPerMessage bounds how many ready responses one stream
	// message carries.
	maxResponsesPerMessage = 256
)

var batchSize = promauto.NewHistogramVec(prometheus.HistogramOpts{
	Namespace: "strata", Subsystem: "store", Name: "batch_commands_size",
	Help:    "Requests per received and responses per sent BatchCommands message.",
	Buckets: prometheus.ExponentialBuckets(1, 2, 10),
}, []string{"dir"})

// The two batchSize series, looked up once instead of per message.
var batchRecvSize, batchSendSize = batchSize.WithLabelValues("recv"), batchSize.WithLabelValues("send")

type batchTask struct {
	id     uint64
	req    *storepb.BatchCommandsRequest_Request
	queued time.Time // when it was received: its wait for a worker is the store's queue wait
	// pending, when set, is the point get req the receiving goroutine
	// began (InlineGetter): the worker finishes it.
	pending *txn.PendingGet
}

type batchResult struct {
	id   uint64
	resp *storepb.BatchCommandsResponse_Response
}

// BatchCommands implements storepb.StoreServer (ServeBatchCommands).
func (s *Service) BatchCommands(stream storepb.Store_BatchCommandsServer) error {
	return ServeBatchCommands(stream, s, s)
}

// InlineGetter serves a stream's point gets on its receiving goroutine
// when they need no waiting (the Service).
type InlineGetter interface {
	// getInline serves req (pending nil) or returns where it stopped.
	getInline(ctx context.Context, req *kvrpcpb.GetRequest) (resp *kvrpcpb.GetResponse, pending *txn.PendingGet, err error)
	// finishGet serves a get getInline stopped, as KvGet would.
	finishGet(ctx context.Context, p *txn.PendingGet) (*kvrpcpb.GetResponse, error)
}

// ServeBatchCommands serves one BatchCommands stream with h's unary
// handlers: requests run on a bounded pool of workers (pessimistic lock
// requests, which may wait, on their own bounded set of goroutines; point
// gets that inline, when not nil, serves on the receiving goroutine,
// where it must not wait, and otherwise finishes on a worker from where
// it stopped); responses are sent as they complete, several per message
// when ready together, matched by request id. The stream ends when the
// client closes it; requests still running are answered first. It is
// exported so that store/storetest serves streams as a store node does.
func ServeBatchCommands(stream storepb.Store_BatchCommandsServer, h storepb.StoreServer, inline InlineGetter) error {
	ctx := stream.Context()
	results := make(chan batchResult, maxResponsesPerMessage)
	sendDone := make(chan error, 1)
	go func() { sendDone <- sendResults(stream, results) }()

	tasks := make(chan batchTask)
	var wg sync.WaitGroup
	for range batchWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range tasks {
				waited := time.Since(t.queued)
				var out *storepb.BatchCommandsResponse_Response
				if t.pending != nil {
					out = getResult(inline.finishGet(ctx, t.pending))
				} else {
					out = dispatch(ctx, h, t.req)
				}
				addStreamWait(out, waited)
				results <- batchResult{id: t.id, resp: out}
			}
		}()
	}
	waiters := make(chan struct{}, maxLockWaiters)

	var recvErr error
recv:
	for {
		msg, err := stream.Recv()
		if err != nil {
			recvErr = err
			break
		}
		reqs, ids := msg.GetRequests(), msg.GetRequestIds()
		if len(reqs) != len(ids) {
			recvErr = fmt.Errorf("server: batch commands: %d requests with %d ids", len(reqs), len(ids))
			break
		}
		batchRecvSize.Observe(float64(len(reqs)))
		for i, r := range reqs {
			t := batchTask{id: ids[i], req: r}
			if g, ok := r.GetCmd().(*storepb.BatchCommandsRequest_Request_Get); ok && inline != nil {
				// Served here when it can be: a lease read of one key takes
				// microseconds, less than waking a worker for it.
				resp, pending, err := inline.getInline(ctx, g.Get)
				if pending == nil {
					results <- batchResult{id: t.id, resp: getResult(resp, err)}
					continue
				}
				t.pending = pending
			}
			if _, ok := r.GetCmd().(*storepb.BatchCommandsRequest_Request_PessimisticLock); ok {
				select {
				case waiters <- struct{}{}:
					wg.Add(1)
					// Its own copies: a t the goroutine captured would be
					// moved to the heap for every request.
					id, req := t.id, t.req
					go func() {
						defer wg.Done()
						results <- batchResult{id: id, resp: dispatch(ctx, h, req)}
						<-waiters
					}()
				default:
					results <- batchResult{id: t.id, resp: &storepb.BatchCommandsResponse_Response{
						Error: "server is busy: too many waiting lock requests"}}
				}
				continue
			}
			t.queued = time.Now()
			select {
			case tasks <- t:
			case <-ctx.Done():
				break recv
			}
		}
	}
	close(tasks)
	wg.Wait()
	close(results)
	sendErr := <-sendDone
	if ctx.Err() != nil || errors.Is(recvErr, io.EOF) {
		return sendErr
	}
	return recvErr
}

// getInline serves a point get on the stream's receiving goroutine, as
// KvGet would, when that needs no waiting (txn.Storage.GetLocal: a leader
// read under a local lease, no Ready loop round, of a key no in-flight
// write holds at or below its ts); otherwise it returns where the get
// stopped (pending), for a worker's finishGet. Anything else (replica
// reads, lease renewals, in-flight writes) goes to a worker, so one slow
// request never holds up the stream.
func (s *Service) getInline(ctx context.Context, req *kvrpcpb.GetRequest) (*kvrpcpb.GetResponse, *txn.PendingGet, error) {
	start := time.Now()
	resp, pending, err := s.st.GetLocal(ctx, req)
	if pending != nil {
		return nil, pending, nil
	}
	resp, err = gcCheck(s.gc, req.GetVersion(), resp, err, refuseGet)
	resp, err = called("kv_get", start, resp, err)
	return resp, nil, err
}

// finishGet serves a get getInline stopped, as KvGet would, without
// repeating its lease and concurrency-manager checks (PendingGet.Finish).
func (s *Service) finishGet(ctx context.Context, p *txn.PendingGet) (*kvrpcpb.GetResponse, error) {
	start := time.Now()
	resp, err := p.Finish(ctx)
	resp, err = gcCheck(s.gc, p.Request().GetVersion(), resp, err, refuseGet)
	return called("kv_get", start, resp, err)
}

// sendResults sends results as they come, batching those ready together,
// until results is closed. After a send error it keeps draining results
// (so workers never block) and returns the error.
func sendResults(stream storepb.Store_BatchCommandsServer, results <-chan batchResult) error {
	var sendErr error
	for r := range results {
		if sendErr != nil {
			continue
		}
		// A new message each time: gRPC may hold on to a sent one.
		msg := newResponseMessage(r)
	more:
		for len(msg.Responses) < maxResponsesPerMessage {
			select {
			case r, ok := <-results:
				if !ok {
					break more
				}
				msg.Responses = append(msg.Responses, r.resp)
				msg.RequestIds = append(msg.RequestIds, r.id)
			default:
				break more
			}
		}
		batchSendSize.Observe(float64(len(msg.Responses)))
		sendErr = stream.Send(msg)
	}
	return sendErr
}

// dispatch runs one request of a stream through its unary handler in s. A
// handler error (the request could not run) becomes the response's error.
func dispatch(ctx context.Context, s storepb.StoreServer, r *storepb.BatchCommandsRequest_Request) *storepb.BatchCommandsResponse_Response {
	out := &storepb.BatchCommandsResponse_Response{}
	var err error
	switch c := r.GetCmd().(type) {
	case *storepb.BatchCommandsRequest_Request_Get:
		return getResult(s.KvGet(ctx, c.Get))
	case *storepb.BatchCommandsRequest_Request_BatchGet:
		var resp *kvrpcpb.BatchGetResponse
		resp, err = s.KvBatchGet(ctx, c.BatchGet)
		out.Cmd = &storepb.BatchCommandsResponse_Response_BatchGet{BatchGet: resp}
	case *storepb.BatchCommandsRequest_Request_Scan:
		var resp *kvrpcpb.ScanResponse
		resp, err = s.KvScan(ctx, c.Scan)
		out.Cmd = &storepb.BatchCommandsResponse_Response_Scan{Scan: resp}
	case *storepb.BatchCommandsRequest_Request_Prewrite:
		var resp *kvrpcpb.PrewriteResponse
		resp, err = s.KvPrewrite(ctx, c.Prewrite)
		out.Cmd = &storepb.BatchCommandsResponse_Response_Prewrite{Prewrite: resp}
	case *storepb.BatchCommandsRequest_Request_Commit:
		var resp *kvrpcpb.CommitResponse
		resp, err = s.KvCommit(ctx, c.Commit)
		out.Cmd = &storepb.BatchCommandsResponse_Response_Commit{Commit: resp}
	case *storepb.BatchCommandsRequest_Request_BatchRollback:
		var resp *kvrpcpb.BatchRollbackResponse
		resp, err = s.KvBatchRollback(ctx, c.BatchRollback)
		out.Cmd = &storepb.BatchCommandsResponse_Response_BatchRollback{BatchRollback: resp}
	case *storepb.BatchCommandsRequest_Request_Cleanup:
		var resp *kvrpcpb.CleanupResponse
		resp, err = s.KvCleanup(ctx, c.Cleanup)
		out.Cmd = &storepb.BatchCommandsResponse_Response_Cleanup{Cleanup: resp}
	case *storepb.BatchCommandsRequest_Request_CheckTxnStatus:
		var resp *kvrpcpb.CheckTxnStatusResponse
		resp, err = s.KvCheckTxnStatus(ctx, c.CheckTxnStatus)
		out.Cmd = &storepb.BatchCommandsResponse_Response_CheckTxnStatus{CheckTxnStatus: resp}
	case *storepb.BatchCommandsRequest_Request_CheckSecondaryLocks:
		var resp *kvrpcpb.CheckSecondaryLocksResponse
		resp, err = s.KvCheckSecondaryLocks(ctx, c.CheckSecondaryLocks)
		out.Cmd = &storepb.BatchCommandsResponse_Response_CheckSecondaryLocks{CheckSecondaryLocks: resp}
	case *storepb.BatchCommandsRequest_Request_ResolveLock:
		var resp *kvrpcpb.ResolveLockResponse
		resp, err = s.KvResolveLock(ctx, c.ResolveLock)
		out.Cmd = &storepb.BatchCommandsResponse_Response_ResolveLock{ResolveLock: resp}
	case *storepb.BatchCommandsRequest_Request_TxnHeartBeat:
		var resp *kvrpcpb.TxnHeartBeatResponse
		resp, err = s.KvTxnHeartBeat(ctx, c.TxnHeartBeat)
		out.Cmd = &storepb.BatchCommandsResponse_Response_TxnHeartBeat{TxnHeartBeat: resp}
	case *storepb.BatchCommandsRequest_Request_PessimisticLock:
		var resp *kvrpcpb.PessimisticLockResponse
		resp, err = s.KvPessimisticLock(ctx, c.PessimisticLock)
		out.Cmd = &storepb.BatchCommandsResponse_Response_PessimisticLock{PessimisticLock: resp}
	case *storepb.BatchCommandsRequest_Request_PessimisticRollback:
		var resp *kvrpcpb.PessimisticRollbackResponse
		resp, err = s.KvPessimisticRollback(ctx, c.PessimisticRollback)
		out.Cmd = &storepb.BatchCommandsResponse_Response_PessimisticRollback{PessimisticRollback: resp}
	case *storepb.BatchCommandsRequest_Request_ScanLock:
		var resp *kvrpcpb.ScanLockResponse
		resp, err = s.KvScanLock(ctx, c.ScanLock)
		out.Cmd = &storepb.BatchCommandsResponse_Response_ScanLock{ScanLock: resp}
	case *storepb.BatchCommandsRequest_Request_Coprocessor:
		var resp *kvrpcpb.CoprocessorResponse
		resp, err = s.Coprocessor(ctx, c.Coprocessor)
		out.Cmd = &storepb.BatchCommandsResponse_Response_Coprocessor{Coprocessor: resp}
	case *storepb.BatchCommandsRequest_Request_SplitRegion:
		var resp *kvrpcpb.SplitRegionResponse
		resp, err = s.SplitRegion(ctx, c.SplitRegion)
		out.Cmd = &storepb.BatchCommandsResponse_Response_SplitRegion{SplitRegion: resp}
	case *storepb.BatchCommandsRequest_Request_DeleteRange:
		var resp *kvrpcpb.DeleteRangeResponse
		resp, err = s.KvDeleteRange(ctx, c.DeleteRange)
		out.Cmd = &storepb.BatchCommandsResponse_Response_DeleteRange{DeleteRange: resp}
	case *storepb.BatchCommandsRequest_Request_Export:
		var resp *kvrpcpb.ExportResponse
		resp, err = s.KvExport(ctx, c.Export)
		out.Cmd = &storepb.BatchCommandsResponse_Response_Export{Export: resp}
	case *storepb.BatchCommandsRequest_Request_Ingest:
		var resp *kvrpcpb.IngestResponse
		resp, err = s.KvIngest(ctx, c.Ingest)
		out.Cmd = &storepb.BatchCommandsResponse_Response_Ingest{Ingest: resp}
	default:
		err = fmt.Errorf("server: batch commands: unknown request %T", c)
	}
	if err != nil {
		return errorResult(err)
	}
	return out
}

// responseMessage is a message of the stream with room for a few
// responses, in one allocation.
type responseMessage struct {
	msg  storepb.BatchCommandsResponse
	resp [4]*storepb.BatchCommandsResponse_Response
	ids  [4]uint64
}

// newResponseMessage returns a message carrying r (more may be appended).
func newResponseMessage(r batchResult) *storepb.BatchCommandsResponse {
	m := &responseMessage{}
	m.resp[0], m.ids[0] = r.resp, r.id
	m.msg.Responses, m.msg.RequestIds = m.resp[:1], m.ids[:1]
	return &m.msg
}

// getResponse is the stream's response to a get and its oneof case, in
// one allocation.
type getResponse struct {
	resp storepb.BatchCommandsResponse_Response
	get  storepb.BatchCommandsResponse_Response_Get
}

// getResult is the stream's response to a get answered with resp and err.
func getResult(resp *kvrpcpb.GetResponse, err error) *storepb.BatchCommandsResponse_Response {
	if err != nil {
		return errorResult(err)
	}
	g := &getResponse{}
	g.get.Get = resp
	g.resp.Cmd = &g.get
	return &g.resp
}

// errorResult is the stream's response to a request that failed with err:
// the code a unary call would fail with, so that the client tells a write
// that may have been applied (Unknown) from one that never ran
// (Unavailable), exactly as for a unary call.
func errorResult(err error) *storepb.BatchCommandsResponse_Response {
	st := status.Convert(GRPCError(err))
	return &storepb.BatchCommandsResponse_Response{Error: st.Message(), ErrorCode: uint32(st.Code())}
}
