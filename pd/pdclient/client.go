package pdclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/pdpb"
)

var (
	// ErrRegionNotFound: no region contains the key / has the id.
	ErrRegionNotFound = errors.New("pdclient: region not found")
	// ErrNotBootstrapped: the cluster has no regions yet.
	ErrNotBootstrapped = errors.New("pdclient: cluster not bootstrapped")
	// ErrNotLeader: no endpoint answered as leader before ctx was done.
	ErrNotLeader = errors.New("pdclient: no pd leader")
	// ErrTSOUnavailable: the TSO stream failed or has no leader; retryable.
	ErrTSOUnavailable = errors.New("pdclient: tso unavailable (retryable)")
	// ErrTSOBackwards: PD returned a timestamp not above the last one handed
	// out. The timestamps are discarded.
	ErrTSOBackwards = errors.New("pdclient: tso went backwards")
	// ErrClosed: the client was closed.
	ErrClosed = errors.New("pdclient: closed")
	// ErrPD: PD answered with an error not covered by another sentinel.
	ErrPD = errors.New("pdclient: pd error")
)

const (
	attemptTimeout = 3 * time.Second
	minBackoff     = 10 * time.Millisecond
	maxBackoff     = 500 * time.Millisecond
)

// Client talks to a PD cluster. See the package documentation.
type Client struct {
	endpoints []string
	conns     []*grpc.ClientConn
	clis      []pdpb.PDClient
	cur       atomic.Int32 // endpoint believed to be the leader
	log       *slog.Logger

	tsoCh      chan *tsoReq
	tsoMode    TSOMode
	tsoMetrics tsoMetrics
	// maxTS is the largest timestamp delivered so far (monotonicity check).
	maxTS     atomic.Uint64
	ctx       context.Context // cancelled by Close; parent of the Tso streams
	cancel    context.CancelFunc
	closing   chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// New dials PD members (gRPC "host:port" addresses) and returns when one
// answers or ctx is done. Options select the TSO mode and cluster TLS.
func New(ctx context.Context, endpoints []string, opts ...Option) (*Client, error) {
	if len(endpoints) == 0 {
		return nil, errors.New("pdclient: no endpoints")
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	c := &Client{
		endpoints:  endpoints,
		log:        slog.Default().With("component", "pdclient"),
		tsoCh:      make(chan *tsoReq, 4*maxBatch),
		tsoMode:    o.tsoMode,
		tsoMetrics: newTSOMetrics(o.tsoMode),
		closing:    make(chan struct{}),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	for _, ep := range endpoints {
		conn, err := grpc.NewClient(ep,
			o.security.DialOption(),
			grpc.WithConnectParams(grpc.ConnectParams{
				Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
				MinConnectTimeout: time.Second,
			}),
			grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 10 * time.Second, Timeout: 3 * time.Second, PermitWithoutStream: true}),
		)
		if err != nil {
			c.cancel()
			c.closeConns()
			return nil, fmt.Errorf("pdclient: dial %s: %w", ep, err)
		}
		c.conns = append(c.conns, conn)
		c.clis = append(c.clis, pdpb.NewPDClient(conn))
	}
	if err := c.waitMember(ctx); err != nil {
		c.cancel()
		c.closeConns()
		return nil, err
	}
	for range o.streams() {
		c.wg.Add(1)
		go c.tsoLoop()
	}
	return c, nil
}

// waitMember polls GetMembers on every endpoint until one answers and points
// cur at the leader when it is one of our endpoints.
func (c *Client) waitMember(ctx context.Context) error {
	bo := minBackoff
	var lastErr error
	for {
		for i, cli := range c.clis {
			actx, cancel := context.WithTimeout(ctx, attemptTimeout)
			resp, err := cli.GetMembers(actx, &pdpb.GetMembersRequest{})
			cancel()
			if err == nil && resp.GetHeader().GetError() == nil {
				c.cur.Store(int32(i))
				c.pointAtLeader(resp.Leader)
				return nil
			}
			if err == nil {
				err = headerError(resp.GetHeader().GetError())
			}
			lastErr = err
		}
		if err := sleepCtx(ctx, bo); err != nil {
			return fmt.Errorf("pdclient: no pd member answered (%v): %w", lastErr, err)
		}
		bo = min(bo*2, maxBackoff)
	}
}

// pointAtLeader points cur at leader when it is one of our endpoints.
func (c *Client) pointAtLeader(leader *pdpb.Member) bool {
	for _, u := range leader.GetClientUrls() {
		for i, ep := range c.endpoints {
			if ep == u {
				c.cur.Store(int32(i))
				return true
			}
		}
	}
	return false
}

// findLeaderTimeout bounds one round of findLeader.
const findLeaderTimeout = time.Second

// findLeader asks every endpoint at once who leads (any member answers
// GetMembers from etcd) and points cur at the first leader named that is one
// of our endpoints. It reports whether it found one; the caller falls back
// to trying the next endpoint. Used after a leader failure so the client
// goes straight to the new leader instead of walking the endpoint list.
func (c *Client) findLeader() bool {
	if len(c.clis) == 1 {
		return false
	}
	ctx, cancel := context.WithTimeout(c.ctx, findLeaderTimeout)
	defer cancel()
	leaders := make(chan *pdpb.Member, len(c.clis)) // never blocks a sender
	for _, cli := range c.clis {
		go func() {
			resp, err := cli.GetMembers(ctx, &pdpb.GetMembersRequest{})
			if err != nil || resp.GetHeader().GetError() != nil {
				leaders <- nil
				return
			}
			leaders <- resp.GetLeader()
		}()
	}
	for range c.clis {
		if l := <-leaders; l != nil && c.pointAtLeader(l) {
			return true
		}
	}
	return false
}

func (c *Client) closeConns() {
	for _, conn := range c.conns {
		_ = conn.Close()
	}
}

// TSOMode returns the client's TSO mode.
func (c *Client) TSOMode() TSOMode { return c.tsoMode }

// Close stops the TSO stream workers, fails waiting GetTS callers with ErrClosed and
// closes the connections.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		close(c.closing)
		c.cancel()
		c.wg.Wait()
		c.closeConns()
	})
	return nil
}

