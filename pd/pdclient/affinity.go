package pdclient

import (
	"context"

	"github.com/stratadb/strata/proto/pdpb"
)

// SetAffinityTables adds tables to and removes them from PD's affinity
// groups (the affinity-tables schedule config) in one change and returns
// the configured tables after it.
func (c *Client) SetAffinityTables(ctx context.Context, add, remove []int64) ([]int64, error) {
	var out []int64
	err := c.call(ctx, "SetAffinityTables", func(ctx context.Context, cli pdpb.PDClient) (*pdpb.ResponseHeader, error) {
		resp, err := cli.SetAffinityTables(ctx, &pdpb.SetAffinityTablesRequest{AddTableIds: add, RemoveTableIds: remove})
		out = resp.GetTableIds()
		return resp.GetHeader(), err
	})
	return out, err
}

// AffinityGroups returns the affinity groups of tableIDs (a table without
// a group shows as not configured and pending), or of every configured
// table when tableIDs is empty.
func (c *Client) AffinityGroups(ctx context.Context, tableIDs []int64) ([]*pdpb.AffinityGroup, error) {
	var out []*pdpb.AffinityGroup
	err := c.call(ctx, "GetAffinityGroups", func(ctx context.Context, cli pdpb.PDClient) (*pdpb.ResponseHeader, error) {
		resp, err := cli.GetAffinityGroups(ctx, &pdpb.GetAffinityGroupsRequest{TableIds: tableIDs})
		out = resp.GetGroups()
		return resp.GetHeader(), err
	})
	return out, err
}
