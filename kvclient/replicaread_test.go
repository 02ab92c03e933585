package kvclient

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/kvclient/replicaread"
	"github.com/stratadb/strata/proto/errorpb"
)

// TestReplicaReadRouting: reads carrying a replica-read mode go where the
// mode says, with replica_read / stale_read set; a replica's region error
// sends the call to the leader.
func TestReplicaReadRouting(t *testing.T) {
	tests := []struct {
		name string
		mode replicaread.Mode
		// notReady: the followers answer DataIsNotReady (stale) or a
		// message-only region error (leader out of reach).
		notReady bool
		// wantLeader, wantFollowers: KvGet calls served by each (of 12).
		wantLeader, wantFollowers bool
	}{
		{name: "leader", mode: replicaread.Leader, wantLeader: true},
		{name: "follower", mode: replicaread.Follower, wantFollowers: true},
		{name: "leader-and-follower", mode: replicaread.LeaderAndFollower, wantLeader: true, wantFollowers: true},
		{name: "stale", mode: replicaread.Stale, wantLeader: true, wantFollowers: true},
		{name: "follower falls back", mode: replicaread.Follower, notReady: true, wantLeader: true, wantFollowers: true},
		{name: "stale falls back", mode: replicaread.Stale, notReady: true, wantLeader: true, wantFollowers: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := newFakeCluster(t, 3)
			cl.put("a", "a1", 10)
			if tt.notReady {
				for _, id := range []uint64{2, 3} {
					hook := hookFn(func(context.Context, string, bool) *errorpb.Error {
						if tt.mode == replicaread.Stale {
							return &errorpb.Error{DataIsNotReady: &errorpb.DataIsNotReady{RegionId: 1, SafeTs: 5}}
						}
						return &errorpb.Error{Message: "follower read: leader store unreachable"}
					})
					cl.stores[id].hook.Store(&hook)
				}
			}
			c := cl.client(Config{})
			ctx := replicaread.With(context.Background(), tt.mode)
			for range 12 {
				v, found, err := c.Get(ctx, []byte("a"), 15)
				require.NoError(t, err)
				require.True(t, found)
				require.Equal(t, "a1", string(v))
			}
			leader := cl.stores[1].count("KvGet")
			followers := cl.stores[2].count("KvGet") + cl.stores[3].count("KvGet")
			require.Equal(t, tt.wantLeader, leader > 0, "leader served %d", leader)
			require.Equal(t, tt.wantFollowers, followers > 0, "followers served %d", followers)
			if tt.notReady {
				require.Equal(t, 12, leader, "every refused replica read is retried on the leader")
			}
		})
	}
}
