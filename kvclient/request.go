package kvclient

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"

	"github.com/stratadb/strata/kv/execdetails"
	"github.com/stratadb/strata/kvclient/locate"
	"github.com/stratadb/strata/proto/errorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/storepb"
)

// Request is one store command for one region: exactly one case of the
// oneof is set. It is the element type of the BatchCommands stream, so a
// command is built once whatever transport carries it.
type Request = storepb.BatchCommandsRequest_Request

// Response is a store's answer to a Request (the matching oneof case).
type Response = storepb.BatchCommandsResponse_Response

// Backoffer bounds the retries of one logical operation (a prewrite of a
// transaction, a lock resolution) across the requests it sends. It is not
// safe for concurrent use: parallel sub-operations Fork their own.
type Backoffer struct{ bo backoffer }

// NewBackoffer returns a Backoffer with the client's budget.
func (c *Client) NewBackoffer() *Backoffer {
	return &Backoffer{bo: newBackoffer(c.cfg.BackoffBudget)}
}

// Fork returns a Backoffer with what is left of b's budget.
func (b *Backoffer) Fork() *Backoffer { return &Backoffer{bo: *b.bo.fork()} }

// Backoff sleeps for the next retry delay of a transaction-level wait (a lock
// that is not yet resolvable, a busy store), failing with
// ErrRegionUnavailable when the budget is spent or with ctx's error.
func (b *Backoffer) Backoff(ctx context.Context, cause error) error {
	return b.bo.backoff(ctx, boTxnLock, 0, cause)
}

// Locate returns the region holding key (from the cache, else PD).
func (c *Client) Locate(ctx context.Context, bo *Backoffer, key []byte) (*locate.Region, error) {
	return c.locate(ctx, &bo.bo, key)
}

// OnSorted calls f once per region for the n keys key(0) < key(1) < ... ,
// with [lo, hi) the indexes of the keys f must send to region r, in key
// order. When f reports retry (the region changed: SendRequest said so), the
// keys of that call are grouped again and f is called for each new group.
// The first error stops the walk and is returned. f runs on the caller's
// goroutine.
func (c *Client) OnSorted(ctx context.Context, bo *Backoffer, n int, key func(int) []byte,
	f func(r *locate.Region, lo, hi int) (retry bool, err error)) error {
	return c.onSorted(ctx, bo, 0, n, key, f)
}

func (c *Client) onSorted(ctx context.Context, bo *Backoffer, lo, hi int, key func(int) []byte,
	f func(r *locate.Region, lo, hi int) (bool, error)) error {
	for i := lo; i < hi; {
		r, err := c.locate(ctx, &bo.bo, key(i))
		if err != nil {
			return err
		}
		j := hi
		if end := r.EndKey(); len(end) != 0 {
			j = i + 1
			for j < hi && string(key(j)) < string(end) {
				j++
			}
		}
		retry, err := f(r, i, j)
		if err != nil {
			return err
		}
		if retry {
			// Regroup only this group's keys: the cache now has fresher
			// routes (or a backoff already happened).
			if err := c.onSorted(ctx, bo, i, j, key, f); err != nil {
				return err
			}
		}
		i = j
	}
	return nil
}

// GroupSorted splits the n sorted keys by region: one [lo, hi) index range
// per region, in key order.
func (c *Client) GroupSorted(ctx context.Context, bo *Backoffer, n int, key func(int) []byte) ([]Group, error) {
	var out []Group
	for i := 0; i < n; {
		r, err := c.locate(ctx, &bo.bo, key(i))
		if err != nil {
			return nil, err
		}
		j := n
		if end := r.EndKey(); len(end) != 0 {
			j = i + 1
			for j < n && string(key(j)) < string(end) {
				j++
			}
		}
		out = append(out, Group{Region: r, Lo: i, Hi: j})
		i = j
	}
	return out, nil
}

// Group is the keys [Lo, Hi) of a sorted list that lie in Region.
type Group struct {
	Region *locate.Region
	Lo, Hi int
}

// SendRequest sends req to r's leader once, riding through what a single
// attempt can: on a region error or an unreachable store it updates the
// route, backs off when needed and returns retry=true, and the caller must
// locate its keys again and resend (they may now be in other regions). On
// success the response (without region error) is returned. req's Context is
// filled in here (region, epoch, peer; isolation and resolved locks set by
// the caller are kept).
//
// Errors: a write command (prewrite, commit, rollbacks, lock resolution,
// heartbeat, pessimistic lock, 1PC) that may have reached the store and
// whose answer was lost fails with an error wrapping ErrUndetermined; a
// budget spent on retries with ErrRegionUnavailable; ErrClosed after Close.
// req is not retained after the call; the response belongs to the caller.
func (c *Client) SendRequest(ctx context.Context, bo *Backoffer, r *locate.Region, req *Request) (resp *Response, retry bool, err error) {
	return c.sendToRegion(ctx, &bo.bo, r, req)
}

