package kvclient

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/keepalive"

	"github.com/stratadb/strata/kv"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/storepb"
)

// errStoreUnusable is returned when PD knows a store but it cannot serve
// (tombstone, no address).
var errStoreUnusable = errors.New("kvclient: store unusable")

// storeResolver caches store id → address, loading misses from PD.
type storeResolver struct {
	pd    PD
	mu    sync.RWMutex
	addrs map[uint64]storeAddr
}

type storeAddr struct {
	addr       string
	resolvedAt time.Time
}

// minReresolve is how long an address stays cached after it was resolved
// even when the store is unreachable: while a store is down, requests must
// not turn into a stream of PD calls.
const minReresolve = time.Second

func (s *storeResolver) addr(ctx context.Context, id uint64) (string, error) {
	s.mu.RLock()
	a, ok := s.addrs[id]
	s.mu.RUnlock()
	if ok {
		return a.addr, nil
	}
	st, err := s.pd.GetStore(ctx, id)
	if err != nil {
		return "", fmt.Errorf("kvclient: resolve store %d: %w", id, err)
	}
	if st.GetState() == metapb.StoreState_Tombstone || st.GetAddress() == "" {
		return "", fmt.Errorf("%w: store %d state %v address %q", errStoreUnusable, id, st.GetState(), st.GetAddress())
	}
	s.mu.Lock()
	s.addrs[id] = storeAddr{addr: st.Address, resolvedAt: time.Now()}
	s.mu.Unlock()
	return st.Address, nil
}

// invalidate forgets the address of an unreachable store, unless it was
// resolved less than minReresolve ago.
func (s *storeResolver) invalidate(id uint64) {
	s.mu.Lock()
	if a, ok := s.addrs[id]; ok && time.Since(a.resolvedAt) >= minReresolve {
		delete(s.addrs, id)
	}
	s.mu.Unlock()
}

// connPool holds one grpc.ClientConn per store address.
type connPool struct {
	mu     sync.RWMutex
	conns  map[string]*storeConn
	closed bool
	batch  batchPolicy     // of every connection's stream
	creds  grpc.DialOption // cluster TLS or plaintext
}

type storeConn struct {
	cc     *grpc.ClientConn
	client storepb.StoreClient
	batch  *batchConn
}

// dialOptions: fail fast when a store is down (no wait-for-ready, the client
// retries on another peer), and reconnect quickly when it comes back.
var dialOptions = []grpc.DialOption{
	grpc.WithConnectParams(grpc.ConnectParams{
		Backoff: backoff.Config{
			BaseDelay:  50 * time.Millisecond,
			Multiplier: 1.6,
			Jitter:     0.2,
			MaxDelay:   time.Second,
		},
		MinConnectTimeout: 2 * time.Second,
	}),
	grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256 << 20)),
	// Static flow-control windows: gRPC's dynamic window (BDP estimation)
	// sends a PING after nearly every data frame when requests and
	// responses alternate, one extra frame, write and read on both sides
	// per point read. The sizes are the estimator's own ceiling.
	grpc.WithInitialWindowSize(kv.StreamWindowSize),
	grpc.WithInitialConnWindowSize(kv.ConnWindowSize),
	// A store cut off by a partition (no RST, no FIN) is noticed within
	// Time+Timeout instead of at each request's RPC timeout: the connection
	// fails, its requests fail over to other peers. The store permits pings
	// this often (store/server keepalive enforcement).
	grpc.WithKeepaliveParams(keepalive.ClientParameters{
		Time:                kv.KeepaliveTime,
		Timeout:             time.Second,
		PermitWithoutStream: true,
	}),
}

// get returns the connection to addr, creating it (without I/O: grpc dials
// lazily) on first use.
func (p *connPool) get(addr string) (*storeConn, error) {
	p.mu.RLock()
	c, ok := p.conns[addr]
	closed := p.closed
	p.mu.RUnlock()
	if ok {
		return c, nil
	}
	if closed {
		return nil, ErrClosed
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	if c, ok := p.conns[addr]; ok {
		return c, nil
	}
	cc, err := grpc.NewClient(addr, append([]grpc.DialOption{p.creds}, dialOptions...)...)
	if err != nil {
		return nil, fmt.Errorf("kvclient: connect %s: %w", addr, err)
	}
	client := storepb.NewStoreClient(cc)
	c = &storeConn{cc: cc, client: client, batch: newBatchConn(client, p.batch)}
	p.conns[addr] = c
	return c, nil
}

func (p *connPool) close() error {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.closed = true
	p.mu.Unlock()
	var errs []error
	for _, c := range conns {
		c.batch.close()
		errs = append(errs, c.cc.Close())
	}
	return errors.Join(errs...)
}