// rotate moves cur off the endpoint idx (if still current).
func (c *Client) rotate(idx int32) {
	c.cur.CompareAndSwap(idx, (idx+1)%int32(len(c.clis)))
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// headerError maps a PD header error to a sentinel-wrapped error.
func headerError(e *pdpb.Error) error {
	if e == nil {
		return nil
	}
	switch e.Type {
	case pdpb.ErrorType_REGION_NOT_FOUND:
		return fmt.Errorf("%w: %s", ErrRegionNotFound, e.Message)
	case pdpb.ErrorType_NOT_BOOTSTRAPPED:
		return fmt.Errorf("%w: %s", ErrNotBootstrapped, e.Message)
	case pdpb.ErrorType_NOT_LEADER:
		return fmt.Errorf("%w: %s", ErrNotLeader, e.Message)
	default:
		return fmt.Errorf("%w: %s: %s", ErrPD, e.Type, e.Message)
	}
}

// retryable reports whether a gRPC error warrants trying another endpoint.
func retryable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Aborted:
		return true
	}
	return false
}

// call runs f against the current endpoint, moving to the next one on
// connection errors and NOT_LEADER until ctx is done.
func (c *Client) call(ctx context.Context, method string, f func(ctx context.Context, cli pdpb.PDClient) (*pdpb.ResponseHeader, error)) error {
	bo := minBackoff
	var lastErr error
	for tried := 1; ; tried++ {
		select {
		case <-c.closing:
			return ErrClosed
		default:
		}
		idx := c.cur.Load()
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		hdr, err := f(actx, c.clis[idx])
		cancel()
		if err == nil {
			herr := hdr.GetError()
			if herr == nil {
				return nil
			}
			if herr.Type != pdpb.ErrorType_NOT_LEADER {
				return fmt.Errorf("pdclient: %s: %w", method, headerError(herr))
			}
			err = headerError(herr)
		} else if ctx.Err() == nil && !retryable(err) {
			return fmt.Errorf("pdclient: %s: %w", method, err)
		}
		lastErr = err
		if ctx.Err() != nil {
			return fmt.Errorf("pdclient: %s: %w (last error: %v)", method, ctx.Err(), lastErr)
		}
		// First failure: go to the member etcd names as leader; after that,
		// or when nobody is named, walk the endpoints.
		if tried > 1 || !c.findLeader() {
			c.rotate(idx)
		}
		if tried%len(c.clis) == 0 {
			if err := sleepCtx(ctx, bo); err != nil {
				return fmt.Errorf("pdclient: %s: %w (last error: %v)", method, err, lastErr)
			}
			bo = min(bo*2, maxBackoff)
		}
	}
}

