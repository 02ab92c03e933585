package server

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/storepb"
	"github.com/stratadb/strata/raftstore"
	"github.com/stratadb/strata/store/txn"
)

// detectTimeout bounds one call to a remote detector; a waiter whose
// detection fails just waits (its wait_timeout still ends it).
const detectTimeout = time.Second

// RegionLocator finds a region's leader (*pdclient.Client is one).
type RegionLocator interface {
	GetRegion(ctx context.Context, key []byte) (*metapb.Region, *metapb.Peer, error)
	GetStore(ctx context.Context, id uint64) (*metapb.Store, error)
}

// clusterDetector is the txn.Detector of a store: one wait-for graph for the
// whole cluster, kept by the store that leads the region holding the empty
// key (TiKV's choice); the other stores send their waits to it with the
// Detect RPC. When this store gains or loses that role its graph starts
// empty (waits recorded elsewhere are not known here; TiKV does the same).
// A wait whose detection fails is not a deadlock: it waits until its
// timeout. Safe for concurrent use.
type clusterDetector struct {
	store *raftstore.Store
	pd    RegionLocator
	local *txn.LocalDetector
	log   *slog.Logger

	mu          sync.Mutex
	wasDetector bool
	addr        string // cached address of the remote detector
	conn        *grpc.ClientConn
	client      storepb.StoreClient
}

func newClusterDetector(store *raftstore.Store, pd RegionLocator, log *slog.Logger) *clusterDetector {
	return &clusterDetector{store: store, pd: pd, local: txn.NewLocalDetector(), log: log}
}

// isDetector reports whether this store leads the region holding the
// empty key, resetting the local graph when that changed.
func (d *clusterDetector) isDetector() bool {
	is := false
	for _, r := range d.store.Regions() {
		if len(r.GetStartKey()) == 0 {
			is = d.store.IsLeader(r.GetId())
			break
		}
	}
	d.mu.Lock()
	changed := is != d.wasDetector
	d.wasDetector = is
	d.mu.Unlock()
	if changed {
		d.local.Reset()
	}
	return is
}

// remote returns a client of the detector store, looked up in PD unless
// cached (refresh drops the cache).
func (d *clusterDetector) remote(ctx context.Context, refresh bool) (storepb.StoreClient, error) {
	d.mu.Lock()
	if !refresh && d.client != nil {
		c := d.client
		d.mu.Unlock()
		return c, nil
	}
	d.mu.Unlock()
	_, leader, err := d.pd.GetRegion(ctx, nil)
	if err != nil {
		return nil, err
	}
	if leader == nil {
		return nil, errNoDetector
	}
	st, err := d.pd.GetStore(ctx, leader.GetStoreId())
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.client != nil && d.addr == st.GetAddress() {
		return d.client, nil
	}
	conn, err := grpc.NewClient(st.GetAddress(), d.store.Security().DialOption())
	if err != nil {
		return nil, err
	}
	if d.conn != nil {
		d.conn.Close()
	}
	d.addr, d.conn, d.client = st.GetAddress(), conn, storepb.NewStoreClient(conn)
	return d.client, nil
}

type detectorError string

func (e detectorError) Error() string { return string(e) }

const errNoDetector = detectorError("server: deadlock detector has no leader")

// call sends req to the detector, looking it up again once if the store
// asked is not (or no longer) the detector.
func (d *clusterDetector) call(req *storepb.DetectRequest) *storepb.DetectResponse {
	ctx, cancel := context.WithTimeout(context.Background(), detectTimeout)
	defer cancel()
	for attempt := 0; attempt < 2; attempt++ {
		c, err := d.remote(ctx, attempt > 0)
		if err != nil {
			d.log.Warn("deadlock detector lookup failed", "err", err)
			return nil
		}
		resp, err := c.Detect(ctx, req)
		if err == nil && !resp.GetNotDetector() {
			return resp
		}
		if err != nil {
			d.log.Warn("deadlock detector call failed", "addr", d.addr, "err", err)
		}
	}
	return nil
}

// Detect implements txn.Detector.
func (d *clusterDetector) Detect(waiter, holder uint64, key []byte) *kvrpcpb.Deadlock {
	if d.isDetector() {
		return d.local.Detect(waiter, holder, key)
	}
	resp := d.call(&storepb.DetectRequest{Tp: storepb.DetectRequest_Detect,
		Entry: &kvrpcpb.WaitForEntry{Txn: waiter, WaitForTxn: holder, Key: key}})
	return resp.GetDeadlock()
}

// CleanUp implements txn.Detector.
func (d *clusterDetector) CleanUp(waiter, holder uint64) {
	if d.isDetector() {
		d.local.CleanUp(waiter, holder)
		return
	}
	d.call(&storepb.DetectRequest{Tp: storepb.DetectRequest_CleanUp,
		Entry: &kvrpcpb.WaitForEntry{Txn: waiter, WaitForTxn: holder}})
}

// serve answers a Detect RPC from another store.
func (d *clusterDetector) serve(req *storepb.DetectRequest) *storepb.DetectResponse {
	if !d.isDetector() {
		return &storepb.DetectResponse{NotDetector: true}
	}
	e := req.GetEntry()
	switch req.GetTp() {
	case storepb.DetectRequest_CleanUp:
		d.local.CleanUp(e.GetTxn(), e.GetWaitForTxn())
		return &storepb.DetectResponse{}
	default:
		return &storepb.DetectResponse{Deadlock: d.local.Detect(e.GetTxn(), e.GetWaitForTxn(), bytes.Clone(e.GetKey()))}
	}
}

func (d *clusterDetector) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.conn != nil {
		d.conn.Close()
		d.conn, d.client = nil, nil
	}
}

// Detect implements storepb.StoreServer: the deadlock detector's RPC.
func (s *Service) Detect(ctx context.Context, req *storepb.DetectRequest) (*storepb.DetectResponse, error) {
	return call(ctx, "detect", req, func(_ context.Context, req *storepb.DetectRequest) (*storepb.DetectResponse, error) {
		return s.detector.serve(req), nil
	})
}
