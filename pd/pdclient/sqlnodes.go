package pdclient

import (
	"context"
	"time"

	"github.com/stratadb/strata/proto/pdpb"
)

// SQLNodeHeartbeat registers (node.ServerId 0, lease 0) or renews a SQL
// node's server id for ttl and returns the id and its lease: the same id
// while the lease stays live, a new one when it expired and another node
// took the old id. ttl 0 releases the id.
func (c *Client) SQLNodeHeartbeat(ctx context.Context, node *pdpb.SQLNode, lease int64, ttl time.Duration) (serverID uint64, leaseID int64, err error) {
	err = c.call(ctx, "SQLNodeHeartbeat", func(ctx context.Context, cli pdpb.PDClient) (*pdpb.ResponseHeader, error) {
		resp, err := cli.SQLNodeHeartbeat(ctx, &pdpb.SQLNodeHeartbeatRequest{Node: node, LeaseId: lease, TtlMs: uint64(ttl.Milliseconds())})
		serverID, leaseID = resp.GetServerId(), resp.GetLeaseId()
		return resp.GetHeader(), err
	})
	return serverID, leaseID, err
}

// SQLNodes lists the SQL nodes whose server id lease is live.
func (c *Client) SQLNodes(ctx context.Context) ([]*pdpb.SQLNode, error) {
	var out []*pdpb.SQLNode
	err := c.call(ctx, "GetSQLNodes", func(ctx context.Context, cli pdpb.PDClient) (*pdpb.ResponseHeader, error) {
		resp, err := cli.GetSQLNodes(ctx, &pdpb.GetSQLNodesRequest{})
		out = resp.GetNodes()
		return resp.GetHeader(), err
	})
	return out, err
}