// AllocID returns the first of count cluster-unique ids [first, first+count).
func (c *Client) AllocID(ctx context.Context, count uint32) (first uint64, err error) {
	err = c.call(ctx, "AllocID", func(ctx context.Context, cli pdpb.PDClient) (*pdpb.ResponseHeader, error) {
		resp, err := cli.AllocID(ctx, &pdpb.AllocIDRequest{Count: count})
		first = resp.GetId()
		return resp.GetHeader(), err
	})
	return first, err
}

// PutStore registers or updates a store.
func (c *Client) PutStore(ctx context.Context, s *metapb.Store) error {
	return c.call(ctx, "PutStore", func(ctx context.Context, cli pdpb.PDClient) (*pdpb.ResponseHeader, error) {
		resp, err := cli.PutStore(ctx, &pdpb.PutStoreRequest{Store: s})
		return resp.GetHeader(), err
	})
}

// GetStore returns one store.
func (c *Client) GetStore(ctx context.Context, id uint64) (*metapb.Store, error) {
	var st *metapb.Store
	err := c.call(ctx, "GetStore", func(ctx context.Context, cli pdpb.PDClient) (*pdpb.ResponseHeader, error) {
		resp, err := cli.GetStore(ctx, &pdpb.GetStoreRequest{StoreId: id})
		st = resp.GetStore()
		return resp.GetHeader(), err
	})
	return st, err
}

// GetAllStores returns every registered store, ordered by id.
func (c *Client) GetAllStores(ctx context.Context) ([]*metapb.Store, error) {
	var out []*metapb.Store
	err := c.call(ctx, "GetAllStores", func(ctx context.Context, cli pdpb.PDClient) (*pdpb.ResponseHeader, error) {
		resp, err := cli.GetAllStores(ctx, &pdpb.GetAllStoresRequest{})
		out = resp.GetStores()
		return resp.GetHeader(), err
	})
	return out, err
}

// StoreHeartbeat reports a store's stats and hosted regions; the response
// lists the regions the store must create.
func (c *Client) StoreHeartbeat(ctx context.Context, req *pdpb.StoreHeartbeatRequest) (*pdpb.StoreHeartbeatResponse, error) {
	var out *pdpb.StoreHeartbeatResponse
	err := c.call(ctx, "StoreHeartbeat", func(ctx context.Context, cli pdpb.PDClient) (*pdpb.ResponseHeader, error) {
		resp, err := cli.StoreHeartbeat(ctx, req)
		out = resp
		return resp.GetHeader(), err
	})
	return out, err
}

// RegionHeartbeat reports a region's shape, leader and flow; the response
// may carry an operator step for the leader to execute.
func (c *Client) RegionHeartbeat(ctx context.Context, req *pdpb.RegionHeartbeatRequest) (*pdpb.RegionHeartbeatResponse, error) {
	var out *pdpb.RegionHeartbeatResponse
	err := c.call(ctx, "RegionHeartbeat", func(ctx context.Context, cli pdpb.PDClient) (*pdpb.ResponseHeader, error) {
		resp, err := cli.RegionHeartbeat(ctx, req)
		out = resp
		return resp.GetHeader(), err
	})
	return out, err
}

// RegionHeartbeats sends several region heartbeats in one call and returns
// their responses in order. An error of one heartbeat (its response
// header) does not fail the others: the caller checks each.
func (c *Client) RegionHeartbeats(ctx context.Context, reqs []*pdpb.RegionHeartbeatRequest) ([]*pdpb.RegionHeartbeatResponse, error) {
	var out []*pdpb.RegionHeartbeatResponse
	err := c.call(ctx, "RegionHeartbeats", func(ctx context.Context, cli pdpb.PDClient) (*pdpb.ResponseHeader, error) {
		resp, err := cli.RegionHeartbeats(ctx, &pdpb.RegionHeartbeatsRequest{Heartbeats: reqs})
		out = resp.GetResponses()
		return resp.GetHeader(), err
	})
	if err == nil && len(out) != len(reqs) {
		return nil, fmt.Errorf("pdclient: RegionHeartbeats: %d responses to %d heartbeats", len(out), len(reqs))
	}
	return out, err
}

