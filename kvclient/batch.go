package kvclient

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/stratadb/strata/proto/storepb"
)

// BatchCommands transport: one long-lived bidirectional stream per store
// connection carries every request to that store. A sender goroutine takes
// the requests callers queued; while a Send is in progress more queue up,
// and the next message carries all of them (up to maxBatch), so under load
// the number of messages (and syscalls, HTTP/2 frames) grows slower than
// the number of requests. A receiver goroutine matches responses to
// callers by request id. A broken stream fails only the requests in
// flight on it (as sent: a write among them is undetermined); the next
// request opens a new stream.
//
// gRPC's Send only hands the message to its writer goroutine, so little
// queues behind it on its own. When the stream is busy (at least
// batchPolicy.busy requests in flight) the sender therefore holds a
// message for up to batchPolicy.maxWait until it has `target` requests,
// as client-go does when TiKV reports overload (max-batch-wait-time,
// batch-wait-size). target adapts: a wait that fills it raises it, one
// that times out short lowers it (never below 2, so a busy stream always
// gives a second request a chance to join). Below the threshold a request
// leaves at once: no added latency at low load.

// maxBatch bounds the requests in one BatchCommands message.
const maxBatch = 128

// initialBatchTarget is the batch size a busy stream first waits for
// (client-go's batch-wait-size default); minBatchTarget its floor.
const (
	initialBatchTarget = 8
	minBatchTarget     = 2
)

// batchPolicy is when the sender waits for more requests.
type batchPolicy struct {
	maxWait time.Duration // 0: never
	busy    int64         // requests in flight that make the stream busy
}

// errBatchUnsupported: the store does not serve BatchCommands; nothing was
// run. The caller falls back to a unary RPC.
var errBatchUnsupported = errors.New("kvclient: store does not serve BatchCommands")

// Entry states: a queued request is either taken by the sender (sent) or
// abandoned by its caller (canceled), never both.
const (
	entryQueued int32 = iota
	entrySent
	entryCanceled
)

type batchEntry struct {
	req   *Request
	state atomic.Int32
	ch    chan batchResult // buffered 1
	// flushed is closed once the message carrying req was handed to gRPC
	// (marshalled) or dropped. Written by the sender before it takes the
	// entry (state CAS), read by the caller only after: a caller waits for
	// it before it may touch req again.
	flushed chan struct{}
	// timer bounds the wait (callTimeout); reused with the pooled entry.
	timer *time.Timer
}

// closedCh is a closed channel, the flushed signal of entries failed
// without a message.
var closedCh = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

type batchResult struct {
	resp *Response
	err  error
}

var entryPool = sync.Pool{New: func() any { return &batchEntry{ch: make(chan batchResult, 1)} }}

// batchConn multiplexes one store connection's requests on a stream.
type batchConn struct {
	client storepb.StoreClient
	policy batchPolicy
	reqCh  chan *batchEntry
	closed chan struct{}
	start  sync.Once

	unsupported atomic.Bool

	// inflight counts requests sent on the stream and not yet answered or
	// failed (entries of the current stream's pending map).
	inflight atomic.Int64
	// held is how many requests the sender holds while it waits for more
	// (tests observe it).
	held atomic.Int32

	mu     sync.Mutex
	stream *batchStream
	nextID uint64
}

type batchStream struct {
	s      storepb.Store_BatchCommandsClient
	cancel context.CancelFunc

	mu      sync.Mutex
	pending map[uint64]*batchEntry
	err     error         // set once broken
	settled *atomic.Int64 // the conn's inflight: decremented per pending entry removed
}

func newBatchConn(client storepb.StoreClient, policy batchPolicy) *batchConn {
	return &batchConn{client: client, policy: policy, reqCh: make(chan *batchEntry, 4*maxBatch), closed: make(chan struct{})}
}

// close stops the sender; requests in flight fail when the connection
// closes under their stream.
func (bc *batchConn) close() {
	select {
	case <-bc.closed:
	default:
		close(bc.closed)
	}
}

// call sends req on the stream and waits for its response. sent reports
// whether the request may have reached the store (always true when err is
// nil). ctx ending while the request is queued fails it unsent; after it
// was sent, as sent. Errors are gRPC status errors (transport), ctx
// errors as status, or errBatchUnsupported.
func (bc *batchConn) call(ctx context.Context, req *Request) (resp *Response, sent bool, err error) {
	return bc.callTimeout(ctx, req, 0)
}

