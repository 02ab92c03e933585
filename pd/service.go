package pd

import (
	"context"
	"errors"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/pdpb"
	"github.com/stratadb/strata/tso"
)

// service implements pdpb.PDServer on top of Server. Leader-only RPCs answer
// a non-leader with a NOT_LEADER header error; clients retry elsewhere.
type service struct {
	pdpb.UnimplementedPDServer
	s *Server
}

// unaryMetrics records the latency of every unary RPC.
func unaryMetrics(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := h(ctx, req)
	result := "ok"
	if err != nil {
		result = "grpc_error"
	} else if hr, ok := resp.(interface{ GetHeader() *pdpb.ResponseHeader }); ok && hr.GetHeader().GetError() != nil {
		result = hr.GetHeader().GetError().GetType().String()
	}
	rpcDuration.WithLabelValues(info.FullMethod, result).Observe(time.Since(start).Seconds())
	return resp, err
}

// header returns the term's shared success header; callers must not modify it.
func header(t *term) *pdpb.ResponseHeader {
	if t == nil {
		return &pdpb.ResponseHeader{}
	}
	return t.hdr
}

func errHeader(t *term, typ pdpb.ErrorType, err error) *pdpb.ResponseHeader {
	h := &pdpb.ResponseHeader{Error: &pdpb.Error{Type: typ, Message: err.Error()}}
	if t != nil {
		h.ClusterId = t.hdr.GetClusterId()
	}
	return h
}

// leaseExpiredHeader answers a TSO batch refused because the local leader
// lease expired (the term has not ended yet); clients treat it as NOT_LEADER.
func leaseExpiredHeader(t *term) *pdpb.ResponseHeader {
	return errHeader(t, pdpb.ErrorType_NOT_LEADER, errLeaseExpired)
}

var notLeaderHeader = &pdpb.ResponseHeader{Error: &pdpb.Error{Type: pdpb.ErrorType_NOT_LEADER, Message: ErrNotLeader.Error()}}

// errorHeader maps an internal error to a header error.
func errorHeader(t *term, err error) *pdpb.ResponseHeader {
	switch {
	case errors.Is(err, ErrNotLeader), errors.Is(err, tso.ErrNotReady):
		return errHeader(t, pdpb.ErrorType_NOT_LEADER, err)
	case errors.Is(err, ErrStoreTombstone):
		return errHeader(t, pdpb.ErrorType_STORE_TOMBSTONE, err)
	default:
		return errHeader(t, pdpb.ErrorType_UNKNOWN, err)
	}
}

// Tso serves one client stream. Requests are answered in order on the
// stream's own goroutine; a second goroutine (per stream, not per request)
// only waits for shutdown so a blocked Recv does not delay it.
func (sv *service) Tso(stream pdpb.PD_TsoServer) error {
	done := make(chan error, 1)
	go func() { done <- sv.tsoLoop(stream) }()
	select {
	case err := <-done:
		return err
	case <-sv.s.quit:
		return status.Error(codes.Unavailable, "pd: shutting down")
	}
}

func (sv *service) tsoLoop(stream pdpb.PD_TsoServer) error {
	ctx := stream.Context()
	resp := &pdpb.TsoResponse{Timestamp: &pdpb.Timestamp{}}
	for {
		req, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		start := time.Now()
		count := req.Count
		if count == 0 {
			count = 1
		}
		t := sv.s.leaderTerm()
		resp.Count = count
		if t == nil {
			resp.Header, resp.Timestamp.Physical, resp.Timestamp.Logical = notLeaderHeader, 0, 0
			tsoErrors.Inc()
		} else if phys, logical, err := t.tso.Generate(ctx, count); err != nil {
			resp.Header, resp.Timestamp.Physical, resp.Timestamp.Logical = errorHeader(t, err), 0, 0
			tsoErrors.Inc()
		} else if !t.lease.valid() {
			// Checked after generating: the batch was generated and is
			// answered while no other member can have become leader.
			resp.Header, resp.Timestamp.Physical, resp.Timestamp.Logical = leaseExpiredHeader(t), 0, 0
			tsoErrors.Inc()
			tsoLeaseRefused.Inc()
		} else {
			resp.Header, resp.Timestamp.Physical, resp.Timestamp.Logical = header(t), phys, logical
		}
		if err := stream.Send(resp); err != nil {
			return err
		}
		tsoDuration.Observe(time.Since(start).Seconds())
		tsoBatchSize.Observe(float64(count))
	}
}

