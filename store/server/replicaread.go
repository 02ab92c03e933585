package server

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/grpc"

	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/proto/errorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
	"github.com/stratadb/strata/proto/storepb"
	"github.com/stratadb/strata/raftstore"
	"github.com/stratadb/strata/store/concurrency"
	"github.com/stratadb/strata/store/mvcc"
	"github.com/stratadb/strata/store/txn"
)

// Follower and stale reads (raftstore/replicaread.go has the design).
//
// A read with replica_read on a follower asks the leader's store for a read
// index (ReadIndex RPC): the leader passes raftstore.ReadIndex (lease or
// ReadIndex round), records start_ts in its concurrency manager and waits
// for the in-flight writes of the region the read must see, exactly as its
// own reads do, then answers its applied index. A read with stale_read is
// served where the replica's safe ts covers its timestamp; on the leader a
// stale read that is not covered yet is an ordinary leader read at that
// timestamp.

// ReadIndex implements storepb.StoreServer: the leader's half of a follower
// read.
func (s *Service) ReadIndex(ctx context.Context, req *storepb.ReadIndexRequest) (*storepb.ReadIndexResponse, error) {
	return call(ctx, "read_index", req, s.readIndex)
}

func (s *Service) readIndex(ctx context.Context, req *storepb.ReadIndexRequest) (*storepb.ReadIndexResponse, error) {
	rctx := req.GetContext()
	check := txn.NewReadCheck(s.eng, nil, rctx.GetRegionId())
	region, rerr, err := s.store.ReadIndex(ctx, rctx)
	if err != nil {
		return nil, err
	}
	if rerr != nil {
		return &storepb.ReadIndexResponse{RegionError: rerr}, nil
	}
	if err := s.cm.ReadRange(ctx, region.GetStartKey(), region.GetEndKey(), req.GetStartTs()); err != nil {
		return nil, err
	}
	idx := s.store.AppliedIndex(region.GetId())
	if idx == 0 {
		return &storepb.ReadIndexResponse{RegionError: &errorpb.Error{Message: "server: region left this store",
			RegionNotFound: &errorpb.RegionNotFound{RegionId: region.GetId()}}}, nil
	}
	// The index covers the writes the read must see only if the wait did
	// not end because this peer lost the region (txn.ReadCheck).
	if rerr := check.Gone(); rerr != nil {
		return &storepb.ReadIndexResponse{RegionError: rerr}, nil
	}
	return &storepb.ReadIndexResponse{ReadIndex: idx}, nil
}

// raftEngine is txn.Engine (and txn.LocalReader, txn.ReplicaReader) over a
// raftstore.Store.
type raftEngine struct {
	s     *raftstore.Store
	peers *storeClients
}

func (e raftEngine) ReadIndex(ctx context.Context, rctx *kvrpcpb.Context) (*metapb.Region, *errorpb.Error, error) {
	return e.s.ReadIndex(ctx, rctx)
}

// ReadLocal implements txn.LocalReader.
func (e raftEngine) ReadLocal(rctx *kvrpcpb.Context) (*metapb.Region, uint64) {
	return e.s.LocalRead(rctx)
}

// ReadIndexQueued implements txn.LocalReader.
func (e raftEngine) ReadIndexQueued(ctx context.Context, rctx *kvrpcpb.Context) (*metapb.Region, *errorpb.Error, error) {
	return e.s.ReadIndexQueued(ctx, rctx)
}

// ReadReplica implements txn.ReplicaReader.
func (e raftEngine) ReadReplica(ctx context.Context, rctx *kvrpcpb.Context, ts uint64) (*metapb.Region, *errorpb.Error, error) {
	if rctx.GetStaleRead() {
		region, rerr := e.s.StaleRead(rctx, ts)
		if rerr.GetDataIsNotReady() != nil && e.s.IsLeader(rctx.GetRegionId()) {
			return e.s.ReadIndex(ctx, rctx) // the leader may read at any ts
		}
		return region, rerr, nil
	}
	return e.s.ReplicaReadIndex(ctx, rctx, func(ctx context.Context, leader *metapb.Peer) (uint64, *errorpb.Error, error) {
		return e.peers.readIndex(ctx, rctx, leader, ts)
	})
}

