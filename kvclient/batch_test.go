package kvclient

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/storepb"
)

// scriptedStore is a StoreClient whose BatchCommands streams are driven by
// the test: sent messages arrive on sent; responses and errors are pushed
// with respond and breakStream.
type scriptedStore struct {
	storepb.StoreClient
	mu      sync.Mutex
	streams []*scriptedStream
	sent    chan *storepb.BatchCommandsRequest
	gate    chan struct{} // when non-nil, each Send waits for a token
}

type scriptedStream struct {
	grpc.ClientStream
	st    *scriptedStore
	resps chan *storepb.BatchCommandsResponse
	errc  chan error
}

func newScriptedStore() *scriptedStore {
	return &scriptedStore{sent: make(chan *storepb.BatchCommandsRequest, 100)}
}

func (s *scriptedStore) BatchCommands(context.Context, ...grpc.CallOption) (grpc.BidiStreamingClient[storepb.BatchCommandsRequest, storepb.BatchCommandsResponse], error) {
	st := &scriptedStream{st: s, resps: make(chan *storepb.BatchCommandsResponse, 100), errc: make(chan error, 1)}
	s.mu.Lock()
	s.streams = append(s.streams, st)
	s.mu.Unlock()
	return st, nil
}

func (s *scriptedStore) stream(i int) *scriptedStream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streams[i]
}

func (s *scriptedStore) numStreams() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.streams)
}

func (st *scriptedStream) Send(m *storepb.BatchCommandsRequest) error {
	if g := st.st.gate; g != nil {
		<-g
	}
	st.st.sent <- m
	return nil
}

func (st *scriptedStream) Recv() (*storepb.BatchCommandsResponse, error) {
	select {
	case r := <-st.resps:
		return r, nil
	case err := <-st.errc:
		return nil, err
	}
}

// answer responds to every request of m with a Get response whose value
// is the request's key, in reverse order.
func (st *scriptedStream) answer(m *storepb.BatchCommandsRequest) {
	for i := len(m.Requests) - 1; i >= 0; i-- {
		key := m.Requests[i].GetGet().GetKey()
		st.resps <- &storepb.BatchCommandsResponse{
			Responses: []*storepb.BatchCommandsResponse_Response{{Cmd: &storepb.BatchCommandsResponse_Response_Get{
				Get: &kvrpcpb.GetResponse{Value: key}}}},
			RequestIds: []uint64{m.RequestIds[i]},
		}
	}
}

func getReq(key string) *Request {
	return &Request{Cmd: &storepb.BatchCommandsRequest_Request_Get{Get: &kvrpcpb.GetRequest{Key: []byte(key)}}}
}

type callResult struct {
	key  string
	resp *Response
	sent bool
	err  error
}

func TestBatchCoalescesAndMatchesByID(t *testing.T) {
	s := newScriptedStore()
	s.gate = make(chan struct{})
	bc := newBatchConn(s, batchPolicy{})
	defer bc.close()

	results := make(chan callResult, 10)
	call := func(key string) {
		resp, sent, err := bc.call(bg, getReq(key))
		results <- callResult{key, resp, sent, err}
	}
	go call("first")
	// The first message is in Send (held by the gate) while nine more
	// callers queue up.
	require.Eventually(t, func() bool { return s.numStreams() == 1 }, 5*time.Second, time.Millisecond)
	for i := range 9 {
		go call(key(i))
	}
	require.Eventually(t, func() bool { return len(bc.reqCh) == 9 }, 5*time.Second, time.Millisecond)
	s.gate <- struct{}{}
	m1 := <-s.sent
	require.Len(t, m1.Requests, 1)
	s.gate <- struct{}{}
	m2 := <-s.sent
	require.Len(t, m2.Requests, 9, "queued requests travel in one message")

	st := s.stream(0)
	st.answer(m2) // out of order, and before the first
	st.answer(m1)
	for range 10 {
		r := <-results
		require.NoError(t, r.err)
		require.True(t, r.sent)
		require.Equal(t, r.key, string(r.resp.GetGet().GetValue()), "response matched to its caller")
	}
}

func TestBatchStreamErrorFailsOnlyInFlight(t *testing.T) {
	s := newScriptedStore()
	bc := newBatchConn(s, batchPolicy{})
	defer bc.close()

	done := make(chan callResult, 1)
	go func() {
		resp, sent, err := bc.call(bg, getReq("a"))
		done <- callResult{"a", resp, sent, err}
	}()
	<-s.sent
	s.stream(0).errc <- status.Error(codes.Unavailable, "connection reset")
	r := <-done
	require.Equal(t, codes.Unavailable, status.Code(r.err))
	require.True(t, r.sent, "in flight when the stream broke: may have been applied")

	// The next request opens a new stream and succeeds.
	go func() {
		resp, sent, err := bc.call(bg, getReq("b"))
		done <- callResult{"b", resp, sent, err}
	}()
	m := <-s.sent
	require.Equal(t, 2, s.numStreams())
	s.stream(1).answer(m)
	r = <-done
	require.NoError(t, r.err)
	require.Equal(t, "b", string(r.resp.GetGet().GetValue()))
}

