package server

import (
	"bytes"
	"context"

	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/kv/regionkeys"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/proto/raft_cmdpb"
)

// KvDeleteRange implements storepb.StoreServer: it removes [start_key,
// end_key) of the region in the request's context (clamped to it) from the
// lock, write and default key spaces with one raft command of three
// DeleteRange requests, carrying the request's GC safe point. Every replica
// applies it and then compacts the range (raftstore), so the disk space
// comes back on all of them. The caller (the SQL node's GC leader, for the
// ranges of dropped tables and indexes) guarantees no reader at or above
// the safe point can see the range's data; the deletion takes no latches.
// Deleting a range again is harmless.
func (s *Service) KvDeleteRange(ctx context.Context, req *kvrpcpb.DeleteRangeRequest) (*kvrpcpb.DeleteRangeResponse, error) {
	return call(ctx, "kv_delete_range", req, s.deleteRange)
}

func (s *Service) deleteRange(ctx context.Context, req *kvrpcpb.DeleteRangeRequest) (*kvrpcpb.DeleteRangeResponse, error) {
	if len(req.GetEndKey()) == 0 || bytes.Compare(req.GetStartKey(), req.GetEndKey()) >= 0 {
		return &kvrpcpb.DeleteRangeResponse{Error: "delete range needs start_key < end_key"}, nil
	}
	// The region as its leader knows it now: leadership and epoch checked.
	region, rerr, err := s.store.ReadIndex(ctx, req.GetContext())
	if err != nil {
		return nil, err
	}
	start := regionkeys.ClampStart(req.GetStartKey(), region)
	if rerr == nil {
		rerr = regionkeys.CheckKey(start, region)
	}
	if rerr != nil {
		return &kvrpcpb.DeleteRangeResponse{RegionError: rerr}, nil
	}
	end := regionkeys.ClampEnd(req.GetEndKey(), region)
	lo, hi := keys.Encode(nil, start), keys.Encode(nil, end)
	resp := &kvrpcpb.DeleteRangeResponse{}
	reqs := make([]*raft_cmdpb.Request, 0, len(keys.CFs))
	for _, cf := range keys.CFs {
		reqs = append(reqs, &raft_cmdpb.Request{CmdType: raft_cmdpb.CmdType_DeleteRange, Cf: cf, Key: lo, EndKey: hi})
		size, err := s.store.Engine().EstimateDiskUsage(keys.EngineKey(nil, cf, lo), keys.EngineKey(nil, cf, hi))
		if err == nil {
			resp.ApproximateSize += size
		}
	}
	cmd := raftCmd(req.GetContext(), region, reqs)
	cmd.GcSafePoint = req.GetGcSafePoint()
	out, err := s.store.Propose(ctx, cmd, 0)
	if err != nil {
		return nil, err
	}
	resp.RegionError = out.GetRegionError()
	return resp, nil
}
