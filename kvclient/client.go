package kvclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/stratadb/strata/internal/security"
	"github.com/stratadb/strata/kv/execdetails"
	"github.com/stratadb/strata/kvclient/locate"
	"github.com/stratadb/strata/kvclient/replicaread"
	"github.com/stratadb/strata/kvclient/rpcstats"
	"github.com/stratadb/strata/proto/errorpb"
	"github.com/stratadb/strata/proto/metapb"
)

// PD is what the client needs from the placement driver; *pdclient.Client
// satisfies it. GetRegion's leader may be nil when unknown.
type PD interface {
	GetRegion(ctx context.Context, key []byte) (*metapb.Region, *metapb.Peer, error)
	GetRegionByID(ctx context.Context, id uint64) (*metapb.Region, *metapb.Peer, error)
	GetStore(ctx context.Context, id uint64) (*metapb.Store, error)
}

// Config tunes a Client. Zero fields take their defaults.
type Config struct {
	// BackoffBudget bounds the total time one call may sleep in backoff
	// before failing with ErrRegionUnavailable. Default 20s.
	BackoffBudget time.Duration
	// RPCTimeout bounds each store RPC attempt. Default 5s.
	RPCTimeout time.Duration
	// DisableBatch sends every request as its own unary RPC instead of on
	// the store's BatchCommands stream (for comparison; stores that do not
	// serve BatchCommands get unary RPCs anyway).
	DisableBatch bool
	// CopStoreBatch is how many regions' coprocessor tasks whose leaders
	// are on one store a single RPC carries (TiDB's store batching,
	// tidb_store_batch_size). Default 4; 1 sends one RPC per region.
	CopStoreBatch int
	// BatchMaxWait is how long the BatchCommands sender may hold a message
	// to collect more requests while its stream is busy (see
	// BatchBusyThreshold). Default 5µs; negative never waits, so every
	// message carries only what queued while the previous one was sent.
	BatchMaxWait time.Duration
	// BatchBusyThreshold is the number of requests in flight on a store's
	// stream (sent, not yet answered) at or above which the stream counts
	// as busy and the sender waits up to BatchMaxWait. Below it a request
	// is sent at once. Default 4.
	BatchBusyThreshold int
	// Security dials the stores with cluster TLS (nil: plaintext).
	Security *security.TLS
}

const (
	defaultBackoffBudget      = 20 * time.Second
	defaultRPCTimeout         = 5 * time.Second
	defaultBatchMaxWait       = 5 * time.Microsecond
	defaultBatchBusyThreshold = 4
)

// Client sends KV requests to store nodes. It is safe for concurrent use.
type Client struct {
	cfg    Config
	cache  *locate.RegionCache
	stores storeResolver
	conns  connPool
	closed atomic.Bool
	// replicaSeq spreads replica reads over a region's peers.
	replicaSeq atomic.Uint32
}

// New returns a client that routes through pd. It does no I/O.
func New(pd PD, cfg Config) *Client {
	if cfg.BackoffBudget <= 0 {
		cfg.BackoffBudget = defaultBackoffBudget
	}
	if cfg.RPCTimeout <= 0 {
		cfg.RPCTimeout = defaultRPCTimeout
	}
	if cfg.BatchMaxWait == 0 {
		cfg.BatchMaxWait = defaultBatchMaxWait
	}
	if cfg.BatchBusyThreshold <= 0 {
		cfg.BatchBusyThreshold = defaultBatchBusyThreshold
	}
	policy := batchPolicy{maxWait: max(cfg.BatchMaxWait, 0), busy: int64(cfg.BatchBusyThreshold)}
	return &Client{
		cfg:    cfg,
		cache:  locate.NewRegionCache(pd),
		stores: storeResolver{pd: pd, addrs: make(map[uint64]storeAddr)},
		conns:  connPool{conns: make(map[string]*storeConn), batch: policy, creds: cfg.Security.DialOption()},
	}
}

// Close closes every store connection. Calls in flight fail; later calls
// return ErrClosed.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	return c.conns.close()
}

