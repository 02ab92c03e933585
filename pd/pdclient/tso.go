package pdclient

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stratadb/strata/proto/pdpb"
	"github.com/stratadb/strata/tso"
)

const (
	// tsoMinBackoff and tsoMaxBackoff pace TSO reconnects: short, because
	// after a leader change findLeader usually points at the new leader and
	// only its first milliseconds (before its term starts) are waited out.
	tsoMinBackoff = 5 * time.Millisecond
	tsoMaxBackoff = 200 * time.Millisecond
	// maxBatch caps the callers served by one TsoRequest.
	maxBatch = 4096
	// maxInflight caps TsoRequests outstanding on the stream.
	maxInflight = 4
)

// tsoReq is one waiting GetTS caller. It is pooled; done has capacity 1 and
// is signalled exactly once per use, after ts/err are set.
type tsoReq struct {
	done chan struct{}
	ts   uint64
	err  error
}

var tsoReqPool = sync.Pool{New: func() any { return &tsoReq{done: make(chan struct{}, 1)} }}

func (r *tsoReq) finish(ts uint64, err error) {
	r.ts, r.err = ts, err
	r.done <- struct{}{}
}

// tsoBatch is the callers sent in one TsoRequest, in order.
type tsoBatch struct {
	reqs  []*tsoReq
	start time.Time
}

func (b *tsoBatch) fail(err error) {
	for _, r := range b.reqs {
		r.finish(0, err)
	}
	b.reqs = b.reqs[:0]
}

// tsoRetryTimeout bounds how long GetTS keeps retrying while the TSO stream
// is down (PD leader change, PD unreachable).
const tsoRetryTimeout = 10 * time.Second

// GetTS returns a timestamp larger than every timestamp this client returned
// before, from the PD leader. It rides through PD leader changes: a request
// whose stream broke is sent again on the next stream, until ctx is done or
// tsoRetryTimeout passed; then the error matches ErrTSOUnavailable (still
// retryable).
func (c *Client) GetTS(ctx context.Context) (uint64, error) {
	var deadline time.Time
	for {
		ts, err := c.getTS(ctx)
		if err == nil || !errors.Is(err, ErrTSOUnavailable) || ctx.Err() != nil {
			return ts, err
		}
		// Retrying is paced by tsoLoop: the request waits in tsoCh while
		// the loop reconnects.
		now := time.Now()
		if deadline.IsZero() {
			deadline = now.Add(tsoRetryTimeout)
		} else if now.After(deadline) {
			return 0, err
		}
	}
}

// getTS is one attempt of GetTS.
func (c *Client) getTS(ctx context.Context) (uint64, error) {
	r := tsoReqPool.Get().(*tsoReq)
	select {
	case c.tsoCh <- r:
	case <-ctx.Done():
		tsoReqPool.Put(r)
		return 0, fmt.Errorf("pdclient: get ts: %w", ctx.Err())
	case <-c.closing:
		tsoReqPool.Put(r)
		return 0, ErrClosed
	}
	select {
	case <-r.done:
		ts, err := r.ts, r.err
		r.ts, r.err = 0, nil
		tsoReqPool.Put(r)
		return ts, err
	case <-ctx.Done():
		// r is still owned by the TSO loop; it is not returned to the pool.
		return 0, fmt.Errorf("pdclient: get ts: %w", ctx.Err())
	case <-c.closing:
		return 0, ErrClosed
	}
}

// tsoLoop owns the Tso stream for the client's lifetime: connect, serve until
// the stream breaks, reconnect.
func (c *Client) tsoLoop() {
	defer c.wg.Done()
	free := make(chan *tsoBatch, maxInflight+2) // batch recycling, no per-batch allocation
	for range maxInflight + 2 {
		free <- &tsoBatch{reqs: make([]*tsoReq, 0, 64)}
	}
	var lastTS uint64 // only touched by the (single, sequential) receive goroutine
	bo := tsoMinBackoff
	for {
		stream, cancel, idx, err := c.openTSO()
		if err != nil {
			select {
			case <-c.closing:
				c.failQueued(ErrClosed)
				return
			default:
			}
			// Nothing is connected: fail the callers already waiting rather
			// than leave them to their deadlines.
			c.failQueued(fmt.Errorf("%w: %v", ErrTSOUnavailable, err))
			select {
			case <-c.closing:
				c.failQueued(ErrClosed)
				return
			case <-time.After(bo):
			}
			bo = min(bo*2, tsoMaxBackoff)
			continue
		}
		opened := time.Now()
		err = c.tsoServe(stream, cancel, free, &lastTS)
		select {
		case <-c.closing:
			c.failQueued(ErrClosed)
			return
		default:
		}
		// Warn once per outage: while no leader serves, every reconnect
		// fails at once and is only worth a debug line.
		if time.Since(opened) > time.Second {
			c.log.Warn("tso stream broken, reconnecting", "endpoint", c.endpoints[idx], "err", err)
		} else {
			c.log.Debug("tso stream failed, reconnecting", "endpoint", c.endpoints[idx], "err", err, "backoff", bo)
		}
		// Go to the member etcd names as leader, even the one that just
		// failed (it may be finishing the start of its term); walk the
		// endpoints only when nobody is named.
		if !c.findLeader() {
			c.rotate(idx)
		}
		// A stream that breaks at once (e.g. the member is not leader yet)
		// must not turn into a busy reconnect loop.
		if time.Since(opened) > time.Second {
			bo = tsoMinBackoff
			continue
		}
		select {
		case <-c.closing:
			c.failQueued(ErrClosed)
			return
		case <-time.After(bo):
		}
		bo = min(bo*2, tsoMaxBackoff)
	}
}