func (sv *service) AllocID(ctx context.Context, req *pdpb.AllocIDRequest) (*pdpb.AllocIDResponse, error) {
	t := sv.s.leaderTerm()
	if t == nil {
		return &pdpb.AllocIDResponse{Header: notLeaderHeader}, nil
	}
	n := req.Count
	if n == 0 {
		n = 1
	}
	id, err := t.ids.alloc(ctx, uint64(n))
	if err != nil {
		return &pdpb.AllocIDResponse{Header: errorHeader(t, err)}, nil
	}
	return &pdpb.AllocIDResponse{Header: header(t), Id: id, Count: n}, nil
}

func (sv *service) PutStore(ctx context.Context, req *pdpb.PutStoreRequest) (*pdpb.PutStoreResponse, error) {
	t := sv.s.leaderTerm()
	if t == nil {
		return &pdpb.PutStoreResponse{Header: notLeaderHeader}, nil
	}
	if err := t.cluster.putStore(ctx, req.Store); err != nil {
		return &pdpb.PutStoreResponse{Header: errorHeader(t, err)}, nil
	}
	return &pdpb.PutStoreResponse{Header: header(t)}, nil
}

func (sv *service) GetStore(ctx context.Context, req *pdpb.GetStoreRequest) (*pdpb.GetStoreResponse, error) {
	t := sv.s.leaderTerm()
	if t == nil {
		return &pdpb.GetStoreResponse{Header: notLeaderHeader}, nil
	}
	st := t.cluster.getStore(req.StoreId)
	if st == nil {
		return &pdpb.GetStoreResponse{Header: errHeader(t, pdpb.ErrorType_UNKNOWN, errStoreNotFound(req.StoreId))}, nil
	}
	return &pdpb.GetStoreResponse{Header: header(t), Store: st}, nil
}

func (sv *service) GetAllStores(ctx context.Context, req *pdpb.GetAllStoresRequest) (*pdpb.GetAllStoresResponse, error) {
	t := sv.s.leaderTerm()
	if t == nil {
		return &pdpb.GetAllStoresResponse{Header: notLeaderHeader}, nil
	}
	return &pdpb.GetAllStoresResponse{Header: header(t), Stores: t.cluster.allStores()}, nil
}

func (sv *service) StoreHeartbeat(ctx context.Context, req *pdpb.StoreHeartbeatRequest) (*pdpb.StoreHeartbeatResponse, error) {
	t := sv.s.leaderTerm()
	if t == nil {
		return &pdpb.StoreHeartbeatResponse{Header: notLeaderHeader}, nil
	}
	storeHeartbeats.Inc()
	resp := t.cluster.storeHeartbeat(req)
	resp.Header = header(t)
	return resp, nil
}

func (sv *service) RegionHeartbeat(ctx context.Context, req *pdpb.RegionHeartbeatRequest) (*pdpb.RegionHeartbeatResponse, error) {
	t := sv.s.leaderTerm()
	if t == nil {
		return &pdpb.RegionHeartbeatResponse{Header: notLeaderHeader}, nil
	}
	return sv.regionHeartbeat(ctx, t, req), nil
}