// locate returns the region of key, backing off while PD cannot answer (for
// example before the cluster is bootstrapped).
func (c *Client) locate(ctx context.Context, bo *backoffer, key []byte) (*locate.Region, error) {
	for {
		if c.closed.Load() {
			return nil, ErrClosed
		}
		r, err := c.cache.Locate(ctx, key)
		if err == nil {
			return r, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("kvclient: locate key %q: %w", key, ctx.Err())
		}
		slog.Debug("kvclient: locate failed", "key", key, "err", err)
		if err := bo.backoff(ctx, boPDRegion, 0, err); err != nil {
			return nil, err
		}
	}
}

// sendToRegion makes one attempt of req on r's believed leader, filling in
// req's Context (region, epoch, peer). On success it returns the response
// (without region error). On a retryable failure it returns retry=true
// after any backoff: the caller must locate again (the region may have
// changed) and resend. Any other failure is returned as an error.
func (c *Client) sendToRegion(ctx context.Context, bo *backoffer, r *locate.Region, req *Request) (*Response, bool, error) {
	kind, rctx := requestInfo(req)
	if kind == numKinds {
		return nil, false, fmt.Errorf("kvclient: unsupported request %T", req.Cmd)
	}
	idx, p := r.Leader()
	replica := false
	if mode := replicaread.From(ctx); mode != replicaread.Leader && kind.replicaReadable() && !bo.leaderOnly {
		idx, p = r.ReplicaPeer(c.replicaSeq.Add(1), mode != replicaread.Follower)
		li, _ := r.Leader()
		// A stale read goes to any replica, the leader included, with
		// stale_read set; a follower read to the leader is a plain read.
		replica = mode == replicaread.Stale || idx != li
		rctx.StaleRead = mode == replicaread.Stale
		rctx.ReplicaRead = mode != replicaread.Stale && replica
	} else {
		rctx.StaleRead, rctx.ReplicaRead = false, false
	}
	addr, err := c.stores.addr(ctx, p.StoreId)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, err
		}
		r.SwitchPeer(idx)
		return nil, true, bo.backoff(ctx, boPDStore, r.ID(), err)
	}
	sc, err := c.conns.get(addr)
	if err != nil {
		return nil, false, err
	}
	rctx.RegionId = r.ID()
	rctx.RegionEpoch = r.Epoch()
	rctx.Peer = p

	if kind == kindCop {
		rpcstats.From(ctx).AddCop(1)
	}
	start := time.Now()
	resp, sent, err := c.call(ctx, sc, kind, req, int(bo.attempts[boRPCTimeout]))
	took := time.Since(start)
	elapsed := took.Seconds()

	var rerr *errorpb.Error
	if err == nil {
		rerr = responseRegionError(resp)
	}
	stage := execdetails.NumStages // a write's time is its caller's stage (lock_keys, commit)
	if !kind.isWrite() {
		stage = execdetails.KVRead
	}
	details := execdetails.From(ctx)
	details.RPC(stage, kindNames[kind], r.ID(), p.StoreId, start, took, bo.retries(), err != nil || rerr != nil)
	if details != nil && err == nil {
		if ed := responseExecDetails(resp); ed != nil {
			var st execdetails.StoreTimes
			storeTimes(ed, &st)
			details.Store(start, took, &st)
		}
	}
	switch {
	case err != nil:
		rpcErr[kind].Observe(elapsed)
		if replica && ctx.Err() == nil {
			bo.leaderOnly = true // the leader serves the retry
		}
		retry, err := c.onSendError(ctx, bo, r, idx, p, addr, kind, sent, err)
		return nil, retry, err
	case rerr != nil:
		rpcRegionErr[kind].Observe(elapsed)
		if replica {
			replicaReadFallbacks.Inc()
			bo.leaderOnly = true
			if handled, retry, err := c.onReplicaRegionError(ctx, bo, r, rerr); handled {
				return nil, retry, err
			}
		}
		retry, err := c.onRegionError(ctx, bo, r, idx, p, kind, rerr)
		return nil, retry, err
	default:
		rpcOK[kind].Observe(elapsed)
		return resp, false, nil
	}
}

