package pdclient

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratadb/strata/internal/security"
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
	// DefaultTSOParallelStreams is the number of Tso streams in
	// TSOModeParallel unless WithTSOStreams says otherwise.
	DefaultTSOParallelStreams = 4
)

// TSOMode selects how GetTS callers reach PD (TiDB's
// tidb_tso_client_rpc_mode).
type TSOMode int

const (
	// TSOModeDefault: one Tso stream with one batch in flight. Callers that
	// arrive while a batch is in flight wait for its answer, then go in the
	// next batch: the fewest requests to PD, but a caller may wait up to two
	// round trips.
	TSOModeDefault TSOMode = iota
	// TSOModeParallel: several Tso streams (WithTSOStreams), each with one
	// batch in flight; a caller is sent as soon as any stream is idle, so it
	// usually waits one round trip. More, smaller batches reach PD.
	TSOModeParallel
)

func (m TSOMode) String() string {
	if m == TSOModeParallel {
		return "parallel"
	}
	return "default"
}

// ParseTSOMode parses "default" or "parallel" (case-insensitive).
func ParseTSOMode(s string) (TSOMode, error) {
	switch strings.ToLower(s) {
	case "default", "":
		return TSOModeDefault, nil
	case "parallel":
		return TSOModeParallel, nil
	}
	return 0, fmt.Errorf("pdclient: unknown tso mode %q (want default or parallel)", s)
}

// Option configures a Client.
type Option func(*options)

type options struct {
	tsoMode    TSOMode
	tsoStreams int
	security   *security.TLS
}

// WithTSOMode selects the TSO mode (TSOModeDefault if not given).
func WithTSOMode(m TSOMode) Option { return func(o *options) { o.tsoMode = m } }

// WithSecurity dials PD with cluster TLS (nil: plaintext, the default).
func WithSecurity(t *security.TLS) Option { return func(o *options) { o.security = t } }

// WithTSOStreams sets the number of Tso streams in TSOModeParallel
// (DefaultTSOParallelStreams if not given or < 2). TSOModeDefault always
// uses one stream.
func WithTSOStreams(n int) Option { return func(o *options) { o.tsoStreams = n } }

func (o *options) streams() int {
	if o.tsoMode != TSOModeParallel {
		return 1
	}
	if o.tsoStreams < 2 {
		return DefaultTSOParallelStreams
	}
	return o.tsoStreams
}

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

// tsoBatch is the callers sent in one TsoRequest, in order. Each stream
// worker owns one and reuses it.
type tsoBatch struct {
	reqs  []*tsoReq
	start time.Time
	// floor is the largest timestamp the client had delivered when the
	// batch was sent: every timestamp of the batch must be above it.
	floor uint64
}

func (b *tsoBatch) fail(err error) {
	for _, r := range b.reqs {
		r.finish(0, err)
	}
	b.reqs = b.reqs[:0]
}

// tsoMetrics are the mode-labelled observers of one Client.
type tsoMetrics struct {
	rpc, batch, wait prometheus.Observer
}

func newTSOMetrics(m TSOMode) tsoMetrics {
	l := m.String()
	return tsoMetrics{
		rpc:   tsoBatchWait.WithLabelValues(l),
		batch: tsoBatchSize.WithLabelValues(l),
		wait:  tsoCallerWait.WithLabelValues(l),
	}
}

// tsoRetryTimeout bounds how long GetTS keeps retrying while the TSO stream
// is down (PD leader change, PD unreachable).
const tsoRetryTimeout = 10 * time.Second

// tsoStallTimeout bounds how long a batch waits for its answer before the
// stream is given up: a PD leader that is paused or cut off keeps the
// connection open, and only gRPC's keepalive (10 s + 3 s) would notice,
// while every transaction of this node waits for a timestamp. The batch
// fails (GetTS sends it again on the next stream) and the worker goes to
// the member etcd names as leader. A healthy leader answers in
// milliseconds; one extending its window through a slow etcd write can
// take longer, and then pays one reconnect.
const tsoStallTimeout = 2 * time.Second