// ReplicaPresent implements txn.ReplicaReader.
func (e raftEngine) ReplicaPresent(regionID uint64) bool { return e.s.ReplicaPresent(regionID) }

// storeClients are connections to other stores (a follower read's leader),
// addressed through PD and cached by store id. Safe for concurrent use.
type storeClients struct {
	pd    RegionLocator
	dial  grpc.DialOption // cluster TLS or plaintext
	mu    sync.Mutex
	conns map[uint64]*grpc.ClientConn
}

func (c *storeClients) client(ctx context.Context, storeID uint64) (storepb.StoreClient, error) {
	c.mu.Lock()
	conn := c.conns[storeID]
	c.mu.Unlock()
	if conn != nil {
		return storepb.NewStoreClient(conn), nil
	}
	st, err := c.pd.GetStore(ctx, storeID)
	if err != nil {
		return nil, err
	}
	conn, err = grpc.NewClient(st.GetAddress(), c.dial)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.conns[storeID]; old != nil {
		conn.Close()
		return storepb.NewStoreClient(old), nil
	}
	if c.conns == nil {
		c.conns = make(map[uint64]*grpc.ClientConn)
	}
	c.conns[storeID] = conn
	return storepb.NewStoreClient(conn), nil
}

// drop forgets storeID's connection (it failed; the store may have moved).
func (c *storeClients) drop(storeID uint64) {
	c.mu.Lock()
	conn := c.conns[storeID]
	delete(c.conns, storeID)
	c.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
}

func (c *storeClients) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, conn := range c.conns {
		conn.Close()
		delete(c.conns, id)
	}
}

// readIndex asks leader's store for the read index of a read at ts. A
// failure to reach it is a region error: the client tries another replica.
func (c *storeClients) readIndex(ctx context.Context, rctx *kvrpcpb.Context, leader *metapb.Peer, ts uint64) (uint64, *errorpb.Error, error) {
	unreachable := func(err error) (uint64, *errorpb.Error, error) {
		if ctx.Err() != nil {
			return 0, nil, ctx.Err()
		}
		c.drop(leader.GetStoreId())
		return 0, &errorpb.Error{Message: fmt.Sprintf("server: follower read: leader store %d: %v", leader.GetStoreId(), err)}, nil
	}
	sc, err := c.client(ctx, leader.GetStoreId())
	if err != nil {
		return unreachable(err)
	}
	lctx := &kvrpcpb.Context{RegionId: rctx.GetRegionId(), RegionEpoch: rctx.GetRegionEpoch(), Peer: leader}
	resp, err := sc.ReadIndex(ctx, &storepb.ReadIndexRequest{Context: lctx, StartTs: ts})
	if err != nil {
		return unreachable(err)
	}
	return resp.GetReadIndex(), resp.GetRegionError(), nil
}

// resolvedTSHooks connect raftstore's resolved ts to the concurrency
// manager and the lock format.
func resolvedTSHooks(tso TSO, cm *concurrency.Manager) *raftstore.ResolvedTSHooks {
	return &raftstore.ResolvedTSHooks{
		TS:           tso.GetTS,
		AdvanceMaxTS: cm.ResolveTS,
		MinLockTS:    minLockTS,
	}
}

// minLockTS returns the lowest start ts of the read-blocking locks
// (everything but pessimistic locks) in user range [start, end) of r.
func minLockTS(r pebble.Reader, start, end []byte) (uint64, error) {
	lo, hi := keys.CFBounds(raft_cmdpb.CF_LOCK, start, end)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	lowest := uint64(math.MaxUint64)
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return 0, err
		}
		l, err := mvcc.DecodeLock(v)
		if err != nil {
			return 0, fmt.Errorf("lock at %x: %w", it.Key(), err)
		}
		if l.Type != mvcc.LockPessimistic && l.StartTS < lowest {
			lowest = l.StartTS
		}
	}
	return lowest, it.Error()
}
