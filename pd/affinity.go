package pd

import (
	"context"
	"slices"

	"github.com/stratadb/strata/pd/schedule"
	"github.com/stratadb/strata/proto/pdpb"
)

// Data affinity groups (pd/schedule/affinity.go) are the tables listed in
// the affinity-tables schedule config. The SQL layer's AFFINITY table
// option keeps the list through SetAffinityTables; operators use the HTTP
// API (api.go). Both change the list through updateAffinityTables.

// updateAffinityTables adds and removes tables from affinity-tables in one
// persisted change and returns the list after it. The read, change and
// write happen under affinityMu, so concurrent callers never lose each
// other's changes; setScheduleConfig refuses ids that are not positive.
func (c *cluster) updateAffinityTables(ctx context.Context, add, remove []int64) ([]int64, error) {
	c.affinityMu.Lock()
	defer c.affinityMu.Unlock()
	cfg := c.model.Config()
	tables := slices.Clone(cfg.AffinityTables)
	for _, id := range add {
		if !slices.Contains(tables, id) {
			tables = append(tables, id)
		}
	}
	tables = slices.DeleteFunc(tables, func(id int64) bool { return slices.Contains(remove, id) })
	if slices.Equal(tables, cfg.AffinityTables) {
		return tables, nil
	}
	cfg.AffinityTables = tables
	if err := c.setScheduleConfig(ctx, cfg); err != nil {
		return nil, err
	}
	return tables, nil
}

func (sv *service) SetAffinityTables(ctx context.Context, req *pdpb.SetAffinityTablesRequest) (*pdpb.SetAffinityTablesResponse, error) {
	t := sv.s.leaderTerm()
	if t == nil {
		return &pdpb.SetAffinityTablesResponse{Header: notLeaderHeader}, nil
	}
	tables, err := t.cluster.updateAffinityTables(ctx, req.GetAddTableIds(), req.GetRemoveTableIds())
	if err != nil {
		return &pdpb.SetAffinityTablesResponse{Header: errorHeader(t, err)}, nil
	}
	return &pdpb.SetAffinityTablesResponse{Header: header(t), TableIds: tables}, nil
}

func (sv *service) GetAffinityGroups(ctx context.Context, req *pdpb.GetAffinityGroupsRequest) (*pdpb.GetAffinityGroupsResponse, error) {
	t := sv.s.leaderTerm()
	if t == nil {
		return &pdpb.GetAffinityGroupsResponse{Header: notLeaderHeader}, nil
	}
	a := t.cluster.coord.Affinity()
	configured := t.cluster.model.Config().AffinityTables
	var views []schedule.AffinityGroupView
	if ids := req.GetTableIds(); len(ids) > 0 {
		for _, id := range ids {
			views = append(views, a.Group(id, false))
		}
	} else {
		views = a.Groups(false)
	}
	resp := &pdpb.GetAffinityGroupsResponse{Header: header(t)}
	for _, g := range views {
		resp.Groups = append(resp.Groups, &pdpb.AffinityGroup{
			TableId: g.TableID, Configured: slices.Contains(configured, g.TableID),
			LeaderStoreId: g.LeaderStoreID, VoterStoreIds: g.VoterStoreIDs, Phase: g.Phase,
			RegionCount: uint32(g.RegionCount), AffinityRegionCount: uint32(g.AffinityRegionCount),
		})
	}
	return resp, nil
}