// RPCTimeout is the client's per-attempt RPC timeout; callers waiting for
// pessimistic locks add their wait to it.
func (c *Client) RPCTimeout() time.Duration { return c.cfg.RPCTimeout }

// requestInfo returns req's kind and its Context, allocating the Context
// when the caller left it nil.
func requestInfo(req *Request) (rpcKind, *kvrpcpb.Context) {
	ctxOf := func(p **kvrpcpb.Context) *kvrpcpb.Context {
		if *p == nil {
			*p = new(kvrpcpb.Context)
		}
		return *p
	}
	switch c := req.Cmd.(type) {
	case *storepb.BatchCommandsRequest_Request_Get:
		return kindGet, ctxOf(&c.Get.Context)
	case *storepb.BatchCommandsRequest_Request_BatchGet:
		return kindBatchGet, ctxOf(&c.BatchGet.Context)
	case *storepb.BatchCommandsRequest_Request_Scan:
		return kindScan, ctxOf(&c.Scan.Context)
	case *storepb.BatchCommandsRequest_Request_Prewrite:
		return kindPrewrite, ctxOf(&c.Prewrite.Context)
	case *storepb.BatchCommandsRequest_Request_Commit:
		return kindCommit, ctxOf(&c.Commit.Context)
	case *storepb.BatchCommandsRequest_Request_BatchRollback:
		return kindBatchRollback, ctxOf(&c.BatchRollback.Context)
	case *storepb.BatchCommandsRequest_Request_Cleanup:
		return kindCleanup, ctxOf(&c.Cleanup.Context)
	case *storepb.BatchCommandsRequest_Request_CheckTxnStatus:
		return kindCheckTxnStatus, ctxOf(&c.CheckTxnStatus.Context)
	case *storepb.BatchCommandsRequest_Request_CheckSecondaryLocks:
		return kindCheckSecondaryLocks, ctxOf(&c.CheckSecondaryLocks.Context)
	case *storepb.BatchCommandsRequest_Request_ResolveLock:
		return kindResolveLock, ctxOf(&c.ResolveLock.Context)
	case *storepb.BatchCommandsRequest_Request_TxnHeartBeat:
		return kindTxnHeartBeat, ctxOf(&c.TxnHeartBeat.Context)
	case *storepb.BatchCommandsRequest_Request_PessimisticLock:
		return kindPessimisticLock, ctxOf(&c.PessimisticLock.Context)
	case *storepb.BatchCommandsRequest_Request_PessimisticRollback:
		return kindPessimisticRollback, ctxOf(&c.PessimisticRollback.Context)
	case *storepb.BatchCommandsRequest_Request_ScanLock:
		return kindScanLock, ctxOf(&c.ScanLock.Context)
	case *storepb.BatchCommandsRequest_Request_Coprocessor:
		return kindCop, ctxOf(&c.Coprocessor.Context)
	case *storepb.BatchCommandsRequest_Request_SplitRegion:
		return kindSplitRegion, ctxOf(&c.SplitRegion.Context)
	case *storepb.BatchCommandsRequest_Request_DeleteRange:
		return kindDeleteRange, ctxOf(&c.DeleteRange.Context)
	case *storepb.BatchCommandsRequest_Request_Export:
		return kindExport, ctxOf(&c.Export.Context)
	case *storepb.BatchCommandsRequest_Request_Ingest:
		return kindIngest, ctxOf(&c.Ingest.Context)
	}
	return numKinds, nil
}