// onReplicaRegionError handles what a replica read's region error says
// only about that replica (not ready, no leader known there, leader out of
// its reach): the call retries on the leader at once. ok is false for the
// errors onRegionError handles (the region changed): handled is false.
func (c *Client) onReplicaRegionError(ctx context.Context, bo *backoffer, r *locate.Region, re *errorpb.Error) (handled, retry bool, err error) {
	cause := regionError{re}
	switch {
	case re.DataIsNotReady != nil:
		regionErrors.WithLabelValues("data_is_not_ready").Inc()
	case re.NotLeader != nil:
		regionErrors.WithLabelValues("not_leader").Inc()
		if h := re.NotLeader.Leader; h != nil && h.Id != 0 && !r.UpdateLeader(h) {
			c.cache.Invalidate(r)
		}
	case re.EpochNotMatch != nil, re.RegionNotFound != nil, re.KeyNotInRegion != nil, re.ServerIsBusy != nil:
		return false, false, nil
	default:
		regionErrors.WithLabelValues("replica_read").Inc()
	}
	return true, true, bo.retryNow(ctx, r.ID(), cause)
}

// maxReadTimeoutDoublings bounds the growth of a read's attempt timeout
// (cfg.RPCTimeout << 4: 80 s by default).
const maxReadTimeoutDoublings = 4

// attemptTimeout bounds one attempt of req: cfg.RPCTimeout, plus the
// time a pessimistic lock request may wait on the store for another
// transaction's lock (its wait_timeout). Without the wait, a loaded store
// that answered a waited lock request late made it undetermined (9002),
// though the store was only doing what it was asked. A read that already
// timed out timeouts times in this call gets twice the time per timeout
// (at most maxReadTimeoutDoublings doublings): a coprocessor request
// aggregating a whole region on a loaded store can need more than
// cfg.RPCTimeout, and resending it with the same bound only repeated the
// work without end (go-tpc check's order_line GROUP BY under load), while
// a hung store still costs the first attempt only cfg.RPCTimeout.
func (c *Client) attemptTimeout(req *Request, timeouts int) time.Duration {
	t := c.cfg.RPCTimeout
	if w := req.GetPessimisticLock().GetWaitTimeout(); w > 0 {
		t += time.Duration(w) * time.Millisecond
	}
	if kind, _ := requestInfo(req); !kind.isWrite() {
		t <<= min(timeouts, maxReadTimeoutDoublings)
	}
	return t
}

