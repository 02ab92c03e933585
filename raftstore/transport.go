package raftstore

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"

	"github.com/stratadb/strata/failpoint"
	"github.com/stratadb/strata/proto/raft_serverpb"
	"github.com/stratadb/strata/proto/storepb"
)

// Limits of the raft transport.
const (
	maxMsgsPerSend = 4096
	// maxBytesPerSend stops coalescing queued batches; a single Ready's batch
	// may still be larger (the server accepts up to MaxRaftBatchBytes).
	maxBytesPerSend = 4 << 20
	minBackoff      = 20 * time.Millisecond
	// maxBackoff bounds how long a restarted store may wait for our
	// reconnect (it is also woken early when the store talks to us).
	maxBackoff = 250 * time.Millisecond
)

// transport sends raft messages to other stores: one goroutine, one gRPC
// connection and one client stream per destination store, fed by a bounded
// queue. The Ready loop only enqueues (never blocks); a full queue drops.
type transport struct {
	s       *Store
	mu      sync.Mutex
	senders map[uint64]*storeSender
	wg      sync.WaitGroup
	closed  bool
}

type storeSender struct {
	storeID uint64
	ch      chan *raft_serverpb.BatchRaftMessage
	// wake ends a reconnect backoff early: the store just sent us raft
	// messages, so it is up (e.g. restarted) and worth dialling now.
	wake chan struct{} // cap 1
}

func newTransport(s *Store) *transport {
	return &transport{s: s, senders: map[uint64]*storeSender{}}
}

// send enqueues b for storeID; false means it was dropped.
func (t *transport) send(storeID uint64, b *raft_serverpb.BatchRaftMessage) bool {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return false
	}
	ss := t.senders[storeID]
	if ss == nil {
		ss = &storeSender{storeID: storeID, ch: make(chan *raft_serverpb.BatchRaftMessage, t.s.cfg.SendQueue), wake: make(chan struct{}, 1)}
		t.senders[storeID] = ss
		t.wg.Add(1)
		go t.runSender(ss)
	}
	t.mu.Unlock()
	select {
	case ss.ch <- b:
		return true
	default:
		return false
	}
}

// heardFrom notes that storeID sent us raft messages: a sender to it that
// is backing off after a failure reconnects at once.
func (t *transport) heardFrom(storeID uint64) {
	t.mu.Lock()
	ss := t.senders[storeID]
	t.mu.Unlock()
	if ss == nil {
		return
	}
	select {
	case ss.wake <- struct{}{}:
	default:
	}
}

func (t *transport) close() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.wg.Wait()
}

// reportUnreachable tells the raft groups that messages were lost.
func (t *transport) reportUnreachable(batches ...*raft_serverpb.BatchRaftMessage) {
	var us []unreachable
	for _, b := range batches {
		for _, m := range b.GetMsgs() {
			us = append(us, unreachable{regionID: m.GetRegionId(), peerID: m.GetToPeer().GetId(), storeID: m.GetToPeer().GetStoreId()})
		}
		raftMessagesDropped.Add(float64(len(b.GetMsgs())))
	}
	if len(us) > 0 {
		t.s.inbox.push(func(m *inboxMsgs) { m.unreachable = append(m.unreachable, us...) })
	}
}

// drain drops everything queued for ss.
func (t *transport) drain(ss *storeSender) {
	var dropped []*raft_serverpb.BatchRaftMessage
	for {
		select {
		case b := <-ss.ch:
			dropped = append(dropped, b)
		default:
			t.reportUnreachable(dropped...)
			return
		}
	}
}

func (t *transport) runSender(ss *storeSender) {
	defer t.wg.Done()
	ctx := t.s.ctx
	log := t.s.log.With("to_store", ss.storeID)
	backoff := minBackoff
	woken := false // the last retry was cut short by a wake-up
	// down is when the link last failed (zero while it works): a break and
	// a restore are logged once each, at Info, so an operator can tell
	// from the logs how long two stores could not talk.
	var down time.Time
	var downErr error
	failed := func(what, addr string, err error) {
		log.Debug(what, "addr", addr, "err", err)
		if down.IsZero() {
			down, downErr = time.Now(), err
			log.Info("raft stream to store broken: its peers miss our messages until it is back", "addr", addr, "err", err)
		}
	}
	restored := func() {
		backoff, woken = minBackoff, false
		if !down.IsZero() {
			log.Info("raft stream to store restored", "down", time.Since(down).Round(time.Millisecond), "first_err", downErr)
			down, downErr = time.Time{}, nil
		}
	}
	wait := func() bool {
		t.drain(ss)
		wake := ss.wake
		if woken {
			wake = nil // that did not help: sleep the whole backoff this time
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff):
			woken = false
		case <-wake:
			woken = true
		}
		backoff = min(2*backoff, maxBackoff)
		return true
	}
	for ctx.Err() == nil {
		// Resolve the address on every (re)connect: a restarted store may
		// have moved.
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := t.s.pd.GetStore(rctx, ss.storeID)
		cancel()
		if err != nil || st.GetAddress() == "" {
			if err == nil {
				err = errors.New("store has no address in PD")
			}
			failed("resolve store address", "", err)
			if !wait() {
				return
			}
			continue
		}
		// A wake-up from before this attempt is stale.
		select {
		case <-ss.wake:
		default:
		}
		err = t.stream(ctx, ss, st.GetAddress(), restored)
		if ctx.Err() != nil {
			return
		}
		failed("raft stream broken", st.GetAddress(), err)
		if !wait() {
			return
		}
	}
}