// TestBatchCallerTimeout: a caller gives up through its context's deadline
// or through callTimeout's own timer (kvclient's RPC timeout); either way
// the request fails with DeadlineExceeded, unsent if it was still queued.
func TestBatchCallerTimeout(t *testing.T) {
	for _, tc := range []struct {
		name string
		call func(bc *batchConn, req *Request) (bool, error)
	}{
		{"context", func(bc *batchConn, req *Request) (bool, error) {
			ctx, cancel := context.WithTimeout(bg, 20*time.Millisecond)
			defer cancel()
			_, sent, err := bc.call(ctx, req)
			return sent, err
		}},
		{"timeout", func(bc *batchConn, req *Request) (bool, error) {
			_, sent, err := bc.callTimeout(bg, req, 20*time.Millisecond)
			return sent, err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScriptedStore()
			s.gate = make(chan struct{})
			bc := newBatchConn(s, batchPolicy{})
			defer bc.close()

			// First request blocks in Send; the second is queued behind it and its
			// caller gives up: it was never sent, and is not sent later.
			go func() { _, _, _ = bc.call(bg, getReq("blocker")) }()
			require.Eventually(t, func() bool { return s.numStreams() == 1 }, 5*time.Second, time.Millisecond)
			sent, err := tc.call(bc, getReq("late"))
			require.Equal(t, codes.DeadlineExceeded, status.Code(err))
			require.False(t, sent)
			s.gate <- struct{}{}
			require.Len(t, (<-s.sent).Requests, 1)
			close(s.gate)
			// The abandoned request is dropped, not sent.
			go func() { _, _, _ = bc.call(bg, getReq("next")) }()
			m := <-s.sent
			require.Len(t, m.Requests, 1)
			require.Equal(t, "next", string(m.Requests[0].GetGet().GetKey()))

			// A caller that gives up after its request left reports it as sent.
			sent, err = tc.call(bc, getReq("unanswered"))
			require.Equal(t, codes.DeadlineExceeded, status.Code(err))
			require.True(t, sent)
		})
	}
}

// TestBatchTimeoutEntriesReused: answered requests with a timeout return
// their entry (and its stopped timer) to the pool; later requests reuse
// them and are answered, each bounded by its own timeout.
func TestBatchTimeoutEntriesReused(t *testing.T) {
	cl := newStores(t, 1)
	cl.put("a", "1", 10)
	c := cl.client(Config{})
	sc, err := c.conns.get(cl.Addr(1))
	require.NoError(t, err)
	for i := range 200 {
		resp, sent, err := sc.batch.callTimeout(bg, getReq("a"), time.Minute)
		require.NoError(t, err, i)
		require.True(t, sent)
		require.NotNil(t, resp.GetGet(), i)
	}
}

func TestBatchUnsupportedFallsBackToUnary(t *testing.T) {
	cl := newStores(t, 1)
	cl.put("a", "1", 10)
	c := cl.client(Config{})
	sc, err := c.conns.get(cl.Addr(1))
	require.NoError(t, err)
	// The store serves BatchCommands; make this connection's stream
	// answer Unimplemented as an old store would.
	sc.batch.client = unimplementedBatch{sc.client}
	requireGet(t, c, "a", 20, "1")
	require.True(t, sc.batch.unsupported.Load())
	requireGet(t, c, "a", 20, "1")
	require.Equal(t, 2, cl.NodeCalls(1, "KvGet"))
}

type unimplementedBatch struct{ storepb.StoreClient }

func (u unimplementedBatch) BatchCommands(context.Context, ...grpc.CallOption) (grpc.BidiStreamingClient[storepb.BatchCommandsRequest, storepb.BatchCommandsResponse], error) {
	st := &scriptedStream{resps: make(chan *storepb.BatchCommandsResponse), errc: make(chan error, 1), st: &scriptedStore{sent: make(chan *storepb.BatchCommandsRequest, 10)}}
	st.errc <- status.Error(codes.Unimplemented, "unknown method")
	return st, nil
}

// busyPolicy makes one request in flight a busy stream, and waits for a
// full batch for an hour: a test that finishes shows that no request
// waited for the timer.
var busyPolicy = batchPolicy{maxWait: time.Hour, busy: 1}