func (sv *service) RegionHeartbeats(ctx context.Context, req *pdpb.RegionHeartbeatsRequest) (*pdpb.RegionHeartbeatsResponse, error) {
	t := sv.s.leaderTerm()
	if t == nil {
		return &pdpb.RegionHeartbeatsResponse{Header: notLeaderHeader}, nil
	}
	out := &pdpb.RegionHeartbeatsResponse{Header: header(t), Responses: make([]*pdpb.RegionHeartbeatResponse, len(req.GetHeartbeats()))}
	for i, hb := range req.GetHeartbeats() {
		out.Responses[i] = sv.regionHeartbeat(ctx, t, hb)
	}
	return out, nil
}

// regionHeartbeat records one region heartbeat under leader term t.
func (sv *service) regionHeartbeat(ctx context.Context, t *term, req *pdpb.RegionHeartbeatRequest) *pdpb.RegionHeartbeatResponse {
	resp := &pdpb.RegionHeartbeatResponse{Header: header(t)}
	outcome, err := t.cluster.regionHeartbeat(ctx, req, resp)
	if err != nil {
		regionHeartbeats.WithLabelValues("error").Inc()
		return &pdpb.RegionHeartbeatResponse{Header: errorHeader(t, err)}
	}
	regionHeartbeats.WithLabelValues(string(outcome)).Inc()
	if outcome == hbStale {
		sv.s.log.Debug("stale region heartbeat ignored", "region_id", req.Region.GetId(), "epoch", req.Region.GetRegionEpoch().String())
	}
	return resp
}

func (sv *service) GetRegion(ctx context.Context, req *pdpb.GetRegionRequest) (*pdpb.GetRegionResponse, error) {
	t := sv.s.leaderTerm()
	if t == nil {
		return &pdpb.GetRegionResponse{Header: notLeaderHeader}, nil
	}
	r, leader := t.cluster.getRegion(req.RegionKey)
	return regionResponse(t, r, leader), nil
}

func (sv *service) GetRegionByID(ctx context.Context, req *pdpb.GetRegionByIDRequest) (*pdpb.GetRegionResponse, error) {
	t := sv.s.leaderTerm()
	if t == nil {
		return &pdpb.GetRegionResponse{Header: notLeaderHeader}, nil
	}
	r, leader := t.cluster.getRegionByID(req.RegionId)
	return regionResponse(t, r, leader), nil
}

func regionResponse(t *term, r *metapb.Region, leader *metapb.Peer) *pdpb.GetRegionResponse {
	if r == nil {
		if !t.cluster.isBootstrapped() {
			return &pdpb.GetRegionResponse{Header: errHeader(t, pdpb.ErrorType_NOT_BOOTSTRAPPED, errNotBootstrapped)}
		}
		return &pdpb.GetRegionResponse{Header: errHeader(t, pdpb.ErrorType_REGION_NOT_FOUND, errRegionNotFound)}
	}
	return &pdpb.GetRegionResponse{Header: header(t), Region: r, Leader: leader}
}

func (sv *service) IsBootstrapped(ctx context.Context, req *pdpb.IsBootstrappedRequest) (*pdpb.IsBootstrappedResponse, error) {
	t := sv.s.leaderTerm()
	if t == nil {
		return &pdpb.IsBootstrappedResponse{Header: notLeaderHeader}, nil
	}
	return &pdpb.IsBootstrappedResponse{Header: header(t), Bootstrapped: t.cluster.isBootstrapped()}, nil
}

// GetMembers is served by every member, leader or not.
func (sv *service) GetMembers(ctx context.Context, req *pdpb.GetMembersRequest) (*pdpb.GetMembersResponse, error) {
	t := sv.s.leaderTerm()
	ms, leader, err := sv.s.members(ctx)
	if err != nil {
		return &pdpb.GetMembersResponse{Header: errHeader(t, pdpb.ErrorType_UNKNOWN, err)}, nil
	}
	return &pdpb.GetMembersResponse{Header: header(t), Members: ms, Leader: leader}, nil
}