// callTimeout is call with a timeout (none if 0) that fails the request as
// ctx's deadline would (DeadlineExceeded). It uses the entry's pooled timer
// instead of a context.WithTimeout (three allocations per request).
func (bc *batchConn) callTimeout(ctx context.Context, req *Request, timeout time.Duration) (resp *Response, sent bool, err error) {
	bc.start.Do(func() { go bc.sendLoop() })
	e := entryPool.Get().(*batchEntry)
	e.req = req
	e.state.Store(entryQueued)
	var expired <-chan time.Time // nil: never
	if timeout > 0 {
		if e.timer == nil {
			e.timer = time.NewTimer(timeout)
		} else {
			e.timer.Reset(timeout)
		}
		expired = e.timer.C
	}
	// release returns e to the pool once nothing else refers to it.
	release := func() {
		if e.timer != nil {
			e.timer.Stop() // since Go 1.23 no stale tick survives Stop
		}
		e.req, e.flushed = nil, nil
		entryPool.Put(e)
	}
	select {
	case bc.reqCh <- e:
	case <-ctx.Done():
		release()
		return nil, false, status.FromContextError(ctx.Err()).Err()
	case <-expired:
		release()
		return nil, false, errTimeout
	case <-bc.closed:
		release()
		return nil, false, ErrClosed
	}
	var cause error
	select {
	case r := <-e.ch:
		<-e.flushed
		release() // answered: nothing refers to it any more
		if r.err != nil {
			return nil, !errors.Is(r.err, errBatchUnsupported) && !isUnsent(r.err), r.err
		}
		return r.resp, true, nil
	case <-ctx.Done():
		cause = status.FromContextError(ctx.Err()).Err()
	case <-expired:
		cause = errTimeout
	}
	// Not pooled: the receiver may still hold it.
	if e.state.CompareAndSwap(entryQueued, entryCanceled) {
		return nil, false, cause
	}
	// Taken by the sender: wait until gRPC is done reading req (the
	// caller may reuse it for a retry).
	<-e.flushed
	return nil, true, cause
}

// errTimeout fails a request whose RPC timeout passed, as a context
// deadline would have.
var errTimeout = status.FromContextError(context.DeadlineExceeded).Err()

// unsentError marks a failure of a request that never left (no stream
// could be opened).
type unsentError struct{ err error }

func (e unsentError) Error() string { return e.err.Error() }
func (e unsentError) Unwrap() error { return e.err }

// GRPCStatus keeps the wrapped status code visible to status.Code.
func (e unsentError) GRPCStatus() *status.Status { return status.Convert(e.err) }

func isUnsent(err error) bool {
	var u unsentError
	return errors.As(err, &u)
}

func (bc *batchConn) sendLoop() {
	batch := make([]*batchEntry, 0, maxBatch)
	target := initialBatchTarget
	var timer *time.Timer // the wait's, reused
	for {
		batch = batch[:0]
		select {
		case e := <-bc.reqCh:
			batch = append(batch, e)
		case <-bc.closed:
			bc.shutdown()
			return
		}
		batch = bc.drain(batch)
		if bc.policy.maxWait > 0 && len(batch) < target && bc.inflight.Load() >= bc.policy.busy {
			start := time.Now()
			if timer == nil {
				timer = time.NewTimer(bc.policy.maxWait)
			} else {
				timer.Reset(bc.policy.maxWait)
			}
			var closed bool
			batch, closed = bc.collect(batch, target, timer.C)
			timer.Stop()
			batchWait.Observe(time.Since(start).Seconds())
			if closed {
				failUnsent(batch, ErrClosed)
				bc.shutdown()
				return
			}
			if len(batch) >= target {
				target = min(target+1, maxBatch)
				batch = bc.drain(batch)
			} else {
				target = max(target-1, minBatchTarget)
			}
		}
		bc.sendBatch(batch)
	}
}

// drain appends the requests queued now, without blocking, up to maxBatch.
func (bc *batchConn) drain(batch []*batchEntry) []*batchEntry {
	for len(batch) < maxBatch {
		select {
		case e := <-bc.reqCh:
			batch = append(batch, e)
		default:
			return batch
		}
	}
	return batch
}

// collect appends queued requests until batch holds target or expired
// fires. closed reports that the connection was closed meanwhile.
func (bc *batchConn) collect(batch []*batchEntry, target int, expired <-chan time.Time) (_ []*batchEntry, closed bool) {
	defer bc.held.Store(0)
	for len(batch) < target {
		bc.held.Store(int32(len(batch)))
		select {
		case e := <-bc.reqCh:
			batch = append(batch, e)
		case <-expired:
			return batch, false
		case <-bc.closed:
			return batch, true
		}
	}
	return batch, false
}

