package kvclient

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/stratadb/strata/kvclient/replicaread"
	"github.com/stratadb/strata/proto/errorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/store/storetest"
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
			cl := newStores(t, 3)
			cl.put("a", "a1", 10)
			if tt.notReady {
				for _, id := range []uint64{2, 3} {
					cl.Inject(&storetest.Fault{Method: "KvGet", Store: id, Answer: func(proto.Message) (proto.Message, error) {
						if tt.mode == replicaread.Stale {
							return &kvrpcpb.GetResponse{RegionError: &errorpb.Error{DataIsNotReady: &errorpb.DataIsNotReady{RegionId: 1, SafeTs: 5}}}, nil
						}
						return &kvrpcpb.GetResponse{RegionError: &errorpb.Error{Message: "follower read: leader store unreachable"}}, nil
					}})
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
			leader := cl.NodeCalls(1, "KvGet")
			followers := cl.NodeCalls(2, "KvGet") + cl.NodeCalls(3, "KvGet")
			require.Equal(t, tt.wantLeader, leader > 0, "leader served %d", leader)
			require.Equal(t, tt.wantFollowers, followers > 0, "followers served %d", followers)
			if tt.notReady {
				require.Equal(t, 12, leader, "every refused replica read is retried on the leader")
			}
		})
	}
}