// errConnLost ends a stream whose connection left the ready state.
var errConnLost = errors.New("raftstore: connection to store lost")

// dialer dials a store's address and reports a refused connection: no
// process listens there, so the store's process is gone (failover.go).
func (t *transport) dialer(storeID uint64) func(context.Context, string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if errors.Is(err, syscall.ECONNREFUSED) {
			t.s.StoreGone(storeID)
		}
		return c, err
	}
}

// stream sends queued batches on one connection until an error.
func (t *transport) stream(ctx context.Context, ss *storeSender, addr string, ok func()) error {
	conn, err := grpc.NewClient(addr, t.s.cfg.Security.DialOption(),
		grpc.WithContextDialer(t.dialer(ss.storeID)))
	if err != nil {
		return err
	}
	defer conn.Close()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := storepb.NewStoreClient(conn).Raft(sctx)
	if err != nil {
		return err
	}
	// A client stream learns of a dead connection only at its next Send;
	// the connection's state says so at once, so that a killed store is
	// redialled (and found gone) now, not at the next heartbeat.
	lost := make(chan struct{})
	go func() {
		defer close(lost)
		for st := conn.GetState(); st == connectivity.Ready || st == connectivity.Connecting; st = conn.GetState() {
			if !conn.WaitForStateChange(sctx, st) {
				return
			}
		}
	}()
	for {
		var b *raft_serverpb.BatchRaftMessage
		select {
		case <-ctx.Done():
			_, _ = stream.CloseAndRecv()
			return ctx.Err()
		case <-lost:
			if err := ctx.Err(); err != nil {
				return err
			}
			return errConnLost
		case b = <-ss.ch:
		}
		// Coalesce whatever else is queued into one send.
		size := batchBytes(b)
	coalesce:
		for len(b.Msgs) < maxMsgsPerSend && size < maxBytesPerSend {
			select {
			case more := <-ss.ch:
				b.Msgs = append(b.Msgs, more.Msgs...)
				size += batchBytes(more)
			default:
				break coalesce
			}
		}
		failpoint.Hit("raft-send") // tests delay a store's raft traffic here
		start := time.Now()
		if err := stream.Send(b); err != nil {
			t.reportUnreachable(b)
			if errors.Is(err, io.EOF) {
				_, err = stream.CloseAndRecv()
			}
			return err
		}
		raftSendBatchSeconds.Observe(time.Since(start).Seconds())
		ok()
	}
}

// MaxRaftBatchBytes is the largest BatchRaftMessage a store must accept
// (configure the gRPC server's MaxRecvMsgSize with it).
const MaxRaftBatchBytes = 256 << 20

func batchBytes(b *raft_serverpb.BatchRaftMessage) int {
	n := 0
	for _, m := range b.GetMsgs() {
		n += raftMessageBytes(m)
	}
	return n
}

// raftMessageBytes estimates m's encoded size (its raft message and keys,
// 64 bytes for the rest).
func raftMessageBytes(m *raft_serverpb.RaftMessage) int {
	return len(m.GetMessage()) + len(m.GetStartKey()) + len(m.GetEndKey()) + 64
}

// ServeRaftStream receives batches from another store's transport until the
// stream ends or the store stops (so a graceful gRPC stop need not wait for
// peers to hang up). Call it from the storepb.Store Raft RPC handler.
func (s *Store) ServeRaftStream(stream storepb.Store_RaftServer) error {
	recvErr := make(chan error, 1)
	go func() {
		for {
			b, err := stream.Recv()
			if err != nil {
				recvErr <- err
				return
			}
			if msgs := b.GetMsgs(); len(msgs) > 0 {
				s.trans.heardFrom(msgs[0].GetFromPeer().GetStoreId()) // one stream per sending store
				s.HandleRaftMessages(msgs)
			}
		}
	}()
	select {
	case err := <-recvErr:
		if errors.Is(err, io.EOF) {
			return stream.SendAndClose(&raft_serverpb.Done{})
		}
		return err
	case <-s.done:
		return status.Error(codes.Unavailable, ErrStopped.Error())
	}
}