func (c *Client) openTSO() (pdpb.PD_TsoClient, context.CancelFunc, int32, error) {
	var lastErr error
	for range c.clis {
		idx := c.cur.Load()
		ctx, cancel := context.WithCancel(c.ctx)
		stream, err := c.clis[idx].Tso(ctx)
		if err == nil {
			return stream, cancel, idx, nil
		}
		cancel()
		lastErr = err
		c.rotate(idx)
	}
	return nil, nil, 0, lastErr
}

func (c *Client) failQueued(err error) {
	for {
		select {
		case r := <-c.tsoCh:
			r.finish(0, err)
		default:
			return
		}
	}
}

// tsoServe sends batches on stream until it breaks; a receive goroutine
// delivers responses in order. On return every batch it accepted has been
// answered or failed.
func (c *Client) tsoServe(stream pdpb.PD_TsoClient, cancel context.CancelFunc, free chan *tsoBatch, lastTS *uint64) error {
	inflight := make(chan *tsoBatch, maxInflight)
	recvErr := make(chan error, 1)
	go func() { recvErr <- c.tsoRecv(stream, inflight, free, lastTS) }()

	req := &pdpb.TsoRequest{}
	var err error
	recvDone := false
	for err == nil {
		var first *tsoReq
		select {
		case first = <-c.tsoCh:
		case err = <-recvErr:
			recvDone = true
			continue
		case <-c.closing:
			err = ErrClosed
			continue
		}
		b := <-free
		b.reqs = append(b.reqs, first)
	drain:
		for len(b.reqs) < maxBatch {
			select {
			case r := <-c.tsoCh:
				b.reqs = append(b.reqs, r)
			default:
				break drain
			}
		}
		b.start = time.Now()
		// Queue before sending: a response can then always find its batch.
		select {
		case inflight <- b:
		case err = <-recvErr:
			recvDone = true
			b.fail(fmt.Errorf("%w: %v", ErrTSOUnavailable, err))
			free <- b
			continue
		}
		req.Count = uint32(len(b.reqs))
		if e := stream.Send(req); e != nil {
			err = e
		}
	}
	// Stop the receiver and fail the batches still in flight.
	cancel()
	if !recvDone {
		<-recvErr
	}
	for {
		select {
		case b := <-inflight:
			b.fail(fmt.Errorf("%w: %v", ErrTSOUnavailable, err))
			free <- b
		default:
			return err
		}
	}
}

// tsoRecv delivers responses to batches in order until the stream fails.
func (c *Client) tsoRecv(stream pdpb.PD_TsoClient, inflight, free chan *tsoBatch, lastTS *uint64) error {
	for {
		resp, err := stream.Recv()
		if err != nil {
			return err
		}
		var b *tsoBatch
		select {
		case b = <-inflight:
		case <-stream.Context().Done():
			return stream.Context().Err()
		}
		err = c.deliver(b, resp, lastTS)
		tsoBatchWait.Observe(time.Since(b.start).Seconds())
		free <- b
		if err != nil {
			return err
		}
	}
}

// deliver hands the batch its timestamps, or fails it. A non-nil return ends
// the stream (leader change or a protocol violation).
func (c *Client) deliver(b *tsoBatch, resp *pdpb.TsoResponse, lastTS *uint64) error {
	if herr := resp.GetHeader().GetError(); herr != nil {
		err := fmt.Errorf("%w: %v", ErrTSOUnavailable, headerError(herr))
		b.fail(err)
		return err
	}
	n := int64(len(b.reqs))
	if int64(resp.Count) != n || resp.Timestamp == nil || resp.Timestamp.Logical < n {
		err := fmt.Errorf("%w: bad tso response count=%d want=%d ts=%v", ErrTSOUnavailable, resp.Count, n, resp.Timestamp)
		b.fail(err)
		return err
	}
	phys, logical := resp.Timestamp.Physical, resp.Timestamp.Logical
	first := tso.ComposeTS(phys, logical-n+1)
	if first <= *lastTS {
		c.log.Error("tso went backwards; discarding batch", "first", first, "last_handed_out", *lastTS, "count", n)
		err := fmt.Errorf("%w: got %d after %d", ErrTSOBackwards, first, *lastTS)
		b.fail(err)
		return err
	}
	for i, r := range b.reqs {
		r.finish(first+uint64(i), nil)
	}
	*lastTS = first + uint64(n-1)
	b.reqs = b.reqs[:0]
	return nil
}
