package server

import (
	"context"

	"github.com/stratadb/strata/proto/errorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
	"github.com/stratadb/strata/raftstore"
	"github.com/stratadb/strata/store/gc"
)

// gcStore is gc.Store over a raftstore.Store.
type gcStore struct{ s *raftstore.Store }

func (g gcStore) Regions() []*metapb.Region     { return g.s.Regions() }
func (g gcStore) IsLeader(regionID uint64) bool { return g.s.IsLeader(regionID) }
func (g gcStore) Snapshot() gc.Snapshot         { return g.s.Engine().NewSnapshot() }
func (g gcStore) SafePoint() uint64             { return g.s.GCSafePoint() }
func (g gcStore) RaiseSafePoint(sp uint64)      { g.s.RaiseGCSafePoint(sp) }

func (g gcStore) ReadIndex(ctx context.Context, rctx *kvrpcpb.Context) (*metapb.Region, *errorpb.Error, error) {
	return g.s.ReadIndex(ctx, rctx)
}

func (g gcStore) Write(ctx context.Context, region *metapb.Region, reqs []*raft_cmdpb.Request, safePoint uint64) (*errorpb.Error, error) {
	var peer *metapb.Peer
	for _, p := range region.GetPeers() {
		if p.GetStoreId() == g.s.ID() {
			peer = p
		}
	}
	cmd := &raft_cmdpb.RaftCmdRequest{
		Header:      &raft_cmdpb.RaftRequestHeader{RegionId: region.GetId(), Peer: peer, RegionEpoch: region.GetRegionEpoch()},
		Requests:    reqs,
		GcSafePoint: safePoint,
	}
	resp, err := g.s.Propose(ctx, cmd, 0)
	if err != nil {
		return nil, err
	}
	return resp.GetRegionError(), nil
}

// gcChecked wraps a read so that, once it has taken its snapshot (when it
// returns), a version below the GC safe point this store knows replaces
// the response with a GCTooEarly key error: versions it saw may have been
// deleted. A response carrying a region error is passed through.
func gcChecked[Req interface{ GetContext() *kvrpcpb.Context }, Resp interface{ GetRegionError() *errorpb.Error }](
	w *gc.Worker, version func(Req) uint64, refuse func(*kvrpcpb.KeyError) Resp,
	fn func(context.Context, Req) (Resp, error),
) func(context.Context, Req) (Resp, error) {
	if w == nil {
		return fn
	}
	return func(ctx context.Context, req Req) (Resp, error) {
		resp, err := fn(ctx, req)
		return gcCheck(w, version(req), resp, err, refuse)
	}
}

// gcCheck is gcChecked's check of one read at version that returned resp
// and err (w nil: no check).
func gcCheck[Resp interface{ GetRegionError() *errorpb.Error }](w *gc.Worker, version uint64, resp Resp, err error, refuse func(*kvrpcpb.KeyError) Resp) (Resp, error) {
	if w == nil || err != nil || resp.GetRegionError() != nil {
		return resp, err
	}
	if ke := w.CheckRead(version); ke != nil {
		return refuse(ke), nil
	}
	return resp, nil
}