// GetRegion returns the region containing key and its last known leader
// (nil when unknown). Errors: ErrRegionNotFound, ErrNotBootstrapped.
func (c *Client) GetRegion(ctx context.Context, key []byte) (*metapb.Region, *metapb.Peer, error) {
	var resp *pdpb.GetRegionResponse
	err := c.call(ctx, "GetRegion", func(ctx context.Context, cli pdpb.PDClient) (r *pdpb.ResponseHeader, err error) {
		resp, err = cli.GetRegion(ctx, &pdpb.GetRegionRequest{RegionKey: key})
		return resp.GetHeader(), err
	})
	if err != nil {
		return nil, nil, err
	}
	return resp.Region, resp.Leader, nil
}

// GetRegionByID returns the region with id and its last known leader.
func (c *Client) GetRegionByID(ctx context.Context, id uint64) (*metapb.Region, *metapb.Peer, error) {
	var resp *pdpb.GetRegionResponse
	err := c.call(ctx, "GetRegionByID", func(ctx context.Context, cli pdpb.PDClient) (r *pdpb.ResponseHeader, err error) {
		resp, err = cli.GetRegionByID(ctx, &pdpb.GetRegionByIDRequest{RegionId: id})
		return resp.GetHeader(), err
	})
	if err != nil {
		return nil, nil, err
	}
	return resp.Region, resp.Leader, nil
}

// IsBootstrapped reports whether the cluster's first region exists.
func (c *Client) IsBootstrapped(ctx context.Context) (bool, error) {
	var b bool
	err := c.call(ctx, "IsBootstrapped", func(ctx context.Context, cli pdpb.PDClient) (*pdpb.ResponseHeader, error) {
		resp, err := cli.IsBootstrapped(ctx, &pdpb.IsBootstrappedRequest{})
		b = resp.GetBootstrapped()
		return resp.GetHeader(), err
	})
	return b, err
}

// GetMembers lists the PD members and the current leader (any member answers).
func (c *Client) GetMembers(ctx context.Context) (*pdpb.GetMembersResponse, error) {
	var out *pdpb.GetMembersResponse
	err := c.call(ctx, "GetMembers", func(ctx context.Context, cli pdpb.PDClient) (*pdpb.ResponseHeader, error) {
		resp, err := cli.GetMembers(ctx, &pdpb.GetMembersRequest{})
		out = resp
		return resp.GetHeader(), err
	})
	return out, err
}

// AskBatchSplit allocates the region and peer ids for splitting region
// into count+1 regions.
func (c *Client) AskBatchSplit(ctx context.Context, region *metapb.Region, count uint32) ([]*pdpb.SplitID, error) {
	var ids []*pdpb.SplitID
	err := c.call(ctx, "AskBatchSplit", func(ctx context.Context, cli pdpb.PDClient) (*pdpb.ResponseHeader, error) {
		resp, err := cli.AskBatchSplit(ctx, &pdpb.AskBatchSplitRequest{Region: region, SplitCount: count})
		ids = resp.GetIds()
		return resp.GetHeader(), err
	})
	return ids, err
}

// ReportBatchSplit records every region of an applied split at once.
func (c *Client) ReportBatchSplit(ctx context.Context, regions []*metapb.Region) error {
	return c.call(ctx, "ReportBatchSplit", func(ctx context.Context, cli pdpb.PDClient) (*pdpb.ResponseHeader, error) {
		resp, err := cli.ReportBatchSplit(ctx, &pdpb.ReportBatchSplitRequest{Regions: regions})
		return resp.GetHeader(), err
	})
}

// ScanRegions returns the regions overlapping [start, end) (empty end: to
// the end of the key space) with leaders and statistics, at most limit (0:
// all).
func (c *Client) ScanRegions(ctx context.Context, start, end []byte, limit int) ([]*pdpb.RegionStat, error) {
	var out []*pdpb.RegionStat
	err := c.call(ctx, "ScanRegions", func(ctx context.Context, cli pdpb.PDClient) (*pdpb.ResponseHeader, error) {
		resp, err := cli.ScanRegions(ctx, &pdpb.ScanRegionsRequest{StartKey: start, EndKey: end, Limit: int32(limit)})
		out = resp.GetRegions()
		return resp.GetHeader(), err
	})
	return out, err
}