// call sends req on sc: on the store's BatchCommands stream unless
// batching is off or the store does not serve it, else as a unary RPC.
// sent reports whether the request may have reached the store.
// Either way the attempt is bounded by attemptTimeout unless ctx's
// deadline is sooner.
func (c *Client) call(ctx context.Context, sc *storeConn, kind rpcKind, req *Request, timeouts int) (*Response, bool, error) {
	timeout := c.attemptTimeout(req, timeouts)
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= timeout {
		timeout = 0 // the caller's deadline comes first anyway
	}
	if !c.cfg.DisableBatch && !sc.batch.unsupported.Load() {
		resp, sent, err := sc.batch.callTimeout(ctx, req, timeout)
		if !errors.Is(err, errBatchUnsupported) {
			return resp, sent, err
		}
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	if kind.isWrite() {
		// Whether a stream was created tells whether the request may have
		// reached the store.
		var pr peer.Peer
		resp, err := callUnary(ctx, sc.client, req, grpc.Peer(&pr))
		return resp, pr.Addr != nil, err
	}
	resp, err := callUnary(ctx, sc.client, req)
	return resp, true, err
}

func (c *Client) onSendError(ctx context.Context, bo *backoffer, r *locate.Region, idx int, p *metapb.Peer, addr string, kind rpcKind, sent bool, err error) (bool, error) {
	write := kind.isWrite()
	if ctx.Err() != nil {
		if write && sent {
			return false, c.undetermined(r, kind, fmt.Errorf("%w: %w", ctx.Err(), err))
		}
		return false, fmt.Errorf("kvclient: %s on region %d: %w", kind, r.ID(), ctx.Err())
	}
	if status.Code(err) == codes.Unimplemented {
		// The store has no such handler: nothing ran.
		return false, fmt.Errorf("kvclient: %s on region %d store %d: %w", kind, r.ID(), p.StoreId, err)
	}
	// A write that left for the store may have been applied whatever
	// happened next (the client closed under it, a limit was hit on the
	// way back): that check comes before any other classification.
	if write && sent {
		return false, c.undetermined(r, kind, err)
	}
	if c.closed.Load() {
		return false, ErrClosed
	}
	code := status.Code(err)
	if code == codes.ResourceExhausted {
		// The request exceeded a message size limit before it was sent:
		// nothing was applied, and a retry would fail the same way.
		return false, fmt.Errorf("kvclient: %s on region %d store %d: request too large: %w", kind, r.ID(), p.StoreId, err)
	}
	switch code {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
		cause := fmt.Errorf("store %d (%s): %w", p.StoreId, addr, err)
		slog.Debug("kvclient: store unreachable, trying next peer",
			"region", r.ID(), "store", p.StoreId, "addr", addr, "rpc", kind, "err", err)
		r.SwitchPeer(idx)
		if code == codes.DeadlineExceeded {
			return true, bo.backoff(ctx, boRPCTimeout, r.ID(), cause)
		}
		// The store may have moved: ask PD again next time. A connection
		// refused or reset fails at once, so the next peer is tried at
		// once too (a follower that knows the new leader names it); only
		// a run of such failures backs off (retryNow).
		c.stores.invalidate(p.StoreId)
		if bo.attempts[boStoreUnreachable] == 0 {
			bo.attempts[boStoreUnreachable]++
			return true, bo.retryNow(ctx, r.ID(), cause)
		}
		return true, bo.backoff(ctx, boStoreUnreachable, r.ID(), cause)
	default:
		return false, fmt.Errorf("kvclient: %s on region %d store %d: %w", kind, r.ID(), p.StoreId, err)
	}
}

func (c *Client) undetermined(r *locate.Region, kind rpcKind, err error) error {
	undetermined.Inc()
	slog.Warn("kvclient: write outcome undetermined", "region", r.ID(), "rpc", kind, "err", err)
	return fmt.Errorf("%w: %s on region %d: %w", ErrUndetermined, kind, r.ID(), err)
}

// regionError is a store region error as a Go error, for wrapping.
type regionError struct{ e *errorpb.Error }

func (e regionError) Error() string { return "region error: " + e.e.String() }

var errMsgOnly = errors.New("kvclient: unclassified region error")

func (c *Client) onRegionError(ctx context.Context, bo *backoffer, r *locate.Region, idx int, p *metapb.Peer, kind rpcKind, re *errorpb.Error) (bool, error) {
	cause := regionError{re}
	id := r.ID()
	switch {
	case re.NotLeader != nil:
		regionErrors.WithLabelValues("not_leader").Inc()
		if h := re.NotLeader.Leader; h != nil && h.Id != 0 && h.Id != p.Id {
			if r.UpdateLeader(h) {
				return true, bo.retryNow(ctx, id, cause)
			}
			// The hinted leader is a peer we do not know: membership
			// changed, reload the region.
			c.cache.Invalidate(r)
			return true, bo.backoff(ctx, boRegionMiss, id, cause)
		}
		r.SwitchPeer(idx)
		return true, bo.backoff(ctx, boNotLeader, id, cause)
	case re.EpochNotMatch != nil:
		regionErrors.WithLabelValues("epoch_not_match").Inc()
		if c.cache.OnEpochNotMatch(r, re.EpochNotMatch.CurrentRegions, p.StoreId) {
			return true, bo.retryNow(ctx, id, cause)
		}
		return true, bo.backoff(ctx, boRegionMiss, id, cause)
	case re.RegionNotFound != nil, re.KeyNotInRegion != nil:
		if re.RegionNotFound != nil {
			regionErrors.WithLabelValues("region_not_found").Inc()
		} else {
			regionErrors.WithLabelValues("key_not_in_region").Inc()
		}
		c.cache.Invalidate(r)
		return true, bo.backoff(ctx, boRegionMiss, id, cause)
	case re.ServerIsBusy != nil:
		regionErrors.WithLabelValues("server_is_busy").Inc()
		return true, bo.backoff(ctx, boServerBusy, id, cause)
	case re.StaleCommand != nil:
		// The store answers StaleCommand only when the proposal never made
		// it into the log or another entry took its index, so a write was
		// not applied and can be sent again; if leadership moved, the
		// retry is redirected by NotLeader.
		regionErrors.WithLabelValues("stale_command").Inc()
		return true, bo.backoff(ctx, boStaleCommand, id, cause)
	default:
		regionErrors.WithLabelValues("other").Inc()
		if kind.isWrite() {
			return false, c.undetermined(r, kind, fmt.Errorf("%w: %w", errMsgOnly, cause))
		}
		c.cache.Invalidate(r)
		return true, bo.backoff(ctx, boRegionMiss, id, cause)
	}
}
