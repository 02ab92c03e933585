package pdclient

import (
	"context"
	"time"

	"github.com/stratadb/strata/proto/pdpb"
)

// GetGCSafePoint returns the cluster's GC safe point (0 before the first
// GC round).
func (c *Client) GetGCSafePoint(ctx context.Context) (uint64, error) {
	var sp uint64
	err := c.call(ctx, "GetGCSafePoint", func(ctx context.Context, cli pdpb.PDClient) (*pdpb.ResponseHeader, error) {
		resp, err := cli.GetGCSafePoint(ctx, &pdpb.GetGCSafePointRequest{})
		sp = resp.GetSafePoint()
		return resp.GetHeader(), err
	})
	return sp, err
}

// UpdateGCSafePoint raises the GC safe point to sp (PD never lowers it) and
// returns the safe point after the update.
func (c *Client) UpdateGCSafePoint(ctx context.Context, sp uint64) (uint64, error) {
	var out uint64
	err := c.call(ctx, "UpdateGCSafePoint", func(ctx context.Context, cli pdpb.PDClient) (*pdpb.ResponseHeader, error) {
		resp, err := cli.UpdateGCSafePoint(ctx, &pdpb.UpdateGCSafePointRequest{SafePoint: sp})
		out = resp.GetNewSafePoint()
		return resp.GetHeader(), err
	})
	return out, err
}

// UpdateServiceGCSafePoint registers or renews service's hold on the GC
// safe point at sp for ttl (whole seconds; ttl < 1s removes it): until it
// expires PD's GC safe point does not pass sp. It returns the smallest
// live service safe point (or the GC safe point when smaller): above sp
// means sp was below the GC safe point and was not registered.
func (c *Client) UpdateServiceGCSafePoint(ctx context.Context, service string, ttl time.Duration, sp uint64) (uint64, error) {
	var out uint64
	err := c.call(ctx, "UpdateServiceGCSafePoint", func(ctx context.Context, cli pdpb.PDClient) (*pdpb.ResponseHeader, error) {
		resp, err := cli.UpdateServiceGCSafePoint(ctx, &pdpb.UpdateServiceGCSafePointRequest{
			ServiceId: service, TtlSeconds: int64(ttl / time.Second), SafePoint: sp,
		})
		out = resp.GetMinSafePoint()
		return resp.GetHeader(), err
	})
	return out, err
}

// GCNodeHeartbeat publishes a SQL node's smallest running start_ts (0:
// none) for ttl, campaigns for (or keeps, or with campaign false resigns)
// the GC leadership, and returns PD's answer with the effective GC config.
func (c *Client) GCNodeHeartbeat(ctx context.Context, nodeID string, minStartTS uint64, ttl time.Duration, campaign bool) (*pdpb.GCNodeHeartbeatResponse, error) {
	var out *pdpb.GCNodeHeartbeatResponse
	err := c.call(ctx, "GCNodeHeartbeat", func(ctx context.Context, cli pdpb.PDClient) (*pdpb.ResponseHeader, error) {
		resp, err := cli.GCNodeHeartbeat(ctx, &pdpb.GCNodeHeartbeatRequest{
			NodeId: nodeID, MinStartTs: minStartTS, TtlMs: uint64(ttl.Milliseconds()), Campaign: campaign,
		})
		out = resp
		return resp.GetHeader(), err
	})
	return out, err
}

// SetGCConfig changes the GC life time and/or run interval (a zero field
// keeps its value; both zero only reads) and returns the stored settings.
func (c *Client) SetGCConfig(ctx context.Context, lifeTime, runInterval time.Duration) (*pdpb.GCConfig, error) {
	var out *pdpb.GCConfig
	err := c.call(ctx, "SetGCConfig", func(ctx context.Context, cli pdpb.PDClient) (*pdpb.ResponseHeader, error) {
		resp, err := cli.SetGCConfig(ctx, &pdpb.SetGCConfigRequest{Config: &pdpb.GCConfig{
			LifeTimeMs: uint64(lifeTime.Milliseconds()), RunIntervalMs: uint64(runInterval.Milliseconds()),
		}})
		out = resp.GetConfig()
		return resp.GetHeader(), err
	})
	return out, err
}