// callUnary sends req as its own unary RPC.
func callUnary(ctx context.Context, sc storepb.StoreClient, req *Request, opts ...grpc.CallOption) (*Response, error) {
	var out Response
	switch c := req.Cmd.(type) {
	case *storepb.BatchCommandsRequest_Request_Get:
		r, err := sc.KvGet(ctx, c.Get, opts...)
		if err != nil {
			return nil, err
		}
		out.Cmd = &storepb.BatchCommandsResponse_Response_Get{Get: r}
	case *storepb.BatchCommandsRequest_Request_BatchGet:
		r, err := sc.KvBatchGet(ctx, c.BatchGet, opts...)
		if err != nil {
			return nil, err
		}
		out.Cmd = &storepb.BatchCommandsResponse_Response_BatchGet{BatchGet: r}
	case *storepb.BatchCommandsRequest_Request_Scan:
		r, err := sc.KvScan(ctx, c.Scan, opts...)
		if err != nil {
			return nil, err
		}
		out.Cmd = &storepb.BatchCommandsResponse_Response_Scan{Scan: r}
	case *storepb.BatchCommandsRequest_Request_Prewrite:
		r, err := sc.KvPrewrite(ctx, c.Prewrite, opts...)
		if err != nil {
			return nil, err
		}
		out.Cmd = &storepb.BatchCommandsResponse_Response_Prewrite{Prewrite: r}
	case *storepb.BatchCommandsRequest_Request_Commit:
		r, err := sc.KvCommit(ctx, c.Commit, opts...)
		if err != nil {
			return nil, err
		}
		out.Cmd = &storepb.BatchCommandsResponse_Response_Commit{Commit: r}
	case *storepb.BatchCommandsRequest_Request_BatchRollback:
		r, err := sc.KvBatchRollback(ctx, c.BatchRollback, opts...)
		if err != nil {
			return nil, err
		}
		out.Cmd = &storepb.BatchCommandsResponse_Response_BatchRollback{BatchRollback: r}
	case *storepb.BatchCommandsRequest_Request_Cleanup:
		r, err := sc.KvCleanup(ctx, c.Cleanup, opts...)
		if err != nil {
			return nil, err
		}
		out.Cmd = &storepb.BatchCommandsResponse_Response_Cleanup{Cleanup: r}
	case *storepb.BatchCommandsRequest_Request_CheckTxnStatus:
		r, err := sc.KvCheckTxnStatus(ctx, c.CheckTxnStatus, opts...)
		if err != nil {
			return nil, err
		}
		out.Cmd = &storepb.BatchCommandsResponse_Response_CheckTxnStatus{CheckTxnStatus: r}
	case *storepb.BatchCommandsRequest_Request_CheckSecondaryLocks:
		r, err := sc.KvCheckSecondaryLocks(ctx, c.CheckSecondaryLocks, opts...)
		if err != nil {
			return nil, err
		}
		out.Cmd = &storepb.BatchCommandsResponse_Response_CheckSecondaryLocks{CheckSecondaryLocks: r}
	case *storepb.BatchCommandsRequest_Request_ResolveLock:
		r, err := sc.KvResolveLock(ctx, c.ResolveLock, opts...)
		if err != nil {
			return nil, err
		}
		out.Cmd = &storepb.BatchCommandsResponse_Response_ResolveLock{ResolveLock: r}
	case *storepb.BatchCommandsRequest_Request_TxnHeartBeat:
		r, err := sc.KvTxnHeartBeat(ctx, c.TxnHeartBeat, opts...)
		if err != nil {
			return nil, err
		}
		out.Cmd = &storepb.BatchCommandsResponse_Response_TxnHeartBeat{TxnHeartBeat: r}
	case *storepb.BatchCommandsRequest_Request_PessimisticLock:
		r, err := sc.KvPessimisticLock(ctx, c.PessimisticLock, opts...)
		if err != nil {
			return nil, err
		}
		out.Cmd = &storepb.BatchCommandsResponse_Response_PessimisticLock{PessimisticLock: r}
	case *storepb.BatchCommandsRequest_Request_PessimisticRollback:
		r, err := sc.KvPessimisticRollback(ctx, c.PessimisticRollback, opts...)
		if err != nil {
			return nil, err
		}
		out.Cmd = &storepb.BatchCommandsResponse_Response_PessimisticRollback{PessimisticRollback: r}
	case *storepb.BatchCommandsRequest_Request_ScanLock:
		r, err := sc.KvScanLock(ctx, c.ScanLock, opts...)
		if err != nil {
			return nil, err
		}
		out.Cmd = &storepb.BatchCommandsResponse_Response_ScanLock{ScanLock: r}
	case *storepb.BatchCommandsRequest_Request_Coprocessor:
		r, err := sc.Coprocessor(ctx, c.Coprocessor, opts...)
		if err != nil {
			return nil, err
		}
		out.Cmd = &storepb.BatchCommandsResponse_Response_Coprocessor{Coprocessor: r}
	case *storepb.BatchCommandsRequest_Request_SplitRegion:
		r, err := sc.SplitRegion(ctx, c.SplitRegion, opts...)
		if err != nil {
			return nil, err
		}
		out.Cmd = &storepb.BatchCommandsResponse_Response_SplitRegion{SplitRegion: r}
	case *storepb.BatchCommandsRequest_Request_DeleteRange:
		r, err := sc.KvDeleteRange(ctx, c.DeleteRange, opts...)
		if err != nil {
			return nil, err
		}
		out.Cmd = &storepb.BatchCommandsResponse_Response_DeleteRange{DeleteRange: r}
	case *storepb.BatchCommandsRequest_Request_Export:
		r, err := sc.KvExport(ctx, c.Export, opts...)
		if err != nil {
			return nil, err
		}
		out.Cmd = &storepb.BatchCommandsResponse_Response_Export{Export: r}
	case *storepb.BatchCommandsRequest_Request_Ingest:
		r, err := sc.KvIngest(ctx, c.Ingest, opts...)
		if err != nil {
			return nil, err
		}
		out.Cmd = &storepb.BatchCommandsResponse_Response_Ingest{Ingest: r}
	default:
		return nil, fmt.Errorf("kvclient: unsupported request %T", req.Cmd)
	}
	return &out, nil
}