// goCall starts bc.call(ctx, key) and returns where its result arrives.
func goCall(ctx context.Context, bc *batchConn, key string) <-chan callResult {
	done := make(chan callResult, 1)
	go func() {
		resp, sent, err := bc.call(ctx, getReq(key))
		done <- callResult{key, resp, sent, err}
	}()
	return done
}

// busyConn returns a connection with policy and one request in flight,
// never answered.
func busyConn(policy batchPolicy) (*scriptedStore, *batchConn) {
	s := newScriptedStore()
	bc := newBatchConn(s, policy)
	goCall(bg, bc, "blocker")
	<-s.sent
	return s, bc
}

// TestBatchLoneRequestNotDelayed: with nothing in flight a request leaves
// at once, whatever the wait.
func TestBatchLoneRequestNotDelayed(t *testing.T) {
	s := newScriptedStore()
	bc := newBatchConn(s, busyPolicy)
	defer bc.close()
	for i := range 3 {
		done := goCall(bg, bc, key(i))
		m := <-s.sent
		require.Len(t, m.Requests, 1)
		s.stream(0).answer(m)
		r := <-done
		require.NoError(t, r.err)
		require.Equal(t, key(i), string(r.resp.GetGet().GetValue()))
	}
}

// TestBatchWaitsWhenBusy: while a request is in flight the sender holds
// the next message until initialBatchTarget requests share it; each is
// answered.
func TestBatchWaitsWhenBusy(t *testing.T) {
	s := newScriptedStore()
	bc := newBatchConn(s, busyPolicy)
	defer bc.close()
	results := make(chan callResult, initialBatchTarget+1)
	call := func(key string) {
		resp, sent, err := bc.call(bg, getReq(key))
		results <- callResult{key, resp, sent, err}
	}
	go call("first")
	m1 := <-s.sent
	require.Len(t, m1.Requests, 1)
	before := histogramCount(t, batchWait)
	for i := range initialBatchTarget {
		go call(key(i))
		if i < initialBatchTarget-1 {
			// One at a time: the sender holds each until the next.
			require.Eventually(t, func() bool { return bc.held.Load() == int32(i+1) }, 5*time.Second, time.Millisecond)
		}
	}
	m2 := <-s.sent
	require.Len(t, m2.Requests, initialBatchTarget, "requests arriving one by one share one message")
	require.Equal(t, before+1, histogramCount(t, batchWait))
	st := s.stream(0)
	st.answer(m1)
	st.answer(m2)
	for range initialBatchTarget + 1 {
		r := <-results
		require.NoError(t, r.err)
		require.True(t, r.sent)
		require.Equal(t, r.key, string(r.resp.GetGet().GetValue()))
	}
	require.Zero(t, bc.inflight.Load())
}

// TestBatchWaitExpires: a busy stream's message leaves when the wait
// ends, even if short of the target.
func TestBatchWaitExpires(t *testing.T) {
	s, bc := busyConn(batchPolicy{maxWait: time.Millisecond, busy: 1})
	defer bc.close()
	done := goCall(bg, bc, "b")
	m := <-s.sent
	require.Len(t, m.Requests, 1)
	s.stream(0).answer(m)
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, "b", string(r.resp.GetGet().GetValue()))
}

// TestBatchHeldRequestCanceled: a caller whose request the sender holds
// gives up: it fails unsent, and the request is not sent later.
func TestBatchHeldRequestCanceled(t *testing.T) {
	s, bc := busyConn(busyPolicy)
	defer bc.close()
	ctx, cancel := context.WithCancel(bg)
	done := goCall(ctx, bc, "canceled")
	require.Eventually(t, func() bool { return bc.held.Load() == 1 }, 5*time.Second, time.Millisecond)
	cancel()
	r := <-done
	require.Equal(t, codes.Canceled, status.Code(r.err))
	require.False(t, r.sent)

	// The held entry still counts towards the target; the message carries
	// only the live requests.
	for i := range initialBatchTarget - 1 {
		goCall(bg, bc, key(i))
	}
	m := <-s.sent
	require.Len(t, m.Requests, initialBatchTarget-1)
	for _, req := range m.Requests {
		require.NotEqual(t, "canceled", string(req.GetGet().GetKey()))
	}
}

// TestBatchCloseWhileHolding: closing the connection fails the requests
// the sender holds as unsent.
func TestBatchCloseWhileHolding(t *testing.T) {
	_, bc := busyConn(busyPolicy)
	done := goCall(bg, bc, "held")
	require.Eventually(t, func() bool { return bc.held.Load() == 1 }, 5*time.Second, time.Millisecond)
	bc.close()
	r := <-done
	require.ErrorIs(t, r.err, ErrClosed)
	require.False(t, r.sent)
}