// failUnsent fails the requests of batch that their callers still wait
// for as never sent (err wrapped in unsentError).
func failUnsent(batch []*batchEntry, err error) {
	for _, e := range batch {
		e.flushed = closedCh
		if e.state.CompareAndSwap(entryQueued, entrySent) {
			e.ch <- batchResult{err: unsentError{err}}
		}
	}
}

// shutdown fails what is still queued and the current stream.
func (bc *batchConn) shutdown() {
	for {
		select {
		case e := <-bc.reqCh:
			failUnsent([]*batchEntry{e}, ErrClosed)
		default:
			bc.mu.Lock()
			st := bc.stream
			bc.mu.Unlock()
			if st != nil {
				st.fail(status.Error(codes.Canceled, "kvclient: client closed"))
				st.cancel()
			}
			return
		}
	}
}

func (bc *batchConn) sendBatch(batch []*batchEntry) {
	st, err := bc.getStream()
	if err != nil {
		failUnsent(batch, err)
		return
	}
	msg := &storepb.BatchCommandsRequest{
		Requests:   make([]*storepb.BatchCommandsRequest_Request, 0, len(batch)),
		RequestIds: make([]uint64, 0, len(batch)),
	}
	flushed := make(chan struct{})
	defer close(flushed)
	st.mu.Lock()
	for _, e := range batch {
		e.flushed = flushed
		if !e.state.CompareAndSwap(entryQueued, entrySent) {
			continue // its caller gave up before it left
		}
		if st.err != nil {
			e.ch <- batchResult{err: unsentError{st.err}}
			continue
		}
		bc.nextID++
		st.pending[bc.nextID] = e
		msg.Requests = append(msg.Requests, e.req)
		msg.RequestIds = append(msg.RequestIds, bc.nextID)
	}
	bc.inflight.Add(int64(len(msg.Requests)))
	st.mu.Unlock()
	if len(msg.Requests) == 0 {
		return
	}
	batchSize.Observe(float64(len(msg.Requests)))
	if err := st.s.Send(msg); err != nil {
		if errors.Is(err, io.EOF) {
			// The stream ended; Recv reports why and fails the requests.
			return
		}
		st.fail(err)
		st.cancel()
	}
}

// getStream returns the live stream, opening one when there is none.
func (bc *batchConn) getStream() (*batchStream, error) {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	if st := bc.stream; st != nil {
		st.mu.Lock()
		broken := st.err != nil
		st.mu.Unlock()
		if !broken {
			return st, nil
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s, err := bc.client.BatchCommands(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	st := &batchStream{s: s, cancel: cancel, pending: make(map[uint64]*batchEntry), settled: &bc.inflight}
	bc.stream = st
	go bc.recvLoop(st)
	return st, nil
}

func (bc *batchConn) recvLoop(st *batchStream) {
	defer st.cancel()
	for {
		msg, err := st.s.Recv()
		if err != nil {
			switch {
			case status.Code(err) == codes.Unimplemented:
				bc.unsupported.Store(true)
				err = errBatchUnsupported
			case errors.Is(err, io.EOF):
				err = status.Error(codes.Unavailable, "kvclient: store closed the BatchCommands stream")
			}
			st.fail(err)
			return
		}
		st.mu.Lock()
		for i, id := range msg.RequestIds {
			e, ok := st.pending[id]
			if !ok || i >= len(msg.Responses) {
				continue
			}
			delete(st.pending, id)
			st.settled.Add(-1)
			r := msg.Responses[i]
			if r.Error != "" {
				// The handler failed: classified by the code a unary call
				// would have failed with. Unavailable (or none, from an
				// older store) means nothing ran; anything else left
				// for the store, and a write may have been applied
				// (Unknown: its outcome is undetermined).
				if code := codes.Code(r.ErrorCode); code != codes.OK && code != codes.Unavailable {
					e.ch <- batchResult{err: status.Error(code, r.Error)}
				} else {
					e.ch <- batchResult{err: unsentError{status.Error(codes.Unavailable, r.Error)}}
				}
				continue
			}
			e.ch <- batchResult{resp: r}
		}
		st.mu.Unlock()
	}
}

// fail breaks the stream: every request in flight gets err.
func (st *batchStream) fail(err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.err == nil {
		st.err = err
	}
	for id, e := range st.pending {
		delete(st.pending, id)
		st.settled.Add(-1)
		e.ch <- batchResult{err: err}
	}
}