// responseMessage returns the store's answer inside resp (nil for a kind
// this client does not send).
func responseMessage(resp *Response) any {
	switch c := resp.Cmd.(type) {
	case *storepb.BatchCommandsResponse_Response_Get:
		return c.Get
	case *storepb.BatchCommandsResponse_Response_BatchGet:
		return c.BatchGet
	case *storepb.BatchCommandsResponse_Response_Scan:
		return c.Scan
	case *storepb.BatchCommandsResponse_Response_Prewrite:
		return c.Prewrite
	case *storepb.BatchCommandsResponse_Response_Commit:
		return c.Commit
	case *storepb.BatchCommandsResponse_Response_BatchRollback:
		return c.BatchRollback
	case *storepb.BatchCommandsResponse_Response_Cleanup:
		return c.Cleanup
	case *storepb.BatchCommandsResponse_Response_CheckTxnStatus:
		return c.CheckTxnStatus
	case *storepb.BatchCommandsResponse_Response_CheckSecondaryLocks:
		return c.CheckSecondaryLocks
	case *storepb.BatchCommandsResponse_Response_ResolveLock:
		return c.ResolveLock
	case *storepb.BatchCommandsResponse_Response_TxnHeartBeat:
		return c.TxnHeartBeat
	case *storepb.BatchCommandsResponse_Response_PessimisticLock:
		return c.PessimisticLock
	case *storepb.BatchCommandsResponse_Response_PessimisticRollback:
		return c.PessimisticRollback
	case *storepb.BatchCommandsResponse_Response_ScanLock:
		return c.ScanLock
	case *storepb.BatchCommandsResponse_Response_Coprocessor:
		return c.Coprocessor
	case *storepb.BatchCommandsResponse_Response_SplitRegion:
		return c.SplitRegion
	case *storepb.BatchCommandsResponse_Response_DeleteRange:
		return c.DeleteRange
	case *storepb.BatchCommandsResponse_Response_Export:
		return c.Export
	case *storepb.BatchCommandsResponse_Response_Ingest:
		return c.Ingest
	}
	return nil
}

// responseRegionError returns resp's region error, if any.
func responseRegionError(resp *Response) *errorpb.Error {
	if m, ok := responseMessage(resp).(interface{ GetRegionError() *errorpb.Error }); ok {
		return m.GetRegionError()
	}
	return nil
}

// responseExecDetails returns the store's side of resp (nil when its kind
// carries none, or an older store sent none).
func responseExecDetails(resp *Response) *kvrpcpb.ExecDetails {
	if m, ok := responseMessage(resp).(interface{ GetExecDetails() *kvrpcpb.ExecDetails }); ok {
		return m.GetExecDetails()
	}
	return nil
}

// storeTimes maps the store's ExecDetails to the statement's store
// stages (kv/execdetails).
func storeTimes(ed *kvrpcpb.ExecDetails, st *execdetails.StoreTimes) {
	ns := func(v uint64) time.Duration { return time.Duration(v) }
	if t := ed.GetTimeDetail(); t != nil {
		st.Total = ns(t.GetTotalRpcWallTimeNs())
		st.Set(execdetails.StoreWait, ns(t.GetWaitWallTimeNs()))
		st.Set(execdetails.StoreProcess, ns(t.GetProcessWallTimeNs()))
		st.Set(execdetails.StoreReadIndex, ns(t.GetReadIndexWaitNs()))
		st.Set(execdetails.StoreCMWait, ns(t.GetConcurrencyManagerWaitNs()))
		st.Set(execdetails.StoreKVRead, ns(t.GetKvReadWallTimeNs()))
	}
	if w := ed.GetWriteDetail(); w != nil {
		st.Set(execdetails.StoreLatchWait, ns(w.GetLatchWaitNanos()))
		st.Set(execdetails.RaftPropose, ns(w.GetProposeSendWaitNanos()))
		st.Set(execdetails.RaftPersistLog, ns(w.GetPersistLogNanos()))
		st.Set(execdetails.RaftCommitLog, ns(w.GetCommitLogNanos()))
		st.Set(execdetails.RaftApply, ns(w.GetApplyLogNanos()))
	}
}