// GetTS returns a timestamp larger than every timestamp this client returned
// before the call began, from the PD leader. It rides through PD leader
// changes: a request whose stream broke is sent again on the next stream,
// until ctx is done or tsoRetryTimeout passed; then the error matches
// ErrTSOUnavailable (still retryable).
func (c *Client) GetTS(ctx context.Context) (uint64, error) {
	start := time.Now()
	var deadline time.Time
	for {
		ts, err := c.getTS(ctx)
		if err == nil {
			c.tsoMetrics.wait.Observe(time.Since(start).Seconds())
		}
		if err == nil || !errors.Is(err, ErrTSOUnavailable) || ctx.Err() != nil {
			return ts, err
		}
		// Retrying is paced by the stream workers: the request waits in
		// tsoCh while they reconnect.
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
		// r is still owned by a stream worker; it is not returned to the pool.
		return 0, fmt.Errorf("pdclient: get ts: %w", ctx.Err())
	case <-c.closing:
		return 0, ErrClosed
	}
}

// tsoLoop is one stream worker, running for the client's lifetime: connect,
// serve batches until the stream breaks, reconnect. TSOModeDefault runs one
// worker, TSOModeParallel several; they share tsoCh.
func (c *Client) tsoLoop() {
	defer c.wg.Done()
	b := &tsoBatch{reqs: make([]*tsoReq, 0, 64)} // reused, no per-batch allocation
	req := &pdpb.TsoRequest{}
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
		err = c.tsoServe(stream, cancel, b, req)
		cancel()
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

// tsoServe collects the callers waiting at the moment into one batch, sends
// it and waits for its answer, until the stream breaks, an answer takes
// longer than tsoStallTimeout (cancel ends the stream) or the client
// closes. One batch is in flight per stream; on return b is empty (every
// caller was answered or failed).
func (c *Client) tsoServe(stream pdpb.PD_TsoClient, cancel context.CancelFunc, b *tsoBatch, req *pdpb.TsoRequest) error {
	var stalled atomic.Bool
	watchdog := time.AfterFunc(time.Hour, func() { stalled.Store(true); cancel() })
	watchdog.Stop()
	defer watchdog.Stop()
	for {
		select {
		case r := <-c.tsoCh:
			b.reqs = append(b.reqs, r)
		case <-c.closing:
			return ErrClosed
		}
	drain:
		for len(b.reqs) < maxBatch {
			select {
			case r := <-c.tsoCh:
				b.reqs = append(b.reqs, r)
			default:
				break drain
			}
		}
		b.floor = c.maxTS.Load()
		b.start = time.Now()
		req.Count = uint32(len(b.reqs))
		watchdog.Reset(tsoStallTimeout)
		err := stream.Send(req)
		var resp *pdpb.TsoResponse
		if err == nil {
			resp, err = stream.Recv()
		}
		if !watchdog.Stop() && stalled.Load() {
			tsoStalls.Inc()
			stall := fmt.Errorf("no answer from the PD leader in %v (paused, overloaded or cut off?)", tsoStallTimeout)
			if err == nil { // answered as the watchdog fired: the stream is cancelled all the same
				if derr := c.deliver(b, resp); derr != nil {
					return derr
				}
				return stall
			}
			err = fmt.Errorf("%w: %w", stall, err)
		}
		if err != nil {
			b.fail(fmt.Errorf("%w: %v", ErrTSOUnavailable, err))
			return err
		}
		c.tsoMetrics.rpc.Observe(time.Since(b.start).Seconds())
		c.tsoMetrics.batch.Observe(float64(req.Count))
		if err := c.deliver(b, resp); err != nil {
			return err
		}
	}
}

// deliver hands the batch its timestamps, or fails it. A non-nil return ends
// the stream (leader change or a protocol violation).
func (c *Client) deliver(b *tsoBatch, resp *pdpb.TsoResponse) error {
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
	// Monotonicity (always on): every timestamp delivered before this batch
	// was sent came from a PD answer that preceded it, so a correct PD
	// answers above all of them.
	if first <= b.floor {
		c.log.Error("tso went backwards; discarding batch", "first", first, "delivered_before_send", b.floor, "count", n)
		err := fmt.Errorf("%w: got %d after %d", ErrTSOBackwards, first, b.floor)
		b.fail(err)
		return err
	}
	last := first + uint64(n-1)
	for {
		cur := c.maxTS.Load()
		if last <= cur || c.maxTS.CompareAndSwap(cur, last) {
			break
		}
	}
	for i, r := range b.reqs {
		r.finish(first+uint64(i), nil)
	}
	b.reqs = b.reqs[:0]
	return nil
}
