package pd

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/pd/schedule"
	"github.com/stratadb/strata/proto/metapb"
	"github.com/stratadb/strata/proto/pdpb"
)

// Region split support (TiKV's raftstore asks PD for ids, splits through
// raft, then reports every resulting region at once).

// askBatchSplit allocates the ids of count new regions of region, each with
// one peer id per peer of region.
func (c *cluster) askBatchSplit(ctx context.Context, region *metapb.Region, count uint32) ([]*pdpb.SplitID, error) {
	if region == nil || region.Id == 0 || len(region.Peers) == 0 || count == 0 {
		return nil, fmt.Errorf("%w: AskBatchSplit needs a region with peers and a split count", ErrInvalidArgument)
	}
	if stale, reason := c.model.HeartbeatCheck(&schedule.RegionInfo{Meta: region}); stale && reason != "term" {
		return nil, fmt.Errorf("%w: region %d epoch %v is older than PD's (%s)", ErrInvalidArgument, region.Id, region.RegionEpoch, reason)
	}
	per := uint64(1 + len(region.Peers))
	first, err := c.ids.alloc(ctx, uint64(count)*per)
	if err != nil {
		return nil, fmt.Errorf("ask batch split: %w", err)
	}
	out := make([]*pdpb.SplitID, count)
	for i := range out {
		base := first + uint64(i)*per
		id := &pdpb.SplitID{NewRegionId: base}
		for j := range region.Peers {
			id.NewPeerIds = append(id.NewPeerIds, base+1+uint64(j))
		}
		out[i] = id
	}
	return out, nil
}

// maxSplitTxnOps is etcd's limit on the operations of one transaction:
// enough for the largest split (SPLIT TABLE's 1000 regions, each a put,
// and the regions they replace).
const maxSplitTxnOps = 4096

// reportBatchSplit records the regions of an applied split in one etcd
// transaction, replacing the regions they overlap. A region older than
// what PD knows (a late report) is ignored. The leader of the original
// region is kept; the new regions' leaders come with their heartbeats.
func (c *cluster) reportBatchSplit(ctx context.Context, regions []*metapb.Region) error {
	for _, r := range regions {
		if r == nil || r.Id == 0 || r.RegionEpoch == nil {
			return fmt.Errorf("%w: ReportBatchSplit needs regions with id and epoch", ErrInvalidArgument)
		}
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	var fresh []*schedule.RegionInfo
	reported := map[uint64]bool{}
	for _, r := range regions {
		ri := &schedule.RegionInfo{Meta: proto.CloneOf(r)}
		if stale, reason := c.model.HeartbeatCheck(ri); stale && reason != "term" {
			continue
		}
		fresh = append(fresh, ri)
		reported[r.Id] = true
	}
	if len(fresh) == 0 {
		return nil
	}
	var ops []clientv3.Op
	removed := map[uint64]bool{}
	for _, ri := range fresh {
		ops = append(ops, clientv3.OpPut(regionKey(ri.ID()), mustMarshal(ri.Meta)))
		_, overlaps := c.model.MetaChanged(ri)
		for _, o := range overlaps {
			if !reported[o.ID()] && !removed[o.ID()] {
				removed[o.ID()] = true
				ops = append(ops, clientv3.OpDelete(regionKey(o.ID())))
			}
		}
	}
	if err := c.kv.txn(ctx, nil, ops...); err != nil {
		return fmt.Errorf("persist split regions: %w", err)
	}
	for _, ri := range fresh {
		c.model.PutRegion(ri)
	}
	regionsGauge.Set(float64(c.model.RegionCount()))
	c.log.Info("region split reported", "regions", len(fresh), "removed", len(removed))
	return nil
}

// scanRegions returns the regions overlapping [start, end) in key order,
// at most limit (0: all).
func (c *cluster) scanRegions(start, end []byte, limit int) []*pdpb.RegionStat {
	var out []*pdpb.RegionStat
	for _, r := range c.model.ScanRegions(start, end, limit) {
		out = append(out, &pdpb.RegionStat{Region: r.Meta, Leader: r.Leader, ApproximateSize: r.ApproximateSize,
			ApproximateKeys: r.ApproximateKeys, BytesWritten: r.BytesWritten, BytesRead: r.BytesRead})
	}
	return out
}

func (sv *service) AskBatchSplit(ctx context.Context, req *pdpb.AskBatchSplitRequest) (*pdpb.AskBatchSplitResponse, error) {
	t := sv.s.leaderTerm()
	if t == nil {
		return &pdpb.AskBatchSplitResponse{Header: notLeaderHeader}, nil
	}
	ids, err := t.cluster.askBatchSplit(ctx, req.Region, req.SplitCount)
	if err != nil {
		return &pdpb.AskBatchSplitResponse{Header: errorHeader(t, err)}, nil
	}
	return &pdpb.AskBatchSplitResponse{Header: header(t), Ids: ids}, nil
}

func (sv *service) ReportBatchSplit(ctx context.Context, req *pdpb.ReportBatchSplitRequest) (*pdpb.ReportBatchSplitResponse, error) {
	t := sv.s.leaderTerm()
	if t == nil {
		return &pdpb.ReportBatchSplitResponse{Header: notLeaderHeader}, nil
	}
	if err := t.cluster.reportBatchSplit(ctx, req.Regions); err != nil {
		return &pdpb.ReportBatchSplitResponse{Header: errorHeader(t, err)}, nil
	}
	return &pdpb.ReportBatchSplitResponse{Header: header(t)}, nil
}

func (sv *service) ScanRegions(ctx context.Context, req *pdpb.ScanRegionsRequest) (*pdpb.ScanRegionsResponse, error) {
	t := sv.s.leaderTerm()
	if t == nil {
		return &pdpb.ScanRegionsResponse{Header: notLeaderHeader}, nil
	}
	return &pdpb.ScanRegionsResponse{Header: header(t), Regions: t.cluster.scanRegions(req.StartKey, req.EndKey, int(req.Limit))}, nil
}
